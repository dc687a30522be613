//! The code debate (design note 004, issue 13), first cut: a Generator proposes a version in
//! the debate's own work tree, the hooks run, a failing attempt is reflected on and regenerated
//! (Reflexion), critics (Refactorer, Security) attack the passing version, the Generator writes
//! an optimised version answering them, red attacks and blue patches when `--red-blue` asks,
//! and the Judge scores every version; the winner is chosen by tests first, then quality.

use super::kit;
use super::prompts::{DATA_RULE, fenced};
use super::{Common, Ending, Flag, Outcome, SettingsError, SettingsInput};
use crate::code::hooks::{self, Hook, HookResult};
use crate::code::loops::{self, Attack, Coder, Teams};
use crate::code::record::{CodeResult, Reflection};
use crate::code::versions::{Quality, Version, winner};
use crate::code::worktree::{WorkTree, safe_path};
use crate::code::{detect, reply};
use crate::debate::{Confidence, Phase, Presentation, Seat, SidePanel, TurnKey, TurnStatus};
use crate::engine::{Context, EngineError, ReplyKind};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

pub struct Code;

const FLAGS: &[Flag] = &[
    Flag {
        name: "file",
        value: Some("PATH"),
        help: "A file of the project the task is about (its contents go to the seats)",
        repeatable: true,
    },
    Flag {
        name: "test",
        value: Some("CMD"),
        help: "The test command run after each version (default: detected from the project)",
        repeatable: false,
    },
    Flag {
        name: "lint",
        value: Some("CMD"),
        help: "A linter run after each version",
        repeatable: false,
    },
    Flag {
        name: "red-blue",
        value: None,
        help: "Red team attacks the result, blue team hardens it (at most three rounds)",
        repeatable: false,
    },
    Flag {
        name: "seat",
        value: Some("ROLE"),
        help: "A critic of the critique phase (default Refactorer and Security); the roles: Generator, Refactorer, PerformanceAnalyzer, Security, Teacher, Compiler, Executor, Judge, Implementer, Designer",
        repeatable: true,
    },
    Flag {
        name: "keep",
        value: None,
        help: "Keep the debate's work tree after it ends",
        repeatable: false,
    },
    Flag {
        name: "max-attempts",
        value: Some("N"),
        help: "Attempts of the Reflexion loop (default 3)",
        repeatable: false,
    },
];

/// The most bytes of one `--file` given to the seats.
const LARGEST_CONTEXT_FILE: usize = 64 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CodeSettings {
    /// The project the debate works on (absolute).
    origin: PathBuf,
    /// Where its work tree is made.
    worktrees: PathBuf,
    /// `--file`s: path and contents, read when the debate started.
    files: Vec<(String, String)>,
    hooks: Vec<Hook>,
    /// Why no hooks run, when none do.
    hooks_note: Option<String>,
    red_blue: bool,
    keep: bool,
    max_attempts: u32,
    /// The critique phase's roles (`--seat`), by template name.
    #[serde(default = "default_critics")]
    critics: Vec<String>,
}

fn default_critics() -> Vec<String> {
    vec!["Refactorer".into(), "Security".into()]
}

const GENERATOR: &str = "G";
const SECURITY: &str = "S";
const JUDGE: &str = "J";

/// A role's seat id: its initial (the ten templates' initials all differ).
fn seat_id(role: &str) -> String {
    role.chars().next().unwrap_or('?').to_string()
}

/// The Generator, the critics, Security for red when it is not a critic, and the Judge.
fn seats(settings: &CodeSettings) -> Vec<Seat> {
    let mut names: Vec<String> = vec!["Generator".into()];
    for critic in &settings.critics {
        if !names.contains(critic) {
            names.push(critic.clone());
        }
    }
    if settings.red_blue && !names.iter().any(|n| n == "Security") {
        names.push("Security".into());
    }
    if !names.iter().any(|n| n == "Judge") {
        names.push("Judge".into());
    }
    names
        .into_iter()
        .map(|name| {
            let id = seat_id(&name);
            let role = crate::code::roles::find(&name).map_or("", |r| r.focus);
            Seat {
                id,
                perspective: name,
                priorities: vec![role.into()],
                trade_offs: String::new(),
                stance: role.into(),
                provider: None,
                model: None,
            }
        })
        .collect()
}

