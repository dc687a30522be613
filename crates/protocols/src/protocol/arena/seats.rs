//! Seats moot's model does not play: the person's (the workbench's editor, or `g TEXT` on
//! stdin) and an outside agent's (through the arena directory or `moot arena submit`).

use super::ArenaSettings;
use super::live::Live;
use super::prompts::task_of;
use super::replies::named_turns;
use super::result::{ArenaTurn, phase_name};
use crate::arena::{self, ArenaDir};
use crate::debate::{Event, Phase, Turn, TurnKey, TurnStatus};
use crate::engine::{Context, EngineError};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A seat at the arena.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub(super) seat: crate::debate::Seat,
    pub(super) persona: crate::arena::Persona,
    pub(super) player: super::Player,
}

/// A turn with no model behind it, for `seat` in `round`.
fn outside_words(round: u32, phase: Phase, seat: &str, provider: &str, model: &str) -> Turn {
    Turn::pending(TurnKey::new(round, phase, seat), provider, model)
}

/// A turn to be played: whose seat, where in the debate, and its number in the arena.
#[derive(Clone, Copy)]
pub(super) struct Slot<'m> {
    pub member: &'m Member,
    pub round: u32,
    pub phase: Phase,
    pub number: u32,
}

impl Slot<'_> {
    /// The turn as the journal keys it, to find it when a resume replays it.
    pub fn key(&self) -> TurnKey {
        TurnKey::new(self.round, self.phase, self.member.seat.id.clone())
    }

    /// That the turn is asked of `by` (the person, or an outside agent), and for how long.
    fn requested(&self, by: &str, settings: &ArenaSettings) -> Event {
        Event::TurnRequested {
            round: self.round,
            phase: self.phase,
            seat: self.member.seat.id.clone(),
            turn_number: self.number,
            by: by.into(),
            timeout_seconds: settings.turn_timeout_seconds,
        }
    }
}

/// A seat the person plays (a turn not given before a resume): the workbench opens its
/// editor (headless: `g TEXT` on stdin); what they write is the turn. `e` passes; silence past
/// the time limit is a missed turn.
pub(super) async fn human_turn(
    ctx: &Context,
    settings: &ArenaSettings,
    slot: Slot<'_>,
    turns: &[ArenaTurn],
) -> Result<Turn, EngineError> {
    let (member, round, phase, number) = (slot.member, slot.round, slot.phase, slot.number);
    ctx.emit(slot.requested(crate::debate::PERSON, settings));
    let persona = &member.persona;
    let detail = format!(
        "You play {} (turn {number}, round {round}, {}). Your stance: {}\n{}",
        persona.role_name,
        phase_name(phase),
        persona.stance_summary,
        task_of(phase)
    );
    let earlier: Vec<u32> = turns.iter().map(|t| t.turn_number).collect();
    let mut turn = outside_words(round, phase, &member.seat.id, crate::debate::PERSON, "");
    let timeout = std::time::Duration::from_secs(settings.turn_timeout_seconds);
    match ctx.ask_turn(round, number, detail, timeout).await? {
        crate::engine::CheckpointOutcome::Answered {
            control: crate::debate::Control::Guide(text),
            by,
        } => {
            turn.model = by;
            turn.data = Some(json!({
                "responds_to": named_turns(&text, &earlier),
                "references": [],
                "tone": "",
            }));
            turn.content = text;
        }
        crate::engine::CheckpointOutcome::Answered { by, .. } => {
            turn.model = by;
            turn.note = Some("the person passed this turn".into());
        }
        crate::engine::CheckpointOutcome::TimedOut | crate::engine::CheckpointOutcome::Unasked => {
            turn.status = TurnStatus::TimedOut;
            turn.note = Some(format!(
                "nobody wrote this turn within {} s",
                settings.turn_timeout_seconds
            ));
        }
    }
    ctx.record(turn).await
}

