//! How a protocol asks to be shown: what its seats are called, which side panels make sense,
//! what its outcome is titled. Faces draw from this, never from a protocol's name.

use super::Named as _;
use serde::{Deserialize, Serialize};

super::vocabulary! {
    /// A side panel of the workbench.
    #[derive(Hash)]
    pub enum SidePanel {
        /// Each seat's commitment store.
        Commitments,
        /// The argument map with gradual scores.
        Map,
        /// The standings: candidates with their supporters per round, and a change log.
        Standings,
        /// The shared facts K gathered before the debate, each with its source.
        Context,
        /// A code debate's hook runs, version by version (in place of the stores and the map,
        /// which code debates do not build).
        Tests,
        /// A code debate's versions, with the latest one's diff highlighted.
        Versions,
        /// Who sees whom, under a topology other than mesh.
        Topology,
        /// The lessons from earlier debates this one's seats were given.
        Lessons,
        /// The closing vote, once counted.
        Votes,
        /// The rubric scores of arguments.
        Scores,
    }
}

impl SidePanel {
    /// Every panel, in the order the keys' help lists them.
    pub const ALL: [SidePanel; 10] = [
        SidePanel::Context,
        SidePanel::Commitments,
        SidePanel::Map,
        SidePanel::Standings,
        SidePanel::Tests,
        SidePanel::Versions,
        SidePanel::Topology,
        SidePanel::Lessons,
        SidePanel::Votes,
        SidePanel::Scores,
    ];

    /// The panels any argued debate may show above its own, top to bottom; each shows only
    /// when it has something to show.
    pub const ABOVE: [SidePanel; 5] = [
        SidePanel::Topology,
        SidePanel::Tests,
        SidePanel::Lessons,
        SidePanel::Votes,
        SidePanel::Scores,
    ];

    /// `ABOVE`, then a protocol's own panels below them.
    pub fn above_and(own: &[SidePanel]) -> Vec<SidePanel> {
        SidePanel::ABOVE.iter().chain(own).copied().collect()
    }

    /// What the panel is called on the screen and in the keys' help.
    pub fn title(self) -> &'static str {
        match self {
            SidePanel::Context => "shared context K",
            SidePanel::Commitments => "commitment stores",
            SidePanel::Map => "argument map",
            SidePanel::Standings => "options and their backers",
            SidePanel::Tests => "hook runs",
            SidePanel::Versions => "versions",
            SidePanel::Topology => "who sees whom",
            SidePanel::Lessons => "lessons",
            SidePanel::Votes => "vote",
            SidePanel::Scores => "scores",
        }
    }
}

/// One fact of the shared context K and where it comes from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Fact {
    pub text: String,
    /// As cited: `src/retry.rs:42`, `docs/adr/0003.md:1` or `commit 1a2b3c4`.
    pub source: String,
    /// The file it cites, relative to the debate's directory, when moot found that file
    /// itself while gathering (never a path a model chose), with the line to open it at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<(String, u32)>,
}

/// What a protocol declares about its looks; announced with `DebateStarted`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Presentation {
    /// What a seat is called: "perspective", "judge".
    pub seat_role: String,
    /// Whether its seats are perspectives from the catalog, so `--perspective NAME` must name
    /// one (protocols that read `--perspective` as a viewpoint of their own say false).
    #[serde(default)]
    pub seats_from_catalog: bool,
    /// The side panels, top to bottom (see `stack`).
    pub panels: Vec<SidePanel>,
    /// The title of the closing document's view: "Synthesis", "Result".
    pub outcome_title: String,
    /// Whether its outcome offers a follow-up issue draft.
    #[serde(default = "offered")]
    pub follow_up: bool,
    /// What the screen says before anyone is seated.
    #[serde(default = "reading")]
    pub opening: String,
    /// Whether its record is already the whole report (transcript, commitment stores,
    /// arguments: the dialogue's, in its note's format), so `show --markdown` and a markdown
    /// export print it alone after the header instead of beside the generic report.
    #[serde(default)]
    pub record_is_report: bool,
    /// What its rounds are called in the header and the panes' separators: "round", or
    /// "version" for a code debate, whose rounds are its versions.
    #[serde(default = "round")]
    pub round_name: String,
    /// Phases numbered in rounds of their own rather than the protocol's (a code debate's
    /// questions and red's attacks, among its versions).
    #[serde(default)]
    pub rounds_of_their_own: Vec<super::Phase>,
    /// Whether its seats' turns are numbered in the order they were spoken (the arena's, whose
    /// rebuttals name the turns they answer): the panes show each turn's number.
    #[serde(default)]
    pub numbered_turns: bool,
}

