//! The panel's result: the consensus check over the judges' recommendations (or a ranked
//! vote), the changes of mind, and `PanelResult` with its record.

use super::seats::Seated;
use super::settings::{PanelOption, PanelSettings, Threshold};
use crate::debate::Confidence;
use crate::engine::Context;
use crate::protocol::Outcome;
use crate::protocol::kit::SeatRoster;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A change of mind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub judge: String,
    pub round: u32,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// The option the person chose for a contested result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chosen {
    pub option: String,
    pub by: String,
}

/// The panel's typed result, with the note's field names (`debate_result`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PanelResult {
    pub question_id: String,
    pub question: String,
    pub consensus: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_option: Option<String>,
    /// `CONTESTED` when the judges disagree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// `HIGH`, `MEDIUM` (a recommendation resting on less than a full reading: `caveats`),
    /// `REQUIRES_INPUT`, or `LOW` once the person has chosen.
    pub confidence: String,
    /// Option id → judges recommending it at the end (contested results).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub distribution: BTreeMap<String, Vec<String>>,
    /// `risk` → "Option A - …" (consensus), or `risk_favors` → the quoted reasoning.
    pub perspectives: BTreeMap<String, String>,
    pub change_log: Vec<Change>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<Chosen>,
    pub options: Vec<PanelOption>,
    pub rounds: u32,
    pub threshold: String,
    /// Judges that gave a valid recommendation at the end, and how many of them back the
    /// leading option.
    #[serde(default)]
    pub voters: usize,
    #[serde(default)]
    pub agreeing: usize,
    /// How a ranked vote (`--vote`) decided, when one did: the method and each option's points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// What a recommendation rests on that is less than a full panel's reading (a judge that
    /// abstained, a reply that could not be read, a tie broken by rule): each lowers its
    /// confidence from HIGH to MEDIUM, and the record says which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// Judge → the order it saw the options in (against position bias).
    pub option_order: BTreeMap<String, Vec<String>>,
    /// Judges left out, flags, what the context lost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub date: String,
}

impl PanelResult {
    /// The person's choice taken. `user_prompt` stays: results journaled before kept it after
    /// the choice, and `audit --verify` re-runs them to the same data.
    pub fn choose(&mut self, option: String, by: &str) {
        self.confidence = "LOW".into();
        self.chosen = Some(Chosen {
            option,
            by: by.to_string(),
        });
    }

    /// What the person is told when asked to choose: who backs what at the end, and where each
    /// judge's case is (the options themselves are listed beside it).
    pub fn choice_prompt(&self) -> String {
        let backed: Vec<String> = self
            .distribution
            .iter()
            .filter(|(_, judges)| !judges.is_empty())
            .map(|(option, judges)| format!("{option} by {}", judges.join(", ")))
            .collect();
        let backed = if backed.is_empty() {
            "no option is backed".to_string()
        } else {
            format!("backed: {}", backed.join("; "))
        };
        format!(
            "No option reached {} of the {} judges ({backed}). Each judge's case is in the result (s).",
            self.threshold, self.voters
        )
    }

    fn label(&self, id: &str) -> String {
        self.options
            .iter()
            .find(|o| o.id == id)
            .map(|o| format!("{id}: {}", o.label))
            .unwrap_or_else(|| id.to_string())
    }

