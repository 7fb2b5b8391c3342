//! Bad input never makes a 500: every POST operation the sandbox serves answers malformed, mistyped,
//! incomplete, oversized and out-of-range bodies with a 4xx that names what is wrong.

use crate::common::{self, TestServer};
use agentdesk::api::catalog;
use agentdesk::api::model::{CancelRequest, OneOrMany, PlatformOrder, TradeSignal};
use agentdesk::api::{ApiError, Scope};
use agentdesk::sandbox::Settings;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every POST operation the sandbox serves now.
const POSTS: [&str; 7] = [
    "propose_trade",
    "confirm_trade",
    "close_position",
    "place_order",
    "platform_place_order",
    "platform_close_position",
    "platform_cancel_order",
];

/// 64 KiB: the documented body limit of the sandbox.
const LIMIT: usize = 64 * 1024;

fn path(op: &str) -> &'static str {
    catalog::op(op).path
}

/// A raw POST with the legacy key (allowed everywhere); returns the status and the JSON body.
async fn post(server: &TestServer, op: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let resp = server
        .http()
        .post(server.url(path(op)))
        .header("x-api-key", server.key(Scope::Legacy).expose())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{op}: {e}"));
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{op}: the {status} body is not JSON ({e}): {text}"));
    (status, body)
}

/// Asserts a 4xx error body with `code` (when given) and `field`.
#[track_caller]
fn assert_error(
    case: &str,
    (status, body): &(u16, Value),
    want_status: u16,
    code: Option<&str>,
    field: Option<&str>,
) {
    assert_eq!(*status, want_status, "{case}: {body}");
    assert_eq!(body["success"], false, "{case}: {body}");
    if let Some(code) = code {
        assert_eq!(body["error"]["code"], code, "{case}: {body}");
    }
    if let Some(field) = field {
        assert_eq!(body["error"]["field"], field, "{case}: {body}");
    }
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(!message.is_empty(), "{case}: no message: {body}");
}

// ---- syntax, types, missing fields ---------------------------------------------------------------

#[tokio::test]
async fn malformed_json_is_400_invalid_body_naming_body() {
    let server = common::start().await;
    for op in POSTS {
        for raw in [
            "{not json",
            "{\"a\":",
            "{\"proposalId\":\"p\",}",
            "\u{feff}{}",
            "nul",
        ] {
            let answer = post(&server, op, raw).await;
            assert_error(
                &format!("{op} {raw:?}"),
                &answer,
                400,
                Some("invalid_body"),
                Some("body"),
            );
        }
    }
}

