//! Standard Webhooks signatures for outbound signal deliveries.
//!
//! A delivery carries three headers: `webhook-id`, `webhook-timestamp` (unix
//! seconds) and `webhook-signature`, a space-separated list of
//! `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`. The key is the
//! base64 part of the destination's `whsec_…` signing secret. Receivers
//! reject timestamps more than [`DEFAULT_TOLERANCE_SECS`] away from their
//! clock, which bounds replays.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Prefix of every signing secret.
pub const SECRET_PREFIX: &str = "whsec_";
pub const HEADER_ID: &str = "webhook-id";
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const HEADER_SIGNATURE: &str = "webhook-signature";
/// Tolerance the standard recommends (5 minutes), either direction.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;
/// Key length bounds from the Standard Webhooks spec (24 to 64 bytes); the
/// lower one keeps a typo'd or truncated secret from becoming a weak key.
const MIN_KEY_LEN: usize = 24;
const MAX_KEY_LEN: usize = 64;
/// Signatures looked at per header. Key rotation needs two or three; the cap
/// stops a hostile header from making us run thousands of HMAC compares.
const MAX_SIGNATURES: usize = 8;

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookSigError {
    #[error("invalid signing secret: {0}")]
    InvalidSecret(&'static str),
    #[error("`webhook-signature` holds no v1 signature")]
    NoSignature,
    #[error("`webhook-timestamp` is too old")]
    TimestampTooOld,
    #[error("`webhook-timestamp` is too far in the future")]
    TimestampTooNew,
    #[error("no signature in `webhook-signature` matches")]
    SignatureMismatch,
}

/// Short alias, as `webhook_sig::Error`.
pub type Error = WebhookSigError;

impl WebhookSigError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            WebhookSigError::InvalidSecret(_) => "invalid_secret",
            WebhookSigError::NoSignature => "no_signature",
            WebhookSigError::TimestampTooOld => "timestamp_too_old",
            WebhookSigError::TimestampTooNew => "timestamp_too_new",
            WebhookSigError::SignatureMismatch => "signature_mismatch",
        }
    }
}

/// A fresh secret: `whsec_` + base64 of 32 random bytes from the thread-local
/// CSPRNG (ChaCha seeded from the OS).
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::fill(&mut key[..]);
    format!("{SECRET_PREFIX}{}", B64.encode(key))
}

/// The HMAC key inside a secret. The `whsec_` prefix is optional, as in the
/// reference libraries, since some senders show the bare base64.
pub fn secret_key(secret: &str) -> Result<Vec<u8>, Error> {
    let b64 = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    if b64.len() > 4 * MAX_KEY_LEN {
        return Err(Error::InvalidSecret("too long"));
    }
    let key = B64
        .decode(b64)
        .map_err(|_| Error::InvalidSecret("not base64"))?;
    if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len()) {
        return Err(Error::InvalidSecret("key must be 24 to 64 bytes"));
    }
    Ok(key)
}

fn mac_for(key: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; the Err arm is unreachable but cheap
    // to handle without a panic.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => HmacSha256::new(&Default::default()),
    };
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// `v1,<base64 signature>` for one delivery.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> Result<String, Error> {
    let key = secret_key(secret)?;
    let tag = mac_for(&key, msg_id, timestamp, body)
        .finalize()
        .into_bytes();
    Ok(format!("v1,{}", B64.encode(tag)))
}

