//! Wire types, shared by the client (which reads them) and the sandbox (which writes them).
//!
//! Decoding is tolerant on purpose: the real deployment's shapes are only partly known, so every
//! response type keeps unknown fields in `extra`, defaults missing ones, and accepts numbers written as
//! JSON numbers or as numeric text. Venue rows are written with decimal strings, as the venue does.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod account;
mod backtests;
mod builder_fee;
mod catalog;
mod gate;
pub mod lenient;
mod market;
mod research;
mod signals;
mod tools;
mod trading;

pub use account::*;
pub use backtests::*;
pub use builder_fee::*;
pub use catalog::*;
pub use gate::*;
pub use market::*;
pub use research::*;
pub use signals::*;
pub use tools::*;
pub use trading::*;

pub use lenient::{Lenient, extra_pairs};
pub use num::{fmt_decimal, group_thousands};

pub type Extra = Map<String, Value>;

/// Number-or-numeric-text (de)serializers.
pub mod num {
    use serde::de::{self, Deserializer, Error as _, Visitor};
    use serde::{Deserialize, Serializer};
    use std::fmt;

    struct NumVisitor;

    impl<'de> Visitor<'de> for NumVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number or numeric text")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            let t = v.trim();
            match t.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(x),
                _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
            }
        }
    }

    /// Accepts `1.5` or `"1.5"`.
    pub fn de<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(NumVisitor)
    }

    /// Accepts `1.5`, `"1.5"`, `null`, `""` or a missing field.
    pub fn de_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::Num(x)) => Ok(Some(x)),
            Some(Raw::Text(s)) if s.trim().is_empty() => Ok(None),
            Some(Raw::Text(s)) => match s.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(de::Error::invalid_value(
                    de::Unexpected::Str(&s),
                    &"a number or numeric text",
                )),
            },
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum RawInt {
        Int(i128),
        Float(f64),
        Text(String),
    }

    fn integral<T: TryFrom<i128>, E: de::Error>(raw: RawInt) -> Result<Option<T>, E> {
        let n = match raw {
            RawInt::Int(n) => n,
            RawInt::Float(x) if x.is_finite() && x.fract() == 0.0 => x as i128,
            RawInt::Text(s) if s.trim().is_empty() => return Ok(None),
            RawInt::Text(s) => s.trim().parse::<i128>().map_err(|_| {
                E::invalid_value(de::Unexpected::Str(&s), &"an integer or integer text")
            })?,
            RawInt::Float(x) => {
                return Err(E::invalid_value(de::Unexpected::Float(x), &"an integer"));
            }
        };
        T::try_from(n)
            .map(Some)
            .map_err(|_| E::custom(format!("{n} is out of range")))
    }

    /// Accepts `5`, `5.0` or `"5"` for an integer field: the deployment writes counts as text.
    pub fn int<'de, D: Deserializer<'de>, T: TryFrom<i128> + Default>(d: D) -> Result<T, D::Error> {
        Ok(integral(RawInt::deserialize(d)?)?.unwrap_or_default())
    }

    /// As [`int`], and `null` or `""` for none.
    pub fn int_opt<'de, D: Deserializer<'de>, T: TryFrom<i128>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<RawInt>::deserialize(d)? {
            None => Ok(None),
            Some(raw) => integral(raw),
        }
    }

    /// Writes a decimal string the way the venue does: no exponent, trailing zeros trimmed.
    pub fn ser_dec<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&fmt_decimal(*x))
    }

    pub fn ser_dec_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_str(&fmt_decimal(*x)),
            None => s.serialize_none(),
        }
    }

    /// Thousands separators in a decimal number's integer part, for text a person reads (the
    /// console's numbers, the research report): `-1234567.5` → `-1,234,567.5`. Text that is not a
    /// plain decimal number (`-`, `1e21`, `n/a`) comes back as it is.
    pub fn group_thousands(text: &str) -> String {
        let (sign, digits) = match text.strip_prefix('-') {
            Some(rest) => ("-", rest),
            None => ("", text),
        };
        let (int, frac) = match digits.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (digits, None),
        };
        let plain = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !plain(int) || !frac.is_none_or(plain) {
            return text.to_string();
        }
        let mut grouped = String::with_capacity(int.len() + int.len() / 3);
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        match frac {
            Some(f) => format!("{sign}{grouped}.{f}"),
            None => format!("{sign}{grouped}"),
        }
    }

    /// Decimal text: up to 8 decimals, trailing zeros trimmed, never an exponent or `-0`.
    pub fn fmt_decimal(x: f64) -> String {
        if !x.is_finite() {
            return "0".into();
        }
        let mut s = format!("{x:.8}");
        if s.contains('.') {
            while s.ends_with('0') {
                s.pop();
            }
            if s.ends_with('.') {
                s.pop();
            }
        }
        if s == "-0" { "0".into() } else { s }
    }

    /// A time as RFC 3339 text, or milliseconds since the epoch as a number or as text (the
    /// deployment writes `createdAt` as millisecond text); `null` or missing is the epoch, which the
    /// views show as unknown.
    pub fn time<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<chrono::DateTime<chrono::Utc>, D::Error> {
        use chrono::{DateTime, TimeZone, Utc};
        let ms = |n: i64| {
            Utc.timestamp_millis_opt(n)
                .single()
                .ok_or_else(|| D::Error::custom(format!("{n} is not a time")))
        };
        match Option::<serde_json::Value>::deserialize(d)? {
            None | Some(serde_json::Value::Null) => Ok(DateTime::<Utc>::default()),
            Some(serde_json::Value::Number(n)) => match n.as_i64() {
                Some(n) => ms(n),
                None => Err(D::Error::custom(format!("{n} is not a time"))),
            },
            Some(serde_json::Value::String(s)) => match s.trim().parse::<i64>() {
                Ok(n) => ms(n),
                Err(_) => DateTime::parse_from_rfc3339(s.trim())
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| D::Error::custom(format!("{s:?} is not a time"))),
            },
            Some(other) => Err(D::Error::custom(format!("{other} is not a time"))),
        }
    }

    /// Text, or a boolean read as `ok` / `error` (the deployment's audit rows say `ok: true`).
    pub fn outcome<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        match Option::<serde_json::Value>::deserialize(d)? {
            None | Some(serde_json::Value::Null) => Ok(String::new()),
            Some(serde_json::Value::Bool(true)) => Ok("ok".into()),
            Some(serde_json::Value::Bool(false)) => Ok("error".into()),
            Some(serde_json::Value::String(s)) => Ok(s),
            Some(other) => Err(D::Error::custom(format!("{other} is not an outcome"))),
        }
    }

    /// Numeric text in requests (the seed's trade signal writes prices as strings).
    pub fn ser_text_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        ser_dec_opt(x, s)
    }
}