/// Bodies are JSON objects. Scalars and arrays are refused as a whole body; in particular an array
/// is not read positionally as the object's fields.
#[tokio::test]
async fn a_body_that_is_not_an_object_is_refused_as_a_whole() {
    let server = common::start().await;
    for op in POSTS {
        for raw in ["\"text\"", "42", "null", "true", "[]", "[1,2]"] {
            let answer = post(&server, op, raw).await;
            assert_error(
                &format!("{op} {raw}"),
                &answer,
                400,
                Some("invalid_body"),
                Some("body"),
            );
        }
    }
    // A positional array must not execute a proposal.
    let client = server.legacy();
    let staged = client
        .propose_trade(&TradeSignal {
            a: Some("BTCUSDT".into()),
            d: Some("long".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let array = json!([staged.proposal_id]).to_string();
    let answer = post(&server, "confirm_trade", array.clone()).await;
    assert_eq!(answer.0, 400, "confirm with {array}: {}", answer.1);
    assert!(client.get_positions().await.unwrap().positions.is_empty());
}

/// A body is one JSON value: anything after it makes the body malformed, so a request whose end was
/// mangled is refused instead of half-read.
#[tokio::test]
async fn trailing_data_after_the_json_value_is_400_invalid_body() {
    let server = common::start().await;
    for op in POSTS {
        for raw in ["{} trailing", "{}}", "{} {}"] {
            let answer = post(&server, op, raw).await;
            assert_error(
                &format!("{op} {raw:?}"),
                &answer,
                400,
                Some("invalid_body"),
                Some("body"),
            );
        }
    }
    // A valid signal followed by garbage must not stage anything.
    let answer = post(
        &server,
        "propose_trade",
        r#"{"a":"BTCUSDT","d":"long"} {"a":"ETHUSDT","d":"short"}"#,
    )
    .await;
    assert_eq!(answer.0, 400, "{}", answer.1);
    let staged = server
        .legacy()
        .list_proposals(None)
        .await
        .unwrap()
        .proposals;
    assert!(
        staged.is_empty(),
        "staged from a malformed body: {staged:?}"
    );
}

#[tokio::test]
async fn wrong_types_are_400_naming_the_field() {
    let server = common::start().await;
    let cases: &[(&str, Value, &str)] = &[
        ("confirm_trade", json!({"proposalId": 5}), "proposalId"),
        ("confirm_trade", json!({"proposalId": null}), "proposalId"),
        ("close_position", json!({"proposalId": true}), "proposalId"),
        ("close_position", json!({"action": 1}), "action"),
        (
            "platform_place_order",
            json!({"pair": 1, "side": "long"}),
            "pair",
        ),
        (
            "platform_place_order",
            json!({"pair": "BTC-USD", "side": "long", "leverage": "x"}),
            "leverage",
        ),
        (
            "platform_place_order",
            json!({"pair": "BTC-USD", "side": "long", "accountPercentage": "five"}),
            "accountPercentage",
        ),
        (
            "platform_place_order",
            json!({"pair": "BTC-USD", "side": "long", "slEnabled": "yes"}),
            "slEnabled",
        ),
        (
            "platform_cancel_order",
            json!({"oid": "x", "coin": "BTC"}),
            "oid",
        ),
        (
            "platform_cancel_order",
            json!({"oid": 1, "coin": ["BTC"]}),
            "coin",
        ),
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "percentage": "all"}),
            "percentage",
        ),
        ("propose_trade", json!({"a": 5, "d": "long"}), "a"),
        (
            "propose_trade",
            json!({"a": "BTCUSDT", "d": "long", "p": "abc"}),
            "p",
        ),
        (
            "propose_trade",
            json!({"a": "BTCUSDT", "d": "long", "leverage": -3}),
            "leverage",
        ),
        (
            "place_order",
            json!({"a": "BTCUSDT", "d": "long", "fanout": "no"}),
            "fanout",
        ),
        (
            "place_order",
            json!({"a": "BTCUSDT", "d": "long", "tp": {"px": 1}}),
            "tp",
        ),
    ];
    for (op, body, field) in cases {
        let answer = post(&server, op, body.to_string()).await;
        assert_error(
            &format!("{op} {body}"),
            &answer,
            400,
            Some("invalid_body"),
            Some(field),
        );
        let message = answer.1["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{op}: {message}");
    }
}

#[tokio::test]
async fn missing_required_fields_are_400_naming_them() {
    let server = common::start().await;
    let cases: &[(&str, Value, &str)] = &[
        ("platform_place_order", json!({"side": "long"}), "pair"),
        ("platform_place_order", json!({"pair": "BTC-USD"}), "side"),
        ("confirm_trade", json!({}), "proposalId"),
        ("confirm_trade", json!({"proposalId": "  "}), "proposalId"),
        ("close_position", json!({}), "proposalId"),
        ("platform_cancel_order", json!({"coin": "BTC"}), "oid"),
        ("platform_cancel_order", json!({"oid": 1}), "coin"),
        (
            "platform_cancel_order",
            json!({"oid": [], "coin": "BTC"}),
            "oid",
        ),
        ("platform_close_position", json!({}), "pair"),
        ("propose_trade", json!({"d": "long"}), "a"),
        ("propose_trade", json!({"a": "BTCUSDT"}), "d"),
        ("propose_trade", json!({"action": "close"}), "a"),
        ("place_order", json!({}), "a"),
        (
            "propose_trade",
            json!({"a": "BTCUSDT", "d": "long", "o": "limit"}),
            "p",
        ),
        (
            "platform_place_order",
            json!({"pair": "BTC-USD", "side": "long", "orderType": "limit", "sizingMode": "usd", "usdAmount": 100}),
            "limitPrice",
        ),
    ];
    for (op, body, field) in cases {
        let answer = post(&server, op, body.to_string()).await;
        assert_error(&format!("{op} {body}"), &answer, 400, None, Some(field));
    }
    // An empty body reads as `{}`: the same field is named.
    let answer = post(&server, "confirm_trade", "").await;
    assert_error(
        "confirm_trade empty",
        &answer,
        400,
        None,
        Some("proposalId"),
    );
    // And the typed client maps it to ApiError::Invalid with the field.
    let err = server.legacy().confirm_trade("").await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "proposalId"),
        "{err:?}"
    );
}

