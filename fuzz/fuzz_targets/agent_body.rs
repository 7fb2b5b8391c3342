//! The gateway's strict reading of an agent's body (`gateway::request::read`), for every
//! operation that takes one: it never panics, and what it forwards (the checked value,
//! re-serialised) reads again as itself, so the service is sent exactly what was judged.
#![no_main]

use agentdesk::api::catalog::{Method, OPERATIONS};
use agentdesk::gateway::model::request;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let posts: Vec<_> = OPERATIONS
        .iter()
        .filter(|op| op.method != Method::Get)
        .collect();
    let op = posts[pick as usize % posts.len()];
    if let Ok(checked) = request::read(op, body) {
        let again = request::read(op, &checked.bytes())
            .unwrap_or_else(|e| panic!("{}: the forwarded body is refused: {e:?}", op.name));
        assert_eq!(again.canonical, checked.canonical, "{}", op.name);
        assert_eq!(again.parsed, checked.parsed, "{}", op.name);
    }
});
