//! The console's configuration: defaults < config file < environment (`AGENTDESK_*`) < flags.
//!
//! The config file is `--config PATH`, else `$AGENTDESK_CONFIG`, else `config.toml` in the platform
//! config directory (`directories::ProjectDirs::from("dev", "agentdesk", "agentdesk")`; absent is
//! fine). The console reads the top-level `profile` key and the `[console]` and `[profiles.*]` tables;
//! `[sandbox]` belongs to the embedded sandbox (`crate::sandbox::Settings::from_toml`).
//!
//! Which service the console talks to:
//! - base URL: `--base-url` > `AGENTDESK_BASE_URL` > the selected profile's `base_url`;
//! - API key: `--api-key` > `AGENTDESK_API_KEY` > the selected profile's `api_key_env` (the name of an
//!   environment variable holding the key) or `api_key` (the key itself);
//! - profile: `--profile` > `AGENTDESK_PROFILE` > the file's `profile`. The name `sandbox` is reserved
//!   and selects no profile, so `--profile sandbox` overrides a file's default profile;
//! - neither a base URL nor a key: [`Service::Embedded`] (the console starts the embedded sandbox).
//!
//! API keys are held in [`Secret`] as soon as they are read and never appear in an error or warning.

use crate::secret::Secret;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const ENV_BASE_URL: &str = "AGENTDESK_BASE_URL";
pub const ENV_API_KEY: &str = "AGENTDESK_API_KEY";
pub const ENV_PROFILE: &str = "AGENTDESK_PROFILE";
pub const ENV_CONFIG: &str = "AGENTDESK_CONFIG";
/// A supervisor token of a gateway (`agentdesk gate token`), for its `/gate/v1` API.
pub const ENV_GATE_TOKEN: &str = "AGENTDESK_GATE_TOKEN";
/// The shortest interval between the embedded demo agent's proposals: anything faster would fill
/// the inbox faster than anyone can read it.
pub const MIN_DEMO_AGENT_SECS: i64 = 5;

/// The profile name that means "no profile: the embedded sandbox unless a flag or env var names a
/// service".
pub const SANDBOX_PROFILE: &str = "sandbox";

/// Poll intervals below this are rejected: they would hammer the service (and its quota).
pub const MIN_POLL_MS: i64 = 100;

/// What clap parsed.
#[derive(Clone, Default)]
pub struct Flags {
    pub config: Option<PathBuf>,
    pub profile: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// `--no-demo-agent`: the embedded picture without its demo agent.
    pub no_demo_agent: bool,
}

impl std::fmt::Debug for Flags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flags")
            .field("config", &self.config)
            .field("profile", &self.profile)
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|k| Secret::new(k.as_str())),
            )
            .field("no_demo_agent", &self.no_demo_agent)
            .finish()
    }
}

/// The service the console talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    /// No service configured: the console starts the sandbox in-process on loopback.
    Embedded,
    Remote {
        /// Starts with http:// or https://, no trailing slash.
        base_url: String,
        api_key: Secret,
        /// Where the key came from, for the status line and `--help` style diagnostics, e.g. "flag
        /// --api-key", "env AGENTDESK_API_KEY", "profile live (api_key_env LIVE_API_KEY)".
        source: String,
    },
}

/// How often each resource is refreshed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollIntervals {
    pub positions: Duration,
    pub orders: Duration,
    pub pnl: Duration,
    pub proposals: Duration,
    pub usage: Duration,
    pub audit: Duration,
}

impl Default for PollIntervals {
    fn default() -> Self {
        let ms = Duration::from_millis;
        PollIntervals {
            positions: ms(2_000),
            orders: ms(2_000),
            pnl: ms(2_000),
            proposals: ms(1_000),
            usage: ms(15_000),
            audit: ms(10_000),
        }
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsoleConfig {
    pub service: Service,
    /// The selected profile (None when none is selected, or `sandbox`).
    pub profile: Option<String>,
    /// "dark" or "light".
    pub theme: String,
    /// Ring the terminal bell when a new proposal arrives.
    pub bell: bool,
    /// Append approval decisions to the JSON-lines journal in `data_dir`.
    pub journal: bool,
    /// Key binding overrides (absolute, checked to exist).
    pub keymap_file: Option<PathBuf>,
    /// Color overrides (absolute, checked to exist).
    pub theme_file: Option<PathBuf>,
    pub poll: PollIntervals,
    /// The config file that was read, if any.
    pub config_path: Option<PathBuf>,
    /// Where the sandbox database and the journal live.
    pub data_dir: PathBuf,
    /// Problems worth telling the user that do not stop the console (shown once at start).
    pub warnings: Vec<String>,
    /// A supervisor token for a gateway's `/gate/v1` (env AGENTDESK_GATE_TOKEN, else the
    /// profile's `gate_token_env`). The embedded picture mints its own.
    pub gate_token: Option<Secret>,
    /// Whether the embedded picture runs its demo agent (`[console] demo_agent`, off with
    /// `--no-demo-agent`).
    pub demo_agent: bool,
    /// Time between the demo agent's proposals (`[console] demo_agent_interval_secs`).
    pub demo_agent_interval: Duration,
}

/// The platform directories: the default config file and the data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// Read if it exists, when neither `--config` nor `AGENTDESK_CONFIG` names a file.
    pub config_file: Option<PathBuf>,
    pub data_dir: PathBuf,
}

impl Dirs {
    /// `ProjectDirs::from("dev", "agentdesk", "agentdesk")`; None without a home directory.
    pub fn project() -> Option<Dirs> {
        let dirs = directories::ProjectDirs::from("dev", "agentdesk", "agentdesk")?;
        Some(Dirs {
            config_file: Some(dirs.config_dir().join("config.toml")),
            data_dir: dirs.data_dir().to_path_buf(),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {} (named by {origin}) does not exist", .path.display())]
    NotFound { path: PathBuf, origin: String },
    #[error("cannot read config file {}: {error}", .path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("config file {}, line {line}{table}: {message}", .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        /// " in [console.poll]" or "".
        table: String,
        message: String,
    },
    #[error("config file {}: {key} {problem}", .path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
    },
    #[error("profile `{name}` (from {origin}) is not defined; {defined}")]
    UnknownProfile {
        name: String,
        origin: String,
        /// "defined profiles in FILE: a, b", or why there are none.
        defined: String,
    },
    #[error(
        "environment variable {var} is not set, and profile `{profile}` reads its API key from it (api_key_env); export {var} or pass --api-key"
    )]
    ApiKeyEnvUnset { profile: String, var: String },
    #[error(
        "a base URL is configured ({origin}) but no API key; pass --api-key, set {ENV_API_KEY}, or give the profile api_key_env = \"VAR\""
    )]
    MissingApiKey { origin: String },
    #[error(
        "an API key is given ({key_source}) but no base URL; pass --base-url, set {ENV_BASE_URL}, or select a profile that has base_url"
    )]
    MissingBaseUrl { key_source: String },
    #[error("base URL `{url}` (from {origin}) must start with http:// or https:// and name a host")]
    BadBaseUrl { url: String, origin: String },
    #[error("{what} is empty")]
    Empty { what: String },
    #[error(
        "cannot find your home directory, so agentdesk has no config or data directory; set HOME"
    )]
    NoHome,
}