impl super::Protocol for Code {
    fn name(&self) -> &'static str {
        "code"
    }

    fn description(&self) -> &'static str {
        "a code debate: a Generator writes versions in the debate's own git worktree, tests run \
         after each, failures are reflected on and retried, critics and an optional red team \
         attack it, a Judge scores every version; nothing touches your files"
    }

    fn gate_points(&self) -> &'static [&'static str] {
        &["before_synthesis"]
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError> {
        let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
        let mut files = Vec::new();
        for given in flag("file") {
            let relative = safe_path(&given).map_err(|e| format!("--file {e}"))?;
            let path = input.cwd.join(&relative);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("--file {given}: cannot be read ({e}); give a text file of the project")
            })?;
            let text: String = text.chars().take(LARGEST_CONTEXT_FILE).collect();
            files.push((relative.to_string_lossy().to_string(), text));
        }
        let mut critics = Vec::new();
        for given in flag("seat") {
            let role = crate::code::roles::find(&given).ok_or_else(|| {
                format!(
                    "--seat {given}: no such role; the roles are {}",
                    crate::code::roles::ROLES
                        .iter()
                        .map(|r| r.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if !critics.iter().any(|c: &String| c == role.name) {
                critics.push(role.name.to_string());
            }
        }
        if critics.is_empty() {
            critics = default_critics();
        }
        let max_attempts = match flag("max-attempts").first() {
            Some(n) => n
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=10).contains(n))
                .ok_or_else(|| format!("--max-attempts takes 1–10, not {n:?}"))?,
            None => 3,
        };
        let test = flag("test")
            .first()
            .cloned()
            .or_else(|| detect::test_command(input.cwd));
        let mut hooks = Vec::new();
        let hook = |name: &str, command: String| Hook {
            name: name.into(),
            command,
            timeout: Duration::from_secs(300),
            output_cap: 16 * 1024,
        };
        if let Some(test) = test {
            hooks.push(hook("test", test));
        }
        if let Some(lint) = flag("lint").first() {
            hooks.push(hook("lint", lint.clone()));
        }
        let settings = CodeSettings {
            origin: input.cwd.to_path_buf(),
            worktrees: std::env::temp_dir(),
            files,
            hooks_note: hooks.is_empty().then(|| {
                "No --test was given and none was detected: the debate ran without hooks.".into()
            }),
            hooks,
            red_blue: input.flags.contains_key("red-blue"),
            keep: input.flags.contains_key("keep"),
            max_attempts,
            critics,
        };
        serde_json::to_value(&settings).map_err(|e| e.to_string())
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "role".into(),
            panels: vec![SidePanel::Tests],
            outcome_title: "Result".into(),
            follow_up: false,
            opening: "Setting up the work tree…".into(),
        }
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a Value,
    ) -> super::Run<'a> {
        Box::pin(async move {
            let settings: CodeSettings = kit::stored(settings, "the code debate's")?;
            run(ctx, common, &settings).await
        })
    }
}

fn validate_code(reply: &Value) -> Result<Value, String> {
    let parsed = reply::parse(reply)?;
    serde_json::to_value(parsed).map_err(|e| e.to_string())
}

fn validate_reflection(reply: &Value) -> Result<Value, String> {
    for field in ["root_cause", "went_wrong", "change_next"] {
        if reply
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(|s| s.trim().is_empty())
        {
            return Err(format!("`{field}` is needed"));
        }
    }
    if !reply
        .get("confidence")
        .and_then(Value::as_f64)
        .is_some_and(|c| (0.0..=1.0).contains(&c))
    {
        return Err("`confidence` is a number 0–1".into());
    }
    Ok(reply.clone())
}

