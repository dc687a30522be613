//! Per-seat guardrails: the token budget of a round and repetition of the previous round.

use crate::argue::repetition_ratio;
use crate::config::TokenBudget;

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
