//! The supervisor API's bodies (`gateway::supervisor_bodies`): they never panic, and a policy
//! that is accepted reads back as itself from what the gateway answers and stores.
#![no_main]

use agentdesk::gateway::rules::policy::Policy;
use agentdesk::gateway::supervisor_bodies as bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    match pick % 5 {
        0 => drop(bodies::approve(body)),
        1 => drop(bodies::reject(body)),
        2 => drop(bodies::kill(body)),
        3 => {
            if let Ok(s) = bodies::standing(body) {
                assert!(s.max_notional_usd.is_finite() && s.max_notional_usd > 0.0);
                assert!((1..=10_080).contains(&s.minutes));
            }
        }
        _ => {
            if let Ok(policy) = bodies::policy(body) {
                let again = Policy::from_json(&policy.to_json())
                    .unwrap_or_else(|e| panic!("the stored policy is refused: {e:?}"));
                assert_eq!(again, policy);
            }
        }
    }
});
