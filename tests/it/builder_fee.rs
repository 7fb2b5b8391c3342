//! Builder-fee approval over HTTP: the EIP-712 round trip with a real wallet key, its refusals, the
//! 409 gate on platform orders, closes and cancels, and the fee charged on platform fills.

use crate::common::{self, TestServer};
use agentdesk::api::eip712;
use agentdesk::api::model::{
    BuilderFeeApproval, CancelRequest, OneOrMany, PlatformClose, PlatformOrder,
};
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::secret::Secret;
use k256::ecdsa::SigningKey;
use serde_json::{Value, json};

/// A fixed private key, so the test is the same on every run.
fn fixed_key() -> SigningKey {
    SigningKey::from_slice(&eip712::keccak256(b"agentdesk builder-fee test wallet")).unwrap()
}

fn address(key: &SigningKey) -> String {
    format!("0x{}", hex::encode(eip712::address_of(key)))
}

fn market_long(usd: f64) -> PlatformOrder {
    PlatformOrder {
        pair: "BTC-USD".into(),
        side: "long".into(),
        order_type: Some("market".into()),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(usd),
        leverage: Some(2),
        ..Default::default()
    }
}

/// `agentdesk keys create --db … --scope … --wallet …`: the key alone on stdout.
fn create_key_for_wallet(s: &TestServer, scope: &str, wallet: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentdesk"))
        .args([
            "keys",
            "create",
            "--db",
            s.db.to_str().unwrap(),
            "--scope",
            scope,
        ])
        .args(["--wallet", wallet])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "the key alone: {stdout}");
    stdout.trim().to_string()
}

/// An unapproved server with a second account bound to the fixed wallet through the real
/// `keys create --wallet` command, and a legacy key on that account.
async fn server_with_fixed_wallet() -> (TestServer, Client, String) {
    let s = common::start_unapproved().await;
    let wallet = address(&fixed_key());
    let plain = create_key_for_wallet(&s, "legacy", &wallet);
    let client = Client::new(&s.base_url(), Some(Secret::new(plain))).unwrap();
    let me = client.whoami(false).await.unwrap();
    assert_ne!(me.messenger_id, s.running.messenger_id, "a new account");
    // A second key for the same wallet lands on the same account (checksummed input too).
    let checksummed = eip712::format_address(eip712::address_of(&fixed_key()));
    let again = create_key_for_wallet(&s, "platform:trade", &checksummed);
    let other = Client::new(&s.base_url(), Some(Secret::new(again))).unwrap();
    assert_eq!(
        other.whoami(false).await.unwrap().messenger_id,
        me.messenger_id
    );
    (s, client, wallet)
}

fn sign(td: &Value, key: &SigningKey) -> String {
    let td: eip712::TypedData = serde_json::from_value(td.clone()).unwrap();
    eip712::sign_digest(key, &eip712::signing_hash(&td).unwrap())
}

fn approval(wallet: &str, nonce: u64, signature: Value) -> BuilderFeeApproval {
    BuilderFeeApproval {
        venue_wallet: wallet.into(),
        nonce,
        signature,
        signature_chain_id: "0x66eee".into(),
    }
}

fn code(err: &ApiError) -> String {
    err.code().unwrap_or_default().to_string()
}