/// The process environment, for [`resolve`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Resolves the configuration against the platform directories.
pub fn resolve(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConsoleConfig, ConfigError> {
    let dirs = Dirs::project().ok_or(ConfigError::NoHome)?;
    resolve_with_dirs(flags, env, &dirs)
}

/// [`resolve`] with explicit directories (tests, or a caller that relocates them).
pub fn resolve_with_dirs(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<String>,
    dirs: &Dirs,
) -> Result<ConsoleConfig, ConfigError> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let explicit = match &flags.config {
        Some(p) => Some((p.clone(), "--config".to_string())),
        None => env(ENV_CONFIG).map(|p| (PathBuf::from(p), format!("env {ENV_CONFIG}"))),
    };
    let loaded = match explicit {
        Some((path, origin)) => {
            if !path.exists() {
                return Err(ConfigError::NotFound { path, origin });
            }
            Some(load(&path)?)
        }
        None => match &dirs.config_file {
            Some(path) if path.exists() => Some(load(path)?),
            _ => None,
        },
    };
    build(flags, &env, loaded, dirs.data_dir.clone())
}

// ---------------------------------------------------------------------------------------------
// The file

#[derive(Default, Deserialize)]
struct FileConfig {
    profile: Option<String>,
    #[serde(default)]
    console: ConsoleSection,
    #[serde(default)]
    profiles: BTreeMap<String, ProfileSection>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [console] table")]
struct ConsoleSection {
    theme: Option<String>,
    bell: Option<bool>,
    keymap: Option<PathBuf>,
    theme_file: Option<PathBuf>,
    journal: Option<bool>,
    demo_agent: Option<bool>,
    demo_agent_interval_secs: Option<i64>,
    #[serde(default)]
    poll: PollSection,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [console.poll] table")]
struct PollSection {
    positions: Option<i64>,
    orders: Option<i64>,
    pnl: Option<i64>,
    proposals: Option<i64>,
    usage: Option<i64>,
    audit: Option<i64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [profiles.NAME] table")]
struct ProfileSection {
    base_url: Option<String>,
    api_key_env: Option<String>,
    #[serde(default, deserialize_with = "secret_opt")]
    api_key: Option<Secret>,
    gate_token_env: Option<String>,
}

fn secret_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    Ok(Some(Secret::new(String::deserialize(d)?)))
}

/// A parsed config file and where it came from.
struct Loaded {
    path: PathBuf,
    file: FileConfig,
    /// Unix permission bits, when known.
    mode: Option<u32>,
    warnings: Vec<String>,
}

fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let read_err = |error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    };
    let text = std::fs::read_to_string(path).map_err(read_err)?;
    let mode = file_mode(path).map_err(read_err)?;
    let mut loaded = parse(&text, path)?;
    loaded.mode = mode;
    Ok(loaded)
}