/// One of, or a list of; the cancel body's `oid` takes either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

// ---- errors --------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub success: bool,
    pub error: ErrorDetail,
}

/// A body whose typed fields are not settled yet: everything is kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Loose {
    #[serde(flatten)]
    pub fields: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_plain_text() {
        assert_eq!(fmt_decimal(65000.0), "65000");
        assert_eq!(fmt_decimal(0.00012), "0.00012");
        assert_eq!(fmt_decimal(-1.5), "-1.5");
        assert_eq!(fmt_decimal(-0.000000001), "0");
        assert_eq!(fmt_decimal(1e21), "1000000000000000000000");
    }

    #[test]
    fn numbers_decode_from_text_or_numbers() {
        let a: PnlSummary =
            serde_json::from_str(r#"{"totalPortfolioValue":"100.5","pnl":{"today":-2}}"#).unwrap();
        assert_eq!(a.total_portfolio_value, 100.5);
        assert_eq!(a.pnl.today, -2.0);
        let bad = serde_json::from_str::<PnlSummary>(r#"{"totalPortfolioValue":"abc"}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let w: Whoami = serde_json::from_str(r#"{"messengerId":"m1","future":{"x":1}}"#).unwrap();
        assert_eq!(w.messenger_id, "m1");
        assert_eq!(w.extra["future"]["x"], 1);
    }

    #[test]
    fn trade_signal_writes_prices_as_text_and_reads_either() {
        let s = TradeSignal {
            a: Some("BTCUSDT".into()),
            p: Some(65000.5),
            ..Default::default()
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["p"], "65000.5");
        let back: TradeSignal = serde_json::from_str(r#"{"p":65000.5,"tp":"70000"}"#).unwrap();
        assert_eq!(back.p, Some(65000.5));
        assert_eq!(back.tp, Some(70000.0));
    }

    #[test]
    fn integer_fields_take_integer_text_and_refuse_fractions() {
        let pnl: PnlSummary = serde_json::from_str(r#"{"totalPositions":"3"}"#).unwrap();
        assert_eq!(pnl.total_positions, 3);
        let pnl: PnlSummary = serde_json::from_str(r#"{"totalPositions":3.0}"#).unwrap();
        assert_eq!(pnl.total_positions, 3);
        let pnl: PnlSummary = serde_json::from_str(r#"{"totalPositions":""}"#).unwrap();
        assert_eq!(pnl.total_positions, 0);
        assert!(serde_json::from_str::<PnlSummary>(r#"{"totalPositions":"2.5"}"#).is_err());
        assert!(serde_json::from_str::<PnlSummary>(r#"{"totalPositions":-1}"#).is_err());
        let row: AuditEntry = serde_json::from_str(
            r#"{"time":"2026-06-01T12:00:00Z","oid":"77","httpStatus":"200"}"#,
        )
        .unwrap();
        assert_eq!((row.oid, row.http_status), (Some(77), 200));
    }
}
