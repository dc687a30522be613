//! The two loops of a code debate (design note 004), apart from the model calls they drive:
//! Reflexion (generate → run the hooks → on failure write a reflection → regenerate with every
//! reflection so far, up to `max_attempts`) and red team against blue (red attacks, blue patches,
//! red attacks again, at most three rounds or until red finds nothing new).

use super::hooks::HookResult;
use super::record::{Finding, Reflection};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What the Reflexion loop asks of the debate.
pub trait Coder: Send {
    /// What the debate's calls fail with; the loop hands it back untouched.
    type Error: Send;
    /// Writes a version (with every reflection so far in the prompt); its number.
    fn generate<'a>(
        &'a mut self,
        attempt: u32,
        reflections: &'a [Reflection],
    ) -> BoxFuture<'a, Result<u32, Self::Error>>;
    /// Runs the hooks on a version.
    fn test(&mut self, version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, Self::Error>>;
    /// Writes the reflection on a failed attempt, given the reflections before it.
    fn reflect<'a>(
        &'a mut self,
        attempt: u32,
        results: &'a [HookResult],
        earlier: &'a [Reflection],
    ) -> BoxFuture<'a, Result<Reflection, Self::Error>>;
}

/// One attempt: the version it wrote, its hook results, and its reflection if it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub number: u32,
    pub version: u32,
    pub results: Vec<HookResult>,
    pub reflection: Option<Reflection>,
}

impl Attempt {
    pub fn passed(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(HookResult::ok)
    }
}

/// Why the Reflexion loop stopped: the note's three ways out (the tests pass, the attempts are
/// spent, the confidence threshold) and a fourth, no hooks to learn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    Passed,
    OutOfAttempts,
    NoHooks,
    /// The last reflection's confidence in its fix fell below the threshold: another attempt
    /// would be a guess, so the loop spends no more calls on it.
    Unsure {
        confidence: f64,
        threshold: f64,
    },
}

/// The Reflexion loop's attempts and why it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Reflexion {
    pub attempts: Vec<Attempt>,
    pub stop: Stop,
}

impl Reflexion {
    /// What the record says when the loop stopped short of passing tests.
    pub fn note(&self) -> Option<String> {
        let last = self.attempts.last()?;
        match self.stop {
            Stop::Passed | Stop::NoHooks => None,
            Stop::OutOfAttempts => Some(format!(
                "The Reflexion loop ran out of attempts (max_attempts = {}) before a version passed its tests.",
                self.attempts.len()
            )),
            Stop::Unsure {
                confidence,
                threshold,
            } => Some(format!(
                "The Reflexion loop stopped after attempt {}: its reflection put its confidence in a fix at {:.0} %, under the threshold of {:.0} % ([code] min_fix_confidence).",
                last.number,
                confidence * 100.0,
                threshold * 100.0
            )),
        }
    }
}

/// Attempts until one passes its hooks, `max_attempts` are spent, a reflection's confidence in
/// its fix is under `min_fix_confidence`, or there are no hooks to learn from (then the first
/// version stands).
pub async fn reflexion<C: Coder + ?Sized>(
    coder: &mut C,
    max_attempts: u32,
    min_fix_confidence: f64,
) -> Result<Reflexion, C::Error> {
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut reflections: Vec<Reflection> = Vec::new();
    let last = max_attempts.max(1);
    let mut number = 0;
    loop {
        number += 1;
        let version = coder.generate(number, &reflections).await?;
        let results = coder.test(version).await?;
        let mut attempt = Attempt {
            number,
            version,
            results,
            reflection: None,
        };
        let stop = if attempt.results.is_empty() {
            Some(Stop::NoHooks)
        } else if attempt.passed() {
            Some(Stop::Passed)
        } else if number == last {
            Some(Stop::OutOfAttempts)
        } else {
            None
        };
        if let Some(stop) = stop {
            attempts.push(attempt);
            return Ok(Reflexion { attempts, stop });
        }
        let reflection = coder
            .reflect(number, &attempt.results, &reflections)
            .await?;
        let confidence = reflection.confidence;
        reflections.push(reflection.clone());
        attempt.reflection = Some(reflection);
        attempts.push(attempt);
        if confidence < min_fix_confidence {
            return Ok(Reflexion {
                attempts,
                stop: Stop::Unsure {
                    confidence,
                    threshold: min_fix_confidence,
                },
            });
        }
    }
}

/// One attack of the red team: what it tries, and the test file it wrote for it, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attack {
    pub attack: String,
    pub test: Option<String>,
    /// The test file's contents, kept so the convergence hook can run it on other versions.
    pub test_content: Option<String>,
}