fn validate_attacks(reply: &Value) -> Result<Value, String> {
    reply
        .get("attacks")
        .and_then(Value::as_array)
        .ok_or("`attacks` must be a list")?;
    Ok(reply.clone())
}

fn validate_scores(reply: &Value) -> Result<Value, String> {
    reply
        .get("scores")
        .and_then(Value::as_array)
        .ok_or("`scores` must be a list, one per version")?;
    Ok(reply.clone())
}

/// Everything a run keeps between steps.
struct Workshop<'a> {
    ctx: &'a Context,
    common: &'a Common,
    settings: &'a CodeSettings,
    tree: WorkTree,
    versions: Vec<Version>,
    tests: Vec<(u32, HookResult)>,
    notes: Vec<String>,
}

impl Workshop<'_> {
    fn deadline(&self) -> Instant {
        Instant::now() + self.common.round_timeout
    }

    fn task(&self) -> String {
        let mut text = format!("Task: {}\n", self.common.question.trim());
        for (path, content) in &self.settings.files {
            text.push_str(&format!(
                "\nThe project's `{path}`:\n{}\n",
                fenced("project", "file", content)
            ));
        }
        text
    }

    fn latest_code(&self) -> String {
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

    /// The Generator (or blue) writes version `number`; it is written to the tree and
    /// committed. None when the reply could not be used.
    async fn write_version(&mut self, number: u32, ask: &str) -> Result<Option<u32>, EngineError> {
        self.ctx.emit(crate::debate::Event::RoundStarted {
            round: number,
            limit: None,
        });
        let turn = self
            .ctx
            .speak(kit::structured_speech(
                TurnKey::new(number, Phase::Proposal, GENERATOR),
                Some("Generator".into()),
                format!(
                    "You are the Generator in a code debate. {} Write whole files; paths are \
                     relative to the project root. You never run commands: moot runs the tests. {DATA_RULE}",
                    crate::code::roles::find("Generator").map_or("", |r| r.focus)
                ),
                format!("{}{}\n{ask}", self.task(), self.latest_code()),
                "moot_code",
                reply::schema(),
                ReplyKind::validated(validate_code, Some("summary")),
                Some(4000),
                Some(self.deadline()),
            ))
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
        let commit = self
            .tree
            .commit(number, &parsed.summary)
            .map_err(EngineError::Setup)?;
        let language = parsed
            .files
            .first()
            .map_or("text", |(p, _)| detect::language(p))
            .to_string();
        self.versions.push(Version {
            number,
            language,
            files: parsed.files,
            commit,
            quality: None,
            passed: None,
            failed: None,
            hooks_ok: None,
        });
        Ok(Some(number))
    }

    /// Runs the hooks on the tree as version `number` left it.
    async fn run_hooks(&mut self, number: u32) -> Vec<HookResult> {
        let mut results = Vec::new();
        for hook in &self.settings.hooks {
            let result = hooks::run(hook, &self.tree.root).await;
            self.tests.push((number, result.clone()));
            results.push(result);
        }
        if !results.is_empty() {
            self.ctx.emit(crate::debate::Event::Hooks {
                version: number,
                results: results.iter().map(|r| (r.summary(), r.ok())).collect(),
            });
        }
        if let Some(version) = self.versions.iter_mut().find(|v| v.number == number)
            && !results.is_empty()
        {
            version.passed = Some(results.iter().filter_map(|r| r.passed).sum());
            version.failed = Some(results.iter().filter_map(|r| r.failed).sum());
            version.hooks_ok = Some(results.iter().all(HookResult::ok));
        }
        results
    }

    fn next_number(&self) -> u32 {
        self.versions.last().map_or(1, |v| v.number + 1)
    }
}

