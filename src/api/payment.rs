//! x402 v2 payments, "exact" scheme on EVM (EIP-3009 `TransferWithAuthorization`).
//!
//! A 402 answer carries `PAYMENT-REQUIRED` (see [`payment_required_header`]);
//! the client retries with `PAYMENT-SIGNATURE`, a base64 JSON
//! [`PaymentPayload`] holding a signed USDC transfer authorization, which
//! [`decode_payment_signature`] and [`verify`] check offline.
//!
//! What [`verify`] does NOT do, by design:
//! - **Nonce reuse.** The caller (the sandbox's DB) must record
//!   `(payer, nonce)` from [`VerifiedPayment`] and refuse a repeat, atomically
//!   with granting access. It may forget a nonce once `valid_before` has
//!   passed, because such an authorization no longer verifies.
//! - Balance checks, on-chain settlement, and smart-wallet signatures
//!   (EIP-1271 / ERC-6492): this is a paper-trading sandbox, so only plain
//!   65-byte EOA signatures are accepted.
//!
//! Every input here is attacker-controlled; all failures are [`PaymentError`]s
//! whose `code()` is stable for API bodies and whose `Display` names the field.

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use super::eip712::{self, Field, SignatureInput, TypedData, Types};
use k256::ecdsa::SigningKey;

/// The only protocol version spoken here.
pub const X402_VERSION: u32 = 2;
/// The only scheme supported.
pub const SCHEME_EXACT: &str = "exact";
/// CAIP-2 id of Base Sepolia, the network the sandbox advertises.
pub const BASE_SEPOLIA: &str = "eip155:84532";
/// Circle's USDC on Base Sepolia; its EIP-712 domain is name "USDC", version "2".
pub const BASE_SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
/// How far a client's clock may run ahead of ours when it sets
/// `validBefore = its_now + maxTimeoutSeconds` (what the x402 reference
/// client does) before we call the window too long.
pub const CLOCK_SKEW_SECS: u64 = 30;
/// Header values above this are refused before decoding. Real payloads are
/// well under 2 KiB; the cap bounds the work an anonymous request can cause.
pub const MAX_HEADER_LEN: usize = 16 * 1024;

/// Standard base64 alphabet, padding optional: browsers' `btoa` pads, some
/// hand-rolled clients do not, and neither choice changes the meaning.
const B64_LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const B64: GeneralPurpose = base64::engine::general_purpose::STANDARD;

const TRANSFER_TYPE: &str = "TransferWithAuthorization";

/// Why a payment was refused. `code()` is the machine-readable form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaymentError {
    #[error("invalid payment: `{field}`: {reason}")]
    Invalid { field: String, reason: String },
    #[error("unsupported `x402Version` {0} (only 2 is supported)")]
    UnsupportedVersion(u64),
    #[error("unsupported `accepted.scheme` (only \"exact\" is supported)")]
    UnsupportedScheme,
    #[error("wrong `accepted.network` (expected {expected})")]
    WrongNetwork { expected: String },
    #[error("wrong `accepted.asset` (expected {expected})")]
    WrongAsset { expected: String },
    #[error("wrong recipient in `{field}` (expected {expected})")]
    WrongRecipient {
        field: &'static str,
        expected: String,
    },
    #[error("`payload.authorization.value` {got} is below the required amount {required}")]
    InsufficientAmount { required: String, got: String },
    #[error(
        "`payload.authorization.value` {got} is above the required amount {required}; the exact scheme needs the exact amount"
    )]
    AmountMismatch { required: String, got: String },
    #[error(
        "authorization not yet valid: `payload.authorization.validAfter` {valid_after} is not before now ({now})"
    )]
    NotYetValid { valid_after: u64, now: u64 },
    #[error(
        "authorization expired: `payload.authorization.validBefore` {valid_before} is not after now ({now})"
    )]
    Expired { valid_before: u64, now: u64 },
    #[error("`payload.authorization.validBefore` is more than {max_secs} s in the future")]
    ValidityTooLong { max_secs: u64 },
    #[error("bad `payload.signature`: {0}")]
    BadSignature(String),
    /// Our own configuration is broken; a server bug, not the client's fault.
    #[error("invalid payment requirements (server configuration): {0}")]
    InvalidRequirements(String),
}