#[tokio::test]
async fn eip712_round_trip_authorizes_and_platform_fills_pay_the_builder_fee() {
    let (s, c, wallet) = server_with_fixed_wallet().await;
    let key = fixed_key();
    assert_eq!(
        c.whoami(false).await.unwrap().wallet_address.as_deref(),
        Some(wallet.as_str())
    );
    let who = c.whoami(true).await.unwrap();
    assert!(!who.summary.unwrap().builder_fee_approved);

    let payload = c.approve_builder_fee_payload(&wallet).await.unwrap();
    assert!(!payload.authorized);
    assert_eq!(payload.signature_chain_id.as_deref(), Some("0x66eee"));
    assert_eq!(payload.max_fee_rate.as_deref(), Some("0.1%"));
    let nonce = payload.nonce.unwrap();
    // The nonce is the sandbox clock in milliseconds.
    assert_eq!(nonce as i64, common::t0().timestamp_millis());
    let td = payload.typed_data.clone().unwrap();
    // The venue's ApproveBuilderFee action, exactly.
    assert_eq!(
        td["primaryType"],
        "HyperliquidTransaction:ApproveBuilderFee"
    );
    assert_eq!(
        td["domain"],
        json!({
            "name": "HyperliquidSignTransaction",
            "version": "1",
            "chainId": 421614,
            "verifyingContract": "0x0000000000000000000000000000000000000000",
        })
    );
    assert_eq!(
        td["types"]["HyperliquidTransaction:ApproveBuilderFee"],
        json!([
            {"name": "hyperliquidChain", "type": "string"},
            {"name": "maxFeeRate", "type": "string"},
            {"name": "builder", "type": "address"},
            {"name": "nonce", "type": "uint64"},
        ])
    );
    assert_eq!(td["message"]["maxFeeRate"], "0.1%");
    assert_eq!(td["message"]["nonce"], nonce);
    assert_eq!(
        td["message"]["builder"],
        s.settings.builder_address.to_ascii_lowercase()
    );

    // Unapproved: orders are refused with advice.
    let err = c
        .platform_place_order(&market_long(1_000.0), None)
        .await
        .unwrap_err();
    assert_eq!(code(&err), "builder_fee_not_approved", "{err:?}");
    assert!(
        err.to_string().contains("/api/v1/venue/builder-fee"),
        "{err}"
    );

    let status = c
        .approve_builder_fee(&approval(&wallet, nonce, json!(sign(&td, &key))))
        .await
        .unwrap();
    assert!(status.authorized);
    assert_eq!(status.max_fee_rate.as_deref(), Some("0.1%"));
    assert!(
        c.whoami(true)
            .await
            .unwrap()
            .summary
            .unwrap()
            .builder_fee_approved
    );
    // Now authorized: nothing to sign.
    let again = c.approve_builder_fee_payload(&wallet).await.unwrap();
    assert!(again.authorized && again.typed_data.is_none() && again.nonce.is_none());
    // The approval is audited like every mutate call.
    let logs = c.list_audit_logs(None).await.unwrap().logs;
    assert!(
        logs.iter().any(|l| l.operation == "approve_builder_fee"),
        "{logs:?}"
    );

    // A platform order works and pays 0.1% of its notional to the builder.
    let done = c
        .platform_place_order(&market_long(10_000.0), None)
        .await
        .unwrap();
    let fill = &done.execution.fills[0];
    let expected = fill.px * fill.sz * 0.001;
    let fee_of = |v: &Value| v.as_str().unwrap().parse::<f64>().unwrap();
    let fill_fee = fee_of(&fill.extra["builderFee"]);
    assert!(
        (fill_fee - expected).abs() < 1e-6,
        "{fill_fee} vs {expected}"
    );
    assert!((fee_of(&done.execution.extra["builderFee"]) - expected).abs() < 1e-6);
    // Opening realizes nothing: cash moved by the venue fee and the builder fee only.
    let cash: f64 = rusqlite::Connection::open(&s.db)
        .unwrap()
        .query_row(
            "SELECT b.cash FROM balances b JOIN accounts a ON a.id = b.account_id
             WHERE lower(a.wallet) = ?1",
            [&wallet],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        (cash - (100_000.0 - fill.fee - expected)).abs() < 1e-6,
        "cash {cash}, venue fee {}, builder fee {expected}",
        fill.fee
    );
    // Closing is a platform fill too.
    let closed = c
        .platform_close_position(&PlatformClose {
            pair: Some("BTC-USD".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let f = &closed.execution.fills[0];
    assert!((fee_of(&closed.execution.extra["builderFee"]) - f.px * f.sz * 0.001).abs() < 1e-6);
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let (_s, c, wallet) = server_with_fixed_wallet().await;
    let key = fixed_key();
    let payload = c.approve_builder_fee_payload(&wallet).await.unwrap();
    let nonce = payload.nonce.unwrap();
    let td = payload.typed_data.unwrap();
    let good = sign(&td, &key);

    // Another wallet's signature: 400 wrong_signer, naming the recovered address.
    let other = SigningKey::from_slice(&[7u8; 32]).unwrap();
    let err = c
        .approve_builder_fee(&approval(&wallet, nonce, json!(sign(&td, &other))))
        .await
        .unwrap_err();
    assert_eq!(code(&err), "wrong_signer", "{err:?}");
    let other_addr = eip712::format_address(eip712::address_of(&other));
    assert!(err.to_string().contains(&other_addr), "{err}");

    // A signature over another nonce recovers to someone else too.
    let next = c.approve_builder_fee_payload(&wallet).await.unwrap();
    assert!(next.nonce.unwrap() > nonce, "nonces are unique per account");
    let err = c
        .approve_builder_fee(&approval(
            &wallet,
            nonce,
            json!(sign(&next.typed_data.unwrap(), &key)),
        ))
        .await
        .unwrap_err();
    assert_eq!(code(&err), "wrong_signer", "{err:?}");

    // A nonce never issued.
    let err = c
        .approve_builder_fee(&approval(&wallet, 12345, json!(good.clone())))
        .await
        .unwrap_err();
    assert_eq!(code(&err), "invalid_nonce", "{err:?}");

    // Another wallet than the account's: 403 on both routes.
    let stranger = address(&other);
    let err = c.approve_builder_fee_payload(&stranger).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Forbidden { code, .. } if code == "wallet_mismatch"),
        "{err:?}"
    );
    let err = c
        .approve_builder_fee(&approval(&stranger, nonce, json!(sign(&td, &other))))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Forbidden { code, .. } if code == "wallet_mismatch"),
        "{err:?}"
    );

    // Malformed signatures and chain ids.
    for bad in [json!("0x1234"), json!("zz"), json!(42), json!({"r": "0x1"})] {
        let err = c
            .approve_builder_fee(&approval(&wallet, nonce, bad.clone()))
            .await
            .unwrap_err();
        assert!(matches!(err, ApiError::Invalid { .. }), "{bad}: {err:?}");
        assert_eq!(code(&err), "invalid_signature", "{bad}: {err:?}");
    }
    let mut zero_r = good.clone();
    zero_r.replace_range(2..66, &"0".repeat(64));
    let err = c
        .approve_builder_fee(&approval(&wallet, nonce, json!(zero_r)))
        .await
        .unwrap_err();
    assert_eq!(code(&err), "bad_signature", "{err:?}");
    for chain in ["0x1", "66eee", "0x", "nope"] {
        let mut req = approval(&wallet, nonce, json!(good.clone()));
        req.signature_chain_id = chain.into();
        let err = c.approve_builder_fee(&req).await.unwrap_err();
        assert_eq!(code(&err), "invalid_chain_id", "{chain}: {err:?}");
    }
    // Missing venueWallet on the payload.
    let err = c.approve_builder_fee_payload("").await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "venueWallet"),
        "{err:?}"
    );
    let err = c.approve_builder_fee_payload("0x12").await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "venueWallet"),
        "{err:?}"
    );

    // The {r, s, v} form works, once; the same nonce again is nonce_used.
    let hex_sig = good.trim_start_matches("0x");
    let rsv = json!({
        "r": format!("0x{}", &hex_sig[..64]),
        "s": format!("0x{}", &hex_sig[64..128]),
        "v": u64::from_str_radix(&hex_sig[128..], 16).unwrap(),
    });
    let ok = c
        .approve_builder_fee(&approval(&wallet, nonce, rsv))
        .await
        .unwrap();
    assert!(ok.authorized);
    let err = c
        .approve_builder_fee(&approval(&wallet, nonce, json!(good)))
        .await
        .unwrap_err();
    assert_eq!(code(&err), "nonce_used", "{err:?}");
}

