//! Who an authenticated call is from: its key and the key's account.

use crate::api::catalog::Scope;

#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: i64,
    pub account_id: i64,
    pub messenger_id: String,
    pub wallet: String,
    pub scope: Scope,
}