    /// The outcome and its confidence: the recommended option and what it rests on, or the
    /// judges' disagreement and the person's choice (or how to make it).
    fn write_outcome(&self, out: &mut String) {
        if self.consensus {
            let option = self.recommended_option.as_deref().unwrap_or("?");
            let _ = writeln!(
                out,
                "**Outcome:** RECOMMENDED — option {}\n",
                self.label(option)
            );
            let level = if self.caveats.is_empty() {
                "HIGH"
            } else {
                "MEDIUM"
            };
            let basis = match &self.decided_by {
                Some(decided_by) if self.caveats.is_empty() => {
                    format!("every judge ranked every option; decided by {decided_by}")
                }
                Some(decided_by) => format!("decided by {decided_by}"),
                None => format!(
                    "{} of {} judges agreed; threshold {}",
                    self.agreeing, self.voters, self.threshold
                ),
            };
            let resting = if self.caveats.is_empty() {
                String::new()
            } else {
                format!(
                    "; it rests on less than a full reading: {}",
                    self.caveats.join("; ")
                )
            };
            let _ = writeln!(out, "**Confidence:** {level} ({basis}{resting})\n");
        } else {
            let _ = writeln!(out, "**Outcome:** CONTESTED — the judges disagree\n");
            // Once the person has chosen, the record says the confidence every other face
            // says (A3): low, since the judges still disagree.
            match &self.chosen {
                Some(chosen) => {
                    let _ = writeln!(
                        out,
                        "**Confidence:** LOW (the judges were split; the person chose option {})\n",
                        chosen.option
                    );
                }
                None => {
                    let _ = writeln!(out, "**Confidence:** REQUIRES_INPUT\n");
                }
            }
            match &self.chosen {
                Some(chosen) => {
                    let _ = writeln!(
                        out,
                        "**Chosen:** option {} by {}\n",
                        self.label(&chosen.option),
                        chosen.by
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "**Chosen:** not yet (`moot decide {} OPTION`)\n",
                        self.question_id
                    );
                }
            }
        }
    }

    /// The record, in prose.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Panel result: {}\n", self.question.trim());
        let _ = writeln!(out, "**Debate:** {}\n", self.question_id);
        self.write_outcome(&mut out);
        let _ = writeln!(out, "## Options\n");
        for option in &self.options {
            let backers = self
                .distribution
                .get(&option.id)
                .map(|j| j.join(", "))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- **{}: {}**{}{}",
                option.id,
                option.label,
                option.dashed_description(),
                if self.consensus || backers.is_empty() {
                    String::new()
                } else {
                    format!(" (favoured by {backers})")
                }
            );
        }
        let _ = writeln!(out, "\n## Perspectives\n");
        for (judge, words) in &self.perspectives {
            let _ = writeln!(
                out,
                "- **{}:** {}",
                judge.replace("_favors", " favours"),
                words.trim()
            );
        }
        if !self.change_log.is_empty() {
            let _ = writeln!(out, "\n## Change log\n");
            for change in &self.change_log {
                let _ = writeln!(
                    out,
                    "- {} (round {}): {} → {} — {}",
                    change.judge, change.round, change.from, change.to, change.reason
                );
            }
        }
        if let Some(prompt) = self.user_prompt.as_ref().filter(|_| self.chosen.is_none()) {
            let _ = writeln!(out, "\n## Your decision\n\n{}", prompt.trim());
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n## Notes\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }

    /// The uniform outcome: the chosen or recommended option; the consensus score is the share
    /// of readable judges backing the leading option at the end.
    pub fn resolution(&self) -> crate::debate::Resolution {
        let label = |id: &str| {
            self.options
                .iter()
                .find(|o| o.id == id)
                .map_or_else(|| id.to_string(), |o| format!("{}: {}", o.id, o.label))
        };
        let (winner, method) = match (&self.chosen, &self.recommended_option) {
            (Some(chosen), _) => (
                Some(label(&chosen.option)),
                format!("the choice of {} (the judges were split)", chosen.by),
            ),
            (None, Some(option)) => (
                Some(label(option)),
                match &self.decided_by {
                    Some(vote) => vote.clone(),
                    None => format!("consensus at {}", self.threshold),
                },
            ),
            (None, None) => (None, "contested: left to the person".into()),
        };
        crate::debate::Resolution {
            winner,
            method,
            final_consensus_score: if self.voters == 0 {
                0.0
            } else {
                self.agreeing as f64 / self.voters as f64
            },
        }
    }

    pub fn into_outcome(self) -> Outcome<PanelResult> {
        Outcome {
            markdown: self.to_markdown(),
            // Once the person has chosen, the input it required is given; the judges still
            // disagreed, so it stands low (seed review 000/001 #14).
            confidence: match (self.consensus, &self.chosen) {
                (true, _) if !self.caveats.is_empty() => Confidence::Medium,
                (true, _) => Confidence::High,
                (false, Some(_)) => Confidence::Low,
                (false, None) => Confidence::RequiresInput,
            },
            section: Some("debate_result".into()),
            date: self.date.clone(),
            data: self,
        }
    }
}

