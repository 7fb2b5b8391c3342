//! x402 v2 payments over HTTP: a `PAYMENT-SIGNATURE` instead of `x-api-key` on research runs and
//! usage, the 402 `PAYMENT-REQUIRED` answer, and the refusals (tampering, replay, expiry, recipient).

use crate::common::{self, TestServer};
use agentdesk::api::Client;
use agentdesk::api::eip712;
use agentdesk::api::payment::{self, PaymentRequirements};
use agentdesk::sandbox::payments;
use base64::Engine;
use k256::ecdsa::SigningKey;
use reqwest::StatusCode;
use serde_json::Value;

fn payer() -> SigningKey {
    SigningKey::from_slice(&eip712::keccak256(b"agentdesk x402 test payer")).unwrap()
}

fn now(s: &TestServer) -> u64 {
    s.clock_now().timestamp() as u64
}

/// A payment for one call, signed by `key` against `reqs`, valid around the sandbox clock.
fn pay(s: &TestServer, key: &SigningKey, reqs: &PaymentRequirements, value: &str, n: u8) -> String {
    let t = now(s);
    payment::sign_payment(key, reqs, value, t - 10, t + 120, [n; 32]).unwrap()
}

async fn research_status(s: &TestServer, header: &str) -> reqwest::Response {
    s.http()
        .get(s.url("/api/terminal/research/runs/active"))
        .header("PAYMENT-SIGNATURE", header)
        .send()
        .await
        .unwrap()
}

async fn refused(resp: reqwest::Response) -> (StatusCode, String, Value) {
    let status = resp.status();
    let required = resp
        .headers()
        .get("payment-required")
        .map(|v| v.to_str().unwrap().to_string());
    let body: Value = resp.json().await.unwrap();
    // Every 402 says what to pay.
    if status == StatusCode::PAYMENT_REQUIRED {
        payment::decode_payment_required(&required.expect("PAYMENT-REQUIRED on a 402")).unwrap();
    }
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_string(),
        body,
    )
}

#[tokio::test]
async fn a_paid_call_is_served_and_shows_in_usage() {
    let s = common::start().await;
    let reqs = payments::requirements(&s.settings);
    let key = payer();
    let address = eip712::address_of(&key);

    let resp = research_status(&s, &pay(&s, &key, &reqs, "10000", 1)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let receipt = resp
        .headers()
        .get("payment-response")
        .expect("PAYMENT-RESPONSE on a paid answer")
        .to_str()
        .unwrap()
        .to_string();
    let receipt: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(receipt)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(receipt["success"], true);
    assert_eq!(receipt["network"], "eip155:84532");
    assert_eq!(receipt["payer"], eip712::format_address(address));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["success"], true);
    assert!(
        body["run"].is_null(),
        "a new payer's account has no run: {body}"
    );

    // The typed client pays instead of sending a key; the usage call is itself paid.
    let anonymous = Client::new(&s.base_url(), None).unwrap();
    let usage = anonymous
        .paying(pay(&s, &key, &reqs, "10000", 2))
        .get_usage()
        .await
        .unwrap();
    assert_eq!(usage.payment.paid_requests, 2);
    assert!((usage.payment.amount_usd - 0.02).abs() < 1e-9, "{usage:?}");
    // The payer's account is its own, with the paper balance of a new account.
    let usage = anonymous
        .paying(pay(&s, &key, &reqs, "10000", 3))
        .get_usage_v1()
        .await
        .unwrap();
    assert_eq!(usage.payment.paid_requests, 3);
    assert_eq!(
        s.legacy().get_usage().await.unwrap().payment.paid_requests,
        0
    );
}

