//! The arms `moot bench` compares on one problem: a single answer, self-consistency (the
//! majority of samples drawn up to the debate's token budget), Du et al.'s debate (agents
//! answer alone, then again after reading each other's answers; the majority of the last round),
//! and two variants of the debate: its seats on models of their own (mixed), and a protocol's
//! debate with a blind first round.

use super::BenchError;
use super::data::{Format, Problem, matches};
use crate::debate::Phase;
use crate::llm::retry::random_unit;
use crate::llm::{
    ChatMessage, ChatRequest, LlmError, Provider, RequestLabel, RetryPolicy, estimate_tokens,
};
use serde::{Deserialize, Serialize};
use std::time::Instant;

crate::debate::vocabulary! {
    /// An arm of the comparison.
    #[derive(Hash, PartialOrd, Ord)]
    pub enum Arm {
        Single,
        SelfConsistency,
        Debate,
        /// The debate with its first round blind (a protocol's; Du et al.'s always is).
        BlindFirst,
        /// The debate with seats on models of their own (`--seat-model`).
        Mixed,
    }
}

impl Arm {
    /// As the flag spells it.
    pub fn label(self) -> &'static str {
        match self {
            Arm::Single => "single",
            Arm::SelfConsistency => "self-consistency",
            Arm::Debate => "debate",
            Arm::BlindFirst => "blind-first",
            Arm::Mixed => "mixed",
        }
    }

    /// `single`, `self-consistency` (or `sc`), `debate`, `blind-first`, `mixed`.
    pub fn parse_flag(text: &str) -> Result<Arm, BenchError> {
        match text.trim().to_lowercase().replace('_', "-").as_str() {
            "single" => Ok(Arm::Single),
            "self-consistency" | "sc" => Ok(Arm::SelfConsistency),
            "debate" => Ok(Arm::Debate),
            "blind-first" => Ok(Arm::BlindFirst),
            "mixed" => Ok(Arm::Mixed),
            other => Err(BenchError::Data(format!(
                "unknown arm {other:?}; the arms are single, self-consistency (sc), debate, \
                 blind-first (with --protocol) and mixed (with --seat-model)"
            ))),
        }
    }

    /// A variant of the debate: run as the debate is, on the same problems.
    pub fn is_debate(self) -> bool {
        matches!(self, Arm::Debate | Arm::BlindFirst | Arm::Mixed)
    }
}

/// One model call as the bench counts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub reply: String,
    pub answer: Option<String>,
    pub tokens: u64,
    pub latency_ms: u64,
}

/// An arm's result on one problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    pub answer: Option<String>,
    pub correct: bool,
    pub tokens: u64,
    pub wall_ms: u64,
    /// The longest chain of calls that had to follow one another (the debate's rounds; one
    /// batch of samples); what the wall time would be with no overhead.
    pub critical_ms: u64,
    /// Every call, by round (one round for the single answer and the samples).
    pub rounds: Vec<Vec<Call>>,
    /// A code problem's hidden tests on the answer's code (pass@1), run in the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<super::hidden::CodeCheck>,
    /// Self-consistency: how many samples it drew on this problem to match the debate's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
}

/// How the arms are run.
#[derive(Debug, Clone)]
pub struct Shape {
    pub agents: usize,
    pub rounds: usize,
    /// Samples when there is no debate to match; with one, samples are drawn until they have
    /// used as many tokens as it did.
    pub samples: usize,
    pub retry: RetryPolicy,
}

async fn ask(
    provider: &dyn Provider,
    retry: &RetryPolicy,
    label: RequestLabel,
    messages: Vec<ChatMessage>,
    format: Format,
) -> Result<Call, BenchError> {
    let request = ChatRequest {
        label,
        system: format.system().into(),
        messages,
        reply: None,
        max_tokens: Some(600),
        temperature: None,
        reply_bytes: None,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let started = Instant::now();
        let mut ignore = |_: &str| {};
        match provider.complete(&request, &mut ignore).await {
            Ok(completion) => {
                let tokens = match completion.usage {
                    Some(usage) => usage.input + usage.output,
                    None => {
                        estimate_tokens(request.prompt_chars())
                            + estimate_tokens(completion.text.len())
                    }
                };
                return Ok(Call {
                    answer: format.read(&completion.text),
                    reply: crate::sanitize::clean(&completion.text),
                    tokens,
                    latency_ms: started.elapsed().as_millis() as u64,
                });
            }
            Err(error) if retry.should_retry(attempt, &error) => {
                tokio::time::sleep(retry.delay(attempt, &error, random_unit())).await;
            }
            Err(error) => return Err(BenchError::Call(describe(&error))),
        }
    }
}

