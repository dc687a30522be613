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
use super::{Common, Flag, SettingsError, SettingsInput};
use crate::debate::{Presentation, SidePanel};
use crate::engine::Context;

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
    Flag {
        name: "seat",
        value: Some("ROLE"),
        help: "A seat of the arena by its role (repeat for each; a catalog perspective brings its persona)",
        repeatable: true,
    },
    Flag {
        name: "rounds",
        value: Some("N"),
        help: "Rounds of the arena: opening, rebuttals, closing (default 4)",
        repeatable: false,
    },
    Flag {
        name: "persona",
        value: Some("FILE"),
        help: "A persona file (.json or .toml, the arena's persona schema) for the seat it names",
        repeatable: true,
    },
    Flag {
        name: "order",
        value: Some("round-robin|moderator"),
        help: "Who speaks next: every seat in turn, or the moderator's pick with a reason",
        repeatable: false,
    },
    Flag {
        name: "moderator",
        value: Some("model|seat:ROLE|system"),
        help: "Who orders, scores and summarises: moot's model, a participant by its role, or moot itself with no model call",
        repeatable: false,
    },
    Flag {
        name: "score",
        value: None,
        help: "The moderator scores every argument 0–1 on evidence, relevance, responsiveness and stance adherence",
        repeatable: false,
    },
    kit::TOPOLOGY_FLAG,
    super::tree::PLANNING_FLAG,
    Flag {
        name: "arena-dir",
        value: Some("DIR"),
        help: "Keep the arena directory (manifest, personas, transcript, scores, summary) written under DIR while it runs",
        repeatable: false,
    },
];

impl super::TypedProtocol for Arena {
    type Settings = ArenaSettings;
    type Result = ArenaResult;

    /// 2: scores or an order the moderator's reply could not give are noted (issue 24).
    const RESULT_VERSION: u32 = 2;

    fn name(&self) -> &'static str {
        "arena"
    }

    fn description(&self) -> &'static str {
        "an arena of personas: opening statements, rebuttals that name what they answer, closing \
         statements, optional rubric scores and a moderator's summary; the arena directory of \
         design note 003 can be kept written while it runs"
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

    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        input.table::<settings::ArenaConfig>("arena").map(|_| ())
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "role".into(),
            seats_from_catalog: false,
            panels: [
                &SidePanel::ABOVE[..],
                &[SidePanel::Commitments, SidePanel::Map],
            ]
            .concat(),
            outcome_title: "Summary".into(),
            follow_up: false,
            record_is_report: false,
            opening: "The moderator is setting up the arena…".into(),
            round_name: "round".into(),
            rounds_of_their_own: Vec::new(),
            numbered_turns: true,
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

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: ArenaSettings,
    ) -> super::Run<'a> {
        Box::pin(async move { run::run(ctx, common, &settings).await })
    }
}
