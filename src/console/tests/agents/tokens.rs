//! Tool confirm tokens in the approval inbox: countdown, approval with the token, expiry, rejection.

use super::*;

#[test]
fn confirm_token_arrives_counts_down_and_is_approved_with_the_token() {
    let mut app = token_in_inbox();
    let item = app.item("tool-1").expect("the token is an inbox item");
    assert_eq!(item.status(app.now()), Status::Staged);
    assert_eq!(item.remaining(app.now()), Some(secs(60)));
    assert_eq!(item.describe(), "long 0.05 ETH 3x on venue");
    let t = item.tool.as_ref().unwrap();
    assert_eq!(t.confirm_token, TOKEN);
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("tool-1 is in the inbox"))
    );
    // The result panel says where it went, and never shows the token.
    let outcome = app.tabs().tools.outcome().unwrap();
    assert_eq!(outcome.awaiting.as_deref(), Some("tool-1"));
    assert!(!format!("{:?}", outcome.result).contains(TOKEN));

    // The countdown runs; the Desk strip lists it beside proposals.
    app.update(Action::Tick(t0() + secs(20)));
    assert_eq!(
        app.item("tool-1").unwrap().remaining(app.now()),
        Some(secs(40))
    );
    assert_eq!(app.strip_items(), vec![0]);
    app.update(key('1'));
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.contains("tool-1"))
        .expect("strip row");
    assert!(
        line.contains("0:40") && line.contains("long 0.05 ETH 3x"),
        "{line}"
    );

    // Same dialog rules: a, Enter closes it deciding nothing, y executes.
    app.update(key('2'));
    let fx = press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == "tool-1"),
        "{:?}",
        app.modal()
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert!(tool_calls(&app.update(code(KeyCode::Enter))).is_empty());
    assert!(app.modal().is_none(), "{:?}", app.modal());
    app.set_clock(app.now() + ms(100));
    press(&mut app, 'a');
    let fx = yes(&mut app);
    let calls = tool_calls(&fx);
    assert_eq!(
        calls,
        vec![(
            "service_propose_trade".to_string(),
            json!({"coin": "ETH", "side": "long", "size": 0.05, "leverage": 3, "confirmToken": TOKEN}),
            Some("tool-1".to_string())
        )]
    );
    assert_eq!(app.item("tool-1").unwrap().local, LocalState::Confirming);
    assert!(app.inbox().confirm_in_flight());

    let body = json!({"proposalId": "prop_77aa", "status": "executed", "fills": [{"coin": "ETH", "px": "3412.5"}]});
    let fx = app.update(executed(
        "service_propose_trade",
        calls[0].1.clone(),
        Some("tool-1"),
        Ok(ToolResult {
            tool: "service_propose_trade".into(),
            result: body.clone(),
            ..Default::default()
        }),
        t0() + secs(21),
    ));
    let item = app.item("tool-1").unwrap();
    assert_eq!(item.status(app.now()), Status::Approved);
    assert_eq!(item.tool.as_ref().unwrap().result.as_ref(), Some(&body));
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
    assert_eq!(app.inbox().decisions()[0].proposal_id, "tool-1");
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["decision"], "approved");
    // The result is shown: in the Tools panel as a tree, without the token.
    let outcome = app.tabs().tools.outcome().unwrap();
    let tree = outcome.result.as_ref().unwrap();
    assert!(tree_text(tree).iter().any(|l| l.contains("\"executed\"")));
    assert!(!outcome.args.to_string().contains(TOKEN));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.starts_with("Approved tool-1"))
    );
    let detail = render(&app);
    assert!(detail.contains("service_propose_trade"), "{detail}");
}

#[test]
fn an_expired_token_cannot_be_approved() {
    let mut app = token_in_inbox();
    let fx = app.update(Action::Tick(t0() + secs(61)));
    assert_eq!(
        app.item("tool-1").unwrap().status(app.now()),
        Status::Expired
    );
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Expired);
    assert_eq!(journal_lines(&fx)[0]["proposalId"], "tool-1");
    assert!(app.strip_items().is_empty());
    app.update(key('2'));
    let fx = press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(tool_calls(&fx).is_empty());
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("can no longer be approved"))
    );
}

#[test]
fn the_dialog_rechecks_expiry_and_reject_dismisses_locally() {
    let mut app = token_in_inbox();
    app.update(key('2'));
    press(&mut app, 'a');
    app.update(Action::Tick(t0() + secs(61)));
    assert!(
        tool_calls(&yes(&mut app)).is_empty(),
        "expired while the dialog was open"
    );

    let mut app = token_in_inbox();
    app.update(key('2'));
    let fx = press(&mut app, 'x');
    assert!(tool_calls(&fx).is_empty());
    assert_eq!(app.item("tool-1").unwrap().local, LocalState::Rejected);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Rejected);
    assert!(
        app.inbox().decisions()[0]
            .result
            .contains("token expires unused")
    );
}

