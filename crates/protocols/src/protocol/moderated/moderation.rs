//! A moderated debate once its seats are taken (`Moderation`, what carries from one round to
//! the next), and what its synthesis is built from (`SynthesisBasis`): shared by the run and
//! the result rooms.

use super::analysis::Analysis;
use crate::argue::{ArgumentGraph, CommitmentStore};
use crate::debate::{Convergence, ConvergenceSignal, Seat, Turn};
use crate::engine::Context;
use crate::protocol::Common;
use crate::protocol::kit::{self, SeatRoster};
use crate::protocol::tree::{self, Role, Tree};
use std::collections::HashMap;
use tokio::time::Instant;

/// A moderated debate once its seats are taken: what carries from one round to the next.
pub(super) struct Moderation<'a> {
    pub(super) ctx: &'a Context,
    pub(super) common: &'a Common,
    pub(super) question: String,
    /// The question with the asker's clarification, as the seats get it.
    pub(super) clarified: String,
    pub(super) analysis: Analysis,
    pub(super) seats: Vec<Seat>,
    pub(super) roster: SeatRoster,
    pub(super) memory: HashMap<String, SeatMemory>,
    pub(super) guidance: Vec<String>,
    /// The guidance given for the round about to run, if any.
    pub(super) latest_guidance: Option<String>,
    pub(super) summaries: Vec<(u32, String)>,
    pub(super) clarification: Option<String>,
    pub(super) redirect: Vec<Seat>,
    pub(super) notes: Vec<String>,
    /// The closing vote, when `--vote` asked for one.
    pub(super) votes: Option<crate::debate::VoteView>,
    /// What each seat sees of the others (`--topology`).
    pub(super) topology: kit::Topology,
    /// The seats' roles, when a tree is built from them (its leads change by phase).
    pub(super) roles: Vec<Role>,
    /// A tree's teams, each lead's summaries (round, lead, text) and the root's (round, text).
    pub(super) tree: Option<Tree>,
    pub(super) escalations: tree::Escalations,
    /// The person may ask for rounds beyond the limit at a conclusion; never past the ceiling.
    pub(super) max_rounds: u32,
    pub(super) rounds_run: u32,
    pub(super) total_deadline: Instant,
    /// Agreement the moves showed hollow at the last conclusion (`argue::hollow_agreement`),
    /// and whether the person asked for a round that challenges it (the next round's).
    pub(super) hollow: Option<crate::argue::HollowAgreement>,
    pub(super) challenge: Option<String>,
    /// `--blind-first`: round 1 asks for no rebuttals.
    pub(super) blind_first: bool,
    /// The moderator's reading of the last round, for the gate after it.
    pub(super) last_convergence: Option<Convergence>,
}

/// What the synthesis (and a revision of it) is built from.
pub(super) struct SynthesisBasis {
    pub(super) turn: Turn,
    pub(super) turns: Vec<Turn>,
    pub(super) graph: ArgumentGraph,
    pub(super) stores: Vec<CommitmentStore>,
    pub(super) positions: Vec<(String, String)>,
    pub(super) signal: ConvergenceSignal,
    pub(super) provider: String,
}

/// What the moderated protocol remembers of a seat between rounds.
#[derive(Default)]
pub(super) struct SeatMemory {
    pub(super) last_argument: Option<String>,
    pub(super) last_position: Option<String>,
}
