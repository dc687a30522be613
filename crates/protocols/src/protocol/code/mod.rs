//! The code debate (design note 004, issue 13), phase by phase in the note's order:
//! clarification, the Generator's self-check, the proposal with Reflexion on failing hooks,
//! the critics' critique, the Judge's review, an optimised version, red against blue, and
//! convergence (the Judge's scores, the winner by tests first, then quality). Every version is
//! written and committed in the debate's own work tree; the person's files are touched only
//! when they approve the `before_apply` gate (or run `moot code apply`).

mod phases;
mod prompts;
mod replies;
mod result;
mod run;
mod settings;
mod workshop;

use super::kit;
use super::{Common, Flag, Outcome, SettingsError, SettingsInput};
use crate::code::record::CodeResult;
use crate::debate::{Phase, Presentation, SidePanel};
use settings::CodeSettings;

pub struct Code;

const GENERATOR: &str = "G";
const SECURITY: &str = "S";
const DESIGNER: &str = "D";
const JUDGE: &str = "J";

/// A role's seat id: its initial (the ten templates' initials all differ).
fn seat_id(role: &str) -> String {
    role.chars().next().unwrap_or('?').to_string()
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
        &[
            "after_proposal",
            "after_critique",
            "after_adversarial",
            "before_synthesis",
            "before_apply",
        ]
    }

    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution {
        result::resolution(result)
    }

    fn flags(&self) -> &'static [Flag] {
        settings::FLAGS
    }

    /// Its whole settings built from config alone: with no `--file`, nothing is read.
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        settings::settings(input).map(|_| ())
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
            panels: vec![SidePanel::Tests, SidePanel::Versions],
            round_name: "version".into(),
            rounds_of_their_own: vec![Phase::Clarification, Phase::Attack],
            ..Presentation::own_seats("role", "Result", "Setting up the work tree…")
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

    super::runs!(run::run);
}
