//! Tool arguments checked against the schema, the editor, and foldable results.

use super::*;

#[test]
fn invalid_arguments_are_never_sent_and_each_problem_names_its_path() {
    let mut app = tools_app();
    let fx = run_line(
        &mut app,
        r#"/tool propose_trade {"coin": 5, "side": "up", "leverage": 0}"#,
    );
    assert!(tool_calls(&fx).is_empty(), "{fx:?}");
    let editor = tool_editor(&app).expect("the editor opens with the problems");
    assert!(editor.refused);
    let problems: Vec<String> = editor.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        problems,
        [
            "$.size: is required",
            "$.coin: expected string, got integer",
            "$.leverage: must be at least 1",
            "$.side: must be one of \"long\", \"short\"",
        ]
    );
    // ctrl-s still refuses.
    assert!(tool_calls(&app.update(ctrl_s())).is_empty());
    assert!(tool_editor(&app).is_some());
    let text = render(&app);
    for needle in ["$.size", "is required", "$.side", "not sent"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }

    // Text that is not JSON is one problem at the root.
    app.update(code(KeyCode::Esc));
    let fx = run_line(&mut app, "/tool propose_trade {coin: ETH");
    assert!(tool_calls(&fx).is_empty());
    let p = &tool_editor(&app).unwrap().problems;
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path, "$");
    assert!(p[0].message.starts_with("not valid JSON"), "{p:?}");
}

#[test]
fn the_editor_starts_from_the_schema_skeleton_and_sends_once_valid() {
    let mut app = tools_app();
    app.update(key('7'));
    assert_eq!(app.tab(), Tab::Tools);
    // Sorted by tier: observe, experiment, mutate; the mutate tool is last.
    let names: Vec<&str> = app
        .tabs()
        .tools
        .tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "service_discover_top_backtests",
            "service_get_positions",
            "service_run_backtest",
            "service_propose_trade"
        ]
    );
    app.update(key('G'));
    app.update(code(KeyCode::Enter));
    let editor = tool_editor(&app).expect("enter opens the editor");
    assert_eq!(
        serde_json::from_str::<Value>(&editor.text()).unwrap(),
        json!({"coin": "", "side": "long", "size": 0})
    );
    let paths: Vec<&str> = editor.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["$.coin", "$.size"]);
    assert!(tool_calls(&app.update(ctrl_s())).is_empty());
    // Replace the text with valid arguments: select all and type.
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('a'),
        KeyModifiers::CONTROL,
    )));
    for _ in 0..200 {
        app.update(code(KeyCode::Backspace));
        app.update(code(KeyCode::Delete));
    }
    type_text(
        &mut app,
        r#"{"coin": "BTC", "side": "short", "size": 0.01}"#,
    );
    assert!(
        tool_editor(&app).unwrap().problems.is_empty(),
        "{:?}",
        tool_editor(&app).unwrap().problems
    );
    let fx = app.update(ctrl_s());
    assert_eq!(
        tool_calls(&fx),
        vec![(
            "service_propose_trade".to_string(),
            json!({"coin": "BTC", "side": "short", "size": 0.01}),
            None
        )]
    );
    assert!(tool_editor(&app).is_none());
}

#[test]
fn tool_before_the_catalog_waits_for_it() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    let fx = run_line(&mut app, "/tool get_positions {}");
    assert!(fx.contains(&Effect::FetchCapabilities), "{fx:?}");
    assert!(tool_calls(&fx).is_empty());
    let fx = app.update(caps_loaded(t0()));
    assert_eq!(
        tool_calls(&fx),
        vec![("service_get_positions".to_string(), json!({}), None)]
    );
    let fx = run_line(&mut app, "/tool get_postions");
    assert!(tool_calls(&fx).is_empty());
    assert_eq!(
        app.command_error(),
        Some("unknown tool `get_postions`; did you mean `service_get_positions`?")
    );
}

#[test]
fn results_fold_and_unfold() {
    let mut app = tools_app();
    app.update(key('7'));
    let fx = run_line(&mut app, "/tool get_positions {}");
    assert_eq!(tool_calls(&fx).len(), 1);
    app.update(executed(
        "service_get_positions",
        json!({}),
        None,
        Ok(ToolResult {
            tool: "service_get_positions".into(),
            result: positions_result(),
            ..Default::default()
        }),
        t0() + secs(1),
    ));
    assert_eq!(
        app.focused_pane(),
        Pane::Result,
        "the result takes the focus"
    );
    assert_eq!(app.pane_len(Pane::Result), 19);
    // Row 2 is `"positions": [`: space folds it.
    app.update(key('j'));
    app.update(key('j'));
    app.update(key(' '));
    let tree = app.tabs().tools.outcome().unwrap().result.as_ref().unwrap();
    let lines = tree_text(tree);
    assert_eq!(lines[2], "  \"positions\": […] 2 items", "{lines:#?}");
    assert_eq!(app.pane_len(Pane::Result), 4);
    // Enter on the root folds everything; again unfolds it.
    app.update(key('g'));
    app.update(code(KeyCode::Enter));
    let tree = app.tabs().tools.outcome().unwrap().result.as_ref().unwrap();
    assert_eq!(tree_text(tree), ["{…} 2 keys"]);
    app.update(code(KeyCode::Enter));
    app.update(key('j'));
    app.update(key('j'));
    app.update(key(' '));
    assert_eq!(app.pane_len(Pane::Result), 19);
}

#[test]
fn the_catalog_is_asked_for_once_and_after_a_failure_only_on_refresh() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    let fx = app.update(key('7'));
    assert_eq!(app.tab(), Tab::Tools);
    assert!(fx.contains(&Effect::FetchCapabilities), "{fx:?}");
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::CapabilitiesLoaded {
            result: Err(ApiError::Transport("connection refused".into())),
        },
    ));
    let fx = app.update(Action::Tick(t0() + secs(5)));
    assert!(!fx.contains(&Effect::FetchCapabilities), "{fx:?}");
    let fx = app.update(key('r'));
    assert!(fx.contains(&Effect::FetchCapabilities), "{fx:?}");
    app.update(caps_loaded(t0() + secs(6)));
    assert!(app.tabs().tools.loaded());
    let fx = app.update(Action::Tick(t0() + secs(600)));
    assert!(!fx.contains(&Effect::FetchCapabilities), "{fx:?}");
}