#[cfg(unix)]
fn file_mode(path: &Path) -> std::io::Result<Option<u32>> {
    use std::os::unix::fs::PermissionsExt;
    Ok(Some(std::fs::metadata(path)?.permissions().mode() & 0o777))
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> std::io::Result<Option<u32>> {
    Ok(None)
}

/// Parses and validates the file's text; `path` is used in messages and to anchor relative paths.
fn parse(text: &str, path: &Path) -> Result<Loaded, ConfigError> {
    let file: FileConfig = toml::from_str(text).map_err(|e| parse_error(text, path, &e))?;
    let mut warnings = Vec::new();
    // The typed parse ignores unknown top-level keys (other tables belong to other readers); a
    // second, untyped parse names them so a typo like `[consle]` does not go unnoticed.
    if let Ok(table) = toml::from_str::<toml::Table>(text) {
        for key in table.keys() {
            // `gate`, `policy` and `notify` are the gateway's tables of the same file.
            if ![
                "profile", "console", "profiles", "sandbox", "gate", "policy", "notify",
            ]
            .contains(&key.as_str())
                && key != "public_url"
            {
                warnings.push(format!(
                    "{} has an unknown top-level key `{key}`, ignored (known: profile, [console], [profiles.NAME], [sandbox], public_url, [gate], [policy], [notify])",
                    path.display()
                ));
            }
        }
    }
    let invalid = |key: String, problem: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        problem,
    };
    if let Some(p) = &file.profile
        && p.trim().is_empty()
    {
        return Err(invalid("profile".into(), "is empty".into()));
    }
    if let Some(theme) = &file.console.theme
        && !["dark", "light"].contains(&theme.as_str())
    {
        return Err(invalid(
            "console.theme".into(),
            format!("is `{theme}`; it must be \"dark\" or \"light\""),
        ));
    }
    if let Some(v) = file.console.demo_agent_interval_secs
        && v < MIN_DEMO_AGENT_SECS
    {
        return Err(invalid(
            "console.demo_agent_interval_secs".into(),
            format!("is {v}; it is seconds and must be at least {MIN_DEMO_AGENT_SECS}"),
        ));
    }
    let p = &file.console.poll;
    for (name, value) in [
        ("positions", p.positions),
        ("orders", p.orders),
        ("pnl", p.pnl),
        ("proposals", p.proposals),
        ("usage", p.usage),
        ("audit", p.audit),
    ] {
        if let Some(v) = value
            && v < MIN_POLL_MS
        {
            return Err(invalid(
                format!("console.poll.{name}"),
                format!(
                    "is {v}; poll intervals are milliseconds and must be at least {MIN_POLL_MS}"
                ),
            ));
        }
    }
    for (name, profile) in &file.profiles {
        let key = |k: &str| format!("profiles.{name}.{k}");
        if name == SANDBOX_PROFILE {
            return Err(invalid(
                format!("profiles.{name}"),
                "uses a reserved name: `sandbox` means the embedded sandbox; pick another name"
                    .into(),
            ));
        }
        if profile.api_key.is_some() && profile.api_key_env.is_some() {
            return Err(invalid(
                key("api_key"),
                "and api_key_env are both set; keep only one (api_key_env is preferred)".into(),
            ));
        }
        if let Some(var) = &profile.api_key_env
            && (var.is_empty() || var.contains(['=', '\0']) || var.trim() != var)
        {
            return Err(invalid(
                key("api_key_env"),
                format!("is `{var}`, which is not an environment variable name"),
            ));
        }
        if let Some(var) = &profile.gate_token_env
            && (var.is_empty() || var.contains(['=', '\0']) || var.trim() != var)
        {
            return Err(invalid(
                key("gate_token_env"),
                format!("is `{var}`, which is not an environment variable name"),
            ));
        }
        if let Some(k) = &profile.api_key
            && k.expose().trim().is_empty()
        {
            return Err(invalid(key("api_key"), "is empty".into()));
        }
    }
    Ok(Loaded {
        path: path.to_path_buf(),
        file,
        mode: None,
        warnings,
    })
}

/// A TOML error as one sentence with its line and table, with any value it quotes removed: a
/// wrongly typed `api_key` (say, unquoted digits) must not be echoed back.
fn parse_error(text: &str, path: &Path, e: &toml::de::Error) -> ConfigError {
    let start = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let before = text.get(..start).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let table = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| format!(" in {}", l.split('#').next().unwrap_or(l).trim()))
        .unwrap_or_default();
    let raw = e.message().trim().trim_end_matches('.');
    let message = if raw.starts_with("invalid type") || raw.starts_with("invalid value") {
        match raw.split_once(", expected ") {
            Some((_, expected)) => format!("wrong type of value, expected {expected}"),
            None => "wrong type of value".to_string(),
        }
    } else {
        redact_file_keys(text, raw)
    };
    ConfigError::Parse {
        path: path.to_path_buf(),
        line,
        table,
        message,
    }
}