// ---- size ----------------------------------------------------------------------------------------

/// A JSON object of exactly `len` bytes: `{"strategy":"xxx…"}`.
fn body_of_len(len: usize) -> String {
    let overhead = r#"{"strategy":""}"#.len();
    format!(r#"{{"strategy":"{}"}}"#, "x".repeat(len - overhead))
}

/// Sends a POST with a chunked body (no Content-Length) over a plain TCP connection and returns the
/// status and the body text. The server may answer before it has read the whole body.
async fn post_chunked(server: &TestServer, op: &str, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.running.addr)
        .await
        .unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\nx-api-key: {}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        path(op),
        server.running.addr,
        server.key(Scope::Legacy).expose()
    );
    let mut wire = head.into_bytes();
    for chunk in body.chunks(8 * 1024) {
        wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        wire.extend_from_slice(chunk);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    // The server may stop reading (and reset) once the limit is passed; the answer is what counts.
    let _ = stream.write_all(&wire).await;
    let _ = stream.flush().await;
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{op}: no HTTP status in {text:?}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[tokio::test]
async fn bodies_over_64_kib_are_413_payload_too_large() {
    let server = common::start().await;
    let big = body_of_len(LIMIT + 1);
    for op in POSTS {
        // With Content-Length.
        let answer = post(&server, op, big.clone()).await;
        assert_error(op, &answer, 413, Some("payload_too_large"), None);
        // Without Content-Length (chunked): the limit holds while reading.
        let (status, text) = post_chunked(&server, op, big.as_bytes()).await;
        assert_eq!(status, 413, "{op} chunked: {text}");
        assert!(text.contains("payload_too_large"), "{op} chunked: {text}");
        // Well past the limit, too.
        let (status, _) = post_chunked(&server, op, &vec![b' '; 4 * LIMIT]).await;
        assert_eq!(status, 413, "{op} chunked 256 KiB");
    }
    // The typed client reports it as PayloadTooLarge.
    let err = server
        .legacy()
        .propose_trade(&TradeSignal {
            strategy: Some("x".repeat(LIMIT)),
            a: Some("BTCUSDT".into()),
            d: Some("long".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ApiError::PayloadTooLarge { .. }), "{err:?}");
    // Nothing oversized was staged.
    assert!(
        server
            .legacy()
            .list_proposals(None)
            .await
            .unwrap()
            .proposals
            .is_empty()
    );
}

#[tokio::test]
async fn a_body_of_exactly_64_kib_is_read() {
    let server = common::start().await;
    let exact = body_of_len(LIMIT);
    assert_eq!(exact.len(), LIMIT);
    // Read and parsed: the answer is about the content (no asset), not the size.
    let answer = post(&server, "propose_trade", exact.clone()).await;
    assert_error(
        "64 KiB exactly",
        &answer,
        400,
        Some("invalid_body"),
        Some("a"),
    );
    let (status, text) = post_chunked(&server, "propose_trade", exact.as_bytes()).await;
    assert_eq!(status, 400, "64 KiB chunked: {text}");
}

// ---- values out of range -------------------------------------------------------------------------

#[tokio::test]
async fn trade_signal_values_are_checked_and_named() {
    let server = common::start().await;
    let messenger_id = server.running.messenger_id.clone();
    let signal = |extra: Value| {
        let mut body = json!({"id": messenger_id, "strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (signal(json!({"a": "FOOUSDT"})), "a"),
        (signal(json!({"a": ""})), "a"),
        (signal(json!({"d": "sideways"})), "d"),
        (signal(json!({"o": "stop"})), "o"),
        (signal(json!({"leverage": 51})), "leverage"),
        (signal(json!({"leverage": 0})), "leverage"),
        (signal(json!({"a": "SOLUSDT", "leverage": 21})), "leverage"),
        // A long's take-profit above the price, its stop-loss below; a short's mirrored.
        (signal(json!({"tp": "1"})), "tp"),
        (signal(json!({"sl": "10000000"})), "sl"),
        (signal(json!({"d": "short", "tp": "10000000"})), "tp"),
        (signal(json!({"d": "short", "sl": "1"})), "sl"),
        (signal(json!({"tp": "-5"})), "tp"),
        (signal(json!({"size": "-1"})), "size"),
        (signal(json!({"size": "0.000000001"})), "size"),
        (signal(json!({"sizeUsd": "0"})), "sizeUsd"),
        (signal(json!({"o": "limit", "p": "-1"})), "p"),
        (signal(json!({"exchange": "venue3"})), "exchange"),
        (signal(json!({"action": "flatten"})), "action"),
    ];
    for op in ["propose_trade", "place_order"] {
        for (body, field) in &cases {
            let answer = post(&server, op, body.to_string()).await;
            assert_error(
                &format!("{op} {body}"),
                &answer,
                400,
                Some("invalid_body"),
                Some(field),
            );
        }
        // Within the limits the same signals pass: the checks are not blanket refusals.
        let ok = post(
            &server,
            op,
            signal(json!({"a": "SOLUSDT", "leverage": 20, "fanout": false})).to_string(),
        )
        .await;
        assert_eq!(ok.0, 200, "{op} SOL at 20x: {}", ok.1);
        let ok = post(
            &server,
            op,
            signal(json!({"leverage": 50, "tp": "10000000", "sl": "1"})).to_string(),
        )
        .await;
        assert_eq!(ok.0, 200, "{op} BTC at 50x with TP/SL: {}", ok.1);

        // Another account's id is refused, and named.
        let answer = post(&server, op, signal(json!({"id": "999"})).to_string()).await;
        assert_error(op, &answer, 403, Some("account_mismatch"), Some("id"));
    }
    // The typed client sees the 403 as Forbidden.
    let err = server
        .legacy()
        .propose_trade(&TradeSignal {
            id: Some("not-my-account".into()),
            a: Some("BTCUSDT".into()),
            d: Some("long".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Forbidden { code, .. } if code == "account_mismatch"),
        "{err:?}"
    );
}

#[tokio::test]
async fn platform_order_values_are_checked_and_named() {
    let server = common::start().await;
    let order = |extra: Value| {
        let mut body = json!({
            "pair": "BTC-USD", "side": "long", "orderType": "market", "sizingMode": "account",
            "accountPercentage": 2, "leverage": 3, "exchange": "venue",
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        body
    };
    let wallet = "0x00112233445566778899aabbccddeeff00112233";
    let cases: Vec<(Value, &str)> = vec![
        (order(json!({"pair": "FOO-USD"})), "pair"),
        (order(json!({"side": "up"})), "side"),
        (order(json!({"orderType": "stop"})), "orderType"),
        (order(json!({"leverage": 51})), "leverage"),
        (
            order(json!({"pair": "SOL-USD", "leverage": 21})),
            "leverage",
        ),
        (order(json!({"leverage": 0})), "leverage"),
        (order(json!({"exchange": "venue3"})), "exchange"),
        (
            order(json!({"accountPercentage": null})),
            "accountPercentage",
        ),
        (order(json!({"accountPercentage": 0})), "accountPercentage"),
        (
            order(json!({"accountPercentage": 150})),
            "accountPercentage",
        ),
        (order(json!({"sizingMode": "bananas"})), "sizingMode"),
        (order(json!({"sizingMode": "usd"})), "usdAmount"),
        (
            order(json!({"sizingMode": "usd", "usdAmount": -10})),
            "usdAmount",
        ),
        (order(json!({"sizingMode": "size"})), "size"),
        (order(json!({"tpEnabled": true})), "tpPercentage"),
        (
            order(json!({"slEnabled": true, "slPercentage": 100})),
            "slPercentage",
        ),
        (
            order(json!({"slEnabled": true, "slType": "price", "slPercentage": 2})),
            "slType",
        ),
        (
            order(json!({"tpEnabled": true, "tpPercentage": -4})),
            "tpPercentage",
        ),
        (order(json!({"venueApiKey": "agent-key"})), "venueWallet"),
        (order(json!({"venueWallet": wallet})), "venueApiKey"),
        (
            order(json!({"venueApiKey": "agent-key", "venueWallet": "0x12"})),
            "venueWallet",
        ),
        (
            order(json!({"venueApiKey": " ", "venueWallet": wallet})),
            "venueApiKey",
        ),
    ];
    for (body, field) in &cases {
        let answer = post(&server, "platform_place_order", body.to_string()).await;
        assert_error(
            &format!("platform_place_order {body}"),
            &answer,
            400,
            Some("invalid_body"),
            Some(field),
        );
    }
    // The typed client: sizingMode account without accountPercentage.
    let err = server
        .legacy()
        .platform_place_order(
            &PlatformOrder {
                pair: "BTC-USD".into(),
                side: "long".into(),
                sizing_mode: Some("account".into()),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "accountPercentage"),
        "{err:?}"
    );
    // Both venue credentials together, well formed, pass.
    let ok = post(
        &server,
        "platform_place_order",
        order(json!({"venueApiKey": "agent-key", "venueWallet": wallet})).to_string(),
    )
    .await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    // Nothing was placed by the refused bodies: only the one accepted order is open.
    let positions = server.legacy().get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1);
}

#[tokio::test]
async fn platform_close_and_cancel_check_their_fields() {
    let server = common::start().await;
    let wallet = "0x00112233445566778899aabbccddeeff00112233";
    let cases: &[(&str, Value, u16, &str)] = &[
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "venueApiKey": "k"}),
            400,
            "venueWallet",
        ),
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "venueWallet": wallet}),
            400,
            "venueApiKey",
        ),
        (
            "platform_close_position",
            json!({"pair": "FOO-USD"}),
            400,
            "pair",
        ),
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "percentage": 0}),
            400,
            "percentage",
        ),
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "percentage": 101}),
            400,
            "percentage",
        ),
        (
            "platform_close_position",
            json!({"pair": "BTC-USD", "exchange": "venue3"}),
            400,
            "exchange",
        ),
        (
            "platform_close_position",
            json!({"positionId": "BTC"}),
            400,
            "positionId",
        ),
        (
            "platform_cancel_order",
            json!({"oid": 1, "coin": "BTC", "venueApiKey": "k"}),
            400,
            "venueWallet",
        ),
        (
            "platform_cancel_order",
            json!({"oid": 1, "coin": "BTC", "venueWallet": wallet}),
            400,
            "venueApiKey",
        ),
        (
            "platform_cancel_order",
            json!({"oid": 1, "coin": "FOO"}),
            400,
            "coin",
        ),
        (
            "platform_cancel_order",
            json!({"oid": -1, "coin": "BTC"}),
            400,
            "oid",
        ),
        (
            "platform_cancel_order",
            json!({"oid": 987654321, "coin": "BTC"}),
            404,
            "oid",
        ),
        (
            "platform_cancel_order",
            json!({"oid": [987654321, 987654322], "coin": "BTC"}),
            404,
            "oid",
        ),
        (
            "close_position",
            json!({"proposalId": "prop_x", "action": "flatten"}),
            400,
            "action",
        ),
        (
            "close_position",
            json!({"proposalId": "prop_doesnotexist"}),
            404,
            "proposalId",
        ),
        (
            "confirm_trade",
            json!({"proposalId": "prop_doesnotexist"}),
            404,
            "proposalId",
        ),
    ];
    for (op, body, status, field) in cases {
        let answer = post(&server, op, body.to_string()).await;
        assert_error(&format!("{op} {body}"), &answer, *status, None, Some(field));
    }
    // No position to close is a conflict, not a server error.
    let answer = post(
        &server,
        "platform_close_position",
        json!({"pair": "BTC-USD"}).to_string(),
    )
    .await;
    assert_error("close nothing", &answer, 409, Some("no_position"), None);

    // The typed client: cancelling an unknown oid is NotFound.
    let err = server
        .legacy()
        .platform_cancel_order(&CancelRequest {
            oid: OneOrMany::One(123_456),
            coin: "BTC".into(),
            exchange: None,
            venue_api_key: None,
            venue_wallet: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::NotFound { code, .. } if code == "not_found"),
        "{err:?}"
    );
}

