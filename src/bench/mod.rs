//! `moot bench`: a single model against a debate on the user's own provider (design note 004).
//! Problems run concurrently up to `jobs`; each arm's result is journaled as it lands, so an
//! interrupted run resumes; the report gives accuracy with a 95 % interval, tokens and time.

/// Why a bench run, or one of its calls, failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A provider call failed for good (after its retries), as the provider said it, sanitized.
    #[error("{0}")]
    Call(String),
    /// The journal would not read or write.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A problem set or an arm that cannot be used: which and why.
    #[error("{0}")]
    Data(String),
}

/// A failure said in words elsewhere (a debate arm's session, the runtime) fails the call.
impl From<String> for BenchError {
    fn from(message: String) -> BenchError {
        BenchError::Call(message)
    }
}

pub mod arms;
pub mod data;
pub mod dynamics;
pub mod hidden;

use crate::debate::Named as _;
use crate::llm::Provider;
use crate::store::Store;
use arms::{Arm, ArmResult, Shape};
use data::Problem;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a run asks, stored with it so `--resume` asks the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// `arithmetic`, `words`, or the dataset file's path.
    pub set: String,
    pub problems: Vec<Problem>,
    pub seed: u64,
    pub arms: Vec<Arm>,
    pub agents: usize,
    pub rounds: usize,
    pub samples: usize,
    pub jobs: usize,
    /// The provider and model, as shown.
    pub provider: String,
    /// The debate arm as one of moot's protocols instead of Du et al.'s exchange.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Code problems' hidden tests run without the box (or uncapped) where the machine has
    /// none (`--unsandboxed-hooks`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed_hooks: bool,
    /// The mixed arm's seats by letter (`A` is the first), each on `PROVIDER[:MODEL]`
    /// (`--seat-model`); the seats not named stay on the run's provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub seat_models: BTreeMap<String, String>,
}

/// The letter a seat of the debate arm goes by (`A` for the first), as `--seat-model` names it.
pub fn seat_letter(seat: usize) -> String {
    char::from(b'A' + (seat % 26) as u8).to_string()
}

/// One arm's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmSummary {
    pub arm: Arm,
    pub correct: usize,
    pub total: usize,
    pub accuracy: f64,
    /// The Wilson score interval at 95 %.
    pub ci_low: f64,
    pub ci_high: f64,
    pub tokens: u64,
    /// Right answers per 1,000 tokens spent: what the arm's accuracy costs.
    pub correct_per_1k_tokens: f64,
    pub wall_ms: u64,
    pub critical_ms: u64,
    /// Wall time over critical path, the worst problem's (1.0 is no overhead at all).
    pub worst_overhead: f64,
    /// Problems that failed to run (provider errors), not counted in `total`.
    pub failed: usize,
    /// Code problems: the mean runtime of the hidden tests on the arm's code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_runtime_ms: Option<u64>,
    /// Code problems: the linter's findings on the arm's code, summed over the problems it
    /// could lint (None when no linter for the language is installed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lint_findings: Option<usize>,
    /// Code problems: the sandbox the hidden tests ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// A run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub id: String,
    pub set: String,
    pub seed: u64,
    pub provider: String,
    pub agents: usize,
    pub rounds: usize,
    /// The protocol of the debate arm, when not Du et al.'s exchange.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The mixed arm's seats, each with the model it ran on (`A: openai:qwen2.5`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mixed_seats: Vec<String>,
    pub arms: Vec<ArmSummary>,
    /// What the debate arm's later rounds did, beside the vote of its first round (Du et
    /// al.'s exchange only: a protocol's rounds are not a vote's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamics: Option<dynamics::Dynamics>,
    /// The same of the mixed arm (Du et al.'s exchange with its seats on their own models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed_dynamics: Option<dynamics::Dynamics>,
    /// Each problem with each arm's result (or error).
    pub problems: Vec<ProblemReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProblemReport {
    pub index: usize,
    pub question: String,
    pub answer: String,
    pub results: BTreeMap<String, serde_json::Value>,
}

/// The Wilson score interval for `k` successes of `n` at 95 %.
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 0.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A new run's id.
pub fn new_run_id() -> String {
    let mut random = data::Seeded::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ u64::from(std::process::id()),
    );
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let tail: String = (0..8)
        .map(|_| alphabet[(random.draw() % alphabet.len() as u64) as usize] as char)
        .collect();
    format!("BENCH-{tail}")
}

