//! The backtest form (a modal over Discovery or Backtests): prefilled from a row, every field
//! checked before anything is sent, a bad field says why under itself.

use crate::api::model::{BacktestRequest, StrategyEntry};
use crate::console::command::{normalize_pair, normalize_timeframe, parse_number};
use crate::console::widgets::{fmt_number, plain_number, plain_value_text};
use serde_json::{Map, Value};

const MAX_FIELD: usize = 40;

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Strategy,
    Pair,
    Timeframe,
    Days,
    Param {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    pub label: String,
    pub kind: FieldKind,
    pub value: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BacktestForm {
    pub fields: Vec<FormField>,
    pub focus: usize,
}

impl BacktestForm {
    /// A form prefilled with a row's values; parameters the catalog lists but the row lacks get
    /// the catalog's default, and the catalog's types and bounds are checked on submit.
    pub fn new(
        strategy: &str,
        pair: &str,
        timeframe: &str,
        days: u32,
        params: &Map<String, Value>,
        catalog: Option<&StrategyEntry>,
    ) -> Self {
        let field = |label: &str, kind: FieldKind, value: String| FormField {
            label: label.to_string(),
            kind,
            value,
            error: None,
        };
        let mut fields = vec![
            field("strategy", FieldKind::Strategy, strategy.to_string()),
            field("pair", FieldKind::Pair, pair.to_string()),
            field("timeframe", FieldKind::Timeframe, timeframe.to_string()),
            field("days", FieldKind::Days, days.to_string()),
        ];
        let spec = |name: &str| catalog.and_then(|c| c.parameters.iter().find(|p| p.name == name));
        let kind = |name: &str| match spec(name) {
            Some(p) => FieldKind::Param {
                integer: p.kind == "integer",
                min: Some(p.min),
                max: Some(p.max),
            },
            None => FieldKind::Param {
                integer: false,
                min: None,
                max: None,
            },
        };
        for (name, v) in params {
            fields.push(field(name, kind(name), plain_value_text(v)));
        }
        for p in catalog.map(|c| c.parameters.as_slice()).unwrap_or_default() {
            if !params.contains_key(&p.name) {
                fields.push(field(&p.name, kind(&p.name), plain_number(p.default)));
            }
        }
        BacktestForm { fields, focus: 0 }
    }

    pub fn next(&mut self, step: i64) {
        let n = self.fields.len() as i64;
        self.focus = (self.focus as i64 + step).rem_euclid(n.max(1)) as usize;
    }

    pub fn type_char(&mut self, c: char) {
        if let Some(f) = self.fields.get_mut(self.focus)
            && !c.is_control()
            && f.value.chars().count() < MAX_FIELD
        {
            f.value.push(c);
            f.error = None;
        }
    }

    pub fn backspace(&mut self) {
        if let Some(f) = self.fields.get_mut(self.focus) {
            f.value.pop();
            f.error = None;
        }
    }

    /// Checks every field; the request when all are valid, else None with each bad field's error
    /// set and the cursor on the first of them.
    pub fn validate(&mut self) -> Option<BacktestRequest> {
        let mut req = BacktestRequest::default();
        let mut params = Map::new();
        for f in &mut self.fields {
            let v = f.value.trim();
            f.error = None;
            match &f.kind {
                FieldKind::Strategy => {
                    if v.is_empty() {
                        f.error = Some("required".into());
                    }
                    req.strategy_id = v.to_string();
                }
                FieldKind::Pair => match normalize_pair(v) {
                    Some(p) => req.pair = p,
                    None => f.error = Some("expected BTC, BTC-USD or BTCUSDT".into()),
                },
                FieldKind::Timeframe => match normalize_timeframe(v) {
                    Some(t) => req.timeframe = t,
                    None => f.error = Some("expected a number and m, h, d or w (5m, 1h)".into()),
                },
                FieldKind::Days => match v.parse::<u32>() {
                    Ok(n) if (1..=3650).contains(&n) => req.days = n,
                    _ => f.error = Some("expected a whole number from 1 to 3650".into()),
                },
                FieldKind::Param { integer, min, max } => match parse_number(v) {
                    None => f.error = Some("expected a number".into()),
                    Some(x) if *integer && x.fract() != 0.0 => {
                        f.error = Some("expected a whole number".into())
                    }
                    Some(x)
                        if min.is_some_and(|m| x < m - 1e-9)
                            || max.is_some_and(|m| x > m + 1e-9) =>
                    {
                        f.error = Some(format!(
                            "must be from {} to {}",
                            min.map_or("-∞".into(), fmt_number),
                            max.map_or("∞".into(), fmt_number)
                        ))
                    }
                    Some(x) => {
                        params.insert(f.label.clone(), number_value(x));
                    }
                },
            }
        }
        if let Some(first) = self.fields.iter().position(|f| f.error.is_some()) {
            self.focus = first;
            return None;
        }
        req.parameters = params;
        Some(req)
    }
}

/// Whole numbers as JSON integers (`14`, not `14.0`), others as decimals.
pub fn number_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}