fn describe(error: &LlmError) -> String {
    crate::sanitize::clean(&error.to_string())
}

fn label(round: usize, agent: usize) -> RequestLabel {
    RequestLabel {
        round: round as u32,
        phase: Phase::Argument,
        seat: format!("agent{}", agent + 1),
        perspective: None,
        request: "moot_bench",
    }
}

/// The most common answer (ties to the one given first); None when no call gave one.
pub fn majority(answers: &[Option<String>]) -> Option<String> {
    let given: Vec<&String> = answers.iter().flatten().collect();
    let mut best: Option<(&String, usize)> = None;
    for answer in &given {
        let count = given.iter().filter(|a| matches(a, answer)).count();
        if best.is_none_or(|(_, most)| count > most) {
            best = Some((answer, count));
        }
    }
    best.map(|(answer, _)| answer.clone())
}

fn result(
    problem: &Problem,
    answer: Option<String>,
    rounds: Vec<Vec<Call>>,
    wall_ms: u64,
) -> ArmResult {
    let critical_ms = rounds
        .iter()
        .map(|round| round.iter().map(|c| c.latency_ms).max().unwrap_or(0))
        .sum();
    ArmResult {
        correct: answer
            .as_deref()
            .is_some_and(|a| matches(a, &problem.answer)),
        answer,
        tokens: rounds.iter().flatten().map(|c| c.tokens).sum(),
        wall_ms,
        critical_ms,
        rounds,
        check: None,
        samples: None,
    }
}

pub async fn single(
    provider: &dyn Provider,
    shape: &Shape,
    problem: &Problem,
) -> Result<ArmResult, BenchError> {
    let started = Instant::now();
    let call = ask(
        provider,
        &shape.retry,
        label(1, 0),
        vec![ChatMessage::user(problem.asked())],
        problem.format(),
    )
    .await?;
    let answer = call.answer.clone();
    Ok(result(
        problem,
        answer,
        vec![vec![call]],
        started.elapsed().as_millis() as u64,
    ))
}

/// Du et al.: every agent answers alone; then, each round, each reads the others' latest
/// answers and answers again. The majority of the last round is the debate's answer.
pub async fn debate(
    provider: &dyn Provider,
    shape: &Shape,
    problem: &Problem,
) -> Result<ArmResult, BenchError> {
    debate_on(&[provider], shape, problem).await
}

/// Du et al.'s debate with each agent on a provider of its own: agent `n` asks `seats[n]`
/// (the last one given for any beyond them).
pub async fn debate_on(
    seats: &[&dyn Provider],
    shape: &Shape,
    problem: &Problem,
) -> Result<ArmResult, BenchError> {
    let Some(&last_seat) = seats.last() else {
        return Err(BenchError::Data("a debate needs a provider".into()));
    };
    let started = Instant::now();
    let mut rounds: Vec<Vec<Call>> = Vec::new();
    for round in 0..shape.rounds.max(1) {
        let asks = (0..shape.agents.max(1)).map(|agent| {
            let provider = seats.get(agent).copied().unwrap_or(last_seat);
            let mut messages = vec![ChatMessage::user(problem.asked())];
            if let Some(previous) = rounds.last() {
                messages.push(ChatMessage::assistant(previous[agent].reply.clone()));
                let others: String = previous
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != agent)
                    .map(|(_, call)| format!("One agent solution: ```{}```\n\n", call.reply))
                    .collect();
                messages.push(ChatMessage::user(format!(
                    "These are the solutions to the problem from other agents:\n\n{others}Using the \
                     reasoning from other agents as additional advice, can you give an updated \
                     answer? Examine your solution and that of the other agents step by step. {}",
                    problem.format().closing()
                )));
            }
            ask(
                provider,
                &shape.retry,
                label(round + 1, agent),
                messages,
                problem.format(),
            )
        });
        let calls = futures_util::future::join_all(asks)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        rounds.push(calls);
    }
    let last: Vec<Option<String>> = rounds
        .last()
        .map(|round| round.iter().map(|c| c.answer.clone()).collect())
        .unwrap_or_default();
    Ok(result(
        problem,
        majority(&last),
        rounds,
        started.elapsed().as_millis() as u64,
    ))
}

