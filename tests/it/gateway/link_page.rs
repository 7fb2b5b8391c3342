//! The approval page in a real browser: headless Chromium (Debian's `chromium`) at phone width opens
//! a link, the countdown ticks (so the page's CSP lets its nonce'd script run), the verdicts are
//! shown, a mouse click on Approve posts the form, and the confirmation page follows.
//!
//! Chromium is driven over the DevTools protocol with a minimal WebSocket client written here (text
//! frames, masked as RFC 6455 requires of clients): no WebSocket crate is in the dependency tree,
//! and the browser automation crates pull in far more than the few commands this test sends.

use super::links::{assert_page_headers, get_page};
use super::{Setup, upstream_count};
use base64::Engine;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The browser, killed (it is our child) when the test ends, passed or not.
struct Browser(std::process::Child, tempfile::TempDir);

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

async fn launch(bin: &str) -> (Browser, u16) {
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(bin)
        .args([
            "--headless",
            // Tests run as root in CI containers, where Chromium's sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            "--window-size=390,844",
        ])
        .arg(format!("--user-data-dir={}", dir.path().display()))
        .arg("about:blank")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium starts");
    let browser = Browser(child, dir);
    // Port 0: Chromium picks one and writes it to DevToolsActivePort.
    let file = browser.1.path().join("DevToolsActivePort");
    let start = Instant::now();
    let port = loop {
        // Only a first line ended by its newline: the file may be read half written, and "4"
        // of "45231" parses as well.
        if let Some(port) = std::fs::read_to_string(&file).ok().and_then(|t| {
            t.split_once('\n')
                .and_then(|(first, _)| first.trim().parse().ok())
        }) {
            break port;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromium did not open its DevTools port"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    (browser, port)
}

/// One DevTools session on a page target.
struct Cdp {
    tcp: TcpStream,
    next: u64,
    /// Events read while waiting for answers.
    events: Vec<Value>,
}

impl Cdp {
    async fn connect(port: u16) -> Cdp {
        // The DevTools port opens before the first page is listed as a target.
        let start = Instant::now();
        let ws = loop {
            let list: Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if let Some(ws) = list
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            {
                break ws.to_string();
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no page target within 30 s: {list}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let path = &ws[ws.find("/devtools/").unwrap()..];
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let key = base64::engine::general_purpose::STANDARD.encode({
            use rand::RngExt;
            rand::rng().random::<[u8; 16]>()
        });
        let handshake = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        tcp.write_all(handshake.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            tcp.read_exact(&mut b).await.unwrap();
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        Cdp {
            tcp,
            next: 0,
            events: Vec::new(),
        }
    }

    async fn send_frame(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= u16::MAX as usize => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask: [u8; 4] = {
            use rand::RngExt;
            rand::rng().random()
        };
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.tcp.write_all(&frame).await.unwrap();
    }

    /// The next whole text message (fragments joined).
    async fn read_message(&mut self) -> Value {
        let mut message = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.tcp.read_exact(&mut h).await.unwrap();
            let (fin, opcode) = (h[0] & 0x80 != 0, h[0] & 0x0f);
            let len = match h[1] & 0x7f {
                126 => {
                    let mut b = [0u8; 2];
                    self.tcp.read_exact(&mut b).await.unwrap();
                    u16::from_be_bytes(b) as usize
                }
                127 => {
                    let mut b = [0u8; 8];
                    self.tcp.read_exact(&mut b).await.unwrap();
                    u64::from_be_bytes(b) as usize
                }
                n => n as usize,
            };
            let mut payload = vec![0u8; len];
            self.tcp.read_exact(&mut payload).await.unwrap();
            match opcode {
                0x8 => panic!("chromium closed the DevTools connection"),
                0x9 | 0xA => continue,
                _ => message.extend(payload),
            }
            if fin {
                return serde_json::from_slice(&message).unwrap();
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send_frame(&json!({"id": id, "method": method, "params": params}).to_string())
            .await;
        let answer = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let m = self.read_message().await;
                if m["id"] == id {
                    return m;
                }
                self.events.push(m);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to {method}"));
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn wait_event(&mut self, method: &str) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(i);
        }
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let m = self.read_message().await;
                if m["method"] == method {
                    return m;
                }
                self.events.push(m);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method} event"))
    }

    async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true}),
            )
            .await;
        r["result"]["value"].clone()
    }

    async fn navigate(&mut self, url: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_event("Page.loadEventFired").await;
    }

    async fn screenshot(&mut self, to: &[PathBuf]) {
        let r = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        for path in to {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            match std::fs::write(path, &png) {
                Ok(()) => println!("screenshot: {}", path.display()),
                Err(e) => println!("cannot save the screenshot at {}: {e}", path.display()),
            }
        }
    }
}

