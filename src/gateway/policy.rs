//! What the gateway lets through without a human: the `[gate]` table of the config file.
//!
//! For now one rule: immediate trades (`place_order` and the platform order, close and cancel
//! operations) bypass the inbox, so they are refused unless the agent is listed in
//! `allow_immediate`. Everything else that changes the account is staged and approved.

use serde::Deserialize;
use std::time::Duration;

/// The operations that trade without staging.
pub const IMMEDIATE: [&str; 4] = [
    "place_order",
    "platform_place_order",
    "platform_close_position",
    "platform_cancel_order",
];

/// The `[gate]` table of the config file. Every key is optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateSettings {
    /// Agents (by name given with `agentdesk gate agent name`, or by key fingerprint) whose
    /// immediate trades are forwarded instead of refused.
    pub allow_immediate: Vec<String>,
    /// Seconds to wait for a TCP connection to the upstream.
    pub connect_timeout_secs: u64,
    /// Seconds an upstream exchange may take, from sending to the end of the answer.
    pub timeout_secs: u64,
    /// Request bodies larger than this are refused with 413 before anything is forwarded.
    pub max_body_bytes: usize,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            allow_immediate: Vec::new(),
            connect_timeout_secs: 5,
            timeout_secs: 30,
            max_body_bytes: 1 << 20,
        }
    }
}

#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    gate: Option<GateSettings>,
}

impl GateSettings {
    /// The `[gate]` table of a config file; the file's other tables belong to the console and the
    /// sandbox and are not read here.
    pub fn from_toml(text: &str) -> Result<GateSettings, String> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let settings = file.gate.unwrap_or_default();
        settings.validate()?;
        Ok(settings)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.timeout_secs == 0 || self.connect_timeout_secs == 0 {
            return Err(
                "gate.timeout_secs and gate.connect_timeout_secs must be at least 1".into(),
            );
        }
        if self.max_body_bytes == 0 {
            return Err("gate.max_body_bytes must be at least 1".into());
        }
        Ok(())
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    /// Whether this agent may trade immediately: listed by name or by (a prefix of at least 8 hex
    /// digits of) its key fingerprint.
    pub fn allows_immediate(&self, name: Option<&str>, key_hash: &str) -> bool {
        self.allow_immediate.iter().any(|entry| {
            let entry = entry.trim();
            Some(entry) == name
                || (entry.len() >= 8 && key_hash.starts_with(&entry.to_ascii_lowercase()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_gate_table_and_ignores_the_others() {
        let s = GateSettings::from_toml(
            "[sandbox]\nx = 1\n[gate]\nallow_immediate = [\"alice\", \"0123abcd\"]\ntimeout_secs = 9\n",
        )
        .unwrap();
        assert_eq!(s.allow_immediate, vec!["alice", "0123abcd"]);
        assert_eq!(s.timeout_secs, 9);
        assert_eq!(s.connect_timeout_secs, 5);
        assert!(s.allows_immediate(Some("alice"), "ffff"));
        assert!(s.allows_immediate(None, "0123abcdeeee"));
        assert!(!s.allows_immediate(Some("bob"), "0123abceeeee"));
        assert!(GateSettings::from_toml("[gate]\nallow_imediate = []\n").is_err());
        assert!(GateSettings::from_toml("[gate]\ntimeout_secs = 0\n").is_err());
        assert_eq!(
            GateSettings::from_toml("").unwrap(),
            GateSettings::default()
        );
    }
}