impl Coder for Workshop<'_> {
    fn generate<'a>(
        &'a mut self,
        attempt: u32,
        reflections: &'a [Reflection],
    ) -> BoxFuture<'a, Result<u32, String>> {
        Box::pin(async move {
            let mut ask = if attempt == 1 {
                "Propose an implementation.".to_string()
            } else {
                "Your earlier attempt failed its tests. Write a new version.".to_string()
            };
            if !reflections.is_empty() {
                ask.push_str("\n\nReflections on earlier attempts:\n");
                for r in reflections {
                    ask.push_str(&format!(
                        "- attempt {}: root cause: {}; what went wrong: {}; change next: {}\n",
                        r.attempt, r.root_cause, r.went_wrong, r.change_next
                    ));
                }
            }
            let number = self.next_number();
            self.write_version(number, &ask)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("the Generator wrote no usable version {number}"))
        })
    }

    fn test(&mut self, version: u32) -> BoxFuture<'_, Vec<HookResult>> {
        Box::pin(self.run_hooks(version))
    }

    fn reflect<'a>(
        &'a mut self,
        attempt: u32,
        results: &'a [HookResult],
    ) -> BoxFuture<'a, Result<Reflection, String>> {
        Box::pin(async move {
            let schema = json!({
                "type": "object",
                "properties": {
                    "root_cause": {"type": "string"},
                    "went_wrong": {"type": "string"},
                    "change_next": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                },
                "required": ["root_cause", "went_wrong", "change_next", "confidence"]
            });
            let outcome: String = results
                .iter()
                .map(|r| format!("{}\n{}\n", r.summary(), fenced("hook", "output", &r.tail)))
                .collect();
            let turn = self
                .ctx
                .speak(kit::structured_speech(
                    TurnKey::new(attempt, Phase::Reflection, GENERATOR),
                    Some("Generator".into()),
                    format!("You are the Generator in a code debate, reflecting on a failed attempt. {DATA_RULE}"),
                    format!(
                        "{}{}\nThe tests on it:\n{outcome}\nWrite a reflection: the root cause, what went wrong, what to change next, and your confidence in that fix (0–1).",
                        self.task(),
                        self.latest_code()
                    ),
                    "moot_code_reflection",
                    schema,
                    ReplyKind::validated(validate_reflection, None),
                    Some(600),
                    Some(self.deadline()),
                ))
                .await
                .map_err(|e| e.to_string())?;
            let data = turn.data.unwrap_or_default();
            let text = |f: &str| {
                data.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            Ok(Reflection {
                attempt,
                root_cause: text("root_cause"),
                went_wrong: text("went_wrong"),
                change_next: text("change_next"),
                confidence: data
                    .get("confidence")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0),
            })
        })
    }
}

impl Teams for Workshop<'_> {
    fn attack(&mut self, round: u32, version: u32) -> BoxFuture<'_, Result<Vec<Attack>, String>> {
        Box::pin(async move {
            let schema = json!({
                "type": "object",
                "properties": {"attacks": {"type": "array", "maxItems": 5, "items": {
                    "type": "object",
                    "properties": {
                        "attack": {"type": "string"},
                        "test_path": {"type": "string"},
                        "test_content": {"type": "string"}
                    },
                    "required": ["attack"]
                }}},
                "required": ["attacks"]
            });
            let turn = self
                .ctx
                .speak(kit::structured_speech(
                    TurnKey::new(round, Phase::Attack, SECURITY),
                    Some("Security".into()),
                    format!("You are the red team of a code debate: break the code with adversarial inputs, edge cases, injection and stress cases, as runnable tests where you can. Report only what you have not reported before; none when you find nothing new. {DATA_RULE}"),
                    format!(
                        "{}{}\nRound {round} of the red team: attack version {version}.",
                        self.task(),
                        self.latest_code()
                    ),
                    "moot_attacks",
                    schema,
                    ReplyKind::validated(validate_attacks, None),
                    Some(2000),
                    Some(self.deadline()),
                ))
                .await
                .map_err(|e| e.to_string())?;
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
                        Ok(()) => Some(path.to_string()),
                        Err(why) => {
                            self.notes.push(format!("red team: refused {why}"));
                            None
                        }
                    },
                    _ => None,
                };
                attacks.push(Attack { attack, test });
            }
            Ok(attacks)
        })
    }

    fn defend<'a>(
        &'a mut self,
        round: u32,
        attacks: &'a [Attack],
    ) -> BoxFuture<'a, Result<u32, String>> {
        Box::pin(async move {
            let listed: String = attacks
                .iter()
                .map(|a| format!("- {}\n", a.attack))
                .collect();
            let number = self.next_number();
            self.write_version(
                number,
                &format!("You are the blue team (round {round}): harden the code against these attacks, keeping it passing its tests:\n{listed}"),
            )
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("blue wrote no usable version {number}"))
        })
    }

    fn test(&mut self, version: u32) -> BoxFuture<'_, Vec<HookResult>> {
        Box::pin(self.run_hooks(version))
    }
}

