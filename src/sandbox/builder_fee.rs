//! Builder-fee approval: the account's venue wallet signs the venue's `ApproveBuilderFee` EIP-712
//! action for the sandbox's builder and `maxFeeRate`; until it has, platform orders, closes and
//! cancels answer 409 `builder_fee_not_approved`. Each platform fill is then charged the builder fee.
//!
//! Nonces are issued by `approve_builder_fee_payload` (the sandbox clock in milliseconds, strictly
//! increasing per account), stored unused, and spent in the transaction that records the approval.

use super::core::Core;
use super::error::{AppError, ErrorKind};
use super::settings::{Settings, percent_rate};
use super::store::builder_fee::{self as db, Approval};
use super::store::{DbResult, ts};
use super::venue::exchange::{Book, Fill};
use crate::api::eip712::{self, SignatureInput};
use crate::api::model::{
    BuilderFeeApproval, BuilderFeePayload, BuilderFeeStatus, Execution, fmt_decimal,
};

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::json;

impl Approval {
    /// The fee as a fraction of notional.
    pub fn rate(&self) -> f64 {
        percent_rate(&self.max_fee_rate).unwrap_or(0.0)
    }
}

/// The builder fee a later fill owes (zero for orders that are not a platform order's).
pub fn later_fill_fee(conn: &Connection, fill: &Fill) -> DbResult<f64> {
    let rate = db::order_fee_rate(conn, fill.oid)?;
    Ok(rate.map_or(0.0, |r| fill.px * fill.sz * r))
}

/// The account's approval for the configured builder, if it has one.
pub fn approval(
    conn: &Connection,
    account_id: i64,
    settings: &Settings,
) -> DbResult<Option<Approval>> {
    let row = db::approval(conn, account_id)?;
    // An approval for another builder (the settings changed) does not count.
    Ok(row.filter(|a| a.builder.eq_ignore_ascii_case(&settings.builder_address)))
}

/// The typed data the wallet signs for `nonce`, under the sandbox's builder and fee rate.
pub fn typed_data(settings: &Settings, nonce: u64) -> eip712::TypedData {
    eip712::approve_builder_fee_typed_data(
        &settings.builder_max_fee_rate,
        &settings.builder_address,
        nonce,
    )
}

/// Checks `venueWallet` is a well-formed address and the account's own wallet.
fn check_wallet(
    field_error: fn(&str, String) -> AppError,
    given: &str,
    own: &str,
) -> Result<[u8; 20], AppError> {
    let addr = eip712::parse_address(given.trim()).map_err(|e| {
        field_error(
            "venueWallet",
            format!("venueWallet must be a 0x-prefixed 20-byte hex address ({e})"),
        )
    })?;
    let own_addr = eip712::parse_address(own).ok();
    if own_addr != Some(addr) {
        return Err(AppError::forbidden(
            "wallet_mismatch",
            format!(
                "venueWallet {} is not this account's venue wallet {own}; the builder fee is approved by the account's own wallet",
                eip712::format_address(addr)
            ),
        ));
    }
    Ok(addr)
}

/// `GET /api/v1/venue/builder-fee`: a fresh nonce and the typed data to sign, or `authorized: true`.
pub fn payload(
    core: &mut Core,
    account_id: i64,
    own_wallet: &str,
    venue_wallet: Option<&str>,
    now: DateTime<Utc>,
) -> Result<BuilderFeePayload, AppError> {
    let given = venue_wallet
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            AppError::invalid_query(
                "venueWallet",
                format!(
                    "venueWallet is required: the account's venue wallet address ({own_wallet})"
                ),
            )
        })?;
    let addr = check_wallet(|f, m| AppError::invalid_query(f, m), given, own_wallet)?;
    let settings = &core.settings;
    let common = BuilderFeePayload {
        signature_chain_id: Some(eip712::SIGNATURE_CHAIN_ID.into()),
        builder: Some(settings.builder_address.clone()),
        max_fee_rate: Some(settings.builder_max_fee_rate.clone()),
        venue_wallet: Some(eip712::format_address(addr)),
        ..Default::default()
    };
    if let Some(a) = approval(&core.store.conn, account_id, settings)? {
        let mut out = common;
        out.authorized = true;
        out.extra.insert("approvedAt".into(), json!(a.approved_at));
        out.json_summary = Some(format!(
            "The builder fee ({} for {}) is already approved; nothing to sign.",
            a.max_fee_rate, a.builder
        ));
        return Ok(out);
    }
    let conn = &core.store.conn;
    let last = db::last_nonce(conn, account_id)?;
    let nonce = now.timestamp_millis().max(last.map_or(0, |l| l + 1)).max(1);
    db::issue_nonce(
        conn,
        account_id,
        nonce,
        &own_wallet.to_ascii_lowercase(),
        now,
    )?;
    let td = typed_data(settings, nonce as u64);
    Ok(BuilderFeePayload {
        authorized: false,
        nonce: Some(nonce as u64),
        typed_data: Some(serde_json::to_value(&td).map_err(AppError::internal)?),
        json_summary: Some(format!(
            "Sign typedData with wallet {} (eth_signTypedData_v4), then POST venueWallet, nonce {nonce}, signature and signatureChainId {} to /api/v1/venue/builder-fee.",
            eip712::format_address(addr),
            eip712::SIGNATURE_CHAIN_ID
        )),
        ..common
    })
}

fn bad(code: &'static str, field: &str, message: impl Into<String>) -> AppError {
    AppError::new(ErrorKind::Invalid, code, message).with_field(field)
}

