//! Sandbox settings: the `[sandbox]` table of the config file. Every key has a default, so an empty
//! file (or none) gives a working sandbox.

use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Seed of the simulated price feed: the same seed gives the same prices on every machine.
    pub seed: u64,
    /// Paper USDC each new account starts with.
    pub initial_equity: f64,
    /// Daily cap per key on the POSTs the seed marks "429 possible".
    pub daily_post_cap: u64,
    /// Daily cap per key on compute (one unit per backtest job, research run or chat turn).
    pub daily_compute_cap: u64,
    /// Notional of a trade signal that names no size (`size` / `sizeUsd`).
    pub default_trade_usd: f64,
    /// Leverage of a trade signal that names none.
    pub default_leverage: u32,
    /// Lifetime of a staged proposal, in seconds (the seed says 5 minutes).
    pub proposal_ttl_secs: i64,
    /// Simulates the audit log store being down: list_audit_logs answers 503 audit_unavailable.
    pub audit_log_unavailable: bool,
    /// Whether delegated MCP tool access is enabled.
    pub mcp_enabled: bool,
    pub taker_fee_rate: f64,
    pub maker_fee_rate: f64,
    /// Market orders fill this many basis points worse than the mark.
    pub slippage_bps: f64,
    /// How often the venue advances resting orders and triggers along the feed, in milliseconds.
    pub tick_ms: u64,
    /// Backtest jobs run at once (more wait in a queue of 32).
    pub backtest_workers: usize,
    /// A connection must send a whole request head within this many milliseconds of opening, or of
    /// its previous response (so an idle keep-alive connection closes after it too), and a
    /// request's body within as long again; otherwise it is closed.
    pub request_timeout_ms: u64,
    /// Connections served at once; more wait in the listen queue until one closes.
    pub max_connections: usize,
    /// A folder of CSV candles (`BTC-USD_5m.csv`: timestamp,open,high,low,close,volume) used
    /// instead of the simulated feed for backtests and discovery.
    pub csv_dir: Option<std::path::PathBuf>,
    /// Compute the default discovery answers (top backtests, top live, BTC 5m combos) at start,
    /// ahead of the first request.
    pub discovery_warmup: bool,
    /// Hosts signal destinations may use although they are loopback, private or otherwise internal
    /// (the SSRF guard refuses those by default), e.g. `["127.0.0.1", "localhost"]` for a local
    /// receiver. Names are compared as written in the destination URL.
    pub webhook_allow_hosts: Vec<String>,
    /// A PEM file of extra root certificates that signal deliveries trust (besides the built-in
    /// web roots), e.g. a local receiver's self-signed certificate.
    pub webhook_ca_file: Option<std::path::PathBuf>,
    /// Signal destinations one account may register (more answer 409 destination_limit).
    pub max_signal_destinations: usize,
    /// The builder address accounts approve a builder fee for (`approve_builder_fee`).
    pub builder_address: String,
    /// The `maxFeeRate` accounts approve, a percent string as the venue writes it; each platform
    /// fill is charged exactly this share of its notional as `builderFee`.
    pub builder_max_fee_rate: String,
    /// x402: the address paid research and usage calls must pay (`payTo`).
    pub payment_pay_to: String,
    /// x402: the price of one paid call in USDC base units (6 decimals; "10000" = 0.01 USDC).
    pub payment_amount: String,
    /// x402: the longest validity window (`validBefore` minus now) a payment may carry, in seconds.
    pub payment_max_timeout_secs: u64,
}

/// The sandbox's builder: a fixed address nobody holds the key of (fees are paper).
pub const DEFAULT_BUILDER: &str = "0xb11de5000000000000000000000000000000a9e5";
/// Where the sandbox's x402 payments go: a fixed paper address.
pub const DEFAULT_PAY_TO: &str = "0x9a7e000000000000000000000000000000000402";

/// `"0.1%"` → 0.001. `None` unless it is a finite percent from 0 to 100 ending in `%`.
pub fn percent_rate(text: &str) -> Option<f64> {
    let pct: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (pct.is_finite() && (0.0..=100.0).contains(&pct)).then_some(pct / 100.0)
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: 42,
            initial_equity: 100_000.0,
            daily_post_cap: 1_000,
            daily_compute_cap: 200,
            default_trade_usd: 1_000.0,
            default_leverage: 5,
            proposal_ttl_secs: 300,
            audit_log_unavailable: false,
            mcp_enabled: true,
            taker_fee_rate: 0.00045,
            maker_fee_rate: 0.00015,
            slippage_bps: 5.0,
            tick_ms: 1_000,
            backtest_workers: 2,
            request_timeout_ms: 10_000,
            max_connections: 1_024,
            csv_dir: None,
            discovery_warmup: true,
            webhook_allow_hosts: Vec::new(),
            webhook_ca_file: None,
            max_signal_destinations: 20,
            builder_address: DEFAULT_BUILDER.into(),
            builder_max_fee_rate: "0.1%".into(),
            payment_pay_to: DEFAULT_PAY_TO.into(),
            payment_amount: "10000".into(),
            payment_max_timeout_secs: 300,
        }
    }
}