/// Self-consistency: `shape.samples` answers at once, then more, an agent-count at a time,
/// until they have used `budget` tokens (the debate's, when it ran) or four times the samples.
pub async fn self_consistency(
    provider: &dyn Provider,
    shape: &Shape,
    problem: &Problem,
    budget: Option<u64>,
) -> Result<ArmResult, BenchError> {
    let started = Instant::now();
    let most = shape.samples.max(1) * 4;
    let mut rounds: Vec<Vec<Call>> = Vec::new();
    let mut drawn = 0;
    loop {
        let used: u64 = rounds.iter().flatten().map(|c| c.tokens).sum();
        let batch = if drawn == 0 {
            shape.samples.max(1)
        } else if budget.is_some_and(|b| used < b) && drawn < most {
            shape.agents.max(1).min(most - drawn)
        } else {
            break;
        };
        let asks = (0..batch).map(|i| {
            ask(
                provider,
                &shape.retry,
                label(rounds.len() + 1, drawn + i),
                vec![ChatMessage::user(problem.asked())],
                problem.format(),
            )
        });
        let calls = futures_util::future::join_all(asks)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        drawn += calls.len();
        rounds.push(calls);
    }
    let answers: Vec<Option<String>> = rounds.iter().flatten().map(|c| c.answer.clone()).collect();
    Ok(ArmResult {
        samples: Some(drawn),
        ..result(
            problem,
            majority(&answers),
            rounds,
            started.elapsed().as_millis() as u64,
        )
    })
}

/// The debate arm run as one of moot's protocols: the host that runs it and the settings
/// every problem's debate starts from.
pub struct ProtocolArm {
    pub host: crate::session::Host,
    pub settings: crate::session::DebateSettings,
}

/// The debate arm as one of moot's protocols: a real debate (journaled, in `moot list`) on the
/// problem, its answer read from the record's recommendation (or the record's last number),
/// its critical path the journaled turns' longest latency per step.
pub async fn protocol_debate(
    store: &crate::store::Store,
    arm: &ProtocolArm,
    problem: &Problem,
) -> Result<ArmResult, BenchError> {
    let template = &arm.settings;
    let started = Instant::now();
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let (_answers, controls) = tokio::sync::mpsc::unbounded_channel();
    let question = match problem.format() {
        Format::Letter(_) => format!(
            "{} Choose one: the recommendation must end with `Answer: <letter>`.",
            problem.asked()
        ),
        _ => format!(
            "{} Give the exact number: the recommendation must end with `Answer: <number>`.",
            problem.question
        ),
    };
    let mut settings = template.clone();
    settings.initiated_by = Some(crate::debate::Initiator::Bench);
    let finish = crate::session::start(
        arm.host.clone(),
        store.clone(),
        &question,
        settings,
        crate::session::Wiring {
            events,
            controls,
            answerer: "moot bench".into(),
        },
        std::future::pending::<()>(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let turns = store.turns(&finish.id).map_err(|e| e.to_string())?;
    let record = store
        .synthesis(&finish.id)
        .map_err(|e| e.to_string())?
        .map(|s| s.markdown)
        .ok_or_else(|| format!("{} ended {} without a record", finish.id, finish.status))?;
    let recommendation = record
        .split("## Recommendation")
        .nth(1)
        .map(|rest| rest.split("\n## ").next().unwrap_or(rest))
        .unwrap_or(&record);
    let answer = problem.format().read(recommendation);
    // Steps run one after another; the seats of one step side by side.
    let mut steps: Vec<((u32, Phase), u64)> = Vec::new();
    for turn in &turns {
        let key = (turn.round, turn.phase);
        match steps.iter_mut().find(|(k, _)| *k == key) {
            Some((_, longest)) => *longest = (*longest).max(turn.latency_ms),
            None => steps.push((key, turn.latency_ms)),
        }
    }
    let call = Call {
        reply: format!(
            "{} ({}): {}",
            finish.id,
            finish.status,
            recommendation.trim()
        ),
        answer: answer.clone(),
        tokens: turns.iter().map(|t| t.tokens_in + t.tokens_out).sum(),
        latency_ms: steps.iter().map(|(_, l)| l).sum(),
    };
    Ok(ArmResult {
        correct: answer
            .as_deref()
            .is_some_and(|a| matches(a, &problem.answer)),
        answer,
        tokens: call.tokens,
        wall_ms: started.elapsed().as_millis() as u64,
        critical_ms: call.latency_ms,
        rounds: vec![vec![call]],
        check: None,
        samples: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_majority_counts_equal_numbers_as_one_and_ties_go_to_the_first() {
        let a = |s: &str| Some(s.to_string());
        assert_eq!(majority(&[a("4"), a("5"), a("4.0")]), a("4"));
        assert_eq!(majority(&[a("5"), a("4")]), a("5"));
        assert_eq!(majority(&[None, a("7"), None]), a("7"));
        assert_eq!(majority(&[None, None]), None);
        assert_eq!(Arm::parse_flag("SC").unwrap(), Arm::SelfConsistency);
        assert!(
            Arm::parse_flag("vote")
                .unwrap_err()
                .to_string()
                .contains("single, self-consistency")
        );
    }
}