/// The three delivery headers as (name, value) pairs.
pub fn signed_headers(
    secret: &str,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<[(&'static str, String); 3], Error> {
    Ok([
        (HEADER_ID, msg_id.to_owned()),
        (HEADER_TIMESTAMP, timestamp.to_string()),
        (HEADER_SIGNATURE, sign(secret, msg_id, timestamp, body)?),
    ])
}

/// Checks a delivery the way a receiver does: timestamp within
/// `tolerance_secs` of `now` (either direction; a negative tolerance counts
/// as zero), then any `v1` entry of `header_value` matching, compared in
/// constant time. Entries of other versions are skipped, so a future scheme
/// can be added alongside.
pub fn verify(
    secret: &str,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
    header_value: &str,
    now: i64,
    tolerance_secs: i64,
) -> Result<(), Error> {
    let key = secret_key(secret)?;
    let tolerance = u64::try_from(tolerance_secs).unwrap_or(0);
    if now.abs_diff(timestamp) > tolerance {
        return Err(if timestamp < now {
            Error::TimestampTooOld
        } else {
            Error::TimestampTooNew
        });
    }
    let mac = mac_for(&key, msg_id, timestamp, body);
    let mut saw_v1 = false;
    for entry in header_value.split_whitespace().take(MAX_SIGNATURES) {
        let Some(("v1", sig)) = entry.split_once(',') else {
            continue;
        };
        saw_v1 = true;
        let Ok(tag) = B64.decode(sig) else {
            continue;
        };
        // verify_slice compares in constant time and rejects wrong lengths.
        if mac.clone().verify_slice(&tag).is_ok() {
            return Ok(());
        }
    }
    Err(if saw_v1 {
        Error::SignatureMismatch
    } else {
        Error::NoSignature
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn reference_vector() {
        assert_eq!(sign(SECRET, ID, TS, BODY).unwrap(), EXPECTED);
        assert_eq!(verify(SECRET, ID, TS, BODY, EXPECTED, TS, 300), Ok(()));
        // Prefix is optional.
        assert_eq!(sign(&SECRET[6..], ID, TS, BODY).unwrap(), EXPECTED);
    }

    #[test]
    fn tampering_fails() {
        let v =
            |id: &str, ts: i64, body: &[u8], sig: &str| verify(SECRET, id, ts, body, sig, TS, 300);
        assert_eq!(
            v(ID, TS, br#"{"test": 2432232315}"#, EXPECTED),
            Err(Error::SignatureMismatch)
        );
        assert_eq!(
            v("msg_other", TS, BODY, EXPECTED),
            Err(Error::SignatureMismatch)
        );
        assert_eq!(v(ID, TS + 1, BODY, EXPECTED), Err(Error::SignatureMismatch));
        assert_eq!(
            v(
                ID,
                TS,
                BODY,
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
            ),
            Err(Error::SignatureMismatch)
        );
        assert_eq!(v(ID, TS, BODY, "v1,AAAA"), Err(Error::SignatureMismatch));
        assert_eq!(v(ID, TS, BODY, "v1,%%%"), Err(Error::SignatureMismatch));
        assert_eq!(
            v(
                ID,
                TS,
                BODY,
                "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
            ),
            Err(Error::NoSignature)
        );
        assert_eq!(v(ID, TS, BODY, ""), Err(Error::NoSignature));
        assert_eq!(v(ID, TS, BODY, "garbage"), Err(Error::NoSignature));
        let other = new_secret();
        assert_eq!(
            verify(&other, ID, TS, BODY, EXPECTED, TS, 300),
            Err(Error::SignatureMismatch)
        );
    }

    #[test]
    fn several_signatures_any_match() {
        let h = format!("v1a,xyz v1,AAAA {EXPECTED}");
        assert_eq!(verify(SECRET, ID, TS, BODY, &h, TS, 300), Ok(()));
        // Past the cap, a valid entry is ignored.
        let crowded = format!("{} {EXPECTED}", "v1,AAAA ".repeat(MAX_SIGNATURES));
        assert_eq!(
            verify(SECRET, ID, TS, BODY, &crowded, TS, 300),
            Err(Error::SignatureMismatch)
        );
    }

    #[test]
    fn tolerance() {
        let ok = |now: i64, tol: i64| verify(SECRET, ID, TS, BODY, EXPECTED, now, tol);
        assert_eq!(ok(TS + 300, 300), Ok(()));
        assert_eq!(ok(TS - 300, 300), Ok(()));
        assert_eq!(ok(TS + 301, 300), Err(Error::TimestampTooOld));
        assert_eq!(ok(TS - 301, 300), Err(Error::TimestampTooNew));
        assert_eq!(ok(TS, -5), Ok(()));
        assert_eq!(ok(TS + 1, -5), Err(Error::TimestampTooOld));
        assert_eq!(
            verify(
                SECRET,
                ID,
                i64::MIN,
                BODY,
                EXPECTED,
                i64::MAX,
                DEFAULT_TOLERANCE_SECS
            ),
            Err(Error::TimestampTooOld)
        );
        assert_eq!(Error::TimestampTooOld.code(), "timestamp_too_old");
    }

    #[test]
    fn secrets() {
        let s = new_secret();
        assert!(s.starts_with("whsec_"));
        assert_eq!(secret_key(&s).unwrap().len(), 32);
        assert_ne!(s, new_secret());
        let sig = sign(&s, "msg_1", 10, b"{}").unwrap();
        assert_eq!(verify(&s, "msg_1", 10, b"{}", &sig, 10, 300), Ok(()));
        for bad in [
            "",
            "whsec_",
            "whsec_!!!!",
            "whsec_AAAA",
            &format!("whsec_{}", "A".repeat(400)),
        ] {
            assert!(
                matches!(secret_key(bad), Err(Error::InvalidSecret(_))),
                "{bad}"
            );
            assert!(sign(bad, ID, TS, BODY).is_err());
        }
        let h = signed_headers(SECRET, ID, TS, BODY).unwrap();
        assert_eq!(h[0], (HEADER_ID, ID.to_owned()));
        assert_eq!(h[1], (HEADER_TIMESTAMP, TS.to_string()));
        assert_eq!(h[2], (HEADER_SIGNATURE, EXPECTED.to_owned()));
    }

    #[test]
    fn fuzz_headers_do_not_panic() {
        use rand::RngExt;
        let mut rng = rand::rng();
        let alphabet: Vec<char> = "v1,aA0+/= \t_é\u{0}".chars().collect();
        for _ in 0..2000 {
            let len = rng.random_range(0..120);
            let s: String = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            assert!(verify(SECRET, ID, TS, BODY, &s, TS, 300).is_err());
            let _ = secret_key(&s);
        }
    }
}
