//! Research polling, the `/research` commands sent as typed, its keys and the transcript.

use super::*;

#[test]
fn research_is_polled_only_while_a_run_exists_and_fast_only_when_visible() {
    let mut app = app_with(quiet_options());
    let fx = app.update(Action::Tick(t0()));
    assert_eq!(research_fetches(&fx), 1);
    // No run: never again, however long the console runs.
    app.update(research_loaded(None, t0()));
    for s in [1, 2, 30, 31, 600] {
        assert_eq!(
            research_fetches(&app.update(Action::Tick(t0() + secs(s)))),
            0,
            "t+{s}"
        );
    }
    assert_eq!(app.tabs().research.poll().next_due, None);

    // Entering the tab looks again: a run started elsewhere, active.
    let t = t0() + secs(600);
    let fx = app.update(key('6'));
    assert_eq!(research_fetches(&fx), 1);
    app.update(research_loaded(Some(research_run("active")), t));
    // Visible and active: every 2 s.
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(1)))), 0);
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(2)))), 1);
    app.update(research_loaded(Some(research_run("active")), t + secs(2)));
    // Off screen: the next answer moves it to every 30 s.
    app.update(key('1'));
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(4)))), 1);
    app.update(research_loaded(Some(research_run("active")), t + secs(4)));
    for s in [6, 10, 33] {
        assert_eq!(
            research_fetches(&app.update(Action::Tick(t + secs(s)))),
            0,
            "t+{s}"
        );
    }
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(34)))), 1);
    // The run completes: a toast names the report; then every 30 s even on screen.
    app.update(key('6'));
    app.update(research_loaded(
        Some(research_run("completed")),
        t + secs(35),
    ));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|m| m.contains("completed: report.md")),
        "{:?}",
        toast_texts(&app)
    );
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(37)))), 0);
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(65)))), 1);
}

#[test]
fn a_service_without_research_is_not_asked_again() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::ResearchLoaded {
            result: Err(ApiError::NotFound {
                code: "not_found".into(),
                message: "no such operation".into(),
            }),
        },
    ));
    assert!(!app.tabs().research.supported());
    assert_eq!(research_fetches(&app.update(key('6'))), 0);
    assert_eq!(
        research_fetches(&app.update(Action::Tick(t0() + secs(60)))),
        0
    );
}

#[test]
fn research_commands_go_to_the_service_command_line_exactly_as_typed() {
    let mut app = tools_app();
    let fx = run_line(&mut app, "/research say  prefer lower   drawdown, please ");
    assert_eq!(
        fx[0],
        Effect::Cli("/research say  prefer lower   drawdown, please".into())
    );
    // Showing the Research tab also asks for the run.
    assert_eq!(fx[1..], [Effect::FetchResearch]);
    assert_eq!(app.tab(), Tab::Research);
    app.update(research_loaded(None, t0()));
    let fx = run_line(&mut app, &format!("/research start {TASK}"));
    assert_eq!(fx, vec![Effect::Cli(format!("/research start {TASK}"))]);
    assert_eq!(
        run_line(&mut app, "/research"),
        vec![Effect::Cli("/research".into())]
    );
    assert_eq!(
        run_line(&mut app, "/research stop"),
        vec![Effect::Cli("/research stop".into())]
    );
    // A start without a task is refused here.
    assert!(run_line(&mut app, "/research start").is_empty());
    assert!(app.command_error().unwrap().contains("missing <task>"));

    // The reply shows, and the run is asked for at once (the first check had found none).
    let fx = app.update(Action::answered(
        t0() + secs(1),
        LATENCY,
        Answer::CliAnswered {
            command: format!("/research start {TASK}"),
            result: Ok(CliReply {
                output: format!("started {RUN_ID}: lead planning"),
                ..Default::default()
            }),
        },
    ));
    assert_eq!(research_fetches(&fx), 1);
    assert!(
        app.tabs()
            .research
            .reply()
            .unwrap()
            .contains(&format!("started {RUN_ID}"))
    );
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("lead planning"))
    );
}

#[test]
fn keys_prefill_research_commands_and_stop_asks_first() {
    let mut app = tools_app();
    app.update(key('6'));
    app.update(research_loaded(Some(research_run("active")), t0()));
    app.update(key('N'));
    assert_eq!(app.command_line().unwrap().text(), "/research start ");
    app.update(code(KeyCode::Esc));
    app.update(key('m'));
    assert_eq!(app.command_line().unwrap().text(), "/research say ");
    type_text(&mut app, "hi");
    assert_eq!(
        app.update(code(KeyCode::Enter)),
        vec![Effect::Cli("/research say hi".into())]
    );

    assert!(press(&mut app, 'X').is_empty());
    assert!(
        matches!(app.modal(), Some(Modal::Confirm(crate::console::modal::Confirm { what: crate::console::modal::Deciding::StopRun(id), .. })) if *id == RUN_ID),
        "{:?}",
        app.modal()
    );
    assert!(app.update(code(KeyCode::Esc)).is_empty());
    assert!(app.modal().is_none(), "{:?}", app.modal());
    press(&mut app, 'X');
    assert_eq!(yes(&mut app), vec![Effect::StopResearch(RUN_ID.into())]);
    app.update(Action::answered(
        t0() + secs(1),
        LATENCY,
        Answer::ResearchStopped {
            run_id: RUN_ID.into(),
            result: Ok(Box::new(research_run("stopped"))),
        },
    ));
    assert_eq!(app.tabs().research.run().unwrap().status, "stopped");
    // Nothing active: X only says so.
    assert!(press(&mut app, 'X').is_empty());
    assert!(app.modal().is_none(), "{:?}", app.modal());
}

#[test]
fn the_transcript_scrolls_from_the_newest_line() {
    let mut app = tools_app();
    app.update(Action::Resize(80, 24));
    app.update(key('6'));
    app.update(research_loaded(Some(research_run("active")), t0()));
    app.update(code(KeyCode::Tab));
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Transcript);
    assert_eq!(app.tabs().research.scroll(), 0);
    app.update(key('k'));
    assert_eq!(app.tabs().research.scroll(), 1);
    app.update(key('g'));
    let top = app.tabs().research.scroll();
    assert!(top > 1);
    app.update(key('k'));
    assert_eq!(
        app.tabs().research.scroll(),
        top,
        "no further than the first line"
    );
    let text = render(&app);
    assert!(
        text.contains("11:58:25 user: find the best trend"),
        "{text}"
    );
    app.update(key('G'));
    assert_eq!(app.tabs().research.scroll(), 0);
}