/// What the arms run on.
pub struct Runners {
    /// The run's provider: every arm's, and the seats of the mixed arm not named.
    pub provider: Arc<dyn Provider>,
    /// The mixed arm's seats in order, each on its provider (Du et al.'s exchange).
    pub seats: Vec<Arc<dyn Provider>>,
    /// When the debate is one of moot's protocols: the settings its debates start from, by
    /// arm (the debate, and its blind-first and mixed variants).
    pub protocol: BTreeMap<Arm, arms::ProtocolArm>,
}

impl Runners {
    /// Every arm on one provider, the debate as Du et al.'s exchange.
    pub fn on(provider: Arc<dyn Provider>) -> Runners {
        Runners {
            provider,
            seats: Vec::new(),
            protocol: BTreeMap::new(),
        }
    }

    /// One problem's result of `arm`; self-consistency draws up to `budget` tokens.
    async fn run(
        &self,
        store: &Store,
        arm: Arm,
        shape: &Shape,
        problem: &Problem,
        budget: Option<u64>,
    ) -> Result<ArmResult, BenchError> {
        let provider = self.provider.as_ref();
        if let Some(template) = self.protocol.get(&arm) {
            return arms::protocol_debate(store, template, problem).await;
        }
        match arm {
            Arm::Single => arms::single(provider, shape, problem).await,
            Arm::SelfConsistency => arms::self_consistency(provider, shape, problem, budget).await,
            Arm::Debate => arms::debate(provider, shape, problem).await,
            Arm::Mixed if !self.seats.is_empty() => {
                let seats: Vec<&dyn Provider> = self.seats.iter().map(|p| p.as_ref()).collect();
                arms::debate_on(&seats, shape, problem).await
            }
            Arm::Mixed | Arm::BlindFirst => Err(BenchError::Data(format!(
                "the {} arm has nothing to run on: {}",
                arm.label(),
                if arm == Arm::Mixed {
                    "give its seats' models with --seat-model"
                } else {
                    "it is a protocol's debate (--protocol)"
                }
            ))),
        }
    }
}