#[test]
fn a_failed_approval_is_recorded() {
    let mut app = token_in_inbox();
    app.update(key('2'));
    press(&mut app, 'a');
    let fx = yes(&mut app);
    let (name, args, _) = tool_calls(&fx).remove(0);
    app.update(executed(
        &name,
        args,
        Some("tool-1"),
        Err(ApiError::Invalid {
            code: "confirm_token_expired".into(),
            field: None,
            message: "the confirm token expired".into(),
        }),
        t0() + secs(2),
    ));
    let item = app.item("tool-1").unwrap();
    assert_eq!(item.status(app.now()), Status::Failed);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Failed);
    assert!(app.tabs().tools.outcome().unwrap().result.is_err());
}

#[test]
fn proposals_and_tokens_share_the_inbox() {
    let mut app = token_in_inbox();
    app.update(proposals(
        vec![btc_long("prop_1a2b3c4d5e6f7081", t0())],
        t0() + secs(1),
    ));
    assert_eq!(app.inbox().items().len(), 2);
    assert!(
        app.item("tool-1").is_some(),
        "a proposals poll keeps the token"
    );
    assert_eq!(app.strip_items().len(), 2);
}

/// Approves the token (a, y) and answers the re-submission with `error`.
fn resubmission_fails(app: &mut App, error: ApiError) -> Vec<Effect> {
    app.update(key('2'));
    press(app, 'a');
    let calls = tool_calls(&yes(app));
    assert_eq!(calls.len(), 1);
    app.update(executed(
        "service_propose_trade",
        calls[0].1.clone(),
        Some("tool-1"),
        Err(error),
        t0() + secs(21),
    ))
}

fn audit(rows: Vec<crate::api::model::AuditEntry>) -> crate::console::inbox::Evidence {
    crate::console::inbox::Evidence {
        proposals: None,
        audit: Ok(rows),
    }
}

fn audit_row(op: &str, at: DateTime<Utc>) -> crate::api::model::AuditEntry {
    crate::api::model::AuditEntry {
        operation: op.into(),
        outcome: "ok".into(),
        time: at,
        oid: Some(7),
        ..Default::default()
    }
}

fn reconciled(
    app: &mut App,
    at: DateTime<Utc>,
    evidence: crate::console::inbox::Evidence,
) -> Vec<Effect> {
    app.update(Action::answered(
        at,
        LATENCY,
        Answer::Reconciled {
            evidence: Box::new(evidence),
        },
    ))
}

#[test]
fn a_resubmission_without_an_answer_is_an_unknown_outcome_settled_by_the_audit_log() {
    // The tool ran: its operation is in the audit log after the token was issued.
    let mut app = token_in_inbox();
    let fx = resubmission_fails(&mut app, ApiError::Transport("connection reset".into()));
    let item = app.item("tool-1").unwrap();
    assert_eq!(item.status(app.now()), Status::Unknown, "{:?}", item.local);
    assert!(app.inbox().decisions().is_empty(), "nothing decided yet");
    assert!(journal_lines(&fx).is_empty());
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("tool-1: outcome unknown")),
        "{:?}",
        toast_texts(&app)
    );
    let fx = app.update(Action::Tick(t0() + secs(21)));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Reconcile { .. })),
        "{fx:?}"
    );
    // Not approvable while it is being checked: nothing is re-sent.
    let fx = press(&mut app, 'a');
    assert!(app.modal().is_none());
    assert!(tool_calls(&fx).is_empty());
    let fx = reconciled(
        &mut app,
        t0() + secs(22),
        audit(vec![
            audit_row("execute_mcp_tool", t0()),
            audit_row("propose_trade", t0() + secs(21)),
        ]),
    );
    assert_eq!(
        app.item("tool-1").unwrap().status(app.now()),
        Status::Approved
    );
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
    assert!(
        app.inbox().decisions()[0]
            .result
            .contains("propose_trade ok in the audit log"),
        "{}",
        app.inbox().decisions()[0].result
    );
    assert_eq!(journal_lines(&fx).len(), 1);

    // It did not run: the log has only the first call. Staged again, approved by hand.
    let mut app = token_in_inbox();
    resubmission_fails(&mut app, ApiError::Transport("connection refused".into()));
    app.update(Action::Tick(t0() + secs(21)));
    let fx = reconciled(
        &mut app,
        t0() + secs(22),
        audit(vec![audit_row("execute_mcp_tool", t0())]),
    );
    assert!(tool_calls(&fx).is_empty(), "never re-sent on its own");
    assert_eq!(
        app.item("tool-1").unwrap().status(app.now()),
        Status::Staged
    );
    assert!(app.inbox().decisions().is_empty());
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == "tool-1"));
    assert_eq!(tool_calls(&yes(&mut app)).len(), 1);
}