/// `POST /api/v1/venue/builder-fee`: verifies the wallet's signature over the typed data of an
/// issued, unused nonce and records the approval (spending the nonce in the same transaction).
pub fn approve(
    core: &mut Core,
    account_id: i64,
    own_wallet: &str,
    req: &BuilderFeeApproval,
    now: DateTime<Utc>,
) -> Result<BuilderFeeStatus, AppError> {
    let wallet = check_wallet(
        |f, m| AppError::invalid(f, m),
        &req.venue_wallet,
        own_wallet,
    )?;
    let chain = eip712::parse_signature_chain_id(req.signature_chain_id.trim()).map_err(|_| {
        bad(
            "invalid_chain_id",
            "signatureChainId",
            format!(
                "signatureChainId must be a 0x-hex chain id, {} here",
                eip712::SIGNATURE_CHAIN_ID
            ),
        )
    })?;
    if chain != eip712::SIGNATURE_CHAIN_ID_NUM {
        return Err(bad(
            "invalid_chain_id",
            "signatureChainId",
            format!(
                "signatureChainId must be {} (the chain the typed data's domain names), got {}",
                eip712::SIGNATURE_CHAIN_ID,
                req.signature_chain_id
            ),
        ));
    }
    let signature: SignatureInput =
        serde_json::from_value(req.signature.clone()).map_err(|_| {
            bad(
                "invalid_signature",
                "signature",
                "signature must be a 0x-prefixed 65-byte hex string or an object {r, s, v}",
            )
        })?;
    let nonce = i64::try_from(req.nonce).map_err(|_| {
        bad(
            "invalid_nonce",
            "nonce",
            "nonce was not issued to this account",
        )
    })?;
    match db::nonce_used_at(&core.store.conn, account_id, nonce)? {
        None => {
            return Err(bad(
                "invalid_nonce",
                "nonce",
                format!(
                    "nonce {nonce} was not issued to this account; GET /api/v1/venue/builder-fee?venueWallet=… for a fresh one"
                ),
            ));
        }
        Some(Some(at)) => {
            return Err(bad(
                "nonce_used",
                "nonce",
                format!("nonce {nonce} was already used (at {at}); GET a fresh payload"),
            ));
        }
        Some(None) => {}
    }
    let settings = core.settings.clone();
    let digest =
        eip712::signing_hash(&typed_data(&settings, req.nonce)).map_err(AppError::internal)?;
    let signer = eip712::recover_address(&digest, &signature).map_err(|e| match e {
        // The shape is wrong (length, hex, v): malformed input.
        eip712::Eip712Error::InvalidSignature(why) if why != "r or s out of range" => bad(
            "invalid_signature",
            "signature",
            format!("signature is malformed: {why}"),
        ),
        // Well-formed, but no key signed this typed data.
        e => bad(
            "bad_signature",
            "signature",
            format!("the signature does not verify over the typed data of nonce {nonce}: {e}"),
        ),
    })?;
    if signer != wallet {
        return Err(bad(
            "wrong_signer",
            "signature",
            format!(
                "the signature recovers to {}, not to venueWallet {}; sign with the venue wallet",
                eip712::format_address(signer),
                eip712::format_address(wallet)
            ),
        ));
    }
    let signature_text = serde_json::to_string(&req.signature).map_err(AppError::internal)?;
    let tx = core.store.conn.transaction()?;
    if !db::spend_nonce(&tx, account_id, nonce, now)? {
        return Err(bad(
            "nonce_used",
            "nonce",
            format!("nonce {nonce} was already used"),
        ));
    }
    db::save_approval(
        &tx,
        account_id,
        &Approval {
            wallet: own_wallet.to_ascii_lowercase(),
            builder: settings.builder_address.clone(),
            max_fee_rate: settings.builder_max_fee_rate.clone(),
            nonce: nonce as u64,
            approved_at: ts(now),
        },
        &signature_text,
    )?;
    tx.commit()?;
    Ok(BuilderFeeStatus {
        authorized: true,
        venue_wallet: Some(eip712::format_address(wallet)),
        nonce: Some(req.nonce),
        approved_at: Some(ts(now)),
        json_summary: Some(format!(
            "Builder fee approved: {} may charge up to {} per platform fill.",
            settings.builder_address, settings.builder_max_fee_rate
        )),
        builder: Some(settings.builder_address),
        max_fee_rate: Some(settings.builder_max_fee_rate),
        extra: Default::default(),
    })
}

/// Charges the builder fee on `fills` (platform orders and closes): `rate × notional` per fill,
/// deducted from the book's cash and shown as `builderFee` on each fill row and on the execution.
pub fn charge(
    core: &Core,
    account_id: i64,
    book: &mut Book,
    execution: &mut Execution,
    fills: &[Fill],
) -> Result<(), AppError> {
    if fills.is_empty() {
        return Ok(());
    }
    let Some(approval) = approval(&core.store.conn, account_id, &core.settings)? else {
        return Ok(());
    };
    let rate = approval.rate();
    let mut total = 0.0;
    for (i, fill) in fills.iter().enumerate() {
        let fee = fill.px * fill.sz * rate;
        total += fee;
        if let Some(row) = execution.fills.get_mut(i)
            && row.oid == fill.oid
        {
            row.extra
                .insert("builderFee".into(), json!(fmt_decimal(fee)));
        }
    }
    book.cash -= total;
    execution
        .extra
        .insert("builderFee".into(), json!(fmt_decimal(total)));
    execution
        .extra
        .insert("builderFeeRate".into(), json!(approval.max_fee_rate));
    execution
        .extra
        .insert("builder".into(), json!(approval.builder));
    Ok(())
}
