//! What a code debate keeps between its steps (the work tree, the versions, the test history),
//! and the steps every phase shares: writing a version into the tree, and settling it —
//! committing it and running the hooks once, journaled, so a resume or an audit's re-run reads
//! the results instead of running anything again.

use super::prompts;
use super::replies;
use super::settings::CodeSettings;
use super::{GENERATOR, SECURITY};
use crate::code::hooks::{self, HookResult};
use crate::code::loops::{Attack, Coder, Teams};
use crate::code::record::Reflection;
use crate::code::versions::{Version, files_at, overlay};
use crate::code::worktree::WorkTree;
use crate::code::{detect, reply};
use crate::debate::{Named, Phase, Turn, TurnKey, TurnStatus};
use crate::engine::{Context, EngineError};
use crate::protocol::Common;
use crate::protocol::kit;
use crate::protocol::text::fenced;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use tokio::time::Instant;

/// The seat moot's own steps are recorded under (hooks, apply): no pane shows it.
pub const MOOT: &str = "moot";

/// The seat the convergence hook is recorded under, beside each version's own.
const CONVERGENCE: &str = "convergence";

/// What settling a version recorded: its commit and the hooks' results.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Settled {
    pub commit: Option<String>,
    pub results: Vec<HookResult>,
}

pub struct Workshop<'a> {
    pub ctx: &'a Context,
    pub common: &'a Common,
    pub settings: &'a CodeSettings,
    pub tree: WorkTree,
    pub versions: Vec<Version>,
    pub tests: Vec<(u32, HookResult)>,
    pub notes: Vec<String>,
    /// (question, answer, who answered), from the clarification phase.
    pub clarifications: Vec<(String, String, String)>,
    /// (file, its history and blame) the Generator asked to read, from the clarification phase.
    pub histories: Vec<(String, String)>,
    /// Versions settled so far (their results are in `tests`).
    settled: BTreeSet<u32>,
    /// The phase last announced, so that a phase is announced once however often it is
    /// entered (each attempt of the proposal enters it again).
    announced: std::sync::Mutex<Option<crate::code::roles::CodePhase>>,
}

impl<'a> Workshop<'a> {
    pub fn new(
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a CodeSettings,
        tree: WorkTree,
    ) -> Self {
        Workshop {
            ctx,
            common,
            settings,
            tree,
            versions: Vec::new(),
            tests: Vec::new(),
            notes: Vec::new(),
            clarifications: Vec::new(),
            histories: Vec::new(),
            settled: BTreeSet::new(),
            announced: std::sync::Mutex::new(None),
        }
    }

    pub fn deadline(&self) -> Instant {
        Instant::now() + self.common.round_timeout
    }

    /// Tells the faces which phase the debate is in.
    pub fn stage(&self, phase: crate::code::roles::CodePhase) {
        if let Ok(mut announced) = self.announced.lock() {
            if *announced == Some(phase) {
                return;
            }
            *announced = Some(phase);
        }
        self.ctx.emit(crate::debate::Event::Stage {
            name: phase.name().into(),
        });
    }

    /// The task as every seat reads it: the question, the language, the clarifications and the
    /// project's files.
    pub fn task(&self) -> String {
        let mut text = format!("Task: {}\n", self.common.question.trim());
        if let Some(language) = &self.settings.language {
            text.push_str(&format!("Write it in {language}.\n"));
        }
        if !self.clarifications.is_empty() {
            text.push_str("\nClarifications:\n");
            for (question, answer, by) in &self.clarifications {
                text.push_str(&format!("- {question} → {answer} ({by})\n"));
            }
        }
        for (path, content) in &self.settings.files {
            text.push_str(&format!(
                "\nThe project's `{path}`:\n{}\n",
                fenced("project", "file", content)
            ));
        }
        for (path, history) in &self.histories {
            text.push_str(&format!(
                "\nThe git history of `{path}`, as you asked:\n{}\n",
                fenced("git", "history", history)
            ));
        }
        text
    }