impl Presentation {
    /// A turn's separator in its pane: `round 2 · argument`, `version 3 · optimization`,
    /// `attack · round 1`; a turn at round 0 of a protocol whose rounds are not called rounds
    /// belongs to none of them (a code debate's verdict) and is named by its phase alone.
    pub fn step_label(&self, round: u32, phase: super::Phase) -> String {
        let name = phase.as_str().replace('_', " ");
        if self.rounds_of_their_own.contains(&phase) {
            format!("{name} · round {round}")
        } else if round == 0 && self.round_name != "round" {
            name
        } else {
            format!("{} {round} · {name}", self.round_name)
        }
    }
}

fn round() -> String {
    "round".into()
}

fn offered() -> bool {
    true
}

fn reading() -> String {
    "The moderator is reading the question…".into()
}

impl Presentation {
    /// The side panels top to bottom. A presentation journaled before every panel was listed
    /// named only its own (commitments, map, context): the panels above them that every
    /// argued debate showed then (`SidePanel::ABOVE`) are put back on top.
    pub fn stack(&self) -> Vec<SidePanel> {
        let listed_all = self.panels.iter().any(|p| {
            SidePanel::ABOVE.contains(p) || matches!(p, SidePanel::Standings | SidePanel::Versions)
        });
        if listed_all {
            return self.panels.clone();
        }
        SidePanel::above_and(&self.panels)
    }

    /// The looks of a protocol whose seats are its own, not the catalog's perspectives, and
    /// whose outcome offers no follow-up draft; the rest as `default`.
    pub fn own_seats(seat_role: &str, outcome_title: &str, opening: &str) -> Self {
        Presentation {
            seat_role: seat_role.into(),
            seats_from_catalog: false,
            outcome_title: outcome_title.into(),
            follow_up: false,
            opening: opening.into(),
            ..Presentation::default()
        }
    }
}

impl Default for Presentation {
    /// The moderated protocol's looks, which every debate had before protocols said.
    fn default() -> Self {
        Presentation {
            seat_role: "perspective".into(),
            seats_from_catalog: true,
            panels: SidePanel::above_and(&[SidePanel::Commitments, SidePanel::Map]),
            outcome_title: "Synthesis".into(),
            follow_up: true,
            record_is_report: false,
            opening: reading(),
            round_name: round(),
            rounds_of_their_own: Vec::new(),
            numbered_turns: false,
        }
    }
}

/// A closing vote as the faces show it: who could win, the counts, the outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VoteView {
    pub method: String,
    /// (id, label) per candidate.
    pub candidates: Vec<(String, String)>,
    /// Points per candidate, in candidate order (first places, weighted or Borda points).
    pub points: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<String>,
    pub consensus_reached: bool,
    #[serde(default)]
    pub fallback_used: bool,
    /// How a tie was broken, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie: Option<String>,
    /// Each voter's ranking, best first.
    pub ballots: Vec<(String, Vec<String>)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abstentions: Vec<String>,
}

impl VoteView {
    /// The winner as "id: label", when the vote had one.
    pub fn winner_label(&self) -> Option<String> {
        let winner = self.winner.as_ref()?;
        Some(
            self.candidates
                .iter()
                .find(|(id, _)| id == winner)
                .map_or_else(|| winner.clone(), |(id, label)| format!("{id}: {label}")),
        )
    }

    /// The share of ballots that put the winner first (0 with no winner or no ballots): how
    /// far the voters ended agreeing.
    pub fn first_place_share(&self) -> f64 {
        let Some(winner) = &self.winner else {
            return 0.0;
        };
        if self.ballots.is_empty() {
            return 0.0;
        }
        let first = self
            .ballots
            .iter()
            .filter(|(_, ranking)| ranking.first() == Some(winner))
            .count();
        first as f64 / self.ballots.len() as f64
    }

