//! The arena (design note 003): seats with personas give opening statements, rebuttals that
//! name the turns they answer, and closing statements, in round-robin or moderator order; the
//! moderator may score every argument on a rubric and summarises; the arena directory can be
//! kept written while it runs.
//!
//! The rooms: `settings` (flags and `[arena]` → `ArenaSettings`), `run` (the steps), `personas`,
//! `replies` (each reply's schema and parser), `prompts`, `seats` (the person's and outside
//! agents' turns), `live` (the arena directory as it runs) and `result`.

mod live;
mod personas;
mod prompts;
mod replies;
mod result;
mod run;
mod seats;
mod settings;

pub use super::kit::Topology;
pub use live::protocol_md;
pub use result::{ArenaResult, ArenaTurn, Pick, RubricScore};
pub use settings::{ArenaSettings, Moderator, Order, PersonaSpec, Player};

use super::kit;
use super::{Flag, SettingsError, SettingsInput};
use crate::debate::{Presentation, SidePanel};

/// The arena, as registered.
pub struct Arena;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const PERSONAS_SCHEMA: &str = "moot_arena_personas";
pub const ARGUMENT_SCHEMA: &str = "moot_arena_argument";
pub const ORDER_SCHEMA: &str = "moot_arena_order";
pub const SCORES_SCHEMA: &str = "moot_arena_scores";

/// The rubric every argument is scored on, 0–1 each.
pub const RUBRIC: [&str; 4] = [
    "evidence",
    "relevance",
    "responsiveness",
    "stance_adherence",
];

const FLAGS: &[Flag] = &[
    Flag::valued("seat", "ROLE", "A seat of the arena by its role (repeat for each; a catalog perspective brings its persona)").repeatable(),
    Flag::valued("rounds", "N", "Rounds of the arena: opening, rebuttals, closing (default 4)"),
    Flag::valued("persona", "FILE", "A persona file (.json or .toml, the arena's persona schema) for the seat it names").repeatable(),
    Flag::valued("order", "round-robin|moderator", "Who speaks next: every seat in turn, or the moderator's pick with a reason"),
    Flag::valued("moderator", "model|seat:ROLE|system", "Who orders, scores and summarises: moot's model, a participant by its role, or moot itself with no model call"),
    Flag::switch("score", "The moderator scores every argument 0–1 on evidence, relevance, responsiveness and stance adherence"),
    kit::TOPOLOGY_FLAG,
    super::tree::PLANNING_FLAG,
    kit::BLIND_FIRST_FLAG,
    Flag::valued("arena-dir", "DIR", "Keep the arena directory (manifest, personas, transcript, scores, summary) written under DIR while it runs"),
];

impl super::TypedProtocol for Arena {
    type Settings = ArenaSettings;
    type Result = ArenaResult;

    /// 2: scores or an order the moderator's reply could not give are noted (issue 24).
    /// 3: a moderating seat is said to have done only what it did (issue 68, B7); with
    /// `--moderator system` the notes say moot wrote plain personas (B3); the confidence is
    /// computed from the vote or the scores, not fixed at Medium (issue 68). A version-2
    /// result reads as written.
    const RESULT_VERSION: u32 = 3;

    fn name(&self) -> &'static str {
        "arena"
    }

    fn description(&self) -> &'static str {
        "an arena of personas: opening statements, rebuttals that name what they answer, closing \
         statements, optional rubric scores and a moderator's summary; its arena directory \
         (docs/arena-directory.md) can be kept written while it runs"
    }

    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution {
        result.resolution()
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<ArenaSettings, SettingsError> {
        settings::build(input)
    }

    /// Built as for a run, with the same checks: building has no effects.
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        settings::build(input).map(|_| ())
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            panels: SidePanel::above_and(&[SidePanel::Commitments, SidePanel::Map]),
            numbered_turns: true,
            ..Presentation::own_seats("role", "Summary", "The moderator is setting up the arena…")
        }
    }

    fn without_side_effects(&self, settings: ArenaSettings) -> ArenaSettings {
        // The directory keeps its name, so the re-run's record says what the run's said, but
        // nothing is written there.
        ArenaSettings {
            dry_run: true,
            ..settings
        }
    }

    super::runs!(run::run);
}