#[tokio::test]
async fn the_approval_page_works_in_headless_chromium_at_phone_width() {
    const NAME: &str = "the_approval_page_works_in_headless_chromium_at_phone_width";
    let Some(bin) = chromium() else {
        if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
            panic!("{NAME}: chromium is not installed, and CI is set (.ci/run installs it)");
        }
        eprintln!("skipping {NAME}: chromium is not installed (apt-get install -y chromium)");
        return;
    };
    let s: Setup = super::links::with_rule().await;
    let (_, p, id) = super::links::staged(&s).await;
    let url = super::links::minted(&s, &id).await;
    let (_, headers, _) = get_page(&url).await;
    assert_page_headers(&headers);

    let (_browser, port) = launch(bin).await;
    let mut cdp = Cdp::connect(port).await;
    cdp.call("Page.enable", json!({})).await;
    cdp.call("Log.enable", json!({})).await;
    cdp.call("Runtime.enable", json!({})).await;
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
    )
    .await;
    cdp.navigate(&url).await;

    let title = cdp.eval("document.querySelector('h1').innerText").await;
    assert!(title.as_str().unwrap().contains("Approve"), "{title}");
    let verdicts = cdp
        .eval("document.getElementById('verdicts').innerText")
        .await;
    assert!(
        verdicts.as_str().unwrap().contains("max_notional_usd"),
        "{verdicts}"
    );
    let what = cdp.eval("document.getElementById('what').innerText").await;
    let what = what.as_str().unwrap();
    // The page shows the trade that will execute: the service's preview prices it (the
    // agent asked for 1000 USD; the preview's fill price makes it a little less or more).
    let notional: f64 = what
        .lines()
        .find_map(|l| l.strip_prefix("Notional"))
        .and_then(|v| v.trim().strip_suffix(" USD"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no notional in {what}"));
    assert!(
        what.contains("BTC") && (950.0..1050.0).contains(&notional),
        "{what}"
    );
    assert!(what.contains("the service's preview"), "{what}");
    // The countdown is live: it shows m:ss and moves (polled: a loaded machine may run the
    // page's timer late, but it runs).
    let first = cdp
        .eval("document.getElementById('countdown').textContent")
        .await;
    let secs = |v: &Value| {
        let t = v.as_str().unwrap();
        let (m, s) = t.split_once(':').unwrap_or_else(|| panic!("not m:ss: {t}"));
        m.parse::<i64>().unwrap() * 60 + s.parse::<i64>().unwrap()
    };
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let later = cdp
            .eval("document.getElementById('countdown').textContent")
            .await;
        if secs(&first) - secs(&later) >= 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the countdown did not move in 20 s: {first} then {later}"
        );
    }
    // Nothing the page needs was refused by its own policy, and it fits the phone's width.
    let width = cdp
        .eval("document.documentElement.scrollWidth")
        .await
        .as_i64()
        .unwrap();
    assert!(width <= 390, "the page is {width} px wide at 390 px");
    let shot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/approval-page-390.png");
    let mut shots = vec![shot];
    if std::path::Path::new("/work/notes").is_dir() {
        shots.push(PathBuf::from("/work/notes/approval-page-390.png"));
    }
    cdp.screenshot(&shots).await;

    // A real mouse click on Approve, at the button's centre.
    let rect = cdp
        .eval(
            "(function(){var b=document.getElementById('approve');b.scrollIntoView();\
             var r=b.getBoundingClientRect();return {x:r.x+r.width/2,y:r.y+r.height/2};})()",
        )
        .await;
    cdp.events.retain(|e| e["method"] != "Page.loadEventFired");
    for kind in ["mousePressed", "mouseReleased"] {
        cdp.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": rect["x"], "y": rect["y"], "button": "left", "clickCount": 1}),
        )
        .await;
    }
    cdp.wait_event("Page.loadEventFired").await;
    let text = cdp.eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(
        text.contains("Approved") && text.contains("executed"),
        "{text}"
    );
    let buttons = cdp
        .eval("document.querySelectorAll('button, form').length")
        .await;
    assert_eq!(buttons, 0, "the confirmation offers nothing to press");
    cdp.screenshot(&[
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/approval-page-390-approved.png")
    ])
    .await;
    assert_eq!(s.upstream_confirms(&p), 1);
    assert_eq!(upstream_count(&s, "confirm_trade"), 1);

    let csp_errors: Vec<&Value> = cdp
        .events
        .iter()
        .filter(|e| e.to_string().contains("Content Security Policy"))
        .collect();
    assert!(csp_errors.is_empty(), "{csp_errors:?}");
}
