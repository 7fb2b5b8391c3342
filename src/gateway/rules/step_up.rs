//! Step-up approvals, as custody platforms hold a large transfer: up to a notional one
//! supervisor's approval executes an item; above it, that many distinct supervisors must approve.
//! Not a verdict: nothing is refused, the item waits for more people.

use super::verdict::{Figure, Verdict, money, verdict};
use crate::gateway::model::trade::Trade;
use serde::Serialize;
use serde_json::Value;

/// The policy's keys, in messages.
pub const KEYS: [&str; 2] = ["step_up_notional_usd", "step_up_approvals"];

/// Approvals an item above the notional needs when `step_up_approvals` is not set.
pub const DEFAULT_APPROVALS: u32 = 2;

/// More than this many distinct supervisors is not a control a desk runs, and a typo (`20` for
/// `2`) would make every large item wait until it expires.
const MOST_APPROVALS: u64 = 5;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepUp {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_up_notional_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_up_approvals: Option<u32>,
}

impl StepUp {
    /// `over`'s set keys replace these.
    pub fn merged(&self, over: &StepUp) -> StepUp {
        StepUp {
            step_up_notional_usd: over.step_up_notional_usd.or(self.step_up_notional_usd),
            step_up_approvals: over.step_up_approvals.or(self.step_up_approvals),
        }
    }

    /// Reads `key` (written `name` in messages): `None` when it is not one of these keys, else
    /// whether its value reads, and what is wrong.
    pub fn read(&mut self, key: &str, name: &str, v: &Value) -> Option<Result<(), String>> {
        let read = match key {
            "step_up_notional_usd" => match v.as_f64() {
                Some(x) if x > 0.0 && x.is_finite() => {
                    self.step_up_notional_usd = Some(x);
                    Ok(())
                }
                _ => Err(format!("{name} must be a positive number of USD, got {v}")),
            },
            "step_up_approvals" => match v.as_u64() {
                Some(n @ 2..=MOST_APPROVALS) => {
                    self.step_up_approvals = Some(n as u32);
                    Ok(())
                }
                _ => Err(format!(
                    "{name} must be a whole number from 2 to {MOST_APPROVALS} (distinct \
                     supervisors; one approval is every item's), got {v}"
                )),
            },
            _ => return None,
        };
        Some(read)
    }

    /// How many distinct supervisors must approve this trade. A close or a cancel that opens
    /// nothing needs one: taking risk off is never slowed down by a quorum. A trade whose
    /// notional is not known is treated as above the step: what cannot be sized is not small.
    pub fn approvals_required(&self, trade: &Trade) -> u32 {
        let Some(step) = self.step_up_notional_usd else {
            return 1;
        };
        if trade.reduces && !trade.removes_stop_loss {
            return 1;
        }
        match trade.notional {
            Some(n) if n <= step => 1,
            _ => self.step_up_approvals.unwrap_or(DEFAULT_APPROVALS),
        }
    }

    /// For a trade that executes without anyone's approval (an immediate trade the policy lets
    /// through): it breaks the step when it would need more than one approval as an item.
    pub fn immediate_verdict(&self, trade: &Trade) -> Option<Verdict> {
        let step = self.step_up_notional_usd?;
        let needs = self.approvals_required(trade);
        if needs == 1 {
            return None;
        }
        let size = match trade.notional {
            Some(n) => money(n),
            None => "a notional that is not known".into(),
        };
        Some(verdict(
            KEYS[0],
            false,
            Figure::Amount(step),
            trade.notional.map(Figure::Amount),
            false,
            format!(
                "{size} is above step_up_notional_usd = {}: it needs {needs} supervisors' \
                 approvals, so it cannot execute without staging; stage it with \
                 POST /api/delegated/propose",
                money(step)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trade(notional: Option<f64>, reduces: bool) -> Trade {
        Trade {
            operation: "propose_trade".into(),
            notional,
            reduces,
            ..Trade::default()
        }
    }

    #[test]
    fn above_the_step_needs_the_quorum_and_at_or_below_it_one() {
        let s = StepUp {
            step_up_notional_usd: Some(50_000.0),
            step_up_approvals: Some(3),
        };
        assert_eq!(s.approvals_required(&trade(Some(50_000.0), false)), 1);
        assert_eq!(s.approvals_required(&trade(Some(50_000.01), false)), 3);
        assert_eq!(s.approvals_required(&trade(None, false)), 3, "unknown size");
        assert_eq!(
            s.approvals_required(&trade(Some(900_000.0), true)),
            1,
            "a close"
        );
        let default = StepUp {
            step_up_notional_usd: Some(10.0),
            step_up_approvals: None,
        };
        assert_eq!(default.approvals_required(&trade(Some(11.0), false)), 2);
        assert_eq!(StepUp::default().approvals_required(&trade(None, false)), 1);
    }

    #[test]
    fn counts_outside_two_to_five_and_non_positive_notionals_are_refused() {
        let mut s = StepUp::default();
        for bad in [json!(1), json!(0), json!(6), json!(2.5), json!("2")] {
            let e = s.read("step_up_approvals", "policy.step_up_approvals", &bad);
            assert!(matches!(e, Some(Err(m)) if m.contains("policy.step_up_approvals")));
        }
        assert_eq!(s.read("step_up_approvals", "x", &json!(2)), Some(Ok(())));
        for bad in [json!(0), json!(-5), json!("50000")] {
            assert!(matches!(
                s.read("step_up_notional_usd", "x", &bad),
                Some(Err(_))
            ));
        }
        assert_eq!(s.read("max_leverage", "x", &json!(2)), None);
    }
}