async fn run(
    ctx: &Context,
    common: &Common,
    settings: &CodeSettings,
) -> Result<Ending, EngineError> {
    let seats = seats(settings);
    // The header counts versions as rounds: at most the attempts, the optimised version and
    // blue's patches.
    let most_versions = settings.max_attempts
        + 1
        + if settings.red_blue {
            loops::RED_BLUE_ROUNDS
        } else {
            0
        };
    kit::seat_and_start(ctx, &Code, common.question.trim(), &seats, most_versions).await?;
    let tree = WorkTree::reopen(&settings.origin, &settings.worktrees, &ctx.debate_id)
        .map_err(EngineError::Setup)?;
    let mut notes = Vec::new();
    if tree.kind == crate::code::worktree::Kind::Copy {
        notes.push(format!(
            "{} is not a git work tree: the debate worked in a temporary copy.",
            settings.origin.display()
        ));
    }
    let mut shop = Workshop {
        ctx,
        common,
        settings,
        tree,
        versions: Vec::new(),
        tests: Vec::new(),
        notes,
    };
    // Proposal, with Reflexion on failing hooks.
    let attempts = loops::reflexion(&mut shop, settings.max_attempts)
        .await
        .map_err(EngineError::Provider)?;
    let reflections: Vec<Reflection> = attempts
        .iter()
        .filter_map(|a| a.reflection.clone())
        .collect();
    // Critique: the critics (`--seat`) on the latest version, side by side.
    let speeches = settings
        .critics
        .iter()
        .map(|name| {
            kit::prose_speech(
                TurnKey::new(shop.next_number() - 1, Phase::Critique, seat_id(name)),
                format!(
                    "You are the {name} in a code debate. {} Criticise specifically; quote the code you mean. {DATA_RULE}",
                    crate::code::roles::find(name).map_or("", |r| r.focus)
                ),
                format!("{}{}\nCriticise the latest version.", shop.task(), shop.latest_code()),
                Some(800),
                shop.deadline(),
            )
        })
        .collect();
    let critiques = ctx.speak_all(speeches).await?;
    let critique: String = critiques
        .iter()
        .filter(|t| t.status == TurnStatus::Ok)
        .map(|t| format!("{}\n", fenced(&t.seat, "critique", &t.content)))
        .collect();
    // Optimisation: a version answering the critics, tested.
    if !critique.is_empty() {
        let number = shop.next_number();
        let ask = format!(
            "The critics said:\n{critique}\nWrite an improved version that answers them and still passes the tests."
        );
        if shop.write_version(number, &ask).await?.is_some() {
            shop.run_hooks(number).await;
        }
    }
    // Red against blue.
    let mut findings = Vec::new();
    if settings.red_blue
        && let Some(latest) = shop.versions.last().map(|v| v.number)
    {
        let (found, _) = loops::red_blue(&mut shop, latest)
            .await
            .map_err(EngineError::Provider)?;
        findings = found;
    }
    // The Judge scores every version.
    score(&mut shop).await?;
    if let Some(ending) = kit::gate(
        ctx,
        common,
        "before_synthesis",
        1,
        format!("{} versions written; the Judge has scored them", shop.versions.len()),
        json!({"versions": shop.versions.iter().map(|v| json!({"number": v.number, "passes": v.passes(), "quality": v.quality.map(|q| q.score())})).collect::<Vec<_>>()}),
    )
    .await?
    {
        return Ok(ending);
    }
    let chosen = winner(&shop.versions);
    let recommendation = match &chosen {
        Some(w) => format!(
            "Apply version {} with `moot code apply {} --version {}` (the versions are on branch moot/{}).",
            w.number, ctx.debate_id, w.number, ctx.debate_id
        ),
        None => "No version was written; nothing to apply.".into(),
    };
    let result = CodeResult {
        task: common.question.clone(),
        clarifications: Vec::new(),
        versions: shop.versions.clone(),
        winner: None,
        winner_reason: String::new(),
        tests: shop.tests.clone(),
        findings,
        reflections,
        recommendation,
        hooks_note: settings.hooks_note.clone(),
        notes: shop.notes.clone(),
    }
    .with_winner(chosen);
    if !settings.keep {
        let root = shop.tree.root.clone();
        if let Err(why) = shop.tree.remove() {
            ctx.emit(crate::debate::Event::Notice {
                message: format!("the work tree {} was not removed: {why}", root.display()),
            });
        }
    }
    let confidence = if result.versions.iter().any(Version::passes) {
        Confidence::High
    } else {
        Confidence::Low
    };
    Ok(Ending::Concluded(Box::new(Outcome {
        markdown: result.to_markdown(),
        confidence,
        data: serde_json::to_value(&result).unwrap_or_default(),
        section: Some("code_result".into()),
        date: crate::debate::today(),
    })))
}

