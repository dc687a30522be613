//! Per-seat guardrails: the token budget of a round and repetition of the previous round.

use crate::argue::repetition_ratio;

/// Per-seat, per-round token limit; `0` or `"unlimited"` disables it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenBudget {
    Unlimited,
    Limited(u32),
}

/// A token budget that cannot be used, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error(
        "a token budget of {0} is too small to argue in; use at least 100, or 0 / \"unlimited\""
    )]
    TooSmall(u32),
    #[error("{0:?} is not a token budget: use a number of tokens, or 0 / \"unlimited\"")]
    NotANumber(String),
}

impl TokenBudget {
    pub fn parse(text: &str) -> Result<TokenBudget, BudgetError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("unlimited") {
            return Ok(TokenBudget::Unlimited);
        }
        match text.parse::<u32>() {
            Ok(0) => Ok(TokenBudget::Unlimited),
            Ok(n) if n < 100 => Err(BudgetError::TooSmall(n)),
            Ok(n) => Ok(TokenBudget::Limited(n)),
            Err(_) => Err(BudgetError::NotANumber(text.to_string())),
        }
    }

    pub fn limit(self) -> Option<u32> {
        match self {
            TokenBudget::Unlimited => None,
            TokenBudget::Limited(n) => Some(n),
        }
    }
}

impl std::fmt::Display for TokenBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenBudget::Unlimited => f.write_str("unlimited"),
            TokenBudget::Limited(n) => write!(f, "{n}"),
        }
    }
}

impl serde::Serialize for TokenBudget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TokenBudget::Unlimited => serializer.serialize_str("unlimited"),
            TokenBudget::Limited(n) => serializer.serialize_u32(*n),
        }
    }
}

impl<'de> serde::Deserialize<'de> for TokenBudget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        let text = match <Raw as serde::Deserialize>::deserialize(deserializer)? {
            Raw::Number(n) if n < 0 => {
                return Err(serde::de::Error::custom(
                    "a token budget cannot be negative; use 0 or \"unlimited\" to disable it",
                ));
            }
            Raw::Number(n) => n.to_string(),
            Raw::Text(text) => text,
        };
        TokenBudget::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Above this share of repeated trigrams an argument is flagged as repetition.
pub const REPETITION_THRESHOLD: f64 = 0.6;

/// The smallest reply worth asking for; below it the seat sits the phase out.
pub const MIN_TURN_TOKENS: u32 = 64;

/// What a turn may still spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    Unlimited,
    Tokens(u32),
    /// Too little is left to say anything.
    Spent,
}

/// Splits a seat's per-round budget between its argument and its rebuttal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundBudget {
    budget: TokenBudget,
    spent: u64,
}

impl RoundBudget {
    pub fn new(budget: TokenBudget) -> Self {
        RoundBudget { budget, spent: 0 }
    }

    /// Max tokens for the argument: 60 % of the budget, leaving room for the rebuttal.
    pub fn for_argument(&self) -> Option<u32> {
        self.budget
            .limit()
            .map(|limit| (limit * 3 / 5).max(MIN_TURN_TOKENS))
    }

    /// What the rebuttal may spend: whatever the argument left.
    pub fn for_rebuttal(&self) -> Allowance {
        match self.budget.limit() {
            None => Allowance::Unlimited,
            Some(limit) => {
                let left = (limit as u64).saturating_sub(self.spent);
                if left < MIN_TURN_TOKENS as u64 {
                    Allowance::Spent
                } else {
                    Allowance::Tokens(left as u32)
                }
            }
        }
    }

    pub fn spend(&mut self, tokens: u64) {
        self.spent += tokens;
    }

    pub fn spent(&self) -> u64 {
        self.spent
    }
}

/// The repetition ratio when it crosses the threshold.
pub fn repetition(current: &str, previous: &str) -> Option<f64> {
    let ratio = repetition_ratio(current, previous);
    (ratio > REPETITION_THRESHOLD).then_some(ratio)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_split_and_exhausts() {
        let mut budget = RoundBudget::new(TokenBudget::Limited(1000));
        assert_eq!(budget.for_argument(), Some(600));
        budget.spend(700);
        assert_eq!(budget.for_rebuttal(), Allowance::Tokens(300));
        budget.spend(280);
        assert_eq!(budget.for_rebuttal(), Allowance::Spent);
        let unlimited = RoundBudget::new(TokenBudget::Unlimited);
        assert_eq!(unlimited.for_argument(), None);
        assert_eq!(unlimited.for_rebuttal(), Allowance::Unlimited);
    }

    #[test]
    fn repetition_flags_only_above_sixty_percent() {
        let text = "we should cache sessions in redis because reads dominate writes";
        assert!(repetition(text, text).is_some());
        assert!(
            repetition(
                "a wholly different argument about operations and on-call load",
                text
            )
            .is_none()
        );
    }
}
