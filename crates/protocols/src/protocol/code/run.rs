//! The code debate's run: its seats, the work tree, and the phases in the note's order.

use super::kit;
use super::settings::CodeSettings;
use super::workshop::Workshop;
use super::{Code, Common, phases, result, seat_id};
use crate::code::loops;
use crate::code::record::Reflection;
use crate::code::roles::CodePhase;
use crate::code::versions::winner;
use crate::code::worktree::{Place, WorkTree};
use crate::debate::Seat;
use crate::engine::{Context, EngineError};
use serde_json::{Value, json};

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<super::CodeResult>;

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

pub(super) async fn run(
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
        let git_dir = ctx.store().versions_git_dir(&ctx.debate_id);
        WorkTree::reopen(Place {
            origin: &settings.origin,
            parent: &settings.worktrees,
            git_dir: &git_dir,
            debate_id: &ctx.debate_id,
        })
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
    if settings.blind_first {
        shop.notes.push(
            "The critique was blind (--blind-first), as a code debate's always is: each critic \
             criticised the version before reading any other critic's critique."
                .into(),
        );
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
    // R22: a gate may stand after each of the debate's phases, each showing the versions.
    if let Some(ending) = phase_gate(
        shop,
        "after_proposal",
        "Every proposal is written and tested",
        Value::Null,
    )
    .await?
    {
        return Ok(ending);
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
        if let Some(ending) = phase_gate(
            shop,
            "after_critique",
            "The critics have spoken",
            json!({"critique": critique, "review": review}),
        )
        .await?
        {
            return Ok(ending);
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
        let attack = json!({"findings": findings.iter().map(|f| json!({"round": f.round, "attack": f.attack, "closed_by": f.closed_by})).collect::<Vec<_>>()});
        if let Some(ending) = phase_gate(
            shop,
            "after_adversarial",
            "The red team has attacked",
            attack,
        )
        .await?
        {
            return Ok(ending);
        }
    }
    phases::score(shop).await?;
    phases::converge(shop, &findings).await?;
    let summary = format!(
        "{} versions written; the Judge has scored them",
        shop.versions.len()
    );
    let stop = kit::Stop::before_synthesis(1, summary, json!({"versions": versions_shown(shop)}));
    if let Some(ending) = kit::gate(ctx, common, stop).await? {
        return Ok(ending);
    }
    let chosen = winner(&shop.versions);
    if let Some(ending) = phases::apply_winner(shop, chosen.as_ref().map(|w| w.number)).await? {
        return Ok(ending);
    }
    Ok(Ending::Concluded(Box::new(result::outcome(
        shop,
        chosen,
        findings,
        reflections,
    ))))
}

/// Each version as a gate shows it: its number, whether its tests pass, and its quality once
/// the Judge has scored it.
fn versions_shown(shop: &Workshop<'_>) -> Vec<Value> {
    shop.versions
        .iter()
        .map(|v| json!({"number": v.number, "passes": v.passes(), "quality": v.quality.map(|q| q.score())}))
        .collect()
}

/// The approval gate after a phase (`point`), when `[gates]` names it: what the phase made
/// (`extra`, beside every version) is what the reviewer weighs. `Some` ends the debate.
async fn phase_gate(
    shop: &Workshop<'_>,
    point: &'static str,
    said: &str,
    extra: Value,
) -> Result<Option<Ending>, EngineError> {
    if !kit::gate_active(shop.common, point) {
        return Ok(None);
    }
    let mut artifacts = json!({"versions": versions_shown(shop)});
    if let (Some(fields), Some(more)) = (artifacts.as_object_mut(), extra.as_object()) {
        fields.extend(more.clone());
    }
    let summary = format!("{said}: {} version(s) so far", shop.versions.len());
    let stop = kit::Stop {
        point,
        round: 1,
        summary,
        artifacts,
    };
    kit::gate(shop.ctx, shop.common, stop).await
}