impl PaymentError {
    /// Stable snake_case code for API error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            PaymentError::Invalid { .. } => "invalid_payment",
            PaymentError::UnsupportedVersion(_) => "unsupported_version",
            PaymentError::UnsupportedScheme => "unsupported_scheme",
            PaymentError::WrongNetwork { .. } => "wrong_network",
            PaymentError::WrongAsset { .. } => "wrong_asset",
            PaymentError::WrongRecipient { .. } => "wrong_recipient",
            PaymentError::InsufficientAmount { .. } => "insufficient_amount",
            PaymentError::AmountMismatch { .. } => "amount_mismatch",
            PaymentError::NotYetValid { .. } => "not_yet_valid",
            PaymentError::Expired { .. } => "expired_authorization",
            PaymentError::ValidityTooLong { .. } => "validity_too_long",
            PaymentError::BadSignature(_) => "bad_signature",
            PaymentError::InvalidRequirements(_) => "invalid_requirements",
        }
    }
}

fn invalid(field: &str, reason: impl std::fmt::Display) -> PaymentError {
    let mut reason = reason.to_string();
    // serde messages can quote the offending value; keep errors small.
    if reason.len() > 200 {
        let mut end = 200;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
        reason.push('…');
    }
    PaymentError::Invalid {
        field: field.to_owned(),
        reason,
    }
}

/// `extra` of an EVM exact requirement: the token's EIP-712 domain name and
/// version, which the signature must be made under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentExtra {
    pub name: String,
    pub version: String,
}

/// One entry of `accepts` (and the `accepted` echo in a payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    pub scheme: String,
    /// CAIP-2, e.g. `eip155:84532`.
    pub network: String,
    /// Atomic units of `asset`, decimal string.
    pub amount: String,
    /// Token contract address.
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    pub extra: PaymentExtra,
}

impl PaymentRequirements {
    /// Requirements for USDC on Base Sepolia, the sandbox's one offering.
    pub fn base_sepolia_usdc(amount: &str, pay_to: &str, max_timeout_seconds: u64) -> Self {
        PaymentRequirements {
            scheme: SCHEME_EXACT.to_owned(),
            network: BASE_SEPOLIA.to_owned(),
            amount: amount.to_owned(),
            asset: BASE_SEPOLIA_USDC.to_owned(),
            pay_to: pay_to.to_owned(),
            max_timeout_seconds,
            extra: PaymentExtra {
                name: "USDC".to_owned(),
                version: "2".to_owned(),
            },
        }
    }
}

/// `resource` object of x402 v2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub url: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub mime_type: String,
}

/// Body of the `PAYMENT-REQUIRED` header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    pub x402_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub resource: ResourceInfo,
    pub accepts: Vec<PaymentRequirements>,
}

/// EIP-3009 authorization as x402 carries it (all numbers as strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    pub from: String,
    pub to: String,
    #[serde(deserialize_with = "string_or_u64")]
    pub value: String,
    #[serde(deserialize_with = "string_or_u64")]
    pub valid_after: String,
    #[serde(deserialize_with = "string_or_u64")]
    pub valid_before: String,
    /// 0x + 32 bytes hex.
    pub nonce: String,
}

/// `payload` of an exact-EVM payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactEvmPayload {
    pub signature: String,
    pub authorization: Authorization,
}

/// Decoded `PAYMENT-SIGNATURE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    pub x402_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    pub accepted: PaymentRequirements,
    pub payload: ExactEvmPayload,
}

/// What a successful [`verify`] established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPayment {
    /// Signer, equal to `authorization.from`.
    pub payer: [u8; 20],
    /// Authorized value, canonical decimal (equals the required amount).
    pub amount: String,
    /// EIP-3009 nonce; the caller must refuse a repeat per payer.
    pub nonce: [u8; 32],
    /// Unix seconds after which the authorization is dead, so the nonce
    /// record may be pruned.
    pub valid_before: u64,
}

/// Some clients send the timestamps as JSON numbers; x402 specifies strings.
/// Both mean the same, so accept both and keep the string form.
fn string_or_u64<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) if n.is_u64() => Ok(n.to_string()),
        _ => Err(serde::de::Error::custom(
            "expected a decimal string or a non-negative integer",
        )),
    }
}

/// base64 JSON for the `PAYMENT-REQUIRED` header of a 402 answer.
pub fn payment_required_header(
    resource_url: &str,
    description: &str,
    reqs: &[PaymentRequirements],
    error: Option<&str>,
) -> String {
    let body = PaymentRequired {
        x402_version: X402_VERSION,
        error: error.map(str::to_owned),
        resource: ResourceInfo {
            url: resource_url.to_owned(),
            description: description.to_owned(),
            mime_type: "application/json".to_owned(),
        },
        accepts: reqs.to_vec(),
    };
    // Serializing plain strings and integers into a Vec cannot fail.
    B64.encode(serde_json::to_vec(&body).unwrap_or_default())
}

/// Parses a `PAYMENT-REQUIRED` header (for clients and tests).
pub fn decode_payment_required(header: &str) -> Result<PaymentRequired, PaymentError> {
    let value = decode_b64_json(header, "PAYMENT-REQUIRED")?;
    serde_json::from_value(value).map_err(|e| invalid("PAYMENT-REQUIRED", e))
}