/// The consensus check over the judges' current recommendations.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The option that reached the threshold.
    pub consensus: Option<String>,
    /// Option id → judge keys recommending it, every option listed.
    pub distribution: BTreeMap<String, Vec<String>>,
    /// Judges that gave a valid recommendation.
    pub voters: usize,
    /// How a ranked vote (`--vote`) decided, when one did: the method and its points.
    pub decided_by: Option<String>,
    /// What the count rests on that is less than every judge ranking every option: a judge
    /// that abstained or ranked only some, a tie broken by rule. Empty for a full count.
    pub caveats: Vec<String>,
}

/// Consensus when the largest share of valid recommendations reaches the threshold, with at
/// least two of them; a tie for the largest share is no consensus.
pub fn check(
    options: &[PanelOption],
    votes: &[(String, Option<String>)],
    threshold: Threshold,
) -> Check {
    let mut distribution: BTreeMap<String, Vec<String>> =
        options.iter().map(|o| (o.id.clone(), Vec::new())).collect();
    let mut voters = 0;
    for (judge, vote) in votes {
        if let Some(option) = vote
            && let Some(backers) = distribution.get_mut(option)
        {
            backers.push(judge.clone());
            voters += 1;
        }
    }
    // The threshold method of the voting module decides; a panel also needs two voices.
    let candidates: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    let ballots: Vec<crate::vote::Ballot> = votes
        .iter()
        .map(|(judge, vote)| crate::vote::Ballot {
            voter: judge.clone(),
            ranking: vote.iter().cloned().collect(),
            confidence: 1.0,
            weight: 1.0,
        })
        .collect();
    let counted = crate::vote::tally(
        crate::vote::Method::Threshold,
        &candidates,
        &ballots,
        threshold,
    );
    let consensus = counted.winner.filter(|_| voters >= 2);
    Check {
        consensus,
        distribution,
        voters,
        decided_by: None,
        caveats: Vec::new(),
    }
}

/// The consensus check when `--vote` asks every judge to rank every option: the method
/// decides on the full rankings (a judge's first place still fills the distribution), and
/// consensus needs two voices and the method's own consensus.
pub fn check_ranked(
    options: &[PanelOption],
    ballots: &[crate::vote::Ballot],
    method: crate::vote::Method,
    threshold: Threshold,
) -> Check {
    let firsts: Vec<(String, Option<String>)> = ballots
        .iter()
        .map(|b| (b.voter.clone(), b.ranking.first().cloned()))
        .collect();
    let by_first = check(options, &firsts, threshold);
    let candidates: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    let counted = crate::vote::tally(method, &candidates, ballots, threshold);
    let points = counted_line(&counted, &candidates);
    let mut caveats = Vec::new();
    for ballot in ballots {
        let ranked: std::collections::BTreeSet<&str> = ballot
            .ranking
            .iter()
            .map(|c| c.trim())
            .filter(|c| candidates.iter().any(|k| k == c))
            .collect();
        if ranked.is_empty() {
            caveats.push(format!("{} abstained", ballot.voter));
        } else if ranked.len() < candidates.len() {
            caveats.push(format!(
                "{} ranked {} of the {} options",
                ballot.voter,
                ranked.len(),
                candidates.len()
            ));
        }
    }
    if let Some(tie) = &counted.tie {
        caveats.push(format!(
            "a tie between {} was broken by {} ({} chosen)",
            tie.tied.join(" and "),
            tie.rule,
            tie.chosen
        ));
    } else if counted.fallback_used {
        // A Borda count that broke a Condorcet cycle can itself tie at the top.
        let best = counted.points.iter().copied().fold(f64::MIN, f64::max);
        let tied: Vec<&str> = candidates
            .iter()
            .zip(&counted.points)
            .filter(|(_, p)| (**p - best).abs() < 1e-9)
            .map(|(c, _)| c.as_str())
            .collect();
        if tied.len() > 1 {
            caveats.push(format!(
                "the Borda count that broke the Condorcet cycle tied {} and the option order chose {}",
                tied.join(" and "),
                counted.winner.as_deref().unwrap_or("none")
            ));
        }
    }
    Check {
        caveats,
        consensus: counted
            .winner
            .clone()
            .filter(|_| counted.consensus_reached && by_first.voters >= 2),
        decided_by: Some(format!(
            "{}{}: {points}",
            counted.method,
            if counted.fallback_used {
                " (Condorcet cycle: Borda decided)"
            } else {
                ""
            }
        )),
        ..by_first
    }
}

