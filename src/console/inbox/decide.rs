//! A decision taken: recorded in the history the Proposals tab shows and written to the journal
//! with what it was taken on (the preview, what this console staged, the risk it showed, whose
//! it was), so the record says what was decided whatever shape the service's preview had.

use super::context::InboxCtx;
use super::{Decision, DecisionKind, Inbox, LocalState, Source, levels};
use crate::console::action::Effect;
use crate::console::component::Ask;
use serde_json::json;

impl Inbox {
    /// Every decision, expiry and outcome goes through here: the history and the journal say
    /// the same thing.
    pub(crate) fn decide(
        &mut self,
        id: &str,
        kind: DecisionKind,
        summary: String,
        result: String,
        ctx: &mut InboxCtx,
    ) {
        let item = self.item(id);
        let preview = item.map(|i| serde_json::to_value(&i.proposal.preview).unwrap_or_default());
        // What this console staged, as sent, and the risk it showed: the record says what the
        // supervisor decided on, whatever shape the service's preview had.
        let request = item
            .and_then(|i| i.request.as_ref())
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        let trade = item.filter(|i| i.tool.is_none() && i.proposal.preview.kind == "trade");
        let risk = trade.map(|i| risk_record(&super::risk::live(&i.proposal.preview, ctx.account)));
        // The summary names the levels too: the record must say what was approved.
        let summary = match trade {
            Some(i) => format!("{summary} {}", levels(&i.proposal.preview)),
            None => summary,
        };
        // Whose it was: the agent the gateway names (its label and key fingerprint), this
        // console's own key for what it staged; a service's list names no agent.
        let own = &ctx.service.key_fingerprint;
        let agent = match (self.gate.item(id), item.map(|i| i.source)) {
            (Some(g), _) => json!({
                "name": self.gate.agent_label(id, own),
                "fingerprint": g.agent_fingerprint,
            }),
            (None, Some(Source::Console)) => json!({
                "name": "this console",
                "fingerprint": own,
            }),
            _ => serde_json::Value::Null,
        };
        let line = json!({
            "time": ctx.now.to_rfc3339(),
            "proposalId": id,
            "decision": kind.label(),
            "agent": agent,
            "summary": summary,
            "result": result,
            "service": ctx.service.host,
            "preview": preview,
            "request": request,
            "risk": risk,
        });
        ctx.fx.push(Effect::Journal(line.to_string()));
        self.record(Decision {
            proposal_id: id.to_string(),
            kind,
            at: ctx.now,
            summary,
            result,
        });
        ctx.ask(Ask::Redraw);
    }
}

impl Inbox {
    /// The approvals whose outcome this console does not know yet (a confirm in flight, or one
    /// that got no answer and is still being checked), journaled as they stand when the console
    /// quits: a decision is never missing from the journal because its outcome came late. A
    /// gateway's approvals are journaled when answered, so none is left here.
    pub(crate) fn journal_unsettled(&mut self, ctx: &mut InboxCtx) {
        let unsettled: Vec<(String, String)> = self
            .items
            .iter()
            .filter_map(|i| match &i.local {
                LocalState::Confirming => {
                    Some((i.proposal.proposal_id.clone(), "no answer yet".into()))
                }
                LocalState::Unknown {
                    error,
                    checking: true,
                } => Some((i.proposal.proposal_id.clone(), error.clone())),
                _ => None,
            })
            .collect();
        for (id, why) in unsettled {
            let summary = self.described(&id);
            let result = format!(
                "outcome unknown when this console quit ({why}); the service's records say \
                 whether it executed"
            );
            self.decide(&id, DecisionKind::Approved, summary, result, ctx);
        }
    }
}

/// The risk figures as the journal keeps them.
fn risk_record(r: &super::risk::Risk) -> serde_json::Value {
    json!({
        "notional": r.notional,
        "margin": r.margin,
        "mark": r.mark,
        "accountValue": r.account_value,
        "notionalPct": r.notional_pct,
        "marginPct": r.margin_pct,
        "equityAtRiskPct": r.equity_at_risk_pct,
        "slPct": r.sl_pct,
        "tpPct": r.tp_pct,
        "liquidationPx": r.est_liquidation,
        "resultingSzi": r.resulting_szi,
        "unknown": r.unknown,
        "warnings": r.warnings,
    })
}