/// The Judge's rubric for every version (0–1 per criterion), one call.
async fn score(shop: &mut Workshop<'_>) -> Result<(), EngineError> {
    if shop.versions.is_empty() {
        return Ok(());
    }
    let numbers: Vec<u32> = shop.versions.iter().map(|v| v.number).collect();
    let criterion = json!({"type": "number", "minimum": 0, "maximum": 1});
    let schema = json!({
        "type": "object",
        "properties": {"scores": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "version": {"type": "integer", "enum": numbers},
                "correctness": criterion, "maintainability": criterion, "performance": criterion,
                "security": criterion, "tests": criterion
            },
            "required": ["version", "correctness", "maintainability", "performance", "security", "tests"]
        }}},
        "required": ["scores"]
    });
    let listing: String = shop
        .versions
        .iter()
        .map(|v| {
            let code: String = v
                .files
                .iter()
                .map(|(p, c)| format!("`{p}`:\n{}\n", fenced(GENERATOR, "code", c)))
                .collect();
            let tests = shop
                .tests
                .iter()
                .filter(|(n, _)| *n == v.number)
                .map(|(_, r)| r.summary())
                .collect::<Vec<_>>()
                .join("; ");
            format!(
                "\nVersion {}:\n{code}Tests: {}\n",
                v.number,
                if tests.is_empty() {
                    "none ran".into()
                } else {
                    tests
                }
            )
        })
        .collect();
    let turn = shop
        .ctx
        .speak(kit::structured_speech(
            TurnKey::new(0, Phase::Verdict, JUDGE),
            Some("Judge".into()),
            format!("You are the Judge of a code debate. Score every version objectively against the rubric, 0–1 per criterion. {DATA_RULE}"),
            format!("{}{listing}", shop.task()),
            "moot_code_scores",
            schema,
            ReplyKind::validated(validate_scores, None),
            Some(1200),
            Some(shop.deadline()),
        ))
        .await?;
    for item in turn
        .data
        .as_ref()
        .and_then(|d| d.get("scores"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(number) = item["version"].as_u64() else {
            continue;
        };
        let get = |f: &str| item[f].as_f64().unwrap_or(0.0).clamp(0.0, 1.0);
        if let Some(version) = shop
            .versions
            .iter_mut()
            .find(|v| u64::from(v.number) == number)
        {
            version.quality = Some(Quality {
                correctness: get("correctness"),
                maintainability: get("maintainability"),
                performance: get("performance"),
                security: get("security"),
                tests: get("tests"),
            });
        }
    }
    Ok(())
}