/// The config file as the sandbox reads it: other tables belong to the console.
#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    sandbox: Option<Settings>,
}

/// Why a config file's `[sandbox]` table is refused; each names the setting.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("sandbox.{name} must be a positive number, got {value}")]
    NotPositive { name: &'static str, value: f64 },
    #[error("sandbox.{name} must be zero or positive, got {value}")]
    Negative { name: &'static str, value: f64 },
    #[error("sandbox.{0} must be at least 1")]
    LessThanOne(&'static str),
    #[error("sandbox.{0} must be positive")]
    NotPositiveWhole(&'static str),
    #[error("sandbox.csv_dir {} is not a directory", .0.display())]
    CsvDirNotADirectory(PathBuf),
    #[error("sandbox.{name} must be a 0x-prefixed 20-byte hex address, got {value:?}")]
    NotAnAddress { name: &'static str, value: String },
    #[error("sandbox.builder_max_fee_rate must be a percent such as \"0.1%\", got {0:?}")]
    FeeRateNotAPercent(String),
    #[error("sandbox.payment_amount must be a positive whole number of USDC base units, got {0:?}")]
    PaymentAmount(String),
    #[error("sandbox.webhook_ca_file {} is not a file", .0.display())]
    CaFileNotAFile(PathBuf),
    #[error("sandbox.request_timeout_ms and sandbox.max_connections must be positive")]
    NoRequestLimits,
}

impl Settings {
    /// Parses the `[sandbox]` table of a TOML config file.
    pub fn from_toml(text: &str) -> Result<Settings, SettingsError> {
        let file: File = toml::from_str(text)?;
        let settings = file.sandbox.unwrap_or_default();
        settings.validate()?;
        Ok(settings)
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        let positive = [
            ("initial_equity", self.initial_equity),
            ("default_trade_usd", self.default_trade_usd),
        ];
        for (name, value) in positive {
            if !(value.is_finite() && value > 0.0) {
                return Err(SettingsError::NotPositive { name, value });
            }
        }
        for (name, value) in [
            ("taker_fee_rate", self.taker_fee_rate),
            ("maker_fee_rate", self.maker_fee_rate),
            ("slippage_bps", self.slippage_bps),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(SettingsError::Negative { name, value });
            }
        }
        if self.default_leverage == 0 {
            return Err(SettingsError::LessThanOne("default_leverage"));
        }
        if self.proposal_ttl_secs <= 0 {
            return Err(SettingsError::NotPositiveWhole("proposal_ttl_secs"));
        }
        if self.backtest_workers == 0 {
            return Err(SettingsError::LessThanOne("backtest_workers"));
        }
        if let Some(dir) = &self.csv_dir
            && !dir.is_dir()
        {
            return Err(SettingsError::CsvDirNotADirectory(dir.clone()));
        }
        for (name, value) in [
            ("builder_address", &self.builder_address),
            ("payment_pay_to", &self.payment_pay_to),
        ] {
            if crate::api::eip712::parse_address(value).is_err() {
                return Err(SettingsError::NotAnAddress {
                    name,
                    value: value.clone(),
                });
            }
        }
        if percent_rate(&self.builder_max_fee_rate).is_none() {
            return Err(SettingsError::FeeRateNotAPercent(
                self.builder_max_fee_rate.clone(),
            ));
        }
        if self.payment_amount.is_empty()
            || self.payment_amount.len() > 30
            || !self.payment_amount.bytes().all(|b| b.is_ascii_digit())
            || self.payment_amount.bytes().all(|b| b == b'0')
        {
            return Err(SettingsError::PaymentAmount(self.payment_amount.clone()));
        }
        if self.payment_max_timeout_secs == 0 {
            return Err(SettingsError::NotPositiveWhole("payment_max_timeout_secs"));
        }
        if let Some(file) = &self.webhook_ca_file
            && !file.is_file()
        {
            return Err(SettingsError::CaFileNotAFile(file.clone()));
        }
        if self.request_timeout_ms == 0 || self.max_connections == 0 {
            return Err(SettingsError::NoRequestLimits);
        }
        if self.tick_ms == 0 {
            return Err(SettingsError::NotPositiveWhole("tick_ms"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sandbox_table_and_names_bad_keys() {
        let s = Settings::from_toml("[sandbox]\ndaily_post_cap = 3\n[console]\nx = 1\n").unwrap();
        assert_eq!(s.daily_post_cap, 3);
        assert_eq!(s.seed, 42);
        let err = Settings::from_toml("[sandbox]\ndaily_post_kap = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("daily_post_kap"), "{err}");
        let err = Settings::from_toml("[sandbox]\ninitial_equity = -1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("initial_equity"), "{err}");
    }
}