/// How often an outside seat's transcript folder is looked at while its turn is awaited.
const OUTSIDE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// A seat an outside agent plays (a turn not given before a resume): the request goes into
/// the manifest (`turn_requested`) and an event; the agent answers with `moot arena submit` or by dropping a conforming
/// `turn_<n>_<agent_id>_<timestamp>.json` into `transcript/`, which is checked (its seat, its
/// number, its text), journaled and acknowledged (moot rewrites it with its own metadata and
/// clears the request). A file that does not conform is set aside as `….rejected` with a
/// notice, and the wait goes on until the turn's time limit.
pub(super) async fn outside_turn(
    ctx: &Context,
    settings: &ArenaSettings,
    live: &mut Live<'_>,
    slot: Slot<'_>,
) -> Result<Turn, EngineError> {
    let (member, round, phase, number) = (slot.member, slot.round, slot.phase, slot.number);
    let agent = member.persona.agent_id.clone();
    let timeout = std::time::Duration::from_secs(settings.turn_timeout_seconds);
    let deadline = Instant::now() + timeout;
    let deadline_utc = {
        let at = time::OffsetDateTime::now_utc() + timeout;
        at.replace_nanosecond(0)
            .unwrap_or(at)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    live.manifest(|m| {
        m.turn_requested = Some(arena::TurnRequest {
            turn_number: number,
            agent_id: agent.clone(),
            round,
            deadline_utc: deadline_utc.clone(),
        })
    });
    ctx.emit(slot.requested(crate::debate::OUTSIDE, settings));
    let mut turn = outside_words(
        round,
        phase,
        &member.seat.id,
        crate::debate::OUTSIDE,
        &agent,
    );
    let Some(dir) = live.dir() else {
        turn.status = TurnStatus::Failed;
        turn.note = Some(
            "the arena directory could not be written, so no outside agent could answer".into(),
        );
        return ctx.record(turn).await;
    };
    let submitted = submission(ctx, dir, &agent, number, deadline).await;
    match submitted {
        Some(argument) => take_submission(&mut turn, &argument, number),
        None => {
            turn.status = TurnStatus::TimedOut;
            turn.note = Some(format!(
                "the outside agent {agent} sent nothing within {} s",
                settings.turn_timeout_seconds
            ));
        }
    }
    ctx.record(turn).await
}

/// Waits for the outside agent's turn file in `transcript/` until `deadline`, setting aside
/// any that does not conform.
async fn submission(
    ctx: &Context,
    dir: &ArenaDir,
    agent: &str,
    number: u32,
    deadline: Instant,
) -> Option<arena::Argument> {
    let prefix = format!("turn_{number}_{agent}_");
    let mut ticks = tokio::time::interval(OUTSIDE_POLL);
    loop {
        if Instant::now() >= deadline {
            break None;
        }
        ticks.tick().await;
        let mut found = None;
        // Read beneath the arena root with no link followed: a `transcript/` replaced by a
        // link lists nothing.
        if let Ok(names) = dir.transcript_files() {
            let names = names
                .into_iter()
                .filter(|n| n.starts_with(&prefix) && n.ends_with(".json"));
            for name in names {
                let path = &name;
                match dir.read_turn_file(&name) {
                    Ok(argument)
                        if argument.agent_id == agent
                            && argument.turn_number == number
                            && !argument.argument_text.trim().is_empty() =>
                    {
                        found = Some(argument);
                        break;
                    }
                    Ok(argument) => set_aside(
                        ctx,
                        dir,
                        path,
                        &format!(
                            "it names turn {} of {:?}, or has no argument_text; turn {number} of {agent} is awaited",
                            argument.turn_number, argument.agent_id
                        ),
                    ),
                    Err(e) => set_aside(ctx, dir, path, &e.to_string()),
                }
            }
        }
        if found.is_some() {
            break found;
        }
    }
}

/// Makes an outside agent's argument the turn: the earlier turns it names in its references
/// become what it answers.
fn take_submission(turn: &mut Turn, argument: &arena::Argument, number: u32) {
    let earlier: Vec<u32> = (1..number).collect();
    let responds: Vec<u32> = argument
        .references
        .iter()
        .filter_map(|r| r.strip_prefix("turn:")?.trim().parse::<u32>().ok())
        .filter(|n| earlier.contains(n))
        .collect();
    let references: Vec<String> = argument
        .references
        .iter()
        .filter(|r| !r.starts_with("turn:"))
        .cloned()
        .collect();
    turn.content = argument.argument_text.clone();
    turn.confidence = argument.metadata.get("confidence").and_then(Value::as_f64);
    turn.data = Some(json!({
        "responds_to": responds,
        "references": references,
        "tone": argument.metadata.get("tone").and_then(Value::as_str).unwrap_or(""),
    }));
}

/// Moves a turn file that cannot be accepted out of the way (the turn can be submitted
/// again), saying why.
fn set_aside(ctx: &Context, dir: &ArenaDir, name: &str, why: &str) {
    let _ = dir.set_aside(name);
    ctx.emit(Event::Notice {
        message: format!(
            "{name} was set aside as {name}.rejected: {why}; turn files can be submitted again"
        ),
    });
}