/// What a count gave each option: a Condorcet count's pairwise wins (how many other options
/// each beats head to head; seed review 004 #14: not its first places, read as points), the
/// Borda points that broke a Condorcet cycle, else the method's points.
fn counted_line(counted: &crate::vote::Tally, candidates: &[String]) -> String {
    let per_option = |values: Vec<String>| {
        candidates
            .iter()
            .zip(values)
            .map(|(id, v)| format!("{id} {v}"))
            .collect::<Vec<_>>()
            .join(" · ")
    };
    match &counted.matrix {
        Some(matrix) if !counted.fallback_used => {
            let wins = (0..candidates.len())
                .map(|i| {
                    (0..candidates.len())
                        .filter(|&j| matrix[i][j] > matrix[j][i])
                        .count()
                        .to_string()
                })
                .collect();
            format!("pairwise wins {}", per_option(wins))
        }
        _ => {
            let points = per_option(counted.points.iter().map(|p| format!("{p:.1}")).collect());
            if counted.fallback_used {
                format!("Borda points {points}")
            } else {
                points
            }
        }
    }
}

pub(super) fn headline(round: u32, check: &Check, threshold: Threshold) -> String {
    let tally = check
        .distribution
        .iter()
        .map(|(id, backers)| format!("{id} {}", backers.len()))
        .collect::<Vec<_>>()
        .join(" · ");
    if let Some(decided_by) = &check.decided_by {
        return match &check.consensus {
            Some(option) => {
                format!("round {round}: {option} by {decided_by} — first places {tally}")
            }
            None => format!("round {round}: no consensus by {decided_by} — first places {tally}"),
        };
    }
    match &check.consensus {
        Some(option) => format!(
            "round {round}: consensus on {option} ({} of {} ≥ {threshold}) — {tally}",
            check.distribution[option].len(),
            check.voters
        ),
        None => format!(
            "round {round}: no consensus (needs {threshold} of {} valid) — {tally}",
            check.voters
        ),
    }
}

/// The note's question to the person when the judges did not agree, listing the options.
fn user_prompt(voters: usize, options: &[PanelOption]) -> String {
    // "Judges disagreed" needs two judges to disagree; with fewer readable, say so.
    let mut prompt = match voters {
        0 => "No judge's recommendation could be read on this question. Review perspectives above."
            .to_string(),
        1 => "Only one judge's recommendation could be read on this question, and a panel needs \
              two to agree. Review perspectives above."
            .to_string(),
        _ => "Judges disagreed on this question. Review perspectives above.".to_string(),
    };
    prompt.push_str("\n\nWhich option would you like to proceed with?\n\n");
    for option in options {
        let _ = writeln!(
            prompt,
            "- [{}] {}{}",
            option.id,
            option.label,
            option.dashed_description()
        );
    }
    prompt
}