#[tokio::test]
async fn unapproved_accounts_get_409_on_orders_closes_and_cancels() {
    let s = common::start_unapproved().await;
    let c = s.client(Scope::PlatformTrade);
    assert!(
        !s.legacy()
            .whoami(true)
            .await
            .unwrap()
            .summary
            .unwrap()
            .builder_fee_approved
    );
    let errs = [
        c.platform_place_order(&market_long(1_000.0), None)
            .await
            .map(drop)
            .unwrap_err(),
        c.platform_close_position(&PlatformClose {
            pair: Some("BTC-USD".into()),
            ..Default::default()
        })
        .await
        .map(drop)
        .unwrap_err(),
        c.platform_cancel_order(&CancelRequest {
            oid: OneOrMany::One(1),
            coin: "BTC".into(),
            exchange: None,
            venue_api_key: None,
            venue_wallet: None,
        })
        .await
        .map(drop)
        .unwrap_err(),
    ];
    for err in errs {
        assert!(
            matches!(&err, ApiError::Conflict { code, .. } if code == "builder_fee_not_approved"),
            "{err:?}"
        );
    }
    // Trade signals (/api/v1/trades) are not platform orders: no gate.
    s.client(Scope::WebhookAlerts)
        .place_order(&crate::staged::long_btc())
        .await
        .unwrap();

    // The demo wallet's key, returned once with the new database, approves through HTTP.
    s.approve_builder_fee().await;
    assert!(
        s.legacy()
            .whoami(true)
            .await
            .unwrap()
            .summary
            .unwrap()
            .builder_fee_approved
    );
    c.platform_place_order(&market_long(1_000.0), None)
        .await
        .unwrap();
    // The approval survives a restart.
    let s = s.restart().await;
    s.client(Scope::PlatformTrade)
        .platform_place_order(&market_long(1_000.0), None)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_platform_limit_that_fills_later_pays_the_builder_fee_too() {
    // The demo account is approved by the harness.
    let s = crate::common::start().await;
    let c = s.client(agentdesk::api::Scope::PlatformTrade);
    let mark = c
        .propose_trade(&crate::staged::long_btc())
        .await
        .unwrap()
        .preview
        .mark_px;
    let limit = (mark * 0.997).round();
    let order = PlatformOrder {
        pair: "BTC-USD".into(),
        side: "long".into(),
        order_type: Some("limit".into()),
        limit_price: Some(limit),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(5_000.0),
        ..Default::default()
    };
    let resting = c.platform_place_order(&order, None).await.unwrap();
    assert_eq!(resting.status, "resting");
    let cash = || {
        rusqlite::Connection::open(&s.db)
            .unwrap()
            .query_row(
                "SELECT cash FROM balances ORDER BY account_id LIMIT 1",
                [],
                |r| r.get::<_, f64>(0),
            )
            .unwrap()
    };
    let before = cash();
    let mut filled = None;
    for _ in 0..(7 * 24 * 12) {
        s.clock.advance(chrono::Duration::minutes(5));
        let pos = c.get_positions().await.unwrap().positions;
        if let Some(p) = pos.into_iter().find(|p| p.coin == "BTC") {
            filled = Some(p);
            break;
        }
    }
    let p = filled.expect("the feed came down to the limit within a week");
    assert_eq!(p.entry_px, limit);
    // Cash moved by the venue's maker fee and the 0.1 % builder fee of the fill's notional.
    let notional = p.szi * limit;
    let maker = notional * s.settings.maker_fee_rate;
    let builder = notional * 0.001;
    assert!(
        (before - cash() - maker - builder).abs() < 1e-6,
        "cash moved {}, maker fee {maker}, builder fee {builder}",
        before - cash()
    );
}

#[tokio::test]
async fn body_checks_come_before_the_builder_fee_gate() {
    let s = common::start_unapproved().await;
    let c = s.client(Scope::PlatformTrade);
    let mut order = market_long(1_000.0);
    order.usd_amount = Some(-5.0);
    let err = c.platform_place_order(&order, None).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "usdAmount"),
        "{err:?}"
    );
    let err = c
        .platform_close_position(&PlatformClose {
            pair: Some("BTC-USD".into()),
            percentage: Some(150.0),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "percentage"),
        "{err:?}"
    );
    // A good body still meets the gate.
    let err = c
        .platform_place_order(&market_long(1_000.0), None)
        .await
        .unwrap_err();
    assert_eq!(code(&err), "builder_fee_not_approved", "{err:?}");
}