/// Removes from `message` anything that looks like a value assigned to `api_key` in `text`.
fn redact_file_keys(text: &str, message: &str) -> String {
    let mut out = message.to_string();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("api_key") else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim().trim_matches(['"', '\'']).trim();
        if value.len() >= 4 {
            out = out.replace(value, "<redacted>");
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Resolution

fn build(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<String>,
    loaded: Option<Loaded>,
    data_dir: PathBuf,
) -> Result<ConsoleConfig, ConfigError> {
    let (file, path, mode, mut warnings) = match loaded {
        Some(l) => (l.file, Some(l.path), l.mode, l.warnings),
        None => (FileConfig::default(), None, None, Vec::new()),
    };
    let file_name = || {
        path.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "the config file".into())
    };

    // Profile: flag > env > file.
    let flag_value = |v: &Option<String>, what: &str| -> Result<Option<String>, ConfigError> {
        match v {
            Some(s) if s.trim().is_empty() => Err(ConfigError::Empty { what: what.into() }),
            Some(s) => Ok(Some(s.trim().to_string())),
            None => Ok(None),
        }
    };
    let selected = if let Some(p) = flag_value(&flags.profile, "--profile")? {
        Some((p, "--profile".to_string()))
    } else if let Some(p) = env(ENV_PROFILE) {
        Some((p.trim().to_string(), format!("env {ENV_PROFILE}")))
    } else {
        file.profile
            .clone()
            .map(|p| (p, format!("`profile` in {}", file_name())))
    };
    let profile = match selected {
        Some((name, _)) if name == SANDBOX_PROFILE => None,
        Some((name, origin)) => match file.profiles.get(&name) {
            Some(p) => Some((name, p)),
            None => {
                let defined = if path.is_none() {
                    "no config file was found, so no profiles are defined".to_string()
                } else if file.profiles.is_empty() {
                    format!("{} defines no [profiles.NAME] tables", file_name())
                } else {
                    let names: Vec<&str> = file.profiles.keys().map(String::as_str).collect();
                    format!(
                        "profiles defined in {}: {} (or `{SANDBOX_PROFILE}` for the embedded sandbox)",
                        file_name(),
                        names.join(", ")
                    )
                };
                return Err(ConfigError::UnknownProfile {
                    name,
                    origin,
                    defined,
                });
            }
        },
        None => None,
    };

    // Base URL: flag > env > profile.
    let base = if let Some(u) = flag_value(&flags.base_url, "--base-url")? {
        Some((u, "flag --base-url".to_string()))
    } else if let Some(u) = env(ENV_BASE_URL) {
        Some((u, format!("env {ENV_BASE_URL}")))
    } else {
        profile.as_ref().and_then(|(name, p)| {
            p.base_url
                .clone()
                .map(|u| (u, format!("profile {name} in {}", file_name())))
        })
    };
    let base = match base {
        Some((url, origin)) => Some((check_base_url(&url, &origin)?, origin)),
        None => None,
    };

    // API key: flag > env > profile.
    let key = if let Some(k) = &flags.api_key {
        if k.trim().is_empty() {
            return Err(ConfigError::Empty {
                what: "--api-key".into(),
            });
        }
        Some((Secret::new(k.trim()), "flag --api-key".to_string()))
    } else if let Some(k) = env(ENV_API_KEY) {
        Some((Secret::new(k.trim()), format!("env {ENV_API_KEY}")))
    } else {
        match &profile {
            Some((name, p)) => match (&p.api_key_env, &p.api_key) {
                (Some(var), _) => match env(var) {
                    Some(k) => Some((
                        Secret::new(k.trim()),
                        format!("profile {name} (api_key_env {var})"),
                    )),
                    None => {
                        return Err(ConfigError::ApiKeyEnvUnset {
                            profile: name.clone(),
                            var: var.clone(),
                        });
                    }
                },
                (None, Some(k)) => Some((
                    Secret::new(k.expose().trim()),
                    format!("profile {name} (api_key in {})", file_name()),
                )),
                (None, None) => None,
            },
            None => None,
        }
    };

    // Supervisor token: env > profile's gate_token_env. Only a gateway's /gate/v1 reads it.
    let gate_token = match env(ENV_GATE_TOKEN).filter(|t| !t.trim().is_empty()) {
        Some(t) => Some(Secret::new(t.trim())),
        None => match profile.as_ref().and_then(|(n, p)| Some((n, p.gate_token_env.as_ref()?))) {
            Some((name, var)) => Some(Secret::new(
                env(var)
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| ConfigError::Invalid {
                        path: path.clone().unwrap_or_default(),
                        key: format!("profiles.{name}.gate_token_env"),
                        problem: format!(
                            "names the environment variable {var}, which is not set (or empty); export the supervisor token (agentdesk gate token) in it"
                        ),
                    })?
                    .trim(),
            )),
            None => None,
        },
    };

    let service = match (base, key) {
        (None, None) => Service::Embedded,
        (Some((_, origin)), None) => return Err(ConfigError::MissingApiKey { origin }),
        (None, Some((_, key_source))) => return Err(ConfigError::MissingBaseUrl { key_source }),
        (Some((base_url, origin)), Some((api_key, source))) => {
            if !is_https_or_loopback(&base_url) {
                warnings.push(format!(
                    "the base URL (from {origin}) uses plain http:// to a non-loopback host, so the API key travels unencrypted; use https://"
                ));
            }
            Service::Remote {
                base_url,
                api_key,
                source,
            }
        }
    };

    // A plain key in a file others can read.
    if let (Some(path), Some(mode)) = (&path, mode) {
        let holders: Vec<&str> = file
            .profiles
            .iter()
            .filter(|(_, p)| p.api_key.is_some())
            .map(|(n, _)| n.as_str())
            .collect();
        if !holders.is_empty() && mode & 0o077 != 0 {
            warnings.push(format!(
                "{} holds a plain api_key (profile {}) and is readable by other users (mode {mode:04o}); run chmod 600 {} or use api_key_env",
                path.display(),
                holders.join(", "),
                path.display(),
            ));
        }
    }

    let c = &file.console;
    let anchor = path
        .as_ref()
        .and_then(|p| p.parent())
        .unwrap_or(Path::new("."));
    let file_path = |key: &str, value: &Option<PathBuf>| -> Result<Option<PathBuf>, ConfigError> {
        let Some(v) = value else { return Ok(None) };
        let full = anchor_path(anchor, v);
        if !full.is_file() {
            return Err(ConfigError::Invalid {
                path: path.clone().unwrap_or_default(),
                key: key.into(),
                problem: format!("names {}, which is not a file", full.display()),
            });
        }
        Ok(Some(full))
    };
    let ms = |v: Option<i64>, default: Duration| {
        v.map(|v| Duration::from_millis(v as u64))
            .unwrap_or(default)
    };
    let d = PollIntervals::default();
    let poll = PollIntervals {
        positions: ms(c.poll.positions, d.positions),
        orders: ms(c.poll.orders, d.orders),
        pnl: ms(c.poll.pnl, d.pnl),
        proposals: ms(c.poll.proposals, d.proposals),
        usage: ms(c.poll.usage, d.usage),
        audit: ms(c.poll.audit, d.audit),
    };

    Ok(ConsoleConfig {
        service,
        profile: profile.map(|(n, _)| n.clone()),
        theme: c.theme.clone().unwrap_or_else(|| "dark".into()),
        bell: c.bell.unwrap_or(true),
        journal: c.journal.unwrap_or(true),
        keymap_file: file_path("console.keymap", &c.keymap)?,
        theme_file: file_path("console.theme_file", &c.theme_file)?,
        poll,
        config_path: path.clone(),
        data_dir,
        warnings,
        gate_token,
        demo_agent: c.demo_agent.unwrap_or(true) && !flags.no_demo_agent,
        demo_agent_interval: Duration::from_secs(
            c.demo_agent_interval_secs
                .unwrap_or(120)
                .max(MIN_DEMO_AGENT_SECS) as u64,
        ),
    })
}

/// `~/x` is under the home directory; relative paths are relative to the config file's directory.
fn anchor_path(anchor: &Path, p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~")
        && let Some(home) = directories::BaseDirs::new()
    {
        return home.home_dir().join(rest);
    }
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        anchor.join(p)
    }
}