/// base64 JSON for a `PAYMENT-RESPONSE` header. The sandbox settles nothing
/// on chain, so `transaction` is whatever reference the caller chooses.
pub fn payment_response_header(payer: [u8; 20], network: &str, transaction: &str) -> String {
    let body = json!({
        "success": true,
        "payer": eip712::format_address(payer),
        "network": network,
        "transaction": transaction,
    });
    B64.encode(body.to_string())
}

fn decode_b64_json(header: &str, name: &str) -> Result<Value, PaymentError> {
    let header = header.trim();
    if header.is_empty() {
        return Err(invalid(name, "header is empty"));
    }
    if header.len() > MAX_HEADER_LEN {
        return Err(invalid(
            name,
            format!("header longer than {MAX_HEADER_LEN} bytes"),
        ));
    }
    let bytes = B64_LENIENT
        .decode(header)
        .map_err(|_| invalid(name, "not valid base64"))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(name, format!("not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(invalid(name, "expected a JSON object"));
    }
    Ok(value)
}

/// Decodes a `PAYMENT-SIGNATURE` header value: base64 → JSON → [`PaymentPayload`].
///
/// Each part is parsed separately so the error names the field at fault.
/// Only shape is checked here; [`verify`] does the semantics.
pub fn decode_payment_signature(header: &str) -> Result<PaymentPayload, PaymentError> {
    let mut value = decode_b64_json(header, "PAYMENT-SIGNATURE")?;
    let version = value
        .get("x402Version")
        .ok_or_else(|| invalid("x402Version", "missing"))?
        .as_u64()
        .ok_or_else(|| invalid("x402Version", "expected a non-negative integer"))?;
    // Checked before the rest: a v1 payload has a different shape, and
    // "unsupported version" is the useful answer for it.
    if version != u64::from(X402_VERSION) {
        return Err(PaymentError::UnsupportedVersion(version));
    }
    let resource = match value.get_mut("resource").map(Value::take) {
        None | Some(Value::Null) => None,
        Some(r) => Some(serde_json::from_value(r).map_err(|e| invalid("resource", e))?),
    };
    let accepted = value
        .get_mut("accepted")
        .map(Value::take)
        .ok_or_else(|| invalid("accepted", "missing"))?;
    let accepted = serde_json::from_value(accepted).map_err(|e| invalid("accepted", e))?;
    let payload = value
        .get_mut("payload")
        .filter(|p| p.is_object())
        .ok_or_else(|| invalid("payload", "missing or not an object"))?;
    let signature = match payload.get_mut("signature").map(Value::take) {
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid("payload.signature", "expected a 0x-hex string")),
        None => return Err(invalid("payload.signature", "missing")),
    };
    let authorization = payload
        .get_mut("authorization")
        .map(Value::take)
        .ok_or_else(|| invalid("payload.authorization", "missing"))?;
    let authorization =
        serde_json::from_value(authorization).map_err(|e| invalid("payload.authorization", e))?;
    Ok(PaymentPayload {
        x402_version: X402_VERSION,
        resource,
        accepted,
        payload: ExactEvmPayload {
            signature,
            authorization,
        },
    })
}

/// EIP-712 typed data of an EIP-3009 `TransferWithAuthorization` under the
/// token domain given by `reqs` (name/version from `extra`, chain id from the
/// CAIP-2 network, verifying contract = asset).
pub fn transfer_with_authorization_typed_data(
    reqs: &PaymentRequirements,
    auth: &Authorization,
) -> Result<TypedData, PaymentError> {
    let chain_id = evm_chain_id(&reqs.network).ok_or_else(|| {
        PaymentError::InvalidRequirements("network is not eip155:<chain id>".into())
    })?;
    let mut types = Types::new();
    types.insert("EIP712Domain".to_owned(), eip712::domain_fields());
    types.insert(
        TRANSFER_TYPE.to_owned(),
        vec![
            Field::new("from", "address"),
            Field::new("to", "address"),
            Field::new("value", "uint256"),
            Field::new("validAfter", "uint256"),
            Field::new("validBefore", "uint256"),
            Field::new("nonce", "bytes32"),
        ],
    );
    Ok(TypedData {
        types,
        primary_type: TRANSFER_TYPE.to_owned(),
        domain: json!({
            "name": reqs.extra.name,
            "version": reqs.extra.version,
            "chainId": chain_id,
            "verifyingContract": reqs.asset,
        }),
        message: json!({
            "from": auth.from,
            "to": auth.to,
            "value": auth.value,
            "validAfter": auth.valid_after,
            "validBefore": auth.valid_before,
            "nonce": auth.nonce,
        }),
    })
}

