//! The code debate's phases around its loops: clarification (questions by category, answered
//! by the person at a checkpoint or by the Designer from the context), critique and review of
//! the proposal, the optimised version, the Judge's scores, and applying the winner behind the
//! `before_apply` gate.

use super::prompts;
use super::replies::{self, scores_of};
use super::workshop::{MOOT, Workshop};
use super::{DESIGNER, GENERATOR, JUDGE, seat_id};
use crate::code::apply::{Source, apply_version};
use crate::code::history::History;
use crate::code::hooks::HookResult;
use crate::code::record::Finding;
use crate::code::roles::CodePhase;
use crate::code::versions::{Version, winner};
use crate::debate::{Control, Phase, Turn, TurnKey, TurnStatus};
use crate::engine::{CheckpointOutcome, EngineError, GateOutcome};
use crate::protocol::kit;
use crate::protocol::text::fenced;
use serde_json::json;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<super::CodeResult>;

/// The most rounds of clarifying questions, and the confidence that ends them (the note's).
pub const CLARIFICATION_ROUNDS: u32 = 3;
const CONFIDENT: f64 = 0.9;
/// The dehallucination step: the Generator asks what it must know, by category; the person
/// answers at a checkpoint (or lets the Designer answer from the task and the files, which is
/// what happens headless); until the Generator is confident (> 0.9), asks nothing more, or
/// three rounds are spent. A task the Generator calls simple skips it.
pub async fn clarify(shop: &mut Workshop<'_>) -> Result<Option<Ending>, EngineError> {
    shop.stage(CodePhase::Clarification);
    for round in 1..=CLARIFICATION_ROUNDS {
        let turn = shop
            .ctx
            .speak(
                kit::ask(
                    TurnKey::new(round, Phase::Clarification, GENERATOR),
                    prompts::questions_system(),
                    format!(
                        "{}\nWhat do you need to know before you write it?",
                        shop.task()
                    ),
                    replies::questions_reply(&history_offered(shop)),
                    kit::Limits::new(800, shop.deadline()),
                )
                .by("Generator"),
            )
            .await?;
        if turn.status != TurnStatus::Ok {
            shop.notes.push(format!(
                "clarification round {round}: the Generator's questions could not be read ({}); it went on without them",
                turn.note.unwrap_or_default()
            ));
            break;
        }
        let data = turn.data.unwrap_or_default();
        read_history(shop, round, &data).await?;
        let asked: Vec<(String, String)> = data["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| {
                Some((
                    q["category"].as_str()?.to_string(),
                    q["question"].as_str()?.trim().to_string(),
                ))
            })
            .collect();
        if round == 1 && data["simple"].as_bool() == Some(true) {
            shop.notes
                .push("Clarification was skipped: the Generator judged the task simple.".into());
            break;
        }
        let confidence = data["confidence"].as_f64().unwrap_or(0.0);
        if asked.is_empty() || confidence > CONFIDENT {
            break;
        }
        let listed: String = asked
            .iter()
            .enumerate()
            .map(|(i, (category, q))| format!("{}. [{}] {q}\n", i + 1, category.replace('_', " ")))
            .collect();
        match shop
            .ctx
            .clarify(
                round,
                &format!(
                    "The Generator asks before writing code:\n{listed}Answer them (g), or go on (c) and the Designer answers from the task and the files."
                ),
            )
            .await?
        {
            CheckpointOutcome::TimedOut => return Ok(Some(Ending::Paused)),
            CheckpointOutcome::Answered {
                control: Control::End,
                ..
            } => return Ok(Some(Ending::Cancelled)),
            CheckpointOutcome::Answered {
                control: Control::Guide(answer),
                by,
            } => {
                let questions = asked
                    .iter()
                    .map(|(_, q)| q.as_str())
                    .collect::<Vec<_>>()
                    .join(" / ");
                shop.clarifications
                    .push((questions, answer.trim().to_string(), by));
            }
            CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => {
                if !designer_answers(shop, round, &listed).await? {
                    break;
                }
            }
        }
    }
    Ok(None)
}

/// The files whose history the Generator may ask for: those the debate was given, in git,
/// and not read already.
fn history_offered(shop: &Workshop<'_>) -> Vec<String> {
    if !shop.settings.in_git {
        return Vec::new();
    }
    shop.settings
        .files
        .iter()
        .map(|(path, _)| path.clone())
        .filter(|path| !shop.histories.iter().any(|(read, _)| read == path))
        .collect()
}