// ---- headers ---------------------------------------------------------------------------------------

#[tokio::test]
async fn odd_headers_are_4xx_not_500() {
    let server = common::start().await;
    let order =
        json!({"pair": "BTC-USD", "side": "long", "sizingMode": "account", "accountPercentage": 1});
    // An Idempotency-Key longer than 255 characters is named.
    let resp = server
        .http()
        .post(server.url(path("platform_place_order")))
        .header("x-api-key", server.key(Scope::Legacy).expose())
        .header("idempotency-key", "k".repeat(256))
        .json(&order)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["field"], "Idempotency-Key", "{body}");

    // A key header that is not text is no key at all.
    let resp = server
        .http()
        .get(server.url("/api/delegated/whoami"))
        .header(
            "x-api-key",
            reqwest::header::HeaderValue::from_bytes(b"adk_\xff\xfe").unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);

    // A content type other than JSON does not change how the body is read, nor crash anything.
    let resp = server
        .http()
        .post(server.url(path("confirm_trade")))
        .header("x-api-key", server.key(Scope::Legacy).expose())
        .header("content-type", "text/plain")
        .body("{\"proposalId\": 7}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["field"], "proposalId");
}

// ---- fuzz ----------------------------------------------------------------------------------------

/// A valid body for each POST operation; the fuzz replaces one field at a time.
fn base_body(op: &str, messenger_id: &str) -> Value {
    match op {
        "propose_trade" | "place_order" => {
            json!({"id": messenger_id, "strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market", "fanout": false})
        }
        "confirm_trade" => json!({"proposalId": "prop_0123456789abcdef"}),
        "close_position" => json!({"proposalId": "prop_0123456789abcdef", "action": "close"}),
        "platform_place_order" => json!({
            "pair": "ETH-USD", "side": "long", "orderType": "market", "sizingMode": "account",
            "accountPercentage": 1, "leverage": 2, "exchange": "venue", "slEnabled": true,
            "slType": "percentage", "slPercentage": 2, "tpEnabled": true, "tpType": "percentage",
            "tpPercentage": 4,
        }),
        "platform_close_position" => {
            json!({"pair": "ETH-USD", "percentage": 50, "exchange": "venue"})
        }
        "platform_cancel_order" => json!({"oid": 100000000, "coin": "BTC"}),
        other => panic!("no base body for {other}"),
    }
}

