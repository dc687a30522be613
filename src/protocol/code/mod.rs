//! The code debate (design note 004, issue 13), phase by phase in the note's order:
//! clarification, the Generator's self-check, the proposal with Reflexion on failing hooks,
//! the critics' critique, the Judge's review, an optimised version, red against blue, and
//! convergence (the Judge's scores, the winner by tests first, then quality). Every version is
//! written and committed in the debate's own work tree; the person's files are touched only
//! when they approve the `before_apply` gate (or run `moot code apply`).

mod phases;
mod replies;
mod settings;
mod workshop;

use super::kit;
use super::{Common, Ending, Flag, Outcome, SettingsError, SettingsInput};
use crate::code::loops;
use crate::code::record::{CodeResult, Reflection};
use crate::code::roles::CodePhase;
use crate::code::versions::{Version, Winner, winner};
use crate::code::worktree::WorkTree;
use crate::debate::{Confidence, Phase, Presentation, Seat, SidePanel};
use crate::engine::{Context, EngineError};
use serde_json::json;
use settings::CodeSettings;
use workshop::Workshop;

pub struct Code;

const GENERATOR: &str = "G";
const SECURITY: &str = "S";
const DESIGNER: &str = "D";
const JUDGE: &str = "J";

/// A role's seat id: its initial (the ten templates' initials all differ).
fn seat_id(role: &str) -> String {
    role.chars().next().unwrap_or('?').to_string()
}

/// The Generator, the critics, the Designer when clarification runs, Security for red when it
/// is not a critic, and the Judge.
fn seats(settings: &CodeSettings) -> Vec<Seat> {
    let mut names: Vec<String> = vec!["Generator".into()];
    if settings.runs(CodePhase::Critique) {
        for critic in &settings.critics {
            if !names.contains(critic) {
                names.push(critic.clone());
            }
        }
    }
    if settings.runs(CodePhase::Clarification) {
        names.push("Designer".into());
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

impl super::TypedProtocol for Code {
    type Settings = CodeSettings;
    type Result = CodeResult;

    fn name(&self) -> &'static str {
        "code"
    }

    fn called(&self) -> &'static str {
        "code debate"
    }

    fn description(&self) -> &'static str {
        "a code debate: a Generator writes versions in the debate's own work tree, tests run \
         after each, failures are reflected on and retried, critics and an optional red team \
         attack it, a Judge scores every version; nothing touches your files"
    }

    fn gate_points(&self) -> &'static [&'static str] {
        &["before_synthesis", "before_apply"]
    }

    fn flags(&self) -> &'static [Flag] {
        settings::FLAGS
    }

    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        input.table::<settings::CodeConfig>("code").map(|_| ())
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<CodeSettings, SettingsError> {
        settings::settings(input)
    }

    fn without_side_effects(&self, settings: CodeSettings) -> CodeSettings {
        CodeSettings {
            rehearsal: true,
            ..settings
        }
    }

    fn unsettled(&self, result: &CodeResult) -> Option<String> {
        let winner = result
            .winner
            .and_then(|n| result.versions.iter().find(|v| v.number == n));
        match winner {
            Some(version) if version.hooks_ok != Some(false) => None,
            Some(_) => Some("the winning version fails its tests".into()),
            None => Some("no version was chosen".into()),
        }
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "role".into(),
            seats_from_catalog: false,
            panels: vec![SidePanel::Tests, SidePanel::Versions],
            outcome_title: "Result".into(),
            follow_up: false,
            opening: "Setting up the work tree…".into(),
            round_name: "version".into(),
            rounds_of_their_own: vec![Phase::Clarification, Phase::Attack],
        }
    }

    fn lesson_focus(&self) -> Option<&'static str> {
        Some(
            "This was a code debate: its record's Reflections are the failed attempts' own \
             analyses (root cause, what went wrong, what to change next). Generalise them into \
             lessons about the kind of mistake and how to catch it sooner (a test to write \
             first, an edge case to ask about), never about this code.",
        )
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: CodeSettings,
    ) -> super::Run<'a> {
        Box::pin(async move { run(ctx, common, &settings).await })
    }
}

async fn run(
    ctx: &Context,
    common: &Common,
    settings: &CodeSettings,
) -> Result<Ending, EngineError> {
    let mut seats = seats(settings);
    for seat in &mut seats {
        if let Some(spec) = settings.seat_providers.get(&seat.perspective) {
            kit::seat_on_own_provider(ctx, common, seat, spec)?;
        }
    }
    // The header counts versions as rounds: at most the self-check's drafts, the attempts,
    // the optimised version and blue's patches.
    let most_versions = settings.max_attempts
        + if settings.runs(CodePhase::SelfCheck) && !settings.hooks.is_empty() {
            settings.self_check
        } else {
            0
        }
        + u32::from(settings.runs(CodePhase::Critique) && settings.runs(CodePhase::Optimization))
        + if settings.red_blue {
            loops::RED_BLUE_ROUNDS
        } else {
            0
        };
    kit::seat_and_start(ctx, &Code, common.question.trim(), &seats, most_versions).await?;
    let tree = if settings.rehearsal {
        WorkTree::scratch(&settings.worktrees, &ctx.debate_id)
    } else {
        WorkTree::reopen(
            &settings.origin,
            &settings.worktrees,
            &ctx.store().versions_git_dir(&ctx.debate_id),
            &ctx.debate_id,
        )
    }
    .map_err(|e| EngineError::Setup(e.to_string()))?;
    let mut shop = Workshop::new(ctx, common, settings, tree);
    if !settings.in_git {
        let note = format!(
            "{} is not a git work tree: the debate worked in a temporary copy.",
            settings.origin.display()
        );
        ctx.emit(crate::debate::Event::Notice {
            message: note.clone(),
        });
        shop.notes.push(note);
    }
    let ending = debate(&mut shop).await;
    if !settings.keep || settings.rehearsal {
        let root = shop.tree.root.clone();
        if let Err(why) = shop.tree.remove() {
            ctx.emit(crate::debate::Event::Notice {
                message: format!("the work tree {} was not removed: {why}", root.display()),
            });
        }
    }
    ending
}