/// Checks the scheme and host and trims trailing slashes.
fn check_base_url(raw: &str, origin: &str) -> Result<String, ConfigError> {
    let url = raw.trim();
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    let ok = match rest {
        Some(rest) => {
            !rest.is_empty()
                && !rest.starts_with('/')
                && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    };
    if !ok {
        return Err(ConfigError::BadBaseUrl {
            url: url.to_string(),
            origin: origin.to_string(),
        });
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn is_https_or_loopback(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://") else {
        return true;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    host == "localhost"
        || host.starts_with("localhost:")
        || host.starts_with("127.")
        || host.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    struct Fixture {
        dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture {
                dir: tempfile::tempdir().unwrap(),
            }
        }
        /// Dirs whose default config file is `config.toml` in the temp dir.
        fn dirs(&self) -> Dirs {
            Dirs {
                config_file: Some(self.dir.path().join("config.toml")),
                data_dir: self.dir.path().join("data"),
            }
        }
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let p = self.dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            #[cfg(unix)]
            set_mode(&p, 0o600);
            p
        }
        fn resolve(
            &self,
            flags: &Flags,
            env: &[(&str, &str)],
        ) -> Result<ConsoleConfig, ConfigError> {
            resolve_with_dirs(flags, &env_of(env), &self.dirs())
        }
    }

    #[cfg(unix)]
    fn set_mode(p: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    const PROFILES: &str = r#"
profile = "paper"
[profiles.paper]
base_url = "https://paper.example.com/"
api_key_env = "PAPER_KEY"
[profiles.live]
base_url = "https://live.example.com"
api_key_env = "LIVE_KEY"
"#;

    fn remote(c: &ConsoleConfig) -> (&str, &str, &str) {
        match &c.service {
            Service::Remote {
                base_url,
                api_key,
                source,
            } => (base_url.as_str(), api_key.expose(), source.as_str()),
            Service::Embedded => panic!("expected a remote service, got embedded"),
        }
    }

    #[test]
    fn nothing_configured_is_the_embedded_sandbox_with_defaults() {
        let f = Fixture::new();
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(c.service, Service::Embedded);
        assert_eq!(c.profile, None);
        assert_eq!(c.theme, "dark");
        assert!(c.bell && c.journal);
        assert_eq!(c.poll, PollIntervals::default());
        assert_eq!(c.poll.proposals, Duration::from_millis(1000));
        assert_eq!(c.config_path, None);
        assert_eq!(c.data_dir, f.dir.path().join("data"));
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn default_config_file_is_read_when_present() {
        let f = Fixture::new();
        f.write(
            "config.toml",
            "[console]\ntheme = \"light\"\nbell = false\n",
        );
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(c.theme, "light");
        assert!(!c.bell);
        assert_eq!(c.config_path, Some(f.dir.path().join("config.toml")));
    }

    #[test]
    fn config_flag_beats_env_beats_default_file() {
        let f = Fixture::new();
        f.write("config.toml", "[console]\ntheme = \"light\"\n");
        let env_file = f.write("env.toml", "[console]\nbell = false\n");
        let flag_file = f.write("flag.toml", "[console]\njournal = false\n");
        let env_path = env_file.to_str().unwrap();
        let c = f
            .resolve(&Flags::default(), &[(ENV_CONFIG, env_path)])
            .unwrap();
        assert_eq!((c.theme.as_str(), c.bell, c.journal), ("dark", false, true));
        let flags = Flags {
            config: Some(flag_file.clone()),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &[(ENV_CONFIG, env_path)]).unwrap();
        assert_eq!((c.theme.as_str(), c.bell, c.journal), ("dark", true, false));
        assert_eq!(c.config_path, Some(flag_file));
    }

    #[test]
    fn a_named_config_file_that_is_missing_is_an_error() {
        let f = Fixture::new();
        let missing = f.dir.path().join("nope.toml");
        let flags = Flags {
            config: Some(missing.clone()),
            ..Flags::default()
        };
        let e = f.resolve(&flags, &[]).unwrap_err().to_string();
        assert!(e.contains("nope.toml") && e.contains("--config"), "{e}");
        let e = f
            .resolve(
                &Flags::default(),
                &[(ENV_CONFIG, missing.to_str().unwrap())],
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.toml") && e.contains(ENV_CONFIG), "{e}");
    }

    #[test]
    fn profile_precedence_flag_env_file() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let env = [("PAPER_KEY", "pk"), ("LIVE_KEY", "lk")];
        let c = f.resolve(&Flags::default(), &env).unwrap();
        assert_eq!(c.profile.as_deref(), Some("paper"));
        assert_eq!(
            remote(&c),
            (
                "https://paper.example.com",
                "pk",
                "profile paper (api_key_env PAPER_KEY)"
            )
        );

        let mut with_env = env.to_vec();
        with_env.push((ENV_PROFILE, "live"));
        let c = f.resolve(&Flags::default(), &with_env).unwrap();
        assert_eq!(c.profile.as_deref(), Some("live"));
        assert_eq!(remote(&c).0, "https://live.example.com");

        let flags = Flags {
            profile: Some("paper".into()),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &with_env).unwrap();
        assert_eq!(c.profile.as_deref(), Some("paper"));
        assert_eq!(remote(&c).1, "pk");
    }

    #[test]
    fn sandbox_profile_overrides_the_files_default_profile() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let flags = Flags {
            profile: Some("sandbox".into()),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &[]).unwrap();
        assert_eq!(c.service, Service::Embedded);
        assert_eq!(c.profile, None);
        f.write(
            "config.toml",
            "[profiles.sandbox]\nbase_url = \"https://x.io\"\n",
        );
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("profiles.sandbox") && e.contains("reserved"),
            "{e}"
        );
    }

    #[test]
    fn base_url_precedence_flag_env_profile() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let env = [
            ("PAPER_KEY", "pk"),
            (ENV_BASE_URL, "http://127.0.0.1:9000/"),
        ];
        let c = f.resolve(&Flags::default(), &env).unwrap();
        assert_eq!(remote(&c).0, "http://127.0.0.1:9000");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let flags = Flags {
            base_url: Some("https://flag.example.com//".into()),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &env).unwrap();
        assert_eq!(remote(&c).0, "https://flag.example.com");
        // Without env or flag, the profile's, trailing slash trimmed.
        let c = f.resolve(&Flags::default(), &env[..1]).unwrap();
        assert_eq!(remote(&c).0, "https://paper.example.com");
    }

    #[test]
    fn api_key_precedence_flag_env_profile() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let env = [("PAPER_KEY", "pk"), (ENV_API_KEY, "envkey")];
        let c = f.resolve(&Flags::default(), &env).unwrap();
        assert_eq!(remote(&c).1, "envkey");
        assert_eq!(remote(&c).2, "env AGENTDESK_API_KEY");
        let flags = Flags {
            api_key: Some("flagkey".into()),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &env).unwrap();
        assert_eq!((remote(&c).1, remote(&c).2), ("flagkey", "flag --api-key"));
    }

    #[test]
    fn flags_and_env_alone_name_a_service_without_a_file() {
        let f = Fixture::new();
        let env = [
            (ENV_BASE_URL, "https://svc.example.com"),
            (ENV_API_KEY, "k1"),
        ];
        let c = f.resolve(&Flags::default(), &env).unwrap();
        assert_eq!(
            remote(&c),
            ("https://svc.example.com", "k1", "env AGENTDESK_API_KEY")
        );
        // Empty env values count as unset.
        let env = [(ENV_BASE_URL, ""), (ENV_API_KEY, " ")];
        assert_eq!(
            f.resolve(&Flags::default(), &env).unwrap().service,
            Service::Embedded
        );
    }

    #[test]
    fn plain_api_key_in_profile() {
        let f = Fixture::new();
        f.write(
            "config.toml",
            "profile = \"live\"\n[profiles.live]\nbase_url = \"https://l.example.com\"\napi_key = \"plainkey\"\n",
        );
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(remote(&c).1, "plainkey");
        assert!(
            remote(&c).2.starts_with("profile live (api_key in "),
            "{}",
            remote(&c).2
        );
    }

    #[test]
    fn api_key_env_that_is_unset_is_an_error_naming_it() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let e = f.resolve(&Flags::default(), &[]).unwrap_err();
        assert!(matches!(e, ConfigError::ApiKeyEnvUnset { .. }));
        let e = e.to_string();
        assert!(e.contains("PAPER_KEY") && e.contains("paper"), "{e}");
        // A key from flag or env makes the profile's api_key_env irrelevant.
        let c = f.resolve(&Flags::default(), &[(ENV_API_KEY, "k")]).unwrap();
        assert_eq!(remote(&c).0, "https://paper.example.com");
    }

    #[test]
    fn unknown_profile_lists_the_defined_ones() {
        let f = Fixture::new();
        f.write("config.toml", PROFILES);
        let flags = Flags {
            profile: Some("staging".into()),
            ..Flags::default()
        };
        let e = f.resolve(&flags, &[]).unwrap_err().to_string();
        assert!(e.contains("`staging`") && e.contains("--profile"), "{e}");
        assert!(e.contains("live, paper"), "{e}");
        let e = f
            .resolve(&Flags::default(), &[(ENV_PROFILE, "prod")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`prod`") && e.contains(ENV_PROFILE), "{e}");
        // Without a file there are no profiles at all.
        let g = Fixture::new();
        let e = g.resolve(&flags, &[]).unwrap_err().to_string();
        assert!(e.contains("no config file"), "{e}");
        // The file's own default must exist too.
        f.write("config.toml", "profile = \"ghost\"\n[profiles.live]\n");
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("`ghost`") && e.contains("`profile` in") && e.contains("live"),
            "{e}"
        );
    }

    #[test]
    fn base_url_without_key_and_key_without_base_url_are_errors() {
        let f = Fixture::new();
        let e = f
            .resolve(
                &Flags::default(),
                &[(ENV_BASE_URL, "https://x.example.com")],
            )
            .unwrap_err();
        assert!(matches!(e, ConfigError::MissingApiKey { .. }));
        let e = e.to_string();
        assert!(
            e.contains("--api-key") && e.contains(ENV_API_KEY) && e.contains("api_key_env"),
            "{e}"
        );
        let flags = Flags {
            api_key: Some("k".into()),
            ..Flags::default()
        };
        let e = f.resolve(&flags, &[]).unwrap_err();
        assert!(matches!(e, ConfigError::MissingBaseUrl { .. }));
        assert!(e.to_string().contains("--base-url"), "{e}");
    }

    #[test]
    fn base_url_needs_a_scheme_and_host() {
        let f = Fixture::new();
        for bad in [
            "example.com",
            "ftp://x.io",
            "https://",
            "http:///x",
            "https://a b",
        ] {
            let env = [(ENV_BASE_URL, bad), (ENV_API_KEY, "k")];
            let e = f.resolve(&Flags::default(), &env).unwrap_err();
            assert!(matches!(e, ConfigError::BadBaseUrl { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("http:// or https://"), "{e}");
        }
        let env = [
            (ENV_BASE_URL, "HTTPS://Up.Example.com/"),
            (ENV_API_KEY, "k"),
        ];
        assert_eq!(
            remote(&f.resolve(&Flags::default(), &env).unwrap()).0,
            "HTTPS://Up.Example.com"
        );
    }

    #[test]
    fn plain_http_to_a_remote_host_warns() {
        let f = Fixture::new();
        let env = [(ENV_BASE_URL, "http://svc.example.com"), (ENV_API_KEY, "k")];
        let c = f.resolve(&Flags::default(), &env).unwrap();
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("unencrypted"), "{:?}", c.warnings);
        let env = [(ENV_BASE_URL, "http://localhost:8787"), (ENV_API_KEY, "k")];
        assert!(
            f.resolve(&Flags::default(), &env)
                .unwrap()
                .warnings
                .is_empty()
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key_and_table() {
        let f = Fixture::new();
        for (text, key, table) in [
            ("[console]\ncolour = \"red\"\n", "colour", "[console]"),
            (
                "[console.poll]\npositions = 500\nfills = 500\n",
                "fills",
                "[console.poll]",
            ),
            (
                "[profiles.live]\nbase_url = \"https://x.io\"\napikey = \"k\"\n",
                "apikey",
                "[profiles.live]",
            ),
        ] {
            f.write("config.toml", text);
            let e = f.resolve(&Flags::default(), &[]).unwrap_err();
            assert!(matches!(e, ConfigError::Parse { .. }), "{e}");
            let e = e.to_string();
            assert!(e.contains(&format!("`{key}`")), "{e}");
            assert!(e.contains(table) && e.contains("config.toml, line "), "{e}");
        }
        // Unknown top-level keys are only a warning: other tables belong to other readers.
        f.write("config.toml", "[consle]\ntheme = \"light\"\n");
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("`consle`"), "{:?}", c.warnings);
        // The gateway's tables are known, not typos.
        f.write(
            "config.toml",
            "public_url = \"https://desk.example.com\"\n[gate]\ntimeout_secs = 9\n[policy]\n[notify]\n",
        );
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn parse_errors_give_the_line() {
        let f = Fixture::new();
        f.write("config.toml", "[console]\nbell = true\nbell = false\n");
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn poll_intervals_are_read_and_checked() {
        let f = Fixture::new();
        f.write(
            "config.toml",
            "[console.poll]\norders = 500\naudit = 60000\n",
        );
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(c.poll.orders, Duration::from_millis(500));
        assert_eq!(c.poll.audit, Duration::from_secs(60));
        assert_eq!(c.poll.positions, Duration::from_millis(2000));
        for bad in ["0", "99", "-5"] {
            f.write("config.toml", &format!("[console.poll]\npnl = {bad}\n"));
            let e = f.resolve(&Flags::default(), &[]).unwrap_err();
            assert!(matches!(e, ConfigError::Invalid { .. }), "{e}");
            let e = e.to_string();
            assert!(
                e.contains("console.poll.pnl") && e.contains("at least 100"),
                "{e}"
            );
        }
        f.write("config.toml", "[console.poll]\npnl = 100\n");
        assert_eq!(
            f.resolve(&Flags::default(), &[]).unwrap().poll.pnl,
            Duration::from_millis(100)
        );
    }

    #[test]
    fn theme_must_be_dark_or_light() {
        let f = Fixture::new();
        f.write("config.toml", "[console]\ntheme = \"solarized\"\n");
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("console.theme") && e.contains("solarized"),
            "{e}"
        );
    }

    #[test]
    fn keymap_and_theme_files_are_relative_to_the_config_file() {
        let f = Fixture::new();
        std::fs::create_dir(f.dir.path().join("sub")).unwrap();
        f.write("sub/keys.toml", "");
        let abs = f.write("colors.toml", "");
        let cfg = f.write(
            "sub/agentdesk.toml",
            &format!(
                "[console]\nkeymap = \"keys.toml\"\ntheme_file = \"{}\"\n",
                abs.display()
            ),
        );
        let flags = Flags {
            config: Some(cfg),
            ..Flags::default()
        };
        let c = f.resolve(&flags, &[]).unwrap();
        assert_eq!(c.keymap_file, Some(f.dir.path().join("sub/keys.toml")));
        assert_eq!(c.theme_file, Some(abs));
        f.write("config.toml", "[console]\nkeymap = \"missing.toml\"\n");
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("console.keymap") && e.contains("missing.toml"),
            "{e}"
        );
    }

    #[test]
    fn both_api_key_and_api_key_env_is_an_error() {
        let f = Fixture::new();
        f.write(
            "config.toml",
            "[profiles.live]\nbase_url = \"https://x.io\"\napi_key = \"zzsecretzz\"\napi_key_env = \"K\"\n",
        );
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("profiles.live.api_key") && e.contains("api_key_env"),
            "{e}"
        );
        assert!(!e.contains("zzsecretzz"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn plain_key_in_a_readable_file_warns_and_private_file_does_not() {
        let f = Fixture::new();
        let text = "[profiles.live]\nbase_url = \"https://x.io\"\napi_key = \"s3cr3tvalue\"\n";
        let p = f.write("config.toml", text);
        set_mode(&p, 0o644);
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        let w = &c.warnings[0];
        assert!(
            w.contains("mode 0644") && w.contains("chmod 600") && w.contains("api_key_env"),
            "{w}"
        );
        assert!(
            w.contains(&p.display().to_string()) && w.contains("live"),
            "{w}"
        );
        assert!(!w.contains("s3cr3tvalue"), "{w}");

        set_mode(&p, 0o600);
        assert!(
            f.resolve(&Flags::default(), &[])
                .unwrap()
                .warnings
                .is_empty()
        );

        // api_key_env in a readable file is fine.
        let p = f.write("config.toml", PROFILES);
        set_mode(&p, 0o644);
        let c = f.resolve(&Flags::default(), &[("PAPER_KEY", "k")]).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn gate_token_from_env_beats_the_profiles_gate_token_env() {
        let f = Fixture::new();
        f.write(
            "config.toml",
            "profile = \"gw\"\n[profiles.gw]\nbase_url = \"http://127.0.0.1:8788\"\napi_key_env = \"K\"\ngate_token_env = \"GW_TOKEN\"\n",
        );
        let c = f
            .resolve(
                &Flags::default(),
                &[("K", "k"), ("GW_TOKEN", " gst_profile ")],
            )
            .unwrap();
        assert_eq!(
            c.gate_token.as_ref().map(Secret::expose),
            Some("gst_profile")
        );
        let c = f
            .resolve(
                &Flags::default(),
                &[
                    ("K", "k"),
                    ("GW_TOKEN", "gst_profile"),
                    (ENV_GATE_TOKEN, "gst_env"),
                ],
            )
            .unwrap();
        assert_eq!(c.gate_token.as_ref().map(Secret::expose), Some("gst_env"));
        // A named variable that is not set is an error naming it, not a silent "no token".
        let e = f
            .resolve(&Flags::default(), &[("K", "k")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gate_token_env") && e.contains("GW_TOKEN"),
            "{e}"
        );
        // No token anywhere: none.
        let c = Fixture::new().resolve(&Flags::default(), &[]).unwrap();
        assert!(c.gate_token.is_none());
    }

    #[test]
    fn the_demo_agent_is_on_by_default_off_by_flag_or_config() {
        let c = Fixture::new().resolve(&Flags::default(), &[]).unwrap();
        assert!(c.demo_agent);
        assert_eq!(c.demo_agent_interval, Duration::from_secs(120));
        let flags = Flags {
            no_demo_agent: true,
            ..Flags::default()
        };
        assert!(!Fixture::new().resolve(&flags, &[]).unwrap().demo_agent);
        let f = Fixture::new();
        f.write(
            "config.toml",
            "[console]\ndemo_agent = false\ndemo_agent_interval_secs = 30\n",
        );
        let c = f.resolve(&Flags::default(), &[]).unwrap();
        assert!(!c.demo_agent);
        assert_eq!(c.demo_agent_interval, Duration::from_secs(30));
        let f = Fixture::new();
        f.write("config.toml", "[console]\ndemo_agent_interval_secs = 1\n");
        let e = f.resolve(&Flags::default(), &[]).unwrap_err().to_string();
        assert!(
            e.contains("console.demo_agent_interval_secs") && e.contains("at least 5"),
            "{e}"
        );
    }

    #[test]
    fn flags_debug_redacts_the_key() {
        let flags = Flags {
            api_key: Some("flag-secret-123".into()),
            ..Flags::default()
        };
        assert!(!format!("{flags:?}").contains("flag-secret-123"));
    }

    #[test]
    fn the_example_file_loads() {
        let text = include_str!("../config.example.toml");
        let path = Path::new("config.example.toml");
        let loaded = parse(text, path).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert!(loaded.file.profiles.contains_key("live"));
        let c = build(
            &Flags::default(),
            &env_of(&[]),
            Some(loaded),
            PathBuf::from("d"),
        )
        .unwrap();
        assert_eq!(c.service, Service::Embedded);
        assert_eq!(c.poll, PollIntervals::default());
        assert_eq!((c.theme.as_str(), c.bell, c.journal), ("dark", true, true));
        // Its live profile works once selected and its variable is set.
        let loaded = parse(text, path).unwrap();
        let flags = Flags {
            profile: Some("live".into()),
            ..Flags::default()
        };
        let c = build(
            &flags,
            &env_of(&[("LIVE_API_KEY", "k")]),
            Some(loaded),
            "d".into(),
        )
        .unwrap();
        assert!(matches!(c.service, Service::Remote { .. }));
        // And the sandbox still reads its defaults from it.
        assert_eq!(
            crate::sandbox::Settings::from_toml(text).unwrap(),
            crate::sandbox::Settings::default()
        );
    }

    mod secrets {
        use super::*;
        use proptest::prelude::*;

        fn assert_hidden(text: &str, key: &str) -> Result<(), TestCaseError> {
            prop_assert!(!text.contains(key), "key leaked into: {}", text);
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn keys_never_appear_in_debug_errors_or_warnings(key in "[A-Za-z0-9_-]{12,40}") {
                let path = Path::new("/etc/agentdesk/config.toml");
                // Resolved config (from flag, env and file): Debug must redact.
                for (flags, env) in [
                    (Flags { api_key: Some(key.clone()), base_url: Some("https://x.io".into()), ..Flags::default() }, vec![]),
                    (Flags::default(), vec![(ENV_API_KEY, key.as_str()), (ENV_BASE_URL, "http://x.io")]),
                ] {
                    let c = build(&flags, &env_of(&env), None, "d".into()).unwrap();
                    assert_hidden(&format!("{c:?}"), &key)?;
                    for w in &c.warnings { assert_hidden(w, &key)?; }
                }
                let text = format!("[profiles.live]\nbase_url = \"https://x.io\"\napi_key = \"{key}\"\n");
                let mut loaded = parse(&text, path).unwrap();
                loaded.mode = Some(0o644);
                let flags = Flags { profile: Some("live".into()), ..Flags::default() };
                let c = build(&flags, &env_of(&[]), Some(loaded), "d".into()).unwrap();
                prop_assert_eq!(c.warnings.len(), 1);
                assert_hidden(&format!("{c:?}"), &key)?;

                // Errors.
                let flags = Flags { api_key: Some(key.clone()), ..Flags::default() };
                let e = build(&flags, &env_of(&[]), None, "d".into()).unwrap_err();
                assert_hidden(&e.to_string(), &key)?;
                assert_hidden(&format!("{e:?}"), &key)?;
                let e = build(&Flags::default(), &env_of(&[(ENV_API_KEY, &key)]), None, "d".into()).unwrap_err();
                assert_hidden(&e.to_string(), &key)?;
                let bad_files = [
                    format!("[profiles.live]\napi_key = \"{key}\"\napi_key = \"{key}\"\n"),
                    format!("[profiles.live]\napi_key = \"{key}\"\nbogus = 1\n"),
                    format!("[profiles.live]\napi_key = \"{key}\"\napi_key_env = \"X\"\n"),
                    format!("[profiles.live]\napi_key = \"{key}\n"),
                    format!("[profiles.live]\napi_key = {key}\n"),
                    format!("[profiles]\nlive = \"{key}\"\n"),
                    format!("[profiles.live]\napi_key = [\"{key}\"]\n"),
                ];
                for text in bad_files {
                    if let Err(e) = parse(&text, path) {
                        assert_hidden(&e.to_string(), &key)?;
                        assert_hidden(&format!("{e:?}"), &key)?;
                    }
                }
            }
        }
    }
}