    /// The vote as a section of a record.
    pub fn to_markdown(&self) -> String {
        let view = self;
        let mut out = format!("## Votes\n\n**Method:** {}", view.method);
        match (&view.winner, view.consensus_reached) {
            (Some(winner), true) => {
                let label = view
                    .candidates
                    .iter()
                    .find(|(id, _)| id == winner)
                    .map_or(String::new(), |(_, l)| format!(" — {l}"));
                out.push_str(&format!(" · **Winner:** {winner}{label}\n\n"));
            }
            _ => out.push_str(" · **No consensus**\n\n"),
        }
        out.push_str("| Position | Points |\n|---|---|\n");
        for (i, (id, label)) in view.candidates.iter().enumerate() {
            out.push_str(&format!(
                "| {id}: {} | {:.1} |\n",
                label.replace('|', "\\|"),
                view.points.get(i).copied().unwrap_or(0.0)
            ));
        }
        if view.fallback_used {
            out.push_str("\nThe pairwise count had a cycle: Borda decided.\n");
        }
        if let Some(tie) = &view.tie {
            out.push_str(&format!("\nTie: {tie}.\n"));
        }
        out.push_str("\nBallots: ");
        out.push_str(
            &view
                .ballots
                .iter()
                .map(|(voter, ranking)| {
                    if ranking.is_empty() {
                        format!("{voter} abstained")
                    } else {
                        format!("{voter} {}", ranking.join(" > "))
                    }
                })
                .collect::<Vec<_>>()
                .join("; "),
        );
        out.push('\n');
        out
    }
}

/// One argument's rubric score and, beside it, its gradual score.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TurnScore {
    pub turn_number: u32,
    pub seat: String,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradual: Option<f64>,
    pub reason: String,
}

/// One candidate of a standings panel (an option of the panel, say) and who backs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Standing {
    pub id: String,
    pub label: String,
    /// Seat ids backing it, per round (index 0 is round 1).
    pub backers: Vec<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Phase;

    #[test]
    fn separators_count_what_the_protocol_counts() {
        let moderated = Presentation::default();
        assert_eq!(
            moderated.step_label(2, Phase::Argument),
            "round 2 · argument"
        );
        let code = Presentation {
            round_name: "version".into(),
            rounds_of_their_own: vec![Phase::Clarification, Phase::Attack],
            numbered_turns: false,
            ..Presentation::default()
        };
        assert_eq!(code.step_label(3, Phase::Proposal), "version 3 · proposal");
        assert_eq!(code.step_label(1, Phase::Attack), "attack · round 1");
        assert_eq!(code.step_label(0, Phase::Verdict), "verdict");
        assert_eq!(
            code.step_label(2, Phase::SelfCheck),
            "version 2 · self check"
        );
    }

    /// A presentation journaled before every panel was listed (only its own: the stores and
    /// the map) still shows the panels above them; one that lists its panels gets just those,
    /// in its order.
    #[test]
    fn the_stack_is_the_listed_panels_or_the_old_ones_above_an_old_list() {
        let old = Presentation {
            panels: vec![SidePanel::Context, SidePanel::Commitments, SidePanel::Map],
            ..Presentation::default()
        };
        assert_eq!(
            old.stack(),
            [
                SidePanel::Topology,
                SidePanel::Tests,
                SidePanel::Lessons,
                SidePanel::Votes,
                SidePanel::Scores,
                SidePanel::Context,
                SidePanel::Commitments,
                SidePanel::Map
            ]
        );
        let listed = Presentation {
            panels: vec![SidePanel::Map, SidePanel::Votes],
            ..Presentation::default()
        };
        assert_eq!(listed.stack(), [SidePanel::Map, SidePanel::Votes]);
        let panel = Presentation {
            panels: vec![SidePanel::Standings],
            ..Presentation::default()
        };
        assert_eq!(panel.stack(), [SidePanel::Standings]);
        assert_eq!(
            Presentation::default().stack(),
            Presentation::default().panels
        );
    }
}
