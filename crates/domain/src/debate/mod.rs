//! Domain types shared by every layer: debates, seats, turns, moves, events, controls, syntheses.

/// Declares a closed vocabulary: a fieldless enum journaled, sent and parsed by its snake_case
/// name, so serde and strum can never spell a word two ways. Extra derives go on the enum.
/// The crate that uses it depends on serde and strum.
#[macro_export]
macro_rules! vocabulary {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variants:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[derive(strum::IntoStaticStr, strum::EnumString, strum::Display)]
        #[serde(rename_all = "snake_case")]
        #[strum(serialize_all = "snake_case")]
        $vis enum $name { $($variants)* }

        impl $crate::debate::Named for $name {}
    };
}
pub use crate::vocabulary;

mod event;
mod lesson;
mod model;
mod presentation;
mod resolution;
mod ruling;
mod synthesis;
mod terms;

/// A vocabulary enum's name as the journal and the wire spell it (its serde and strum names
/// agree), and back.
pub trait Named: Copy + Into<&'static str> + std::str::FromStr {
    fn as_str(self) -> &'static str {
        self.into()
    }

    fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

pub use event::{
    Answer, AskKind, Assessment, Control, Convergence, ConvergenceSignal, Decision, Event,
    FlagKind, GateDecision, Stage, gate_place, spoken_duration,
};
pub use lesson::{Lesson, LessonDraft};
pub use model::{
    Act, Debate, DebateStatus, MODERATOR, Move, OUTSIDE, PERSON, Phase, Relation, Round, Seat,
    Turn, TurnKey, TurnStatus, new_debate_id, now_rfc3339, today,
};
pub use presentation::{Fact, Presentation, SidePanel, Standing, TurnScore, VoteView};
pub use resolution::{
    Concluded, Initiator, RECEIPT_MARK, RESULT_MARK, Resolution, UniformOutcome, written_by_moot,
};
pub use ruling::{Ruled, Ruling};
pub use synthesis::{Approval, ApprovalStatus, Confidence, PerspectiveSummary, Synthesis};
pub use terms::key_terms;