fn fields_of(op: &str) -> &'static [&'static str] {
    match op {
        "propose_trade" | "place_order" => &[
            "id", "strategy", "a", "d", "p", "tp", "sl", "o", "fanout", "action", "size",
            "sizeUsd", "leverage", "exchange",
        ],
        "confirm_trade" => &["proposalId"],
        "close_position" => &["proposalId", "action"],
        "platform_place_order" => &[
            "pair",
            "side",
            "orderType",
            "sizingMode",
            "accountPercentage",
            "leverage",
            "exchange",
            "slEnabled",
            "slType",
            "slPercentage",
            "tpEnabled",
            "tpType",
            "tpPercentage",
            "limitPrice",
            "usdAmount",
            "size",
            "venueApiKey",
            "venueWallet",
        ],
        "platform_close_position" => &[
            "pair",
            "positionId",
            "percentage",
            "exchange",
            "venueApiKey",
            "venueWallet",
        ],
        "platform_cancel_order" => &["oid", "coin", "exchange", "venueApiKey", "venueWallet"],
        other => panic!("no fields for {other}"),
    }
}

/// Values that are wrong, extreme or odd for some field.
fn odd_values() -> Vec<Value> {
    let big: Value = serde_json::from_str("1e308").unwrap();
    let tiny: Value = serde_json::from_str("1e-308").unwrap();
    let overflow: Value = serde_json::from_str("18446744073709551616").unwrap();
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(0),
        json!(4294967296u64),
        json!(u64::MAX),
        overflow,
        big,
        tiny,
        json!(-0.0),
        json!(""),
        json!(" "),
        json!("x"),
        json!("NaN"),
        json!("inf"),
        json!("-inf"),
        json!("1e999"),
        json!("-5"),
        json!("0.0000000001"),
        json!("99999999999999999999"),
        json!("\u{0}"),
        json!("🚀🚀"),
        json!("limit"),
        json!("close_all"),
        json!("venue2"),
        json!("venue:BTC"),
        json!("venue2:ETH"),
        json!("venue:BTC:extra"),
        json!([]),
        json!([1, 2]),
        json!({}),
        json!({"nested": {"deeper": [null]}}),
    ]
}