/// Each judge at the table's line in the record, under its key (`KEY_favors` when the judges
/// disagree): the option it recommends and why (and what it changed from), or that its
/// recommendation could not be read (A5).
fn judges_lines(
    options: &[PanelOption],
    seated: &[Seated],
    roster: &SeatRoster,
    change_log: &[Change],
    consensus: bool,
) -> BTreeMap<String, String> {
    let option_label = |id: &str| {
        options
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.label.clone())
            .unwrap_or_default()
    };
    let mut perspectives = BTreeMap::new();
    for judge in seated.iter().filter(|s| roster.is_active(&s.seat.id)) {
        let Some(option) = &judge.recommended else {
            // Every judge at the table has its line, a consensus result's too (A5).
            let key = if consensus {
                judge.key.clone()
            } else {
                format!("{}_favors", judge.key)
            };
            perspectives.insert(
                key,
                format!(
                    "No readable recommendation - \"{}\"",
                    judge.reasoning.trim()
                ),
            );
            continue;
        };
        let changed = change_log
            .iter()
            .rev()
            .find(|c| c.judge == judge.key)
            .map(|c| format!(" (changed from {})", c.from))
            .unwrap_or_default();
        if consensus {
            let line = if judge.perspective.is_empty() {
                option_label(option)
            } else {
                judge.perspective.clone()
            };
            perspectives.insert(
                judge.key.clone(),
                format!("Option {option} - {line}{changed}"),
            );
        } else {
            perspectives.insert(
                format!("{}_favors", judge.key),
                format!("Option {option} - \"{}\"", judge.reasoning.trim()),
            );
        }
    }
    perspectives
}

#[allow(clippy::too_many_arguments)]
pub(super) fn build_result(
    ctx: &Context,
    settings: &PanelSettings,
    question: &str,
    options: &[PanelOption],
    seated: &[Seated],
    roster: &SeatRoster,
    check: &Check,
    change_log: Vec<Change>,
    rounds: u32,
    mut notes: Vec<String>,
) -> PanelResult {
    let available = seated
        .iter()
        .filter(|s| roster.is_active(&s.seat.id))
        .count();
    // The judges left out, with why: named in the notes, and a caveat of a recommendation.
    let left_out: Vec<(&Seated, String)> = seated
        .iter()
        .filter_map(|s| Some((s, roster.member(&s.seat.id)?.dropped()?.to_string())))
        .collect();
    for (judge, why) in &left_out {
        notes.insert(
            0,
            format!(
                "{} judge {} — only {available} perspectives available",
                judge.judge.name, why
            ),
        );
    }
    let consensus = check.consensus.is_some();
    let perspectives = judges_lines(options, seated, roster, &change_log, consensus);
    let user_prompt = (!consensus).then(|| user_prompt(check.voters, options));
    // What the recommendation rests on, from the journal: the count's own gaps, then each
    // backing judge whose evaluation of the options or latest reply could not be read.
    let mut caveats = Vec::new();
    if let Some(option) = &check.consensus {
        caveats.extend(check.caveats.iter().cloned());
        for (judge, why) in &left_out {
            caveats.push(format!("{} judge {why} and was left out", judge.judge.name));
        }
        for judge in seated
            .iter()
            .filter(|s| roster.is_active(&s.seat.id) && s.recommended.as_ref() == Some(option))
        {
            if !judge.evaluated {
                caveats.push(format!(
                    "{} judge's evaluation of the options could not be read",
                    judge.judge.name
                ));
            }
            if let Some(round) = judge.unread {
                caveats.push(format!(
                    "{} judge's round-{round} reply could not be read, so its earlier recommendation was counted",
                    judge.judge.name
                ));
            }
        }
    }
    PanelResult {
        question_id: ctx.debate_id.clone(),
        question: question.to_string(),
        consensus,
        recommended_option: check.consensus.clone(),
        outcome: (!consensus).then(|| "CONTESTED".to_string()),
        confidence: match (consensus, caveats.is_empty()) {
            (true, true) => "HIGH",
            (true, false) => "MEDIUM",
            (false, _) => "REQUIRES_INPUT",
        }
        .into(),
        distribution: if consensus {
            BTreeMap::new()
        } else {
            check.distribution.clone()
        },
        perspectives,
        change_log,
        user_prompt,
        chosen: None,
        options: options.to_vec(),
        rounds,
        threshold: settings.consensus_threshold.to_string(),
        voters: check.voters,
        agreeing: check.distribution.values().map(Vec::len).max().unwrap_or(0),
        decided_by: check.decided_by.clone(),
        caveats,
        option_order: seated
            .iter()
            .map(|s| (s.key.clone(), s.order.clone()))
            .collect(),
        notes,
        date: crate::debate::today(),
    }
}