/// What the red-against-blue loop asks of the debate.
pub trait Teams: Send {
    /// What the debate's calls fail with; the loop hands it back untouched.
    type Error: Send;
    /// Red's attacks on a version.
    fn attack(
        &mut self,
        round: u32,
        version: u32,
    ) -> BoxFuture<'_, Result<Vec<Attack>, Self::Error>>;
    /// Blue's patched version answering the attacks; its number.
    fn defend<'a>(
        &'a mut self,
        round: u32,
        attacks: &'a [Attack],
    ) -> BoxFuture<'a, Result<u32, Self::Error>>;
    /// Runs the hooks (red's tests among them) on a version.
    fn test(&mut self, version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, Self::Error>>;
}

/// The most rounds red and blue play.
pub const RED_BLUE_ROUNDS: u32 = 3;

/// Red attacks `version`; while it finds something new, blue patches and red attacks the
/// patch. A finding is closed by the first patched version whose hooks all pass. Returns the
/// findings and the last version.
pub async fn red_blue<T: Teams + ?Sized>(
    teams: &mut T,
    version: u32,
) -> Result<(Vec<Finding>, u32), T::Error> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut current = version;
    for round in 1..=RED_BLUE_ROUNDS {
        let attacks = teams.attack(round, current).await?;
        let new: Vec<Attack> = attacks
            .into_iter()
            .filter(|a| {
                !findings
                    .iter()
                    .any(|f| f.attack.trim().eq_ignore_ascii_case(a.attack.trim()))
            })
            .collect();
        if new.is_empty() {
            break;
        }
        for attack in &new {
            findings.push(Finding {
                round,
                attack: attack.attack.clone(),
                test: attack.test.clone(),
                test_content: attack.test_content.clone(),
                closed_by: None,
            });
        }
        let patched = teams.defend(round, &new).await?;
        let results = teams.test(patched).await?;
        if !results.is_empty() && results.iter().all(HookResult::ok) {
            for finding in findings.iter_mut().filter(|f| f.closed_by.is_none()) {
                finding.closed_by = Some(patched);
            }
        }
        current = patched;
    }
    Ok((findings, current))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(ok: bool) -> HookResult {
        HookResult {
            name: "test".into(),
            command: "sh test.sh".into(),
            exit: Some(if ok { 0 } else { 1 }),
            timed_out: false,
            duration_ms: 5,
            passed: Some(if ok { 2 } else { 1 }),
            failed: Some(if ok { 0 } else { 1 }),
            tail: String::new(),
            dropped: 0,
            offline: false,
            sandbox: None,
            error: None,
            limits: None,
            stopped: None,
        }
    }

    /// Fails until attempt `passes_at`; records what each generation was shown. Its reflection
    /// on attempt n is `confidence[n - 1]` sure of its fix (0.6 past the list).
    struct Fake {
        passes_at: u32,
        hooks: bool,
        shown: Vec<Vec<String>>,
        /// How many earlier reflections each reflection was given.
        earlier_seen: Vec<usize>,
        confidence: Vec<f64>,
    }

    fn fake(passes_at: u32, hooks: bool) -> Fake {
        Fake {
            passes_at,
            hooks,
            shown: vec![],
            earlier_seen: vec![],
            confidence: vec![],
        }
    }

    impl Coder for Fake {
        type Error = String;

        fn generate<'a>(
            &'a mut self,
            attempt: u32,
            reflections: &'a [Reflection],
        ) -> BoxFuture<'a, Result<u32, String>> {
            self.shown
                .push(reflections.iter().map(|r| r.root_cause.clone()).collect());
            Box::pin(async move { Ok(attempt) })
        }

        fn test(&mut self, version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, String>> {
            let ok = version >= self.passes_at;
            let hooks = self.hooks;
            Box::pin(async move { Ok(if hooks { vec![result(ok)] } else { vec![] }) })
        }

        fn reflect<'a>(
            &'a mut self,
            attempt: u32,
            _results: &'a [HookResult],
            earlier: &'a [Reflection],
        ) -> BoxFuture<'a, Result<Reflection, String>> {
            self.earlier_seen.push(earlier.len());
            let confidence = self
                .confidence
                .get(attempt as usize - 1)
                .copied()
                .unwrap_or(0.6);
            Box::pin(async move {
                Ok(Reflection {
                    attempt,
                    root_cause: format!("cause {attempt}"),
                    went_wrong: "a test failed".into(),
                    change_next: "fix it".into(),
                    confidence,
                })
            })
        }
    }

    #[tokio::test]
    async fn fails_twice_then_passes_with_both_reflections_in_the_third_prompt() {
        let mut coder = fake(3, true);
        let run = reflexion(&mut coder, 3, 0.3).await.unwrap();
        assert_eq!(run.stop, Stop::Passed);
        assert_eq!(run.note(), None);
        let attempts = run.attempts;
        assert_eq!(attempts.len(), 3);
        assert!(!attempts[0].passed() && !attempts[1].passed() && attempts[2].passed());
        assert_eq!(coder.shown[2], vec!["cause 1", "cause 2"]);
        // Seed review 004 #13: each reflection is given the ones before it.
        assert_eq!(coder.earlier_seen, [0, 1]);
        assert!(attempts[2].reflection.is_none());
        // Out of attempts: the last one stands, unreflected.
        let mut stubborn = fake(9, true);
        let run = reflexion(&mut stubborn, 2, 0.3).await.unwrap();
        assert_eq!(run.stop, Stop::OutOfAttempts);
        assert!(run.note().unwrap().contains("max_attempts = 2"));
        let attempts = run.attempts;
        assert_eq!(attempts.len(), 2);
        assert!(attempts[1].reflection.is_none() && attempts[0].reflection.is_some());
        // No hooks: nothing to learn from, one attempt.
        let mut blind = fake(9, false);
        let run = reflexion(&mut blind, 3, 0.3).await.unwrap();
        assert_eq!((run.attempts.len(), run.stop), (1, Stop::NoHooks));
    }

    #[tokio::test]
    async fn a_reflection_unsure_of_its_fix_stops_the_loop_before_another_attempt() {
        let mut unsure = fake(9, true);
        unsure.confidence = vec![0.5, 0.1];
        let run = reflexion(&mut unsure, 5, 0.3).await.unwrap();
        assert_eq!(run.attempts.len(), 2, "attempt 2's reflection is 10 % sure");
        assert_eq!(
            run.stop,
            Stop::Unsure {
                confidence: 0.1,
                threshold: 0.3
            }
        );
        assert_eq!(unsure.shown.len(), 2, "no third generation was asked for");
        assert!(run.attempts[1].reflection.is_some());
        let note = run.note().unwrap();
        assert!(
            note.contains("after attempt 2") && note.contains("10 %") && note.contains("30 %"),
            "{note}"
        );
        // A threshold of 0 never stops the loop early.
        let mut sure = fake(9, true);
        sure.confidence = vec![0.0, 0.0];
        let run = reflexion(&mut sure, 3, 0.0).await.unwrap();
        assert_eq!((run.attempts.len(), run.stop), (3, Stop::OutOfAttempts));
    }

    /// Red finds `attacks[round]`; blue's patch passes when `fixes` says so.
    struct Play {
        attacks: Vec<Vec<&'static str>>,
        fixes: bool,
        next: u32,
    }

    impl Teams for Play {
        type Error = String;

        fn attack(
            &mut self,
            round: u32,
            _version: u32,
        ) -> BoxFuture<'_, Result<Vec<Attack>, String>> {
            let found = self
                .attacks
                .get(round as usize - 1)
                .cloned()
                .unwrap_or_default();
            Box::pin(async move {
                Ok(found
                    .into_iter()
                    .map(|a| Attack {
                        attack: a.into(),
                        test: Some(format!("tests/red_{}.sh", a.len())),
                        test_content: Some("exit 0\n".into()),
                    })
                    .collect())
            })
        }

        fn defend<'a>(
            &'a mut self,
            _round: u32,
            _attacks: &'a [Attack],
        ) -> BoxFuture<'a, Result<u32, String>> {
            self.next += 1;
            let version = self.next;
            Box::pin(async move { Ok(version) })
        }

        fn test(&mut self, _version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, String>> {
            let ok = self.fixes;
            Box::pin(async move { Ok(vec![result(ok)]) })
        }
    }

    #[tokio::test]
    async fn red_attacks_until_nothing_new_and_blue_closes_what_its_patch_passes() {
        let mut play = Play {
            attacks: vec![
                vec!["empty input"],
                vec!["empty input", "huge input"],
                vec!["Empty input"],
            ],
            fixes: true,
            next: 1,
        };
        let (findings, last) = red_blue(&mut play, 1).await.unwrap();
        assert_eq!(findings.len(), 2, "round 3 found nothing new: {findings:?}");
        assert_eq!(findings[0].closed_by, Some(2));
        assert_eq!(findings[1].closed_by, Some(3));
        assert_eq!(last, 3);
        assert_eq!(findings[0].test.as_deref(), Some("tests/red_11.sh"));
        // Patches that fail their tests close nothing; three rounds at most.
        let mut losing = Play {
            attacks: vec![vec!["a"], vec!["b"], vec!["c"], vec!["d"]],
            fixes: false,
            next: 1,
        };
        let (findings, _) = red_blue(&mut losing, 1).await.unwrap();
        assert_eq!(findings.len(), 3);
        assert!(findings.iter().all(|f| f.closed_by.is_none()));
    }
}
