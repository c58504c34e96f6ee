//! `[[budgets]]` (docs/configuration.md): limits on a tenant's tokens and/or cost over a UTC
//! calendar window. `tenant = "*"` applies to each tenant separately; a budget naming the
//! tenant replaces `"*"` for the same window.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::Deserialize;

use super::ConfigError;

/// The tenant pattern that stands for each tenant.
pub const EVERY_TENANT: &str = "*";

/// A UTC calendar window: a day, a week from Monday, a month from its first day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetWindow {
    Day,
    Week,
    Month,
}

impl BudgetWindow {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    /// The start of the window holding `at`.
    pub fn start(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let day = at.date_naive();
        let first = match self {
            Self::Day => day,
            Self::Week => day - Duration::days(i64::from(day.weekday().num_days_from_monday())),
            Self::Month => day.with_day(1).unwrap_or(day),
        };
        midnight(first)
    }

    /// The end (exclusive) of the window holding `at`: the next one's start.
    pub fn end(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let start = self.start(at).date_naive();
        let next = match self {
            Self::Day => start + Duration::days(1),
            Self::Week => start + Duration::days(7),
            Self::Month => start
                .checked_add_months(chrono::Months::new(1))
                .unwrap_or(start + Duration::days(31)),
        };
        midnight(next)
    }
}

fn midnight(day: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&day.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// One `[[budgets]]` entry.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// An API-key name, or `"*"` for each tenant.
    pub tenant: String,
    pub window: BudgetWindow,
    /// Prompt plus completion tokens in the window.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// USD in the window (calls of unpriced models count 0).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Spending this share of a limit is logged once per window and counted in a metric.
    #[serde(default = "default_warn")]
    pub warn_at_percent: u8,
}

fn default_warn() -> u8 {
    80
}

/// Checks each entry under its own key.
pub(super) fn validate(budgets: &[BudgetSpec]) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for (i, b) in budgets.iter().enumerate() {
        let key = |field: &str| format!("budgets[{i}].{field}");
        if b.tokens.is_none() && b.cost_usd.is_none() {
            return Err(ConfigError::invalid(
                format!("budgets[{i}]"),
                "set tokens, cost_usd or both",
            ));
        }
        if let Some(c) = b.cost_usd {
            if !c.is_finite() || c < 0.0 {
                return Err(ConfigError::value(
                    key("cost_usd"),
                    c,
                    "expected a finite number ≥ 0 (USD)",
                ));
            }
        }
        if !(1..=100).contains(&b.warn_at_percent) {
            return Err(ConfigError::value(
                key("warn_at_percent"),
                b.warn_at_percent,
                "expected an integer from 1 to 100",
            ));
        }
        if !seen.insert((b.tenant.as_str(), b.window)) {
            return Err(ConfigError::invalid(
                key("window"),
                format!(
                    "tenant {:?} already has a {} budget",
                    b.tenant,
                    b.window.as_str()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_utc_calendar_windows() {
        let at = Utc.with_ymd_and_hms(2026, 12, 4, 16, 30, 0).unwrap(); // a Friday
        let day = BudgetWindow::Day;
        assert_eq!(
            day.start(at),
            Utc.with_ymd_and_hms(2026, 12, 4, 0, 0, 0).unwrap()
        );
        assert_eq!(
            day.end(at),
            Utc.with_ymd_and_hms(2026, 12, 5, 0, 0, 0).unwrap()
        );
        let week = BudgetWindow::Week;
        assert_eq!(
            week.start(at),
            Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()
        );
        assert_eq!(
            week.end(at),
            Utc.with_ymd_and_hms(2026, 12, 7, 0, 0, 0).unwrap()
        );
        let month = BudgetWindow::Month;
        assert_eq!(
            month.start(at),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
        );
        assert_eq!(
            month.end(at),
            Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap()
        );
    }
}
