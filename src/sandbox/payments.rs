//! x402 v2 payments as a credential: research runs and usage accept a `PAYMENT-SIGNATURE` header
//! instead of `x-api-key`. The payment is verified offline ([`payment::verify`]) against the
//! sandbox's requirements, its `(payer, nonce)` is recorded in the same step that grants access (a
//! replay is refused), and the payer's wallet maps to an account — created on first payment with
//! the paper balance of a new account. Nothing is settled on chain.

use super::caller::Caller;
use super::core::{Core, View};
use super::error::{AppError, ErrorKind};
use super::keys;
use super::settings::Settings;
use super::store::PaymentNonce;
use crate::api::Scope;
use crate::api::catalog::Operation;
use crate::api::model::PaymentUsage;
use crate::api::payment::{self, PaymentError, PaymentRequirements};

use chrono::{DateTime, Utc};

/// Operations a payment may stand in for an API key on: those the catalog declares so, which is
/// what the OpenAPI document tells clients.
pub fn accepts_payment(op: &Operation) -> bool {
    op.auth == crate::api::catalog::Auth::ApiKeyOrPayment
}

/// What the sandbox asks one paid call for.
pub fn requirements(settings: &Settings) -> PaymentRequirements {
    PaymentRequirements::base_sepolia_usdc(
        &settings.payment_amount,
        &settings.payment_pay_to,
        settings.payment_max_timeout_secs,
    )
}

/// `PAYMENT-REQUIRED` for a 402 answer of `op`.
pub fn required_header(
    settings: &Settings,
    resource_url: &str,
    op: &Operation,
    error: &str,
) -> String {
    payment::payment_required_header(
        resource_url,
        op.summary,
        &[requirements(settings)],
        Some(error),
    )
}

fn payment_error(e: &PaymentError) -> AppError {
    if matches!(e, PaymentError::InvalidRequirements(_)) {
        return AppError::internal(e);
    }
    AppError::new(
        ErrorKind::PaymentRequired,
        e.code(),
        format!("the PAYMENT-SIGNATURE was refused: {e}"),
    )
}

/// 402 for a payment-accepting operation called with no credential.
pub fn missing() -> AppError {
    AppError::new(
        ErrorKind::PaymentRequired,
        "payment_required",
        "send an x-api-key header, or pay for this call with an x402 PAYMENT-SIGNATURE header (the PAYMENT-REQUIRED header says what to pay)",
    )
}

/// The payer's account and its payment key row (quota counters and audit rows need a key id: each
/// paying account has one row labelled "x402 payments" that no plain key hashes to).
fn payer_caller(core: &mut Core, payer: &str, now: DateTime<Utc>) -> Result<Caller, AppError> {
    let (account, _) =
        keys::account_for_wallet(&mut core.store, payer, core.settings.initial_equity, now)
            .map_err(|e| match e {
                keys::KeyError::Db(e) => AppError::from(e),
                other => AppError::internal(other),
            })?;
    let hash = format!("x402:{}", payer.to_ascii_lowercase());
    let key_id = match core.store.key_id_by_hash(&hash)? {
        Some(id) => id,
        None => core.store.insert_key(
            account.id,
            &hash,
            "x402",
            Scope::Legacy,
            "x402 payments",
            now,
        )?,
    };
    Ok(Caller {
        key_id,
        account_id: account.id,
        messenger_id: account.messenger_id,
        wallet: account.wallet,
        scope: Scope::Legacy,
    })
}

/// Verifies a `PAYMENT-SIGNATURE`, spends its nonce and returns the paying caller with the
/// `PAYMENT-RESPONSE` header value.
pub fn authenticate(
    core: &mut Core,
    header: &str,
    op: &Operation,
    now: DateTime<Utc>,
) -> Result<(Caller, String), AppError> {
    let decoded = payment::decode_payment_signature(header).map_err(|e| payment_error(&e))?;
    let reqs = requirements(&core.settings);
    let now_unix = u64::try_from(now.timestamp()).unwrap_or(0);
    let verified = payment::verify(&decoded, &reqs, now_unix).map_err(|e| payment_error(&e))?;
    let payer = format!("0x{}", hex::encode(verified.payer));
    let nonce = format!("0x{}", hex::encode(verified.nonce));
    let caller = payer_caller(core, &payer, now)?;
    let spent = core.store.spend_payment_nonce(
        &PaymentNonce {
            payer: &payer,
            nonce: &nonce,
            valid_before: i64::try_from(verified.valid_before).unwrap_or(i64::MAX),
            account_id: caller.account_id,
            amount: &verified.amount,
            operation: op.name,
        },
        now,
    )?;
    if !spent {
        return Err(AppError::new(
            ErrorKind::PaymentRequired,
            "nonce_used",
            format!(
                "this payment authorization (nonce {nonce}) was already used; sign a new one with a fresh nonce"
            ),
        ));
    }
    let response = payment::payment_response_header(
        verified.payer,
        &reqs.network,
        &format!("sandbox-paper:{nonce}"),
    );
    Ok((caller, response))
}

/// Paid calls of the account on the UTC day `day` (YYYY-MM-DD), and their total in USD.
pub fn usage(core: &View, account_id: i64, day: &str) -> Result<PaymentUsage, AppError> {
    let (mut paid_requests, mut base_units) = (0u64, 0f64);
    for amount in core.store.payment_amounts(account_id, day)? {
        paid_requests += 1;
        base_units += amount.parse::<f64>().unwrap_or(0.0);
    }
    Ok(PaymentUsage {
        paid_requests,
        // USDC has 6 decimals and is counted at 1 USD.
        amount_usd: base_units / 1e6,
    })
}
