//! The formal dialogue (design note 002): PRO and OPP argue a thesis in speech acts that must
//! answer each other by the rules, over shared facts gathered from the codebase; the verdict
//! is computed from the journal first and read by a neutral moderator second.
//!
//! The rooms: `settings` (flags and `[dialogue]` → `DialogueSettings`), `run` (the steps),
//! `context` (the shared facts K and their reply), `rules` (the validity table and a side's
//! reply), `prompts`, and `verdict` (the computed verdict, the moderator's reply, the result).

mod context;
pub mod discipline;
mod prompts;
pub mod replies;
pub mod result;
pub mod rules;
mod run;
mod seats;
mod settings;
pub mod verdict;

pub use context::context_schema;
pub use replies::MOVE_SCHEMA;
pub use settings::{DialogueSettings, Persona};

use super::{Flag, SettingsError, SettingsInput};
use crate::debate::{Presentation, SidePanel};

/// The formal dialogue, as registered.
pub struct Dialogue;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const CONTEXT_SCHEMA: &str = "moot_dialogue_context";

const FLAGS: &[Flag] = &[
    Flag::CONTEXT,
    Flag::switch(
        "no-context",
        "Do not gather shared context from the current directory",
    ),
];

impl super::TypedProtocol for Dialogue {
    type Settings = DialogueSettings;
    type Result = result::DialogueResult;

    /// 2: the record's winner heading names the computed winner, with its rule (issue 24).
    /// 3: a turn that failed or fell back is no move (no lapse counts it), and the notes say
    /// which side could not answer when (issue 68, B11); a version-2 result reads as written.
    const RESULT_VERSION: u32 = 3;

    fn name(&self) -> &'static str {
        "dialogue"
    }

    fn description(&self) -> &'static str {
        "a formal persuasion dialogue: PRO and OPP argue a thesis in speech acts checked by the \
         rules, over facts gathered from the codebase; the verdict is computed from the \
         argument scores, then read by a neutral moderator"
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution {
        result.resolution()
    }

    /// Its whole settings built from config alone: with no question, nothing is gathered.
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        settings::build(input).map(|_| ())
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<DialogueSettings, SettingsError> {
        settings::build(input)
    }

    /// `--perspective` is the viewpoint both sides argue from.
    fn reads_perspective(&self) -> bool {
        true
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            panels: SidePanel::above_and(&[
                SidePanel::Context,
                SidePanel::Commitments,
                SidePanel::Map,
            ]),
            record_is_report: true,
            ..Presentation::own_seats(
                "side",
                "Verdict",
                "The moderator is condensing the shared context…",
            )
        }
    }

    super::runs!(run::run);
}