    pub fn latest_code(&self) -> String {
        self.versions
            .last()
            .map(|v| {
                v.files
                    .iter()
                    .map(|(p, c)| {
                        format!(
                            "\n`{p}` (version {}):\n{}\n",
                            v.number,
                            fenced(GENERATOR, "code", c)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The hooks' results on a version as the next prompt reads them.
    pub fn outcome(results: &[HookResult]) -> String {
        results
            .iter()
            .map(|r| format!("{}\n{}\n", r.summary(), fenced("hook", "output", &r.tail)))
            .collect()
    }

    pub fn next_number(&self) -> u32 {
        self.versions.last().map_or(1, |v| v.number + 1)
    }

    /// The Generator (or blue) writes version `number` in `phase` and it is written to the
    /// tree (refused paths recorded). None when the reply could not be used.
    pub async fn write_version(
        &mut self,
        number: u32,
        phase: Phase,
        ask: &str,
    ) -> Result<Option<u32>, EngineError> {
        self.ctx.emit(crate::debate::Event::RoundStarted {
            round: number,
            limit: None,
        });
        let turn = self
            .ctx
            .speak(
                kit::ask(
                    TurnKey::new(number, phase, GENERATOR),
                    prompts::generator_system(),
                    format!("{}{}\n{ask}", self.task(), self.latest_code()),
                    replies::code_reply(),
                    kit::Limits::new(4000, self.deadline()),
                )
                .by("Generator"),
            )
            .await?;
        if turn.status != TurnStatus::Ok {
            self.notes.push(format!(
                "version {number} could not be written: {}",
                turn.note.clone().unwrap_or_default()
            ));
            return Ok(None);
        }
        let parsed: reply::CodeReply = match turn.data.clone().map(serde_json::from_value) {
            Some(Ok(parsed)) => parsed,
            _ => return Ok(None),
        };
        for refused in &parsed.refused {
            self.notes
                .push(format!("version {number}: refused {refused}"));
        }
        for (path, content) in &parsed.files {
            if let Err(why) = self.tree.write(path, content) {
                self.notes.push(format!("version {number}: refused {why}"));
            }
        }
        let language = self.settings.language.clone().unwrap_or_else(|| {
            parsed
                .files
                .first()
                .map_or("text", |(p, _)| detect::language(p))
                .to_string()
        });
        self.versions.push(Version {
            number,
            language,
            files: parsed.files,
            commit: None,
            quality: None,
            passed: None,
            failed: None,
            hooks_ok: None,
            summary: parsed.summary,
            phase: phase.as_str().into(),
        });
        Ok(Some(number))
    }

    /// Runs every hook in the tree as it stands, telling the faces which one is running.
    async fn run_hooks(&self, label: &str) -> Vec<HookResult> {
        let mut results = Vec::new();
        for hook in &self.settings.hooks {
            self.ctx.emit(crate::debate::Event::Notice {
                message: format!("{label}: running {} ({})", hook.name, hook.command),
            });
            let result = hooks::run(hook, &self.tree.root).await;
            // The audit trail keeps what ran and how it ended; the output itself is kept by
            // its hash (its tail is in the version's tool turn).
            self.ctx.audit_action(
                "hook",
                0,
                &hook.name,
                serde_json::json!({
                    "run": label,
                    "hook": result.name,
                    "command": result.command,
                    "exit": result.exit,
                    "timed_out": result.timed_out,
                    "passed": result.passed,
                    "failed": result.failed,
                    "duration_ms": result.duration_ms,
                    "output_sha256": crate::engine::sha256_hex(&result.tail),
                    "output_bytes": result.tail.len() as u64 + result.dropped,
                    "error": result.error,
                }),
            );
            results.push(result);
        }
        results
    }

    /// The convergence hook on version `number`: its files, with `later_tests` (tests later
    /// versions added) beside them, go through the hooks once more. Journaled like a settle,
    /// so a resume or an audit never runs it twice; the tree is put back as the last version
    /// left it. Results are recorded under the version, named `… at convergence`.
    pub async fn recheck(
        &mut self,
        number: u32,
        later_tests: &[(String, String)],
    ) -> Result<Vec<HookResult>, EngineError> {
        let key = TurnKey::new(number, Phase::Tool, CONVERGENCE);
        let results = match self.ctx.replayed(&key) {
            Some(turn) => turn
                .data
                .and_then(|d| serde_json::from_value::<Vec<HookResult>>(d).ok())
                .unwrap_or_default(),
            None => {
                let base = &self.settings.files;
                let last = self.versions.last().map_or(number, |v| v.number);
                let as_left = files_at(base, &self.versions, last);
                let mut checked = files_at(base, &self.versions, number);
                overlay(&mut checked, later_tests);
                // Files later versions added stay out of the check: it is this version's.
                for (path, _) in &as_left {
                    if !checked.iter().any(|(p, _)| p == path)
                        && let Err(why) = self.tree.remove_file(path)
                    {
                        self.notes.push(format!("convergence: {why}"));
                    }
                }
                let written = checked
                    .iter()
                    .try_for_each(|(path, content)| self.tree.write(path, content));
                let results = match written {
                    Ok(()) => {
                        self.run_hooks(&format!("convergence, version {number}"))
                            .await
                    }
                    Err(why) => {
                        self.notes.push(format!(
                            "convergence: version {number} could not be laid out again ({why}); its own results stand"
                        ));
                        Vec::new()
                    }
                };
                for (path, content) in &as_left {
                    self.tree
                        .write(path, content)
                        .map_err(|e| EngineError::Setup(e.to_string()))?;
                }
                let mut turn = Turn::pending(key, MOOT, "hooks");
                turn.content = results
                    .iter()
                    .map(HookResult::summary)
                    .collect::<Vec<_>>()
                    .join("\n");
                turn.data = serde_json::to_value(&results).ok();
                self.ctx.record(turn).await?;
                results
            }
        };
        let results: Vec<HookResult> = results
            .into_iter()
            .map(|mut r| {
                r.name = format!("{} at convergence", r.name);
                r
            })
            .collect();
        self.log_results(number, &results);
        Ok(results)
    }

    /// Adds hook results on version `number` to the test history and tells the Tests panel.
    fn log_results(&mut self, number: u32, results: &[HookResult]) {
        for result in results {
            self.tests.push((number, result.clone()));
        }
        if !results.is_empty() {
            self.ctx.emit(crate::debate::Event::Hooks {
                version: number,
                results: results.iter().map(|r| (r.summary(), r.ok())).collect(),
            });
        }
    }

    /// Commits version `number` and runs the hooks on it, once: a version settled before (in
    /// this run, or in the journal before a crash) gives its recorded results back.
    pub async fn settle(&mut self, number: u32) -> Result<Vec<HookResult>, EngineError> {
        if self.settled.contains(&number) {
            return Ok(crate::code::record::tests_of(&self.tests, number)
                .cloned()
                .collect());
        }
        let key = TurnKey::new(number, Phase::Tool, MOOT);
        let settled = match self.ctx.replayed(&key) {
            Some(turn) => turn
                .data
                .and_then(|d| serde_json::from_value::<Settled>(d).ok())
                .unwrap_or_default(),
            None => {
                let version = self.versions.iter().find(|v| v.number == number);
                let summary = version.map(|v| v.summary.clone()).unwrap_or_default();
                let paths: Vec<&str> = version
                    .map(|v| v.files.iter().map(|(path, _)| path.as_str()).collect())
                    .unwrap_or_default();
                let commit = self
                    .tree
                    .commit(number, &summary, &paths)
                    .map_err(|e| EngineError::Setup(e.to_string()))?;
                let results = self.run_hooks(&format!("version {number}")).await;
                let settled = Settled { commit, results };
                let mut turn = Turn::pending(key, "moot", "hooks");
                turn.content = if settled.results.is_empty() {
                    "no hooks ran".into()
                } else {
                    settled
                        .results
                        .iter()
                        .map(HookResult::summary)
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                turn.data = serde_json::to_value(&settled).ok();
                self.ctx.record(turn).await?;
                settled
            }
        };
        let results = settled.results;
        self.log_results(number, &results);
        if let Some(i) = self.versions.iter().position(|v| v.number == number) {
            let version = &mut self.versions[i];
            version.commit = settled.commit;
            version.take_results(&results);
            self.announce(number);
        }
        self.settled.insert(number);
        Ok(results)
    }

    /// Tells the faces about version `number` as it now stands (again, when the convergence
    /// hook takes its pass away), with its diff from everything before it.
    pub fn announce(&self, number: u32) {
        let Some(version) = self.versions.iter().find(|v| v.number == number) else {
            return;
        };
        let base = &self.settings.files;
        let before = files_at(base, &self.versions, number.saturating_sub(1));
        let after = files_at(base, &self.versions, number);
        self.ctx.emit(crate::debate::Event::Version {
            number,
            phase: version.phase.clone(),
            summary: version.summary.clone(),
            passes: version.hooks_ok,
            diff: crate::code::versions::diff(&before, &after),
        });
    }

    /// The self-check: the Generator drafts code with tests of its own, the hooks run, and a
    /// failing draft is refined from their output, at most `self_check` times. The last draft
    /// is the proposal.
    async fn self_check(&mut self) -> Result<Option<u32>, EngineError> {
        self.stage(crate::code::roles::CodePhase::SelfCheck);
        let number = self.next_number();
        let Some(mut latest) = self
            .write_version(
                number,
                Phase::SelfCheck,
                "Self-check: draft an implementation together with tests of your own for it \
                 (test files the project's test command runs), so the draft is tested before \
                 the debate sees it.",
            )
            .await?
        else {
            return Ok(None);
        };
        let mut results = self.settle(latest).await?;
        for _ in 0..self.settings.self_check {
            if results.iter().all(HookResult::ok) {
                break;
            }
            let number = self.next_number();
            let ask = format!(
                "Self-check output of your draft (version {latest}):\n{}\nAnalyse the failures and refine the draft, code and tests.",
                Workshop::outcome(&results)
            );
            let Some(refined) = self.write_version(number, Phase::SelfCheck, &ask).await? else {
                break;
            };
            latest = refined;
            results = self.settle(latest).await?;
        }
        Ok(Some(latest))
    }
}

/// A reflection as the journal holds it (the turn's data), for the record and `moot code
/// episodes`.
pub fn reflection_of(attempt: u32, data: &Value) -> Reflection {
    let text = |f: &str| {
        data.get(f)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Reflection {
        attempt,
        root_cause: text("root_cause"),
        went_wrong: text("went_wrong"),
        change_next: text("change_next"),
        confidence: data
            .get("confidence")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
    }
}

impl Coder for Workshop<'_> {
    type Error = EngineError;

    fn generate<'a>(
        &'a mut self,
        attempt: u32,
        reflections: &'a [Reflection],
    ) -> BoxFuture<'a, Result<u32, EngineError>> {
        Box::pin(async move {
            if attempt == 1
                && self.settings.runs(crate::code::roles::CodePhase::SelfCheck)
                && !self.settings.hooks.is_empty()
                && let Some(draft) = self.self_check().await?
            {
                self.stage(crate::code::roles::CodePhase::Proposal);
                return Ok(draft);
            }
            self.stage(crate::code::roles::CodePhase::Proposal);
            let mut ask = if attempt == 1 {
                "Propose an implementation.".to_string()
            } else {
                "Your earlier attempt failed its tests. Write a new version.".to_string()
            };
            ask.push_str(&prompts::earlier_reflections(reflections));
            let number = self.next_number();
            self.write_version(number, Phase::Proposal, &ask)
                .await?
                .ok_or_else(|| {
                    EngineError::Provider(format!("the Generator wrote no usable version {number}"))
                })
        })
    }

    fn test(&mut self, version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, EngineError>> {
        Box::pin(async move { self.settle(version).await })
    }

    fn reflect<'a>(
        &'a mut self,
        attempt: u32,
        results: &'a [HookResult],
        earlier: &'a [Reflection],
    ) -> BoxFuture<'a, Result<Reflection, EngineError>> {
        Box::pin(async move {
            // Keyed by the version reflected on, so the journal says which code it is about.
            let version = self.versions.last().map_or(attempt, |v| v.number);
            let turn = self
                .ctx
                .speak(kit::ask(
                    TurnKey::new(version, Phase::Reflection, GENERATOR),
                    prompts::reflection_system(),
                    format!(
                        "{}{}\nThe tests on it:\n{}{}\nWrite a reflection: the root cause, what went wrong, what to change next, and your confidence in that fix (0–1).",
                        self.task(),
                        self.latest_code(),
                        Workshop::outcome(results),
                        prompts::earlier_reflections(earlier)
                    ),
                    replies::reflection_reply(),
                    kit::Limits::new(600, self.deadline()),
                ).by("Generator"))
                .await
                ?;
            Ok(reflection_of(attempt, &turn.data.unwrap_or_default()))
        })
    }
}

impl Teams for Workshop<'_> {
    type Error = EngineError;

    fn attack(
        &mut self,
        round: u32,
        version: u32,
    ) -> BoxFuture<'_, Result<Vec<Attack>, EngineError>> {
        Box::pin(async move {
            let turn = self
                .ctx
                .speak(
                    kit::ask(
                        TurnKey::new(round, Phase::Attack, SECURITY),
                        prompts::red_team_system(),
                        format!(
                            "{}{}\nRound {round} of the red team: attack version {version}.",
                            self.task(),
                            self.latest_code()
                        ),
                        replies::attacks_reply(),
                        kit::Limits::new(2000, self.deadline()),
                    )
                    .by("Security"),
                )
                .await?;
            let mut attacks = Vec::new();
            for item in turn
                .data
                .as_ref()
                .and_then(|d| d.get("attacks"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let attack = item["attack"].as_str().unwrap_or("").trim().to_string();
                if attack.is_empty() {
                    continue;
                }
                let test = match (item["test_path"].as_str(), item["test_content"].as_str()) {
                    (Some(path), Some(content)) => match self.tree.write(path, content) {
                        Ok(()) => Some((path.to_string(), content.to_string())),
                        Err(why) => {
                            self.notes.push(format!("red team: refused {why}"));
                            None
                        }
                    },
                    _ => None,
                };
                let (test, test_content) = test.unzip();
                attacks.push(Attack {
                    attack,
                    test,
                    test_content,
                });
            }
            Ok(attacks)
        })
    }

    fn defend<'a>(
        &'a mut self,
        round: u32,
        attacks: &'a [Attack],
    ) -> BoxFuture<'a, Result<u32, EngineError>> {
        Box::pin(async move {
            let listed: String = attacks
                .iter()
                .map(|a| format!("- {}\n", a.attack))
                .collect();
            let number = self.next_number();
            self.write_version(
                number,
                Phase::Defence,
                &prompts::blue_team_ask(round, &listed),
            )
            .await?
            .ok_or_else(|| EngineError::Provider(format!("blue wrote no usable version {number}")))
        })
    }

    fn test(&mut self, version: u32) -> BoxFuture<'_, Result<Vec<HookResult>, EngineError>> {
        Box::pin(async move { self.settle(version).await })
    }
}