/// Not proptest (it is not a dev-dependency): every field of every POST body, one at a time, replaced
/// by each odd value or removed, on top of a valid body. No answer may be a 5xx, and every refusal
/// has the error body shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_bad_body_makes_a_server_error() {
    let server = common::start_with(Settings {
        daily_post_cap: 1_000_000,
        ..Default::default()
    })
    .await;
    let messenger_id = server.running.messenger_id.clone();
    // A position and a resting order to aim at, so closes and cancels reach their deeper checks.
    let legacy = server.legacy();
    legacy
        .platform_place_order(
            &PlatformOrder {
                pair: "ETH-USD".into(),
                side: "long".into(),
                sizing_mode: Some("account".into()),
                account_percentage: Some(1.0),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    legacy
        .place_order(&TradeSignal {
            a: Some("BTCUSDT".into()),
            d: Some("long".into()),
            o: Some("limit".into()),
            p: Some(1_000.0),
            fanout: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();

    let values = odd_values();
    let mut requests = 0;
    for op in POSTS {
        let base = base_body(op, &messenger_id);
        for field in fields_of(op) {
            let mut variants: Vec<Value> = values
                .iter()
                .map(|v| {
                    let mut body = base.clone();
                    body[*field] = v.clone();
                    body
                })
                .collect();
            let mut removed = base.clone();
            removed.as_object_mut().unwrap().remove(*field);
            variants.push(removed);
            for body in variants {
                let (status, answer) = post(&server, op, body.to_string()).await;
                requests += 1;
                assert!(status < 500, "{op} {body} -> {status} {answer}");
                if status != 200 {
                    let code = answer["error"]["code"].as_str().unwrap_or("");
                    let message = answer["error"]["message"].as_str().unwrap_or("");
                    assert!(
                        answer["success"] == false && !code.is_empty() && !message.is_empty(),
                        "{op} {body} -> {status} without an error body: {answer}"
                    );
                    if status == 400 {
                        assert!(
                            answer["error"]["field"].is_string() || code == "staging_required",
                            "{op} {body} -> 400 naming no field: {answer}"
                        );
                    }
                }
            }
        }
        // Unknown fields next to valid ones are ignored or refused, never a crash.
        let mut extra = base.clone();
        extra["unexpected"] = json!({"a": [1, {"b": null}]});
        let (status, answer) = post(&server, op, extra.to_string()).await;
        assert!(
            status < 500,
            "{op} with an unknown field: {status} {answer}"
        );
    }
    assert!(requests > 1_000, "{requests}");
    // The server is still healthy afterwards.
    legacy.whoami(true).await.unwrap();
}

#[tokio::test]
async fn absurd_numbers_are_400_naming_the_field_never_a_staged_order() {
    let server = common::start().await;
    let messenger_id = server.running.messenger_id.clone();
    let with = |base: Value, extra: Value| {
        let mut body = base;
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let signal = json!({"id": messenger_id, "strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market"});
    let signals: Vec<(Value, &str)> = vec![
        (with(signal.clone(), json!({"size": 1e308})), "size"),
        (with(signal.clone(), json!({"size": "5000"})), "size"),
        (with(signal.clone(), json!({"sizeUsd": 1e308})), "sizeUsd"),
        (
            with(signal.clone(), json!({"sizeUsd": 100_000_001})),
            "sizeUsd",
        ),
        (with(signal.clone(), json!({"o": "limit", "p": 1e308})), "p"),
        (
            with(signal.clone(), json!({"o": "limit", "p": 1, "size": 1e200})),
            "size",
        ),
        (with(signal.clone(), json!({"tp": 1e308})), "tp"),
        (with(signal.clone(), json!({"leverage": 1e308})), "leverage"),
    ];
    for op in ["propose_trade", "place_order"] {
        for (body, field) in &signals {
            let answer = post(&server, op, body.to_string()).await;
            assert_error(
                &format!("{op} {body}"),
                &answer,
                400,
                Some("invalid_body"),
                Some(field),
            );
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(!message.contains(" 0 USDC"), "{op} {body}: {message}");
        }
    }
    let order = json!({"pair": "BTC-USD", "side": "long", "orderType": "market", "leverage": 3});
    let orders: Vec<(Value, &str)> = vec![
        (
            with(
                order.clone(),
                json!({"sizingMode": "usd", "usdAmount": 1e308}),
            ),
            "usdAmount",
        ),
        (
            with(order.clone(), json!({"sizingMode": "size", "size": 1e300})),
            "size",
        ),
        (
            with(
                order.clone(),
                json!({"sizingMode": "usd", "usdAmount": 100, "orderType": "limit", "limitPrice": 1e308}),
            ),
            "limitPrice",
        ),
        (
            with(
                order.clone(),
                json!({"sizingMode": "usd", "usdAmount": 100, "tpEnabled": true, "tpPercentage": 1e308}),
            ),
            "tpPercentage",
        ),
        (
            with(
                order.clone(),
                json!({"sizingMode": "usd", "usdAmount": 100, "leverage": 4_294_967_296u64}),
            ),
            "leverage",
        ),
    ];
    for (body, field) in &orders {
        let answer = post(&server, "platform_place_order", body.to_string()).await;
        assert_error(&format!("{body}"), &answer, 400, None, Some(field));
    }
    // Nothing was staged or placed by any of them.
    let client = server.legacy();
    assert!(
        client
            .list_proposals(None)
            .await
            .unwrap()
            .proposals
            .is_empty()
    );
    assert!(client.get_positions().await.unwrap().positions.is_empty());

    // A large order within the limits is staged, and its summary says what it is worth.
    let big = with(
        signal.clone(),
        json!({"sizeUsd": 1_000_000, "leverage": 40}),
    );
    let answer = post(&server, "propose_trade", big.to_string()).await;
    assert_eq!(answer.0, 200, "{}", answer.1);
    let summary = answer.1["json_summary"].as_str().unwrap();
    let worth: f64 = summary
        .split("(~")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no notional in {summary:?}"));
    assert!((worth - 1_000_000.0).abs() < 1_000.0, "{summary}");
}

#[tokio::test]
async fn an_empty_query_value_is_400_naming_the_parameter() {
    let server = common::start().await;
    let mut checked = 0;
    for op in catalog::OPERATIONS.iter().filter(|op| !op.query.is_empty()) {
        let args: Vec<&str> = op.path_params().iter().map(|_| "x").collect();
        for param in op.query {
            let url = server.url(&format!("{}?{}=", op.path_with(&args), param.name));
            let req = match op.method {
                catalog::Method::Get => server.http().get(url),
                catalog::Method::Post => server.http().post(url).body("{}"),
            };
            let resp = req
                .header("x-api-key", server.key(Scope::Legacy).expose())
                .send()
                .await
                .unwrap();
            let answer = (resp.status().as_u16(), resp.json::<Value>().await.unwrap());
            assert_error(
                &format!("{} {}=", op.name, param.name),
                &answer,
                400,
                Some("invalid_query"),
                Some(param.name),
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "only {checked} query parameters in the catalog"
    );
}
