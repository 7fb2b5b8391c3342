//! The chat: replies, their tool calls, and confirm tokens sent to the inbox.

use super::*;

#[test]
fn chat_shows_calls_and_sends_its_tokens_to_the_inbox() {
    let mut app = tools_app();
    chatted(&mut app);
    let item = app
        .item("tool-1")
        .expect("the chat's token is in the inbox");
    assert_eq!(item.tool.as_ref().unwrap().tool, "service_propose_trade");
    assert_eq!(item.tool.as_ref().unwrap().origin, "chat");
    assert_eq!(app.tabs().chat.mode(), Some("router"));
    // The next message carries the conversation.
    let fx = run_line(&mut app, "/chat thanks");
    let sent = fx.iter().find_map(|e| match e {
        Effect::Chat(m) => Some(m.clone()),
        _ => None,
    });
    let roles: Vec<String> = sent.unwrap().iter().map(|m| m.role.clone()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    // While it answers, another message waits.
    assert!(
        run_line(&mut app, "/chat again")
            .iter()
            .all(|e| !matches!(e, Effect::Chat(_)))
    );
}
