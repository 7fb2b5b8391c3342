//! The gateway's block of config.example.toml lists every key with a value the gateway accepts.

use agentdesk::gateway::rules::policy::{GateSettings, RULES};
use agentdesk::gateway::upstream::notify;

#[test]
fn the_example_configs_gateway_block_parses_and_lists_every_rule() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml"))
        .unwrap();
    let block: String = text
        .lines()
        .skip_while(|l| !l.contains("The gateway (`agentdesk gate`)"))
        .filter_map(|l| l.strip_prefix('#'))
        .filter(|l| !l.is_empty() && !l.starts_with(' ') && !l.starts_with('-'))
        .map(|l| format!("{l}\n"))
        .collect();
    let (settings, policy) = GateSettings::with_policy_from_toml(&block).unwrap();
    assert_eq!(settings.allow_immediate, ["market-maker"]);
    assert_eq!(
        settings.store.as_deref(),
        Some("postgres://gate@127.0.0.1/desk")
    );
    let listed = policy.to_json();
    for rule in RULES.iter().chain(&["allow_immediate"]) {
        assert!(listed.get(*rule).is_some(), "{rule} is not in the example");
    }
    let mm = policy.for_agent(&["market-maker"]);
    assert_eq!(mm.max_notional_usd, Some(20000.0));
    assert_eq!(mm.max_leverage, Some(5.0));
    assert_eq!(mm.controls.max_stagings_per_minute, Some(60));
    assert_eq!(mm.controls.max_order_size.unwrap()["ETH"], 40.0);
    assert_eq!(policy.rules.controls.max_order_size.unwrap()["BTC"], 0.5);
    let destinations = notify::from_toml(&block).unwrap();
    assert_eq!(destinations.len(), 1);
    assert!(destinations[0].url.starts_with("https://"));
    let public_url = agentdesk::gateway::link::public_url_from_toml(&block).unwrap();
    assert_eq!(public_url.as_deref(), Some("https://desk.example.com"));
}