/// The phases, in the note's order, on a tree already made.
async fn debate(shop: &mut Workshop<'_>) -> Result<Ending, EngineError> {
    let (ctx, common, settings) = (shop.ctx, shop.common, shop.settings);
    if settings.runs(CodePhase::Clarification)
        && let Some(ending) = phases::clarify(shop).await?
    {
        return Ok(ending);
    }
    if settings.hooks.is_empty() {
        ctx.emit(crate::debate::Event::Notice {
            message: settings.hooks_note.clone().unwrap_or_default(),
        });
    }
    // Self-check and proposal, with Reflexion on failing hooks.
    // Whatever stopped the loop fails the debate as the provider's failure, as it always has.
    let run = loops::reflexion(shop, settings.max_attempts, settings.min_fix_confidence)
        .await
        .map_err(|e| EngineError::Provider(e.to_string()))?;
    if let Some(note) = run.note() {
        ctx.emit(crate::debate::Event::Notice {
            message: note.clone(),
        });
        shop.notes.push(note);
    }
    let reflections: Vec<Reflection> = run
        .attempts
        .iter()
        .filter_map(|a| a.reflection.clone())
        .collect();
    if settings.runs(CodePhase::Critique) && !shop.versions.is_empty() {
        let critique = phases::critique(shop).await?;
        let review = if settings.runs(CodePhase::Review) && !critique.is_empty() {
            phases::review(shop, &critique).await?
        } else {
            String::new()
        };
        if settings.runs(CodePhase::Optimization) && !critique.is_empty() {
            phases::optimize(shop, &critique, &review).await?;
        }
    }
    let mut findings = Vec::new();
    if settings.red_blue
        && let Some(latest) = shop.versions.last().map(|v| v.number)
    {
        shop.stage(CodePhase::Adversarial);
        let (found, _) = loops::red_blue(shop, latest)
            .await
            .map_err(|e| EngineError::Provider(e.to_string()))?;
        findings = found;
    }
    phases::score(shop).await?;
    phases::converge(shop, &findings).await?;
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
    if let Some(ending) = phases::apply_winner(shop, chosen.as_ref().map(|w| w.number)).await? {
        return Ok(ending);
    }
    let recommendation = recommendation(shop, chosen.as_ref());
    let result = CodeResult {
        task: common.question.clone(),
        clarifications: shop.clarifications.clone(),
        versions: shop.versions.clone(),
        winner: None,
        winner_reason: String::new(),
        tests: shop.tests.clone(),
        findings,
        reflections,
        recommendation,
        hooks_note: settings.hooks_note.clone(),
        notes: shop
            .notes
            .iter()
            .cloned()
            .chain(unsandboxed_note(settings, &shop.tests))
            .collect(),
    }
    .with_winner(chosen);
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

/// What the record recommends doing with the chosen version: apply it (and how), or why not.
fn recommendation(shop: &Workshop<'_>, chosen: Option<&Winner>) -> String {
    let (ctx, settings) = (shop.ctx, shop.settings);
    let failing = chosen.is_some_and(|w| {
        shop.versions
            .iter()
            .any(|v| v.number == w.number && v.hooks_ok == Some(false))
    });
    match chosen {
        // A version that fails its tests is never recommended for applying.
        Some(w) if failing => format!(
            "No version passes its tests, so none is recommended for applying. Version {} passes the most; `moot code apply {} --version {} --failing` applies it anyway.",
            w.number, ctx.debate_id, w.number
        ),
        Some(w) if settings.in_git => format!(
            "Apply version {} with `moot code apply {} --version {}` (each version is a commit in moot's own git dir for the debate, not in your repository; `moot code diff {} 1 {}` compares them).",
            w.number, ctx.debate_id, w.number, ctx.debate_id, w.number
        ),
        Some(w) => format!(
            "Apply version {} with `moot code apply {} --version {}` (outside git it writes the version's files, refusing any you changed since the debate started).",
            w.number, ctx.debate_id, w.number
        ),
        None => "No version was written; nothing to apply.".into(),
    }
}

/// What the record says when hooks ran model-written code with no filesystem sandbox (the
/// person passed `--unsandboxed-hooks` on a kernel without Landlock).
fn unsandboxed_note(
    settings: &CodeSettings,
    tests: &[(u32, crate::code::hooks::HookResult)],
) -> Option<String> {
    let unboxed = tests
        .iter()
        .filter(|(_, result)| result.sandbox.is_none() && result.error.is_none())
        .count();
    (settings.hooks.iter().any(|h| h.unsandboxed) && unboxed > 0).then(|| {
        format!(
            "{unboxed} hook runs ran model-written code without a filesystem sandbox (--unsandboxed-hooks): they could write anywhere you can"
        )
    })
}
