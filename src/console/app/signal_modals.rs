//! App's side of the Signals tab's modals — the create form, the signing secret shown once, the
//! builder-fee panel with its EIP-712 signature. Each modal owns its state in the one modal slot
//! (`modal.rs`); App routes their keys here and performs what they send. A destination created
//! is handed to the tab (`SignalsTab::add_created`).

use crate::api::ApiError;
use crate::api::eip712;
use crate::api::model::{
    BuilderFeeApproval, BuilderFeePayload, BuilderFeeStatus, SignalDestination,
    SignalDestinationRequest,
};
use crate::console::action::{Effect, Resource};
use crate::console::app::{App, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tabs::signals::{
    BuilderPanel, Revealed, WALLET_KEY_ENV, builder_payload, is_unsupported,
};
use crate::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

impl App {
    // ---- create form and the secret shown once --------------------------------------------------

    pub(crate) fn on_destination_form_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let Some(Modal::DestinationForm(form)) = self.modal.as_mut() else {
            return;
        };
        let n = form.fields.len();
        match key.code {
            KeyCode::Esc => {
                self.modal = None;
            }
            KeyCode::Tab | KeyCode::Down => form.focus = (form.focus + 1) % n,
            KeyCode::BackTab | KeyCode::Up => form.focus = (form.focus + n - 1) % n,
            KeyCode::Backspace => {
                form.fields[form.focus].pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                form.fields[form.focus].clear();
            }
            KeyCode::Char(c)
                if !c.is_control()
                    && !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                form.fields[form.focus].push(c);
                form.problems.clear();
            }
            KeyCode::Enter => self.submit_destination(fx),
            _ => {}
        }
    }

    fn submit_destination(&mut self, fx: &mut Vec<Effect>) {
        let Some(Modal::DestinationForm(form)) = self.modal.as_mut() else {
            return;
        };
        if form.sending {
            return;
        }
        match form.validate() {
            Err(problems) => form.problems = problems,
            Ok(new) => {
                if self.posts_held() {
                    return;
                }
                let Some(Modal::DestinationForm(form)) = self.modal.as_mut() else {
                    return;
                };
                form.problems.clear();
                form.sending = true;
                fx.push(Effect::CreateDestination(SignalDestinationRequest {
                    url: new.url,
                    strategy_ids: new.strategy_ids,
                    directions: new.directions,
                    name: new.name,
                }));
            }
        }
    }

    pub(crate) fn on_destination_created(
        &mut self,
        name: &str,
        result: Result<Box<SignalDestination>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        match result {
            Ok(created) => {
                let mut dest = *created;
                // The secret goes to the overlay only; the listed destination never holds it.
                let secret = dest.signing_secret.take();
                if matches!(self.modal, Some(Modal::DestinationForm(_))) {
                    self.modal = None;
                }
                self.tabs.signals.add_created(&dest, at);
                match secret {
                    Some(secret) => {
                        // Shown once, even if the form was closed while the request was out.
                        self.modal = Some(Modal::Secret(Revealed {
                            name: if dest.name.is_empty() {
                                name.to_string()
                            } else {
                                dest.name.clone()
                            },
                            id: dest.id,
                            secret,
                            copied: false,
                        }));
                    }
                    None => {
                        self.toast(
                            format!("created {name}; the service sent no signing secret"),
                            ToastLevel::Error,
                        );
                    }
                }
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                let text = format!("the service refused it: {e}");
                match self.modal.as_mut() {
                    Some(Modal::DestinationForm(form)) => {
                        form.sending = false;
                        form.problems = vec![text];
                    }
                    _ => self.toast(format!("create {name}: {text}"), ToastLevel::Error),
                }
            }
        }
    }

    pub(crate) fn on_secret_key(&mut self, action: Option<KeyAction>, fx: &mut Vec<Effect>) {
        match action {
            Some(KeyAction::Copy) => {
                if let Some(Modal::Secret(r)) = self.modal.as_mut() {
                    fx.push(Effect::Clipboard(Secret::new(
                        B64.encode(r.secret.expose().as_bytes()),
                    )));
                    r.copied = true;
                }
            }
            Some(KeyAction::Cancel | KeyAction::Select | KeyAction::Quit) => {
                // The secret leaves the console's memory with the overlay.
                self.modal = None;
            }
            _ => {}
        }
    }

    // ---- builder fee ---------------------------------------------------------------------------------

    pub(crate) fn open_builder_fee(&mut self, fx: &mut Vec<Effect>) {
        let wallet = self
            .account
            .whoami
            .as_ref()
            .and_then(|w| w.wallet_address.clone())
            .filter(|w| !w.is_empty());
        let mut panel = BuilderPanel {
            wallet: wallet.clone(),
            guard: Some(crate::console::deliberate::Deliberate::new(self.now)),
            ..Default::default()
        };
        match wallet {
            Some(w) => {
                panel.loading = true;
                fx.push(Effect::FetchBuilderFee(w));
            }
            None if self.account.whoami.is_none() => {
                panel.error = Some("whoami has not answered yet: r refreshes, then B again".into())
            }
            None => {
                panel.error = Some(
                    "whoami shows no walletAddress for this account: there is no wallet to approve"
                        .into(),
                )
            }
        }
        self.modal = Some(Modal::BuilderFee(panel));
    }

    /// The builder-fee panel's keys. Its `y` authorizes fees, so it passes the guard every final
    /// question shares: read first, on its own, held while the keyboard stays quiet; a key that
    /// is not one of the panel's closes it without signing.
    pub(crate) fn on_builder_fee_key(
        &mut self,
        key: crossterm::event::KeyEvent,
        action: Option<KeyAction>,
        fx: &mut Vec<Effect>,
    ) {
        let now = self.now;
        let yes = self.yes_key();
        let Some(Modal::BuilderFee(panel)) = self.modal.as_mut() else {
            return;
        };
        let judged = panel
            .guard
            .get_or_insert_with(|| crate::console::deliberate::Deliberate::new(now))
            .arrive(now);
        match action {
            Some(KeyAction::ConfirmYes) => match judged.refusal(&yes) {
                Some(why) => self.toast(why, crate::console::app::ToastLevel::Info),
                None => {
                    self.held = Some(crate::console::deliberate::Held {
                        at: now,
                        decision: crate::console::modal::Decision::SignBuilderFee,
                    })
                }
            },
            Some(KeyAction::Refresh) => {
                if let Some(w) = panel.wallet.clone()
                    && !panel.loading
                {
                    panel.loading = true;
                    panel.error = None;
                    fx.push(Effect::FetchBuilderFee(w));
                }
            }
            Some(KeyAction::Down) => panel.scroll = panel.scroll.saturating_add(1),
            Some(KeyAction::Up) => panel.scroll = panel.scroll.saturating_sub(1),
            Some(KeyAction::Cancel | KeyAction::Quit | KeyAction::BuilderFee) => {
                self.modal = None;
            }
            _ => {
                let text = crate::console::deliberate::closed_by(
                    "builder-fee panel",
                    &crate::console::keymap::KeyBinding::from_event(&key).to_string(),
                );
                self.modal = None;
                self.say_typing(&text, crate::console::app::ToastLevel::Info);
            }
        }
    }

    /// Signs the typed data with the wallet key from the environment and posts it — only when the
    /// key's address is the account's wallet. The key lives for this call alone.
    pub(crate) fn sign_builder_fee(&mut self, fx: &mut Vec<Effect>) {
        let read_key = self.wallet_key;
        let Some(Modal::BuilderFee(panel)) = self.modal.as_mut() else {
            return;
        };
        if panel.sending || panel.loading {
            return;
        }
        let (Some(wallet), Some(payload)) = (panel.wallet.clone(), panel.payload.as_ref()) else {
            return;
        };
        if payload.authorized {
            panel.result = Some("already authorized: nothing to sign".into());
            return;
        }
        let Some(typed) = payload.typed.as_ref() else {
            panel.error = Some("the payload carries no typed data to sign".into());
            return;
        };
        let Some(nonce) = payload.nonce else {
            panel.error = Some("the payload carries no nonce".into());
            return;
        };
        let chain_id = payload
            .chain_id_hex
            .clone()
            .unwrap_or_else(|| eip712::SIGNATURE_CHAIN_ID.to_string());
        let Some(key) = read_key() else {
            panel.error = Some(format!(
                "no wallet key: start the console with {WALLET_KEY_ENV}=<hex private key of {wallet}> in its environment, then press y"
            ));
            return;
        };
        match sign_typed(&key, typed, &wallet) {
            Ok(signature) => {
                panel.error = None;
                panel.sending = true;
                fx.push(Effect::ApproveBuilderFee(BuilderFeeApproval {
                    venue_wallet: wallet,
                    nonce,
                    signature: Value::String(signature),
                    signature_chain_id: chain_id,
                }));
            }
            Err(why) => panel.error = Some(why.to_string()),
        }
        // `key` is dropped here: the wallet key is never kept.
    }

    pub(crate) fn on_builder_fee_loaded(
        &mut self,
        wallet: &str,
        result: Result<Box<BuilderFeePayload>, ApiError>,
    ) {
        self.dirty = true;
        let Some(Modal::BuilderFee(panel)) = self.modal.as_mut() else {
            return;
        };
        if panel.wallet.as_deref() != Some(wallet) {
            return;
        }
        panel.loading = false;
        match result {
            Ok(body) => {
                let payload = builder_payload(&body);
                panel.error = if payload.typed.is_none() && !payload.authorized {
                    Some(
                        "the service's answer has no typed data (types, primaryType, domain, message)"
                            .into(),
                    )
                } else {
                    None
                };
                panel.payload = Some(payload);
            }
            Err(e) if is_unsupported(&e) => {
                panel.error = Some("this service does not offer the builder-fee operations".into())
            }
            Err(e) => panel.error = Some(e.to_string()),
        }
    }

    pub(crate) fn on_builder_fee_approved(
        &mut self,
        result: Result<Box<BuilderFeeStatus>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        self.poll_now(&[Resource::Whoami], at);
        let text = match &result {
            Ok(status) => status
                .json_summary
                .clone()
                .unwrap_or_else(|| "builder fee approved".to_string()),
            Err(e) => format!("the service refused the approval: {e}"),
        };
        let Some(Modal::BuilderFee(panel)) = self.modal.as_mut() else {
            let level = if result.is_ok() {
                ToastLevel::Info
            } else {
                ToastLevel::Error
            };
            self.toast(text, level);
            return;
        };
        panel.sending = false;
        match result {
            Ok(_) => {
                if let Some(p) = panel.payload.as_mut() {
                    p.authorized = true;
                }
                panel.result = Some(text);
                panel.error = None;
            }
            Err(_) => panel.error = Some(text),
        }
    }
}

