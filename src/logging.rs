//! The servers' logs: the filter (`AGENTDESK_LOG`, else a default) and stderr as text or JSON.

/// `AGENTDESK_LOG` if set (an EnvFilter directive), else `default`.
pub fn filter(default: &str) -> tracing_subscriber::EnvFilter {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTDESK_LOG")
        .unwrap_or_else(|_| default.into());
    // The request span (its id) is on every line of a request only if the span itself is on,
    // whatever level the lines are filtered at.
    match "agentdesk::edge=info".parse() {
        Ok(d) => filter.add_directive(d),
        Err(_) => filter,
    }
}

/// The servers (`serve`, `gate`) log to stderr; stdout carries what scripts read.
pub fn to_stderr(default: &str, json: bool) {
    use std::io::IsTerminal;
    // Colours only for a person at a terminal: stderr sent to a file or a collector gets none.
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter(default))
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match json {
        false => fmt.init(),
        true => {
            fmt.json()
                .with_current_span(true)
                .with_span_list(false)
                .init();
            // A panic's message is a log line too: the default hook's plain text would break
            // the stream of JSON a collector reads.
            std::panic::set_hook(Box::new(|info| {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(panic = %payload, %location, "a task panicked");
            }));
        }
    }
}