/// Runs every problem's missing arms (all of them for a new run), journaling each result, and
/// calls `progress(done, total)` as problems finish.
pub async fn run(
    store: &Store,
    id: &str,
    settings: &BenchSettings,
    runners: &Runners,
    shape: &Shape,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report, BenchError> {
    let done = store.bench_results(id)?;
    let has = |problem: usize, arm: Arm| {
        done.iter()
            .any(|(p, a, r)| *p == problem && a == arm.as_str() && r.get("error").is_none())
    };
    let total = settings.problems.len();
    let finished = std::sync::atomic::AtomicUsize::new(
        (0..total)
            .filter(|p| settings.arms.iter().all(|arm| has(*p, *arm)))
            .count(),
    );
    progress(finished.load(std::sync::atomic::Ordering::SeqCst), total);
    let gate = tokio::sync::Semaphore::new(settings.jobs.max(1));
    let work = (0..total)
        .filter(|p| !settings.arms.iter().all(|arm| has(*p, *arm)))
        .map(|index| {
            let (gate, finished) = (&gate, &finished);
            let problem = &settings.problems[index];
            let previous: Option<ArmResult> = done
                .iter()
                .find(|(p, a, _)| *p == index && a == Arm::Debate.as_str())
                .and_then(|(_, _, r)| serde_json::from_value(r.clone()).ok());
            async move {
                let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
                let mut debate_tokens = previous.map(|r| r.tokens);
                // The debate first: self-consistency spends what it spent.
                let mut order = settings.arms.clone();
                order.sort();
                order.reverse();
                for arm in order {
                    if has(index, arm) {
                        continue;
                    }
                    let outcome = runners.run(store, arm, shape, problem, debate_tokens).await;
                    let outcome = match (outcome, &problem.code) {
                        (Ok(result), Some(task)) => {
                            Ok(tested(result, task, settings.unsandboxed_hooks).await)
                        }
                        (other, _) => other,
                    };
                    let value = match &outcome {
                        Ok(result) => {
                            if arm == Arm::Debate {
                                debate_tokens = Some(result.tokens);
                            }
                            serde_json::to_value(result).map_err(|e| e.to_string())?
                        }
                        Err(error) => serde_json::json!({"error": error.to_string()}),
                    };
                    store.record_bench_result(id, index, arm.as_str(), &value)?;
                }
                let now = finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                progress(now, total);
                Ok::<(), BenchError>(())
            }
        });
    for outcome in futures_util::future::join_all(work).await {
        outcome?;
    }
    report(store, id, settings)
}

/// An arm's result on a code problem, with the hidden tests run on its code: pass@1.
async fn tested(mut result: ArmResult, task: &data::CodeTask, unsandboxed: bool) -> ArmResult {
    let check = match &result.answer {
        Some(code) => hidden::check(task, code, unsandboxed).await,
        None => hidden::CodeCheck {
            passed: false,
            runtime_ms: 0,
            lint: None,
            sandbox: None,
            output: "the reply gave no code".into(),
        },
    };
    result.correct = check.passed;
    result.check = Some(check);
    result
}

/// The report of a run from what the journal holds.
pub fn report(store: &Store, id: &str, settings: &BenchSettings) -> Result<Report, BenchError> {
    let results = store.bench_results(id)?;
    // Each result read once: by problem and arm, None where it does not read (not counted).
    let read: Vec<(usize, &str, Option<ArmResult>)> = results
        .iter()
        .map(|(problem, arm, result)| {
            let ran = serde_json::from_value(result.clone()).ok();
            (*problem, arm.as_str(), ran)
        })
        .collect();
    let arms = settings
        .arms
        .iter()
        .map(|&arm| {
            let mine: Vec<&Option<ArmResult>> = read
                .iter()
                .filter(|(_, a, _)| *a == arm.as_str())
                .map(|(_, _, ran)| ran)
                .collect();
            let ran: Vec<&ArmResult> = mine.iter().filter_map(|ran| ran.as_ref()).collect();
            let correct = ran.iter().filter(|r| r.correct).count();
            let tokens = ran.iter().map(|r| r.tokens).sum();
            let (ci_low, ci_high) = wilson(correct, ran.len());
            let checks: Vec<&hidden::CodeCheck> =
                ran.iter().filter_map(|r| r.check.as_ref()).collect();
            let linted: Vec<usize> = checks.iter().filter_map(|c| c.lint).collect();
            ArmSummary {
                test_runtime_ms: (!checks.is_empty()).then(|| {
                    checks.iter().map(|c| c.runtime_ms).sum::<u64>() / checks.len() as u64
                }),
                lint_findings: (!linted.is_empty()).then(|| linted.iter().sum()),
                sandbox: checks.iter().find_map(|c| c.sandbox.clone()),
                arm,
                correct,
                total: ran.len(),
                accuracy: if ran.is_empty() {
                    0.0
                } else {
                    correct as f64 / ran.len() as f64
                },
                ci_low,
                ci_high,
                tokens,
                correct_per_1k_tokens: per_1k(correct, tokens),
                wall_ms: ran.iter().map(|r| r.wall_ms).sum(),
                critical_ms: ran.iter().map(|r| r.critical_ms).sum(),
                worst_overhead: ran
                    .iter()
                    .filter(|r| r.critical_ms > 0)
                    .map(|r| r.wall_ms as f64 / r.critical_ms as f64)
                    .fold(0.0, f64::max),
                failed: mine.len() - ran.len(),
            }
        })
        .collect();
    let problems = settings
        .problems
        .iter()
        .enumerate()
        .map(|(index, problem)| ProblemReport {
            index,
            question: problem.question.clone(),
            answer: problem.answer.clone(),
            results: results
                .iter()
                .filter(|(p, _, _)| *p == index)
                .map(|(_, arm, r)| (arm.clone(), r.clone()))
                .collect(),
        })
        .collect();
    // Du et al.'s rounds are votes; a protocol's are not.
    let dynamics_of = |of: Arm| {
        (settings.protocol.is_none() && settings.arms.contains(&of)).then(|| {
            dynamics::of_debates(read.iter().filter_map(|(index, arm, ran)| {
                if *arm != of.as_str() {
                    return None;
                }
                Some((
                    ran.as_ref()?,
                    settings.problems.get(*index)?.answer.as_str(),
                ))
            }))
        })
    };
    let mixed_seats = if settings.arms.contains(&Arm::Mixed) {
        (0..settings.agents)
            .map(|seat| {
                let letter = seat_letter(seat);
                match settings.seat_models.get(&letter) {
                    Some(model) => format!("{letter}: {model}"),
                    None => format!("{letter}: {}", settings.provider),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Report {
        id: id.to_string(),
        set: settings.set.clone(),
        seed: settings.seed,
        provider: settings.provider.clone(),
        agents: settings.agents,
        rounds: settings.rounds,
        protocol: settings.protocol.clone(),
        mixed_seats,
        arms,
        dynamics: dynamics_of(Arm::Debate),
        mixed_dynamics: dynamics_of(Arm::Mixed),
        problems,
    })
}

/// Right answers per 1,000 tokens.
fn per_1k(correct: usize, tokens: u64) -> f64 {
    if tokens == 0 {
        0.0
    } else {
        correct as f64 * 1000.0 / tokens as f64
    }
}

impl Report {
    /// The summary as a markdown table, with what was asked above it.
    pub fn to_markdown(&self) -> String {
        let debate = match &self.protocol {
            Some(name) => format!(
                "the {name} protocol, {} seats, at most {} rounds",
                self.agents, self.rounds
            ),
            None => format!(
                "{} agents × {} rounds (Du et al.)",
                self.agents, self.rounds
            ),
        };
        let has = |arm: Arm| self.arms.iter().any(|a| a.arm == arm);
        let mut variants = String::new();
        if has(Arm::BlindFirst) {
            variants.push_str("; blind-first: the same debate with a blind first round");
        }
        if has(Arm::Mixed) {
            variants.push_str(&format!(
                "; mixed: the same debate with its seats on {}",
                self.mixed_seats.join(", ")
            ));
        }
        let code = self.arms.iter().any(|a| a.test_runtime_ms.is_some());
        let mut out = format!(
            "# moot bench {}\n\n{} problems from {} (seed {}) on {}; debate: {debate}{variants}; \
             self-consistency: the majority of samples drawn up to the debate's \
             tokens.\n\n| arm | {} | 95 % interval | tokens | tokens/problem | right / 1k tokens | \
             wall | wall / critical path (worst) |\n|---|---|---|---|---|---|---|---|\n",
            self.id,
            self.problems.len(),
            self.set,
            self.seed,
            self.provider,
            if code { "pass@1" } else { "accuracy" },
        );
        for arm in &self.arms {
            out.push_str(&format!(
                "| {} | {}/{} = {:.1} % | {:.1}–{:.1} % | {} | {:.0} | {:.2} | {:.1} s | {} |\n",
                arm.arm.label(),
                arm.correct,
                arm.total,
                arm.accuracy * 100.0,
                arm.ci_low * 100.0,
                arm.ci_high * 100.0,
                arm.tokens,
                arm.tokens as f64 / arm.total.max(1) as f64,
                arm.correct_per_1k_tokens,
                arm.wall_ms as f64 / 1000.0,
                if arm.worst_overhead > 0.0 {
                    format!("{:.3}", arm.worst_overhead)
                } else {
                    "–".into()
                },
            ));
        }
        if code {
            out.push_str("\nHidden tests, run on each arm's code in the sandbox of a code debate's hooks:\n\n| arm | sandbox | mean test runtime | lint findings |\n|---|---|---|---|\n");
            for arm in &self.arms {
                out.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    arm.arm.label(),
                    arm.sandbox.as_deref().unwrap_or("none"),
                    arm.test_runtime_ms
                        .map_or("–".into(), |ms| format!("{ms} ms")),
                    arm.lint_findings
                        .map_or("not measured (no linter installed)".into(), |n| n
                            .to_string()),
                ));
            }
        }
        if let Some(dynamics) = &self.dynamics {
            out.push_str(&dynamics.to_markdown("Debate or vote", "debate"));
        }
        if let Some(dynamics) = &self.mixed_dynamics {
            out.push_str(&dynamics.to_markdown("Mixed models: debate or vote", "mixed debate"));
        }
        let failed: Vec<String> = self
            .arms
            .iter()
            .filter(|a| a.failed > 0)
            .map(|a| format!("{} {}", a.arm.label(), a.failed))
            .collect();
        if !failed.is_empty() {
            out.push_str(&format!(
                "\nNot counted (the provider failed; `moot bench --resume {}` tries them again): {}\n",
                self.id,
                failed.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wilson_interval_matches_known_values() {
        let (low, high) = wilson(8, 10);
        assert!(
            (low - 0.4902).abs() < 1e-3 && (high - 0.9433).abs() < 1e-3,
            "{low} {high}"
        );
        assert_eq!(wilson(0, 0), (0.0, 0.0));
        let (low, high) = wilson(0, 20);
        assert_eq!(low, 0.0);
        assert!((high - 0.1611).abs() < 1e-3, "{high}");
        assert!(new_run_id().starts_with("BENCH-"));
    }
}