/// The history and blame of the files the Generator asked for, read from the user's
/// repository once and journaled as moot's own turn (`history`), so a resume serves it back.
async fn read_history(
    shop: &mut Workshop<'_>,
    round: u32,
    data: &serde_json::Value,
) -> Result<(), EngineError> {
    let offered = history_offered(shop);
    let mut asked: Vec<String> = Vec::new();
    for path in data["history"].as_array().into_iter().flatten() {
        // Only what was offered: the model names files, it never chooses paths.
        if let Some(path) = path.as_str().filter(|p| offered.iter().any(|o| o == p))
            && !asked.iter().any(|a| a == path)
            && asked.len() < replies::MOST_HISTORIES
        {
            asked.push(path.to_string());
        }
    }
    if asked.is_empty() {
        return Ok(());
    }
    let key = TurnKey::new(round, Phase::Tool, HISTORY);
    let turn = match shop.ctx.replayed(&key) {
        Some(turn) => turn,
        None => {
            let mut read = Vec::new();
            for path in &asked {
                let text = crate::code::blame::file_history(&shop.settings.origin, path)
                    .unwrap_or_else(|e| format!("The history of {path} could not be read: {e}\n"));
                read.push((path.clone(), text));
            }
            let mut turn = Turn::pending(key, "moot", "git");
            turn.content = read
                .iter()
                .map(|(_, text)| text.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            turn.data = Some(json!({"requested": asked, "files": read}));
            shop.ctx.record(turn).await?
        }
    };
    let files: Vec<(String, String)> = turn
        .data
        .as_ref()
        .and_then(|d| serde_json::from_value(d["files"].clone()).ok())
        .unwrap_or_default();
    shop.histories.extend(files);
    Ok(())
}

/// The seat moot's own reading of git history is journaled under.
pub const HISTORY: &str = "history";

/// The Designer answers the round's questions from the task and the files; false when it
/// could not.
async fn designer_answers(
    shop: &mut Workshop<'_>,
    round: u32,
    listed: &str,
) -> Result<bool, EngineError> {
    let turn = shop
        .ctx
        .speak(
            kit::ask(
                TurnKey::new(round, Phase::Clarification, DESIGNER),
                prompts::answers_system(),
                format!("{}\nThe Generator asks:\n{listed}", shop.task()),
                replies::answers_reply(),
                kit::Limits::new(800, shop.deadline()),
            )
            .by("Designer"),
        )
        .await?;
    if turn.status != TurnStatus::Ok {
        shop.notes.push(format!(
            "clarification round {round}: the Designer could not answer ({})",
            turn.note.unwrap_or_default()
        ));
        return Ok(false);
    }
    let data = turn.data.unwrap_or_default();
    for answer in data["answers"].as_array().into_iter().flatten() {
        shop.clarifications.push((
            answer["question"].as_str().unwrap_or("").trim().to_string(),
            answer["answer"].as_str().unwrap_or("").trim().to_string(),
            "the Designer, from the context".into(),
        ));
    }
    for open in data["remaining_ambiguities"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(open) = open.as_str().filter(|o| !o.trim().is_empty()) {
            shop.notes.push(format!(
                "still ambiguous after clarification: {}",
                open.trim()
            ));
        }
    }
    Ok(true)
}

/// The critics on the latest version, side by side; their words, fenced, for the next phases.
pub async fn critique(shop: &mut Workshop<'_>) -> Result<String, EngineError> {
    shop.stage(CodePhase::Critique);
    let latest = shop.next_number() - 1;
    let tests = latest_tests(shop, latest);
    let speeches = shop
        .settings
        .critics
        .iter()
        .map(|name| {
            kit::prose_speech(
                TurnKey::new(latest, Phase::Critique, seat_id(name)),
                "moot_code_critique",
                prompts::critic_system(name),
                format!(
                    "{}{}\n{tests}\nCriticise the latest version.",
                    shop.task(),
                    shop.latest_code()
                ),
                Some(800),
                shop.deadline(),
            )
        })
        .collect();
    let critiques = shop.ctx.speak_all(speeches).await?;
    Ok(critiques
        .iter()
        .filter(|t| t.status == TurnStatus::Ok)
        .map(|t| format!("{}\n", fenced(&t.seat, "critique", &t.content)))
        .collect())
}

/// What the hooks said of version `number`, for a prompt.
fn latest_tests(shop: &Workshop<'_>, number: u32) -> String {
    let results: Vec<String> = crate::code::record::tests_of(&shop.tests, number)
        .map(|r| r.summary())
        .collect();
    if results.is_empty() {
        "No tests ran on it.".into()
    } else {
        format!("Its tests: {}", results.join("; "))
    }
}

/// The Judge weighs the critiques: which points the next version must answer and which it may
/// leave, and why. Its words (fenced), or nothing when it could not.
pub async fn review(shop: &mut Workshop<'_>, critique: &str) -> Result<String, EngineError> {
    shop.stage(CodePhase::Review);
    let latest = shop.next_number() - 1;
    let tests = latest_tests(shop, latest);
    let turn = shop
        .ctx
        .speak(kit::prose_speech(
            TurnKey::new(latest, Phase::Review, JUDGE),
            "moot_code_review",
            prompts::review_system(),
            format!(
                "{}{}\n{tests}\nThe critics said:\n{critique}\nReview the critiques.",
                shop.task(),
                shop.latest_code()
            ),
            Some(600),
            shop.deadline(),
        ))
        .await?;
    Ok(if turn.status == TurnStatus::Ok {
        fenced(JUDGE, "review", &turn.content)
    } else {
        String::new()
    })
}

/// A version answering the critics (and the review), settled.
pub async fn optimize(
    shop: &mut Workshop<'_>,
    critique: &str,
    review: &str,
) -> Result<(), EngineError> {
    shop.stage(CodePhase::Optimization);
    let number = shop.next_number();
    let mut ask = format!("The critics said:\n{critique}\n");
    if !review.is_empty() {
        ask.push_str(&format!("The Judge's review of them:\n{review}\n"));
    }
    ask.push_str("Write an improved version that answers them and still passes the tests.");
    if shop
        .write_version(number, Phase::Optimization, &ask)
        .await?
        .is_some()
    {
        shop.settle(number).await?;
    }
    Ok(())
}

/// The Judge's rubric for every version (0–1 per criterion), one call.
pub async fn score(shop: &mut Workshop<'_>) -> Result<(), EngineError> {
    shop.stage(CodePhase::Convergence);
    if shop.versions.is_empty() {
        return Ok(());
    }
    let numbers: Vec<u32> = shop.versions.iter().map(|v| v.number).collect();
    let listing: String = shop
        .versions
        .iter()
        .map(|v| {
            let code: String = v
                .files
                .iter()
                .map(|(p, c)| format!("`{p}`:\n{}\n", fenced(GENERATOR, "code", c)))
                .collect();
            format!(
                "\nVersion {}:\n{code}{}\n",
                v.number,
                latest_tests(shop, v.number)
            )
        })
        .collect();
    let turn = shop
        .ctx
        .speak(
            kit::ask(
                TurnKey::new(0, Phase::Verdict, JUDGE),
                prompts::scores_system(),
                format!("{}{listing}", shop.task()),
                replies::scores_reply(&numbers),
                kit::Limits::new(1200, shop.deadline()),
            )
            .by("Judge"),
        )
        .await?;
    for (number, quality) in scores_of(turn.data.as_ref()) {
        if let Some(version) = shop.versions.iter_mut().find(|v| v.number == number) {
            version.quality = Some(quality);
        }
    }
    Ok(())
}

/// The convergence hook. A version chosen over later ones never ran the tests red wrote after
/// it; here it runs them. One that fails them loses its pass and the choice is made again,
/// until the chosen version passes them or is the last one (whose own hooks ran on them).
pub async fn converge(shop: &mut Workshop<'_>, findings: &[Finding]) -> Result<(), EngineError> {
    let red_tests: Vec<(String, String)> = findings
        .iter()
        .filter_map(|f| Some((f.test.clone()?, f.test_content.clone()?)))
        .collect();
    let Some(last) = shop.versions.last().map(|v| v.number) else {
        return Ok(());
    };
    if red_tests.is_empty() || shop.settings.hooks.is_empty() {
        return Ok(());
    }
    while let Some(chosen) = winner(&shop.versions) {
        if chosen.number == last
            || !shop
                .versions
                .iter()
                .any(|v| v.number == chosen.number && v.passes())
        {
            break;
        }
        let results = shop.recheck(chosen.number, &red_tests).await?;
        if results.is_empty() || results.iter().all(HookResult::ok) {
            break;
        }
        let failed: Vec<String> = results
            .iter()
            .filter(|r| !r.ok())
            .map(HookResult::summary)
            .collect();
        shop.notes.push(format!(
            "At convergence version {} failed with the red team's tests beside it ({}), so it lost its pass.",
            chosen.number,
            failed.join("; ")
        ));
        if let Some(version) = shop.versions.iter_mut().find(|v| v.number == chosen.number) {
            version.take_results(&results);
        }
        shop.announce(chosen.number);
    }
    Ok(())
}

/// With the `before_apply` gate, the winner is applied to the person's tree once they approve
/// it (a rejection leaves the tree alone and the debate still concludes; a timeout pauses it).
/// Without the gate nothing is applied: `moot code apply` does it. What happened is a note of
/// the record, and is journaled, so a resume or an audit's re-run never applies twice.
/// What the `before_apply` gate asks: every file the version would create or change in the
/// person's tree, and whether it passes its tests.
struct ApplyRequest {
    summary: String,
    artifacts: serde_json::Value,
}

fn apply_request(
    base: &[(String, String)],
    versions: &[Version],
    number: u32,
    origin: &std::path::Path,
) -> ApplyRequest {
    let target = crate::code::versions::files_at(base, versions, number);
    let mut created = Vec::new();
    let mut changed = Vec::new();
    // Against the person's tree as it is now (the paths were checked when the versions were
    // written; this only reads).
    for (path, content) in &target {
        match std::fs::read_to_string(origin.join(path)) {
            Ok(now) if now == *content => {}
            Ok(_) => changed.push(path.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => created.push(path.clone()),
            Err(_) => changed.push(path.clone()),
        }
    }
    let version = versions.iter().find(|v| v.number == number);
    let tests = match version {
        Some(v) => match (v.hooks_ok, v.passed, v.failed) {
            (Some(true), Some(p), f) => {
                format!("passes its tests ({p} passed, {} failed)", f.unwrap_or(0))
            }
            (Some(true), _, _) => "passes its hooks".to_string(),
            (Some(false), Some(p), f) => {
                format!("FAILS its tests ({p} passed, {} failed)", f.unwrap_or(0))
            }
            (Some(false), _, _) => "FAILS its hooks".to_string(),
            (None, _, _) => "was not tested (no hook ran)".to_string(),
        },
        None => "was not tested (no hook ran)".to_string(),
    };
    let listed = |paths: &[String]| {
        if paths.is_empty() {
            "none".to_string()
        } else {
            paths.join(", ")
        }
    };
    ApplyRequest {
        summary: format!(
            "Apply version {number} (the winner) to {}? It {tests}. Files it creates: {}. Files it changes: {}.",
            origin.display(),
            listed(&created),
            listed(&changed)
        ),
        artifacts: json!({
            "version": number,
            "origin": origin.display().to_string(),
            "creates": created,
            "changes": changed,
            "passes": version.and_then(|v| v.hooks_ok),
            "tests_passed": version.and_then(|v| v.passed),
            "tests_failed": version.and_then(|v| v.failed),
        }),
    }
}

pub async fn apply_winner(
    shop: &mut Workshop<'_>,
    winner: Option<u32>,
) -> Result<Option<Ending>, EngineError> {
    if !kit::gate_active(shop.common, "before_apply") {
        return Ok(None);
    }
    let Some(number) = winner else {
        shop.notes
            .push("before_apply: there was no version to apply.".into());
        return Ok(None);
    };
    let key = TurnKey::new(0, Phase::Tool, "apply");
    if let Some(turn) = shop.ctx.replayed(&key) {
        shop.notes.push(turn.content);
        return Ok(None);
    }
    let origin = shop.settings.origin.clone();
    let request = apply_request(&shop.settings.files, &shop.versions, number, &origin);
    let stop = kit::Stop {
        point: "before_apply",
        round: number,
        summary: request.summary,
        artifacts: request.artifacts,
    };
    let outcome = kit::gate_outcome(shop.ctx, shop.common, stop).await?;
    let note = match outcome {
        GateOutcome::TimedOut => return Ok(Some(Ending::Paused)),
        GateOutcome::Rejected { reason, .. } => format!(
            "before_apply: applying version {number} was rejected ({}); your tree was not touched.",
            if reason.trim().is_empty() {
                "no reason given"
            } else {
                reason.trim()
            }
        ),
        GateOutcome::Approved { .. } => {
            let history = match &shop.tree.git_dir {
                Some(git_dir) => {
                    History::locate(git_dir, &origin, &shop.ctx.debate_id, &shop.versions)
                }
                None => History::Journal,
            };
            let source = Source {
                origin: &origin,
                history: &history,
                base: &shop.settings.files,
                versions: &shop.versions,
            };
            match apply_version(&source, number, false) {
                Ok(files) if files.is_empty() => format!(
                    "before_apply: approved; version {number} changes nothing against your tree."
                ),
                Ok(files) => format!(
                    "before_apply: approved; version {number} was applied to {}: {}.",
                    origin.display(),
                    files.join(", ")
                ),
                Err(why) => {
                    format!("before_apply: approved, but version {number} was not applied: {why}")
                }
            }
        }
    };
    let mut turn = Turn::pending(key, MOOT, "apply");
    turn.content = note.clone();
    shop.ctx.record(turn).await?;
    shop.notes.push(note);
    Ok(None)
}