/// `eip155:84532` → 84532.
fn evm_chain_id(network: &str) -> Option<u64> {
    let id = network.strip_prefix("eip155:")?;
    if id.is_empty() || id.starts_with('0') || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

fn config_address(value: &str, what: &str) -> Result<[u8; 20], PaymentError> {
    eip712::parse_address(value)
        .map_err(|e| PaymentError::InvalidRequirements(format!("{what}: {e}")))
}

fn payload_address(value: &str, field: &str) -> Result<[u8; 20], PaymentError> {
    eip712::parse_address(value).map_err(|e| invalid(field, e))
}

/// Decimal string (as x402 sends uint256s) to a 32-byte word.
fn decimal_word(value: &str, field: &str) -> Result<[u8; 32], PaymentError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(field, "expected a decimal integer string"));
    }
    eip712::parse_uint_str(value).map_err(|e| invalid(field, e))
}

/// A uint256 time as u64 seconds; anything larger saturates, which reads as
/// "far future" in every comparison below.
fn word_to_u64_saturating(w: &[u8; 32]) -> u64 {
    if w[..24].iter().any(|&b| b != 0) {
        return u64::MAX;
    }
    let mut low = [0u8; 8];
    low.copy_from_slice(&w[24..]);
    u64::from_be_bytes(low)
}

/// Verifies a decoded payment against what we asked for, at `now_unix`.
///
/// Checked, in order (cheap checks first, the signature last):
/// 1. `x402Version` is 2; `accepted` names scheme "exact" and our network,
///    asset and `payTo` (so mismatches get a precise error).
/// 2. `authorization.to` is our `payTo`.
/// 3. **Amount: `value` must equal `amount` exactly.** Less is
///    `insufficient_amount`; more is `amount_mismatch`. The x402 v2 reference
///    facilitator also demands equality for "exact", and settling an
///    overpaying authorization would move the whole authorized value, i.e.
///    silently overcharge the payer.
/// 4. **Time window:** `validAfter < now < validBefore` — strict on both
///    sides, as USDC's `transferWithAuthorization` enforces on chain (so a
///    payload accepted here could also settle) — and
///    `validBefore − now ≤ maxTimeoutSeconds + CLOCK_SKEW_SECS`. The upper
///    bound keeps authorizations short-lived, which bounds how long the
///    caller must remember nonces; the skew allowance covers clients whose
///    clock runs a little ahead when they set
///    `validBefore = now + maxTimeoutSeconds`.
/// 5. The EIP-712 signature over `TransferWithAuthorization`, under the token
///    domain from **`expected`** (never from the client's `accepted`),
///    recovers to `from`. High-s signatures are refused, as USDC's on-chain
///    `ecrecover` wrapper refuses them; v must be 27/28 (or 0/1).
///
/// Nonce reuse is NOT checked here: the caller must atomically record
/// `(payer, nonce)` and refuse repeats.
pub fn verify(
    p: &PaymentPayload,
    expected: &PaymentRequirements,
    now_unix: u64,
) -> Result<VerifiedPayment, PaymentError> {
    if p.x402_version != X402_VERSION {
        return Err(PaymentError::UnsupportedVersion(u64::from(p.x402_version)));
    }
    if expected.scheme != SCHEME_EXACT {
        return Err(PaymentError::InvalidRequirements(
            "scheme must be \"exact\"".into(),
        ));
    }
    let asset = config_address(&expected.asset, "asset")?;
    let pay_to = config_address(&expected.pay_to, "payTo")?;
    let required = eip712::parse_uint_str(&expected.amount)
        .map_err(|e| PaymentError::InvalidRequirements(format!("amount: {e}")))?;

    let accepted = &p.accepted;
    if accepted.scheme != SCHEME_EXACT {
        return Err(PaymentError::UnsupportedScheme);
    }
    if accepted.network != expected.network {
        return Err(PaymentError::WrongNetwork {
            expected: expected.network.clone(),
        });
    }
    if payload_address(&accepted.asset, "accepted.asset")? != asset {
        return Err(PaymentError::WrongAsset {
            expected: eip712::format_address(asset),
        });
    }
    if payload_address(&accepted.pay_to, "accepted.payTo")? != pay_to {
        return Err(PaymentError::WrongRecipient {
            field: "accepted.payTo",
            expected: eip712::format_address(pay_to),
        });
    }

    let auth = &p.payload.authorization;
    let from = payload_address(&auth.from, "payload.authorization.from")?;
    if payload_address(&auth.to, "payload.authorization.to")? != pay_to {
        return Err(PaymentError::WrongRecipient {
            field: "payload.authorization.to",
            expected: eip712::format_address(pay_to),
        });
    }
    let value = decimal_word(&auth.value, "payload.authorization.value")?;
    let valid_after = decimal_word(&auth.valid_after, "payload.authorization.validAfter")?;
    let valid_before = decimal_word(&auth.valid_before, "payload.authorization.validBefore")?;
    let nonce = parse_nonce(&auth.nonce)?;

    // Big-endian words of equal length compare numerically.
    if value < required {
        return Err(PaymentError::InsufficientAmount {
            required: eip712::format_uint_word(&required),
            got: eip712::format_uint_word(&value),
        });
    }
    if value > required {
        return Err(PaymentError::AmountMismatch {
            required: eip712::format_uint_word(&required),
            got: eip712::format_uint_word(&value),
        });
    }

    let valid_after = word_to_u64_saturating(&valid_after);
    let valid_before = word_to_u64_saturating(&valid_before);
    if valid_after >= now_unix {
        return Err(PaymentError::NotYetValid {
            valid_after,
            now: now_unix,
        });
    }
    if valid_before <= now_unix {
        return Err(PaymentError::Expired {
            valid_before,
            now: now_unix,
        });
    }
    let max_secs = expected.max_timeout_seconds.saturating_add(CLOCK_SKEW_SECS);
    if valid_before - now_unix > max_secs {
        return Err(PaymentError::ValidityTooLong { max_secs });
    }

    let digest = eip712::signing_hash(&transfer_with_authorization_typed_data(expected, auth)?)
        .map_err(|e| invalid("payload.authorization", e))?;
    let signer =
        eip712::recover_address_low_s(&digest, &SignatureInput::Hex(p.payload.signature.clone()))
            .map_err(|e| PaymentError::BadSignature(e.to_string()))?;
    if signer != from {
        return Err(PaymentError::BadSignature(
            "signer is not `payload.authorization.from`".into(),
        ));
    }
    Ok(VerifiedPayment {
        payer: from,
        amount: eip712::format_uint_word(&value),
        nonce,
        valid_before,
    })
}

