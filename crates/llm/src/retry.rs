//! Retry timing: exponential backoff with jitter, Retry-After honoured, bounded attempts.

use super::provider::LlmError;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Whether a failed attempt number `attempt` (1-based) should be followed by another.
    pub fn should_retry(&self, attempt: u32, error: &LlmError) -> bool {
        error.is_retryable() && attempt < self.max_attempts
    }

    /// How long to wait after failed attempt `attempt` (1-based). A server's Retry-After wins
    /// (capped at `max_delay`); otherwise base × 2^(attempt−1), capped, with "equal jitter":
    /// half fixed, half random, so seats that failed together do not retry in lockstep.
    pub fn delay(&self, attempt: u32, error: &LlmError, jitter: f64) -> Duration {
        if let Some(asked) = error.retry_after() {
            return asked.min(self.max_delay);
        }
        let exponent = attempt.saturating_sub(1).min(20);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let jitter = jitter.clamp(0.0, 1.0);
        backoff.mul_f64(0.5 + 0.5 * jitter)
    }
}

/// A uniform random number in [0, 1) for jitter.
pub fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let p = policy();
        let err = LlmError::StreamCut;
        assert_eq!(p.delay(1, &err, 0.0), Duration::from_millis(50));
        assert_eq!(p.delay(1, &err, 1.0), Duration::from_millis(100));
        assert_eq!(p.delay(2, &err, 1.0), Duration::from_millis(200));
        assert_eq!(p.delay(3, &err, 0.0), Duration::from_millis(200));
        assert_eq!(p.delay(10, &err, 1.0), Duration::from_millis(1000));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let p = policy();
        let asked = LlmError::RateLimited {
            retry_after: Some(Duration::from_millis(700)),
        };
        assert_eq!(p.delay(1, &asked, 0.3), Duration::from_millis(700));
        let too_long = LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(90)),
        };
        assert_eq!(p.delay(1, &too_long, 0.3), Duration::from_millis(1000));
    }

    #[test]
    fn attempts_are_bounded_and_client_errors_are_final() {
        let p = policy();
        assert!(p.should_retry(1, &LlmError::StreamCut));
        assert!(p.should_retry(2, &LlmError::StreamCut));
        assert!(!p.should_retry(3, &LlmError::StreamCut));
        let refused = LlmError::Client {
            status: 401,
            body: "bad key".into(),
        };
        assert!(!p.should_retry(1, &refused));
    }

    #[test]
    fn random_unit_is_in_range() {
        for _ in 0..100 {
            let x = random_unit();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
