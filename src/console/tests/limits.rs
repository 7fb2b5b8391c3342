//! A confirm the service asks to wait for (a 429 quota or rate limit, a 503 with `Retry-After`, or
//! the deployment's 200 `success:false` saying so) did not execute: the proposal stays staged,
//! shows the wait, and is approved again only by hand after it — never re-sent on its own.

use super::fixtures::*;
use crate::api::ApiError;
use crate::console::action::{Action, Answer, Effect};
use crate::console::inbox::{LocalState, Status};
use crate::console::modal::Modal;
use serde_json::json;
use std::time::Duration;

fn confirms(fx: &[Effect]) -> usize {
    fx.iter()
        .filter(|e| matches!(e, Effect::Confirm(_)))
        .count()
}

#[test]
fn a_rate_limited_confirm_stays_staged_and_is_approved_again_by_hand_after_the_wait() {
    let answers = [
        ApiError::QuotaExceeded {
            retry_after: Duration::from_secs(30),
            message: "Too many requests".into(),
        },
        ApiError::from_response(503, &json!({"message": "busy"}), Some(30), None),
        // The deployment's shape: HTTP 200, success:false, the wait only in the message.
        ApiError::from_response(
            200,
            &json!({"success": false, "message": "Rate limit exceeded. Try again in 30 seconds."}),
            None,
            None,
        ),
    ];
    for error in answers {
        let mut app = staged_app();
        press(&mut app, 'a');
        assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
        let fx = app.update(Action::answered(
            t0() + secs(1),
            LATENCY,
            Answer::Confirmed {
                id: ID.into(),
                result: Err(error.clone()),
            },
        ));
        assert_eq!(status(&app), Status::Staged, "{error:?}");
        assert_eq!(app.item(ID).unwrap().local, LocalState::None);
        assert!(!app.inbox().confirm_in_flight());
        assert!(
            app.inbox().decisions().is_empty(),
            "nothing was decided: {error:?}"
        );
        assert!(journal_lines(&fx).is_empty());
        assert!(
            toast_texts(&app)
                .iter()
                .any(|t| t.contains("rate limited — retry in 30 s") && t.contains("still staged")),
            "{:?}",
            toast_texts(&app)
        );
        // During the wait: shown on the strip and in the list; `a` says how long, sends nothing.
        let fx = tick(&mut app, t0() + secs(5));
        assert_eq!(confirms(&fx), 0);
        app.set_size(120, 40);
        let strip = render(&app);
        let row = strip.lines().find(|l| l.contains(ID)).unwrap();
        assert!(row.contains("rate limited 26s"), "{row}");
        let fx = press(&mut app, 'a');
        assert_eq!(confirms(&fx), 0);
        assert!(app.modal().is_none(), "{:?}", app.modal());
        let last = &app.toasts().last().unwrap().text;
        assert!(last.contains("rate limited — retry in 26 s"), "{last}");
        app.update(key('2'));
        let text = render(&app);
        assert!(
            text.contains("rate limited — retry in 26 s"),
            "the detail panel says the wait\n{text}"
        );
        app.update(key('1'));
        // Never re-sent on its own, whatever the time.
        let fx = tick(&mut app, t0() + secs(40));
        assert_eq!(confirms(&fx), 0);
        // After the wait: a then y sends it again.
        press(&mut app, 'a');
        assert!(
            matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
            "{:?}",
            app.modal()
        );
        assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
    }
}