fn parse_nonce(s: &str) -> Result<[u8; 32], PaymentError> {
    const FIELD: &str = "payload.authorization.nonce";
    let digits = s
        .strip_prefix("0x")
        .ok_or_else(|| invalid(FIELD, "expected 0x + 64 hex digits"))?;
    let mut out = [0u8; 32];
    if digits.len() != 64 || hex::decode_to_slice(digits, &mut out).is_err() {
        return Err(invalid(FIELD, "expected 0x + 64 hex digits"));
    }
    Ok(out)
}

/// Builds and signs a payment for `reqs` with `key`, returning the
/// `PAYMENT-SIGNATURE` header value. For clients and tests.
///
/// Fails only if `reqs` itself is malformed (bad addresses or network) or
/// `value` is not a decimal uint256.
pub fn sign_payment(
    key: &SigningKey,
    reqs: &PaymentRequirements,
    value: &str,
    valid_after: u64,
    valid_before: u64,
    nonce: [u8; 32],
) -> Result<String, PaymentError> {
    let auth = Authorization {
        from: eip712::format_address(eip712::address_of(key)),
        to: reqs.pay_to.clone(),
        value: value.to_owned(),
        valid_after: valid_after.to_string(),
        valid_before: valid_before.to_string(),
        nonce: format!("0x{}", hex::encode(nonce)),
    };
    let digest = eip712::signing_hash(&transfer_with_authorization_typed_data(reqs, &auth)?)
        .map_err(|e| PaymentError::InvalidRequirements(e.to_string()))?;
    let payload = PaymentPayload {
        x402_version: X402_VERSION,
        resource: None,
        accepted: reqs.clone(),
        payload: ExactEvmPayload {
            signature: eip712::sign_digest(key, &digest),
            authorization: auth,
        },
    };
    let json = serde_json::to_vec(&payload)
        .map_err(|e| PaymentError::InvalidRequirements(e.to_string()))?;
    Ok(B64.encode(json))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
    const NOW: u64 = 1_750_000_000;

    fn key() -> SigningKey {
        SigningKey::from_slice(&eip712::keccak256(b"x402 test payer")).unwrap()
    }

    fn reqs() -> PaymentRequirements {
        PaymentRequirements::base_sepolia_usdc("10000", PAY_TO, 60)
    }

    fn signed(value: &str, after: u64, before: u64) -> String {
        sign_payment(&key(), &reqs(), value, after, before, [9u8; 32]).unwrap()
    }

    fn decode_b64(h: &str) -> Value {
        serde_json::from_slice(&B64.decode(h).unwrap()).unwrap()
    }

    fn encode(v: &Value) -> String {
        B64.encode(v.to_string())
    }

    fn check(header: &str) -> Result<VerifiedPayment, PaymentError> {
        verify(&decode_payment_signature(header)?, &reqs(), NOW)
    }

    #[test]
    fn round_trip() {
        let h = signed("10000", NOW - 600, NOW + 60);
        let v = check(&h).unwrap();
        assert_eq!(v.payer, eip712::address_of(&key()));
        assert_eq!(v.amount, "10000");
        assert_eq!(v.nonce, [9u8; 32]);
        assert_eq!(v.valid_before, NOW + 60);
        // The wire shape is what x402 clients produce.
        let j = decode_b64(&h);
        assert_eq!(j["x402Version"], 2);
        assert_eq!(j["accepted"]["payTo"], PAY_TO);
        assert_eq!(j["accepted"]["maxTimeoutSeconds"], 60);
        assert_eq!(
            j["payload"]["authorization"]["validBefore"],
            (NOW + 60).to_string()
        );
        assert!(
            j["payload"]["signature"]
                .as_str()
                .unwrap()
                .starts_with("0x")
        );
    }

    #[test]
    fn lenient_shapes_accepted() {
        // Unpadded base64, numeric timestamps, lowercase addresses, extra
        // fields, and a resource object all still verify.
        let mut j = decode_b64(&signed("10000", NOW - 600, NOW + 60));
        j["payload"]["authorization"]["validAfter"] = json!(NOW - 600);
        j["payload"]["authorization"]["validBefore"] = json!(NOW + 60);
        j["accepted"]["payTo"] = json!(PAY_TO.to_lowercase());
        j["accepted"]["extra"]["more"] = json!(1);
        j["extensions"] = json!({});
        j["resource"] =
            json!({"url": "https://x/y", "description": "d", "mimeType": "application/json"});
        let h = encode(&j);
        assert!(check(h.trim_end_matches('=')).is_ok());
        assert!(check(&format!("  {h}\n")).is_ok());
    }

    #[test]
    fn payment_required_header_shape() {
        let h = payment_required_header(
            "https://sandbox/api/research",
            "Research run",
            &[reqs()],
            Some("PAYMENT-SIGNATURE header is required"),
        );
        let j = decode_b64(&h);
        assert_eq!(j["x402Version"], 2);
        assert_eq!(j["error"], "PAYMENT-SIGNATURE header is required");
        assert_eq!(j["resource"]["mimeType"], "application/json");
        let a = &j["accepts"][0];
        assert_eq!(a["scheme"], "exact");
        assert_eq!(a["network"], "eip155:84532");
        assert_eq!(a["amount"], "10000");
        assert_eq!(a["asset"], BASE_SEPOLIA_USDC);
        assert_eq!(a["payTo"], PAY_TO);
        assert_eq!(a["maxTimeoutSeconds"], 60);
        assert_eq!(a["extra"], json!({"name": "USDC", "version": "2"}));
        let no_err = decode_b64(&payment_required_header("u", "d", &[], None));
        assert!(no_err.get("error").is_none());
        let parsed = decode_payment_required(&h).unwrap();
        assert_eq!(parsed.accepts, vec![reqs()]);
        let resp = decode_b64(&payment_response_header([1; 20], BASE_SEPOLIA, "sandbox-1"));
        assert_eq!(resp["success"], true);
    }

    #[test]
    fn refusals_have_codes() {
        let good = decode_b64(&signed("10000", NOW - 600, NOW + 60));
        let with = |f: &dyn Fn(&mut Value)| {
            let mut j = good.clone();
            f(&mut j);
            check(&encode(&j)).unwrap_err()
        };
        let code = |f: &dyn Fn(&mut Value)| with(f).code();
        assert_eq!(
            code(&|j| j["x402Version"] = json!(1)),
            "unsupported_version"
        );
        assert_eq!(
            code(&|j| j["accepted"]["scheme"] = json!("upto")),
            "unsupported_scheme"
        );
        assert_eq!(
            code(&|j| j["accepted"]["network"] = json!("eip155:8453")),
            "wrong_network"
        );
        assert_eq!(
            code(&|j| j["accepted"]["asset"] = json!(PAY_TO)),
            "wrong_asset"
        );
        assert_eq!(
            code(&|j| j["accepted"]["payTo"] = json!(BASE_SEPOLIA_USDC)),
            "wrong_recipient"
        );
        assert_eq!(
            code(&|j| j["payload"]["authorization"]["to"] = json!(BASE_SEPOLIA_USDC)),
            "wrong_recipient"
        );
        assert_eq!(
            code(&|j| j["payload"]["authorization"]["nonce"] = json!("0x12")),
            "invalid_payment"
        );
        assert_eq!(
            code(&|j| j["payload"]["authorization"]["from"] = json!("nope")),
            "invalid_payment"
        );
        assert_eq!(
            code(&|j| j["payload"]["signature"] = json!("0x00")),
            "bad_signature"
        );
        // Another signer's valid signature.
        let other = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let other_sig = decode_b64(
            &sign_payment(&other, &reqs(), "10000", NOW - 600, NOW + 60, [9u8; 32]).unwrap(),
        )["payload"]["signature"]
            .clone();
        let e = with(&|j| j["payload"]["signature"] = other_sig.clone());
        assert_eq!(e.code(), "bad_signature");
        assert!(e.to_string().contains("payload.authorization.from"), "{e}");

        // Signed correctly but with wrong amounts or times.
        assert_eq!(
            check(&signed("9999", NOW - 600, NOW + 60))
                .unwrap_err()
                .code(),
            "insufficient_amount"
        );
        assert_eq!(
            check(&signed("10001", NOW - 600, NOW + 60))
                .unwrap_err()
                .code(),
            "amount_mismatch"
        );
        assert_eq!(
            check(&signed("10000", NOW, NOW + 60)).unwrap_err().code(),
            "not_yet_valid"
        );
        assert_eq!(
            check(&signed("10000", NOW + 5, NOW + 60))
                .unwrap_err()
                .code(),
            "not_yet_valid"
        );
        assert_eq!(
            check(&signed("10000", NOW - 600, NOW)).unwrap_err().code(),
            "expired_authorization"
        );
        assert_eq!(
            check(&signed("10000", NOW - 600, NOW - 1))
                .unwrap_err()
                .code(),
            "expired_authorization"
        );
        assert!(check(&signed("10000", NOW - 600, NOW + 60 + CLOCK_SKEW_SECS)).is_ok());
        assert_eq!(
            check(&signed("10000", NOW - 600, NOW + 61 + CLOCK_SKEW_SECS))
                .unwrap_err()
                .code(),
            "validity_too_long"
        );
        assert!(check(&signed("10000", NOW - 1, NOW + 1)).is_ok());
    }

    #[test]
    fn tampering_breaks_signature() {
        let good = decode_b64(&signed("10000", NOW - 600, NOW + 60));
        let tamper = |path: &[&str], v: Value| {
            let mut j = good.clone();
            let mut cur = &mut j;
            for p in path {
                cur = &mut cur[*p];
            }
            *cur = v;
            check(&encode(&j)).unwrap_err().code()
        };
        // Pay less than signed, with the server asking for less too: the
        // amount passes but the signature no longer matches.
        let mut j = good.clone();
        j["payload"]["authorization"]["value"] = json!("5000");
        j["accepted"]["amount"] = json!("5000");
        let cheaper = PaymentRequirements::base_sepolia_usdc("5000", PAY_TO, 60);
        let e = verify(
            &decode_payment_signature(&encode(&j)).unwrap(),
            &cheaper,
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.code(), "bad_signature");
        // Amount raised after signing (to meet a higher price).
        let pricier = PaymentRequirements::base_sepolia_usdc("20000", PAY_TO, 60);
        let mut j = good.clone();
        j["payload"]["authorization"]["value"] = json!("20000");
        let e = verify(
            &decode_payment_signature(&encode(&j)).unwrap(),
            &pricier,
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.code(), "bad_signature");
        let auth = ["payload", "authorization"];
        assert_eq!(
            tamper(
                &[auth[0], auth[1], "nonce"],
                json!(format!("0x{}", "08".repeat(32)))
            ),
            "bad_signature"
        );
        assert_eq!(
            tamper(
                &[auth[0], auth[1], "validBefore"],
                json!((NOW + 59).to_string())
            ),
            "bad_signature"
        );
        assert_eq!(
            tamper(&[auth[0], auth[1], "validAfter"], json!("0")),
            "bad_signature"
        );
        // A client-chosen domain in `accepted.extra` is not used: verify takes
        // the domain from `expected`.
        let mut other_domain = reqs();
        other_domain.extra.name = "USD Coin".into();
        let h = sign_payment(
            &key(),
            &other_domain,
            "10000",
            NOW - 600,
            NOW + 60,
            [9u8; 32],
        )
        .unwrap();
        assert_eq!(check(&h).unwrap_err().code(), "bad_signature");
    }

    #[test]
    fn high_s_refused() {
        let mut j = decode_b64(&signed("10000", NOW - 600, NOW + 60));
        let sig = j["payload"]["signature"].as_str().unwrap().to_owned();
        let raw = hex::decode(&sig[2..]).unwrap();
        let n: [u8; 32] =
            hex::decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
                .unwrap()
                .try_into()
                .unwrap();
        let mut high = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = i16::from(n[i]) - i16::from(raw[32 + i]) - borrow;
            borrow = i16::from(d < 0);
            high[i] = (d + 256 * borrow) as u8;
        }
        let v = if raw[64] == 27 { 28 } else { 27 };
        j["payload"]["signature"] = json!(format!(
            "0x{}{}{:02x}",
            hex::encode(&raw[..32]),
            hex::encode(high),
            v
        ));
        let e = check(&encode(&j)).unwrap_err();
        assert_eq!(e.code(), "bad_signature");
        assert!(e.to_string().contains("high s"), "{e}");
    }

    #[test]
    fn decode_errors_name_the_field() {
        let good = decode_b64(&signed("10000", NOW - 600, NOW + 60));
        let field_of = |h: &str| match decode_payment_signature(h) {
            Err(PaymentError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field_of(""), "PAYMENT-SIGNATURE");
        assert_eq!(field_of("!!!not base64"), "PAYMENT-SIGNATURE");
        assert_eq!(field_of(&B64.encode("not json")), "PAYMENT-SIGNATURE");
        assert_eq!(field_of(&B64.encode("[1]")), "PAYMENT-SIGNATURE");
        assert_eq!(
            field_of(&"A".repeat(MAX_HEADER_LEN + 4)),
            "PAYMENT-SIGNATURE"
        );
        let without = |path: &[&str]| {
            let mut j = good.clone();
            let (last, parents) = path.split_last().unwrap();
            let mut cur = &mut j;
            for p in parents {
                cur = &mut cur[*p];
            }
            cur.as_object_mut().unwrap().remove(*last);
            encode(&j)
        };
        assert_eq!(field_of(&without(&["x402Version"])), "x402Version");
        assert_eq!(field_of(&without(&["accepted"])), "accepted");
        assert_eq!(field_of(&without(&["payload"])), "payload");
        assert_eq!(
            field_of(&without(&["payload", "signature"])),
            "payload.signature"
        );
        assert_eq!(
            field_of(&without(&["payload", "authorization"])),
            "payload.authorization"
        );
        let e = decode_payment_signature(&without(&["payload", "authorization", "validBefore"]))
            .unwrap_err();
        assert!(e.to_string().contains("validBefore"), "{e}");
        let e = decode_payment_signature(&without(&["accepted", "payTo"])).unwrap_err();
        assert!(e.to_string().contains("payTo"), "{e}");
        let mut j = good.clone();
        j["payload"]["authorization"]["value"] = json!(-5);
        assert_eq!(field_of(&encode(&j)), "payload.authorization");
        let mut j = good.clone();
        j["x402Version"] = json!("2");
        assert_eq!(field_of(&encode(&j)), "x402Version");
        // Verify-stage shape errors.
        for (f, v) in [
            ("value", json!("1e4")),
            ("value", json!("")),
            ("validAfter", json!("0x10")),
            ("value", json!("9".repeat(90))),
        ] {
            let mut j = good.clone();
            j["payload"]["authorization"][f] = v;
            match check(&encode(&j)) {
                Err(PaymentError::Invalid { field, .. }) => {
                    assert_eq!(field, format!("payload.authorization.{f}"))
                }
                other => panic!("{f}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_requirements_are_server_errors() {
        let h = signed("10000", NOW - 600, NOW + 60);
        let p = decode_payment_signature(&h).unwrap();
        let mut r = reqs();
        r.pay_to = "bogus".into();
        assert_eq!(
            verify(&p, &r, NOW).unwrap_err().code(),
            "invalid_requirements"
        );
        let mut r = reqs();
        r.amount = "ten".into();
        assert_eq!(
            verify(&p, &r, NOW).unwrap_err().code(),
            "invalid_requirements"
        );
        let mut r = reqs();
        r.network = "solana:abc".into();
        assert!(sign_payment(&key(), &r, "1", 0, 1, [0; 32]).is_err());
        assert_eq!(evm_chain_id("eip155:84532"), Some(84532));
        assert_eq!(evm_chain_id("eip155:"), None);
        assert_eq!(evm_chain_id("eip155:01"), None);
    }

    #[test]
    fn fuzz_decode_does_not_panic() {
        use rand::RngExt;
        let mut rng = rand::rng();
        let good = signed("10000", NOW - 600, NOW + 60);
        let raw = B64.decode(&good).unwrap();
        for _ in 0..2000 {
            // Random bytes, then random single-byte corruptions of a good payload.
            let len = rng.random_range(0..300);
            let junk: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let _ = decode_payment_signature(&B64.encode(&junk)).map(|p| verify(&p, &reqs(), NOW));
            let _ = decode_payment_signature(&String::from_utf8_lossy(&junk));
            let mut m = raw.clone();
            let i = rng.random_range(0..m.len());
            m[i] = rng.random();
            let _ = decode_payment_signature(&B64.encode(&m)).map(|p| verify(&p, &reqs(), NOW));
        }
    }
}
