//! What each kind of journal record says (its `detail`), typed where the record is written. The
//! store keeps the JSON of these; the supervisor API and `gate journal` show it as stored.

use crate::gateway::model::trade::Trade;
use crate::gateway::rules::policy::Verdict;
use serde::Serialize;
use serde_json::Value;

/// `approve` of an item that was not judged again (already approved: a repeated click).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approved<'a> {
    pub trade_digest: &'a str,
}

/// `approve` or `override`: the rules the item was judged by at the approval, those broken and
/// overridden, and the trade that executes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged<'a> {
    pub verdicts: &'a [Verdict],
    pub overridden: &'a [&'a str],
    pub trade: Option<&'a Trade>,
    pub trade_digest: &'a str,
    /// For a step-up item: which of its approvals this is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Quorum>,
}

/// An approval's place in a step-up item's quorum.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quorum {
    /// This approval's number, counting it.
    pub approvals: usize,
    pub required: u32,
}

/// `policy_refusal`: a staging the policy refused.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRefusal<'a> {
    pub message: &'a str,
    pub verdicts: &'a [Verdict],
    pub trade: Option<&'a Trade>,
    pub trade_digest: &'a str,
}

/// `auto_approve`: a staging a standing approval covered.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoApproved<'a> {
    pub standing_approval: i64,
    pub reason: &'a str,
    pub message: String,
    pub trade: Option<&'a Trade>,
    pub trade_digest: &'a str,
}

/// `reject`, `kill_switch_on`, `kill_switch_off`: why, in the supervisor's words.
#[derive(Serialize)]
pub struct Reason<'a> {
    pub reason: &'a str,
}

/// `policy_change`: the policy before (none at the first start) and after.
#[derive(Serialize)]
pub struct PolicyChange {
    pub from: Option<Value>,
    pub to: Value,
}

/// `expire`: the status the item expired from.
#[derive(Serialize)]
pub struct Expired<'a> {
    pub was: &'a str,
}

/// `reconcile`: what a restart found the service had done with an item left executing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciled<'a> {
    pub outcome: &'a str,
    pub service_status: Option<&'a str>,
    pub proposal_id: Option<&'a str>,
}

/// `insufficient_role`: a supervisor tried what their role does not allow.
#[derive(Serialize)]
pub struct InsufficientRole<'a> {
    pub needed: &'a str,
    pub role: &'a str,
    pub what: &'a str,
}

/// `standing_approval_revoke`: the standing approval that ended.
#[derive(Serialize)]
pub struct Revoked {
    pub id: i64,
}

/// `agent_suspend`, `agent_resume`: which agent (its label then and its key's fingerprint, which
/// a later rename does not change) and why, in the supervisor's words or the policy's.
#[derive(Serialize)]
pub struct Suspension<'a> {
    pub agent: &'a str,
    pub fingerprint: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}