/// Why nothing was signed; the builder-fee panel shows it.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error(
        "{env} is not a private key: expected 64 hex digits (0x optional)",
        env = WALLET_KEY_ENV
    )]
    NotHex,
    #[error("{env} is not a valid secp256k1 key", env = WALLET_KEY_ENV)]
    NotAKey,
    #[error("the account's wallet {wallet}: {error}")]
    Wallet {
        wallet: String,
        error: eip712::Eip712Error,
    },
    #[error(
        "{env} is the key of {}, not of the account's wallet {}: nothing was signed or sent",
        eip712::format_address(*.key_of),
        eip712::format_address(*.wallet),
        env = WALLET_KEY_ENV
    )]
    OtherWallet { key_of: [u8; 20], wallet: [u8; 20] },
    #[error("the typed data cannot be hashed: {0}")]
    Hash(eip712::Eip712Error),
}

/// The EIP-712 signature of `typed` by the hex private key `key`, refused unless the key's address
/// is `wallet`.
pub fn sign_typed(
    key: &Secret,
    typed: &eip712::TypedData,
    wallet: &str,
) -> Result<String, SignError> {
    let hex_key = key.expose().trim();
    let hex_key = hex_key
        .strip_prefix("0x")
        .or_else(|| hex_key.strip_prefix("0X"))
        .unwrap_or(hex_key);
    let mut bytes = [0u8; 32];
    if hex::decode_to_slice(hex_key, &mut bytes).is_err() {
        return Err(SignError::NotHex);
    }
    let signing = k256::ecdsa::SigningKey::from_slice(&bytes);
    bytes = [0u8; 32];
    let _ = bytes;
    let signing = signing.map_err(|_| SignError::NotAKey)?;
    let wallet_bytes = eip712::parse_address(wallet).map_err(|error| SignError::Wallet {
        wallet: wallet.to_string(),
        error,
    })?;
    let derived = eip712::address_of(&signing);
    if derived != wallet_bytes {
        return Err(SignError::OtherWallet {
            key_of: derived,
            wallet: wallet_bytes,
        });
    }
    let digest = eip712::signing_hash(typed).map_err(SignError::Hash)?;
    Ok(eip712::sign_digest(&signing, &digest))
}