#[tokio::test]
async fn no_credential_is_402_with_a_decodable_payment_required() {
    let s = common::start().await;
    for path in [
        "/api/terminal/research/runs/active",
        "/api/delegated/usage",
        "/api/v1/usage",
    ] {
        let resp = s.http().get(s.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED, "{path}");
        let header = resp.headers()["payment-required"]
            .to_str()
            .unwrap()
            .to_string();
        let required = payment::decode_payment_required(&header).unwrap();
        assert_eq!(required.x402_version, 2);
        assert!(
            required.resource.url.ends_with(path),
            "{}",
            required.resource.url
        );
        let accept = &required.accepts[0];
        assert_eq!(accept.scheme, "exact");
        assert_eq!(accept.network, "eip155:84532");
        assert_eq!(accept.asset, payment::BASE_SEPOLIA_USDC);
        assert_eq!(accept.amount, s.settings.payment_amount);
        assert_eq!(accept.pay_to, s.settings.payment_pay_to);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "payment_required");
    }
    // Other operations keep answering 401, a payment or not.
    let resp = s
        .http()
        .get(s.url("/api/delegated/whoami"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let reqs = payments::requirements(&s.settings);
    let resp = s
        .http()
        .get(s.url("/api/delegated/whoami"))
        .header("PAYMENT-SIGNATURE", pay(&s, &payer(), &reqs, "10000", 9))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // The typed client reports it as PaymentRequired with the requirements.
    let err = Client::new(&s.base_url(), None)
        .unwrap()
        .research_status()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            agentdesk::api::ApiError::PaymentRequired {
                requirements: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn tampered_replayed_expired_and_misdirected_payments_are_refused() {
    let s = common::start().await;
    let reqs = payments::requirements(&s.settings);
    let key = payer();

    // Tampered amount: signed for 1 base unit, then raised to the price.
    let signed = pay(&s, &key, &reqs, "1", 1);
    let mut payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(&signed)
            .unwrap(),
    )
    .unwrap();
    payload["payload"]["authorization"]["value"] = Value::String(reqs.amount.clone());
    let tampered = base64::engine::general_purpose::STANDARD.encode(payload.to_string());
    let (status, code, body) = refused(research_status(&s, &tampered).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYMENT_REQUIRED, "bad_signature"),
        "{body}"
    );
    // Honestly signed, but for less or more than the price.
    let (status, code, _) = refused(research_status(&s, &pay(&s, &key, &reqs, "1", 2)).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYMENT_REQUIRED, "insufficient_amount")
    );
    let (_, code, _) = refused(research_status(&s, &pay(&s, &key, &reqs, "20000", 3)).await).await;
    assert_eq!(code, "amount_mismatch");

    // Replay: the same authorization twice.
    let once = pay(&s, &key, &reqs, "10000", 4);
    assert_eq!(research_status(&s, &once).await.status(), StatusCode::OK);
    let (status, code, body) = refused(research_status(&s, &once).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYMENT_REQUIRED, "nonce_used"),
        "{body}"
    );

    // Expired: validBefore is in the past of the sandbox clock.
    let t = now(&s);
    let expired = payment::sign_payment(&key, &reqs, "10000", t - 100, t - 1, [5; 32]).unwrap();
    let (_, code, _) = refused(research_status(&s, &expired).await).await;
    assert_eq!(code, "expired_authorization");
    // The clock moves past a valid one too.
    let later = pay(&s, &key, &reqs, "10000", 6);
    s.clock.advance(chrono::Duration::seconds(121));
    let (_, code, _) = refused(research_status(&s, &later).await).await;
    assert_eq!(code, "expired_authorization");

    // Paid to someone else.
    let mut elsewhere = reqs.clone();
    elsewhere.pay_to = "0x1111111111111111111111111111111111111111".into();
    let (status, code, _) =
        refused(research_status(&s, &pay(&s, &key, &elsewhere, "10000", 7)).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYMENT_REQUIRED, "wrong_recipient")
    );

    // Garbage in the header.
    let (status, code, _) = refused(research_status(&s, "not base64!").await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYMENT_REQUIRED, "invalid_payment")
    );

    // Only the one accepted payment was recorded.
    let usage = Client::new(&s.base_url(), None)
        .unwrap()
        .paying(pay(&s, &key, &reqs, "10000", 8))
        .get_usage()
        .await
        .unwrap();
    assert_eq!(usage.payment.paid_requests, 2);
}
