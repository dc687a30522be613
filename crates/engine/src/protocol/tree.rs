//! The tree topology (design note 004): the moderator is the root, seats are grouped into
//! teams whose first seat leads; a leaf sees its siblings only through its lead's summary,
//! a lead sees its team's turns and the root's summary of every team's escalation. The root
//! hands each team a sub-question (cpde), or each lead proposes its own and the root reconciles
//! them (dpde). A lead that fails hands its team to the sibling team's lead.

use super::kit;
use super::text::DATA_RULE;
use super::text::fenced;
use crate::debate::{Event, MODERATOR, Phase, TurnKey, TurnStatus};
use crate::engine::Unusable;
use crate::engine::{Checked, Context, EngineError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

/// How a tree plans: centralised (the root) or decentralised (the leads, reconciled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Planning {
    #[default]
    Cpde,
    Dpde,
}

impl Planning {
    /// `--planning` as given: `cpde`, `dpde`, or `auto` (the default), which reads the question
    /// (`Planning::auto`); with the reason for an automatic choice.
    pub fn choose(
        given: Option<&str>,
        question: Option<&str>,
    ) -> Result<(Planning, Option<String>), super::BadFlag> {
        match given.map(str::trim) {
            Some("cpde") => Ok((Planning::Cpde, None)),
            Some("dpde") => Ok((Planning::Dpde, None)),
            None | Some("auto") => {
                let (planning, reason) = Planning::auto(question.unwrap_or(""));
                Ok((planning, Some(reason)))
            }
            Some(other) => Err(super::BadFlag {
                flag: "planning",
                given: other.to_string(),
                choices: "auto (chosen from the question), cpde (the root plans) or dpde (each lead plans, the root reconciles)",
            }),
        }
    }

    /// CPDE for a question with one clear deliverable, DPDE for one made of several independent
    /// parts (a list, clauses set apart by semicolons, "as well as", "and also"), with why.
    pub fn auto(question: &str) -> (Planning, String) {
        let parts = independent_parts(question);
        if parts.len() >= 2 {
            let quoted: Vec<String> = parts.iter().map(|p| format!("“{p}”")).collect();
            (
                Planning::Dpde,
                format!(
                    "the question has {} independent parts ({}), so each lead plans its own and the root reconciles them (dpde)",
                    parts.len(),
                    quoted.join("; ")
                ),
            )
        } else {
            (
                Planning::Cpde,
                "the question asks for one deliverable, so the root splits it for the teams (cpde)"
                    .into(),
            )
        }
    }
}

/// The parts of a question that stand on their own: list items, or clauses separated by
/// semicolons, "as well as" or "and also", each of four words or more.
fn independent_parts(question: &str) -> Vec<String> {
    let listed: Vec<String> = question
        .lines()
        .map(str::trim)
        .filter_map(|line| {
            let rest = line
                .strip_prefix("- ")
                .or_else(|| line.strip_prefix("* "))
                .or_else(|| {
                    let digits = line.chars().take_while(char::is_ascii_digit).count();
                    (digits > 0)
                        .then(|| &line[digits..])
                        .and_then(|r| r.strip_prefix(". ").or_else(|| r.strip_prefix(") ")))
                })?;
            Some(rest.trim().to_string())
        })
        .collect();
    let candidates = if listed.len() >= 2 {
        listed
    } else {
        let mut parts = vec![question.trim().to_string()];
        for separator in [";", " as well as ", " and also "] {
            parts = parts
                .iter()
                .flat_map(|p| p.split(separator).map(|s| s.trim().to_string()))
                .collect();
        }
        parts
    };
    candidates
        .into_iter()
        .map(|p| p.trim_end_matches(['?', '.', '!']).trim().to_string())
        .filter(|p| p.split_whitespace().count() >= 4)
        .collect()
}

/// The flag a protocol with the tree topology declares.
pub const PLANNING_FLAG: super::Flag = super::Flag {
    name: "planning",
    value: Some("auto|cpde|dpde"),
    help: "With --topology tree: the root hands out sub-questions (cpde), each lead proposes its own and the root reconciles them (dpde), or chosen from the question (auto, the default)",
    repeatable: false,
};

/// A tree needs a lead and a leaf at the least.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--topology tree needs at least two seats (a lead and a leaf), not {0}")]
pub struct TooFewSeats(pub usize);

/// One team: its lead first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Team {
    pub lead: String,
    pub members: Vec<String>,
    /// What the root asked this team to answer.
    #[serde(default)]
    pub question: String,
}

/// The teams of a tree, in seat order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub teams: Vec<Team>,
}

impl Tree {
    /// Seats in order, grouped into teams of at most three (two teams from three seats on, so
    /// subtrees can run side by side); a tree needs two seats at least.
    pub fn of(seats: &[String]) -> Result<Tree, TooFewSeats> {
        if seats.len() < 2 {
            return Err(TooFewSeats(seats.len()));
        }
        let count = if seats.len() < 3 {
            1
        } else {
            seats.len().div_ceil(3).max(2)
        };
        let mut teams: Vec<Team> = Vec::new();
        let (base, extra) = (seats.len() / count, seats.len() % count);
        let mut next = 0;
        for index in 0..count {
            let size = base + usize::from(index < extra);
            let members = seats[next..next + size].to_vec();
            next += size;
            teams.push(Team {
                lead: members[0].clone(),
                members,
                question: String::new(),
            });
        }
        Ok(Tree { teams })
    }

    pub fn team_of(&self, seat: &str) -> Option<usize> {
        self.teams
            .iter()
            .position(|t| t.members.iter().any(|m| m == seat))
    }

    pub fn is_lead(&self, seat: &str) -> bool {
        self.teams.iter().any(|t| t.lead == seat)
    }

    /// Whether `viewer` sees `speaker`'s turns as they were: its own, and a lead its team's.
    pub fn sees(&self, viewer: &str, speaker: &str) -> bool {
        viewer == speaker || (self.is_lead(viewer) && self.team_of(viewer) == self.team_of(speaker))
    }

    /// Who each seat sees, for the workbench's diagram: a leaf its lead (through the lead's
    /// summary), a lead its team and the root.
    pub fn diagram(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for team in &self.teams {
            for member in &team.members {
                let seen = if *member == team.lead {
                    let mut seen: Vec<String> = team
                        .members
                        .iter()
                        .filter(|m| *m != member)
                        .cloned()
                        .collect();
                    seen.push(format!("{MODERATOR} (root)"));
                    seen
                } else {
                    vec![format!("{} (lead's summary)", team.lead)]
                };
                out.push((member.clone(), seen));
            }
        }
        out
    }

    /// The failed lead's team joins the next team (the previous for the last); its lead leads
    /// both. Returns the lead that took it over, or None when there is no sibling.
    pub fn hand_over(&mut self, failed_lead: &str) -> Option<String> {
        let index = self.teams.iter().position(|t| t.lead == failed_lead)?;
        if self.teams.len() < 2 {
            return None;
        }
        let team = self.teams.remove(index);
        let sibling = index.min(self.teams.len() - 1);
        let target = &mut self.teams[sibling];
        target.members.extend(team.members);
        if !team.question.is_empty() {
            target.question = format!("{} Also: {}", target.question, team.question);
        }
        Some(target.lead.clone())
    }
}

/// A seat as a tree reads its role: its name, the words of what it cares about (its
/// priorities, and its catalog perspective's keywords), and the perspectives it pulls against.
#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    pub id: String,
    pub name: String,
    /// The words of what it cares about (priorities, keywords): what roles share.
    words: std::collections::BTreeSet<String>,
    /// The words of its name ("skeptic", "security"): with `words`, what a phase looks for.
    named: std::collections::BTreeSet<String>,
    opposes: Vec<String>,
}

/// Lowercase words of four letters or more, the way roles are compared.
fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
}

impl Role {
    /// The role of `seat`, with what the catalog says of its perspective (by name) when it
    /// has one.
    pub fn of(seat: &crate::debate::Seat, catalog: &[crate::catalog::Perspective]) -> Role {
        let known = crate::catalog::find(catalog, &seat.perspective);
        let mut words: std::collections::BTreeSet<String> =
            seat.priorities.iter().flat_map(|p| words_of(p)).collect();
        if let Some(perspective) = known {
            words.extend(perspective.priorities.iter().flat_map(|p| words_of(p)));
            words.extend(perspective.keywords.iter().flat_map(|k| words_of(k)));
        }
        Role {
            id: seat.id.clone(),
            name: seat.perspective.clone(),
            words,
            named: words_of(&seat.perspective).collect(),
            opposes: known.map(|p| p.opposes.clone()).unwrap_or_default(),
        }
    }

    /// How much two roles share (the words of what they care about), and a large negative
    /// when either pulls against the other.
    fn affinity(&self, other: &Role) -> i64 {
        let against =
            |a: &Role, b: &Role| a.opposes.iter().any(|o| o.eq_ignore_ascii_case(&b.name));
        if against(self, other) || against(other, self) {
            return -100;
        }
        self.words.intersection(&other.words).count() as i64
    }

    /// How well the role fits what a phase asks of a lead.
    fn fits(&self, concern: &[&str]) -> usize {
        concern
            .iter()
            .filter(|word| self.words.contains(**word) || self.named.contains(**word))
            .count()
    }
}

/// What a phase asks of a team's lead, and the words of roles that answer it: building the
/// case (openings, arguments, proposals), finding the weak points (rebuttals, critiques, the
/// red and blue teams), weighing it up (closings, syntheses).
fn concern(phase: Phase) -> Option<(&'static str, &'static [&'static str])> {
    match phase {
        Phase::Opening | Phase::Argument | Phase::Proposal => Some((
            "building the case",
            &[
                "proponent",
                "architect",
                "design",
                "performance",
                "flexibility",
                "extensibility",
                "user",
                "experience",
                "growth",
                "value",
                "latency",
                "throughput",
            ],
        )),
        Phase::Rebuttal | Phase::Critique | Phase::Attack | Phase::Defence | Phase::Challenge => {
            Some((
                "finding the weak points",
                &[
                    "security",
                    "skeptic",
                    "critic",
                    "risk",
                    "compliance",
                    "attack",
                    "threat",
                    "audit",
                    "reliability",
                    "privacy",
                    "protection",
                    "surface",
                ],
            ))
        }
        Phase::Closing | Phase::Synthesis | Phase::Evaluation => Some((
            "weighing it up",
            &[
                "simplicity",
                "operational",
                "operations",
                "maintainability",
                "debuggability",
                "pragmatic",
                "cost",
                "delivery",
                "monitoring",
                "readability",
                "familiarity",
            ],
        )),
        _ => None,
    }
}

impl Tree {
    /// Seats grouped into teams by role affinity (design note 004's BuildTree): as many teams
    /// of the same sizes as `Tree::of`, each seeded with the role least like the seeds before
    /// it, then every other seat put with the team it shares most with (never, if it can help
    /// it, with a role it pulls against). With nothing to tell the roles apart, seat order.
    pub fn by_roles(roles: &[Role]) -> Result<Tree, TooFewSeats> {
        let order: Vec<String> = roles.iter().map(|r| r.id.clone()).collect();
        let plain = Tree::of(&order)?;
        let known = roles
            .iter()
            .enumerate()
            .any(|(i, a)| roles[i + 1..].iter().any(|b| a.affinity(b) != 0));
        if !known {
            return Ok(plain);
        }
        let sizes: Vec<usize> = plain.teams.iter().map(|t| t.members.len()).collect();
        let mut teams: Vec<Vec<usize>> = vec![Vec::new(); sizes.len()];
        teams[0].push(0);
        for team in 1..sizes.len() {
            let seed = (0..roles.len())
                .filter(|i| !teams.iter().flatten().any(|t| t == i))
                .min_by_key(|&i| {
                    teams[..team]
                        .iter()
                        .flatten()
                        .map(|&s| roles[i].affinity(&roles[s]))
                        .max()
                        .unwrap_or(0)
                });
            if let Some(seed) = seed {
                teams[team].push(seed);
            }
        }
        for i in 0..roles.len() {
            if teams.iter().flatten().any(|&t| t == i) {
                continue;
            }
            let best = (0..teams.len())
                .filter(|&t| teams[t].len() < sizes[t])
                .max_by_key(|&t| {
                    let score: i64 = teams[t].iter().map(|&m| roles[i].affinity(&roles[m])).sum();
                    // Ties go to the first team.
                    (score, std::cmp::Reverse(t))
                });
            if let Some(team) = best {
                teams[team].push(i);
            }
        }
        Ok(Tree {
            teams: teams
                .into_iter()
                .map(|mut members| {
                    members.sort_unstable();
                    let members: Vec<String> =
                        members.into_iter().map(|i| roles[i].id.clone()).collect();
                    Team {
                        lead: members[0].clone(),
                        members,
                        question: String::new(),
                    }
                })
                .collect(),
        })
    }

    /// Each team's lead for `phase` (SelectLeader): the member whose role fits what the phase
    /// asks of a lead best; the lead stays when no role fits. Returns a line for each team
    /// whose lead changed, saying who leads now and why.
    pub fn lead_for(&mut self, phase: Phase, roles: &[Role]) -> Vec<String> {
        let Some((asks, words)) = concern(phase) else {
            return Vec::new();
        };
        let mut changed = Vec::new();
        for (index, team) in self.teams.iter_mut().enumerate() {
            let fits = |id: &String| {
                roles
                    .iter()
                    .find(|r| &r.id == id)
                    .map_or(0, |r| r.fits(words))
            };
            // When no role fits, the lead stays who it is.
            let Some(best) = team
                .members
                .iter()
                .enumerate()
                .max_by_key(|(position, id)| (fits(id), std::cmp::Reverse(*position)))
                .filter(|(_, id)| fits(id) > 0)
                .map(|(_, id)| id.clone())
            else {
                continue;
            };
            if best != team.lead {
                let name = roles
                    .iter()
                    .find(|r| r.id == best)
                    .map_or(best.clone(), |r| r.name.clone());
                changed.push(format!(
                    "{name} ({best}) leads team {} for the {phase} phase: its role fits {asks}",
                    index + 1
                ));
                team.lead = best;
            }
        }
        changed
    }
}

/// The root's plan: one sub-question for each of the `teams`, in team order.
fn plan_reply(teams: usize) -> Checked {
    let schema = json!({
        "type": "object",
        "properties": {
            "sub_questions": {
                "type": "array", "minItems": teams, "maxItems": teams,
                "items": {"type": "string"},
                "description": "One sub-question per team, in team order."
            }
        },
        "required": ["sub_questions"]
    });
    Checked::new("moot_plan", schema, validate_plan, None)
}

fn validate_plan(reply: &Value) -> Result<Value, Unusable> {
    let questions = reply
        .get("sub_questions")
        .and_then(Value::as_array)
        .ok_or("`sub_questions` must be a list of strings, one per team")?;
    if questions.is_empty()
        || questions
            .iter()
            .any(|q| q.as_str().is_none_or(|s| s.trim().is_empty()))
    {
        return Err("`sub_questions` needs one non-empty question per team".into());
    }
    Ok(reply.clone())
}

fn team_names(tree: &Tree) -> String {
    tree.teams
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "Team {}: {} (lead {})\n",
                i + 1,
                t.members.join(", "),
                t.lead
            )
        })
        .collect()
}

/// What every team's lead is asked at once: the request's name, its round and phase, the lead's
/// task, and the longest reply.
struct LeadsAsked {
    name: &'static str,
    key: (u32, Phase),
    task: &'static str,
    most_tokens: u32,
}

/// One prose speech per team, by its lead, side by side: who the lead is and its task, then
/// the prompt `prompt` writes for its team.
fn lead_speeches(
    tree: &Tree,
    asked: &LeadsAsked,
    seat_names: &dyn Fn(&str) -> String,
    deadline: Instant,
    prompt: impl Fn(&Team) -> String,
) -> Vec<crate::engine::Speech> {
    let (round, phase) = asked.key;
    tree.teams
        .iter()
        .enumerate()
        .map(|(i, team)| {
            let lead = seat_names(&team.lead);
            let system = format!(
                "You are {lead}, the lead of team {} in a debate arranged as a tree. {} {DATA_RULE}",
                i + 1,
                asked.task
            );
            let key = TurnKey::new(round, phase, team.lead.clone());
            let (prompt, most) = (prompt(team), Some(asked.most_tokens));
            kit::prose_speech(key, asked.name, system, prompt, most, deadline)
        })
        .collect()
}

/// Gives each team its sub-question: the root's plan (cpde), or the leads' proposals, one per
/// team side by side, reconciled by the root (dpde). Journaled as `plan` turns.
pub async fn plan(
    ctx: &Context,
    tree: &mut Tree,
    planning: Planning,
    topic: &str,
    seat_names: &dyn Fn(&str) -> String,
    deadline: Instant,
) -> Result<(), EngineError> {
    let teams = tree.teams.len();
    let mut proposals = String::new();
    if planning == Planning::Dpde {
        let asked = LeadsAsked {
            name: "moot_lead_plan",
            key: (0, Phase::Plan),
            task: "You plan your team's part.",
            most_tokens: 200,
        };
        let speeches = lead_speeches(tree, &asked, seat_names, deadline, |team| {
            let members: Vec<String> = team.members.iter().map(|m| seat_names(m)).collect();
            format!(
                "Topic: {topic}\nYour team: {}\n\nPropose, in one sentence, the sub-question \
                 your team should answer.",
                members.join(", ")
            )
        });
        let turns = ctx.speak_all(speeches).await?;
        for (i, turn) in turns.iter().enumerate() {
            proposals.push_str(&format!(
                "Team {} proposes: {}\n",
                i + 1,
                if turn.status == TurnStatus::Ok {
                    fenced(&turn.seat, "proposal", &turn.content)
                } else {
                    "(no proposal)".to_string()
                }
            ));
        }
    }
    let ask = match planning {
        Planning::Cpde => {
            "Split the topic into one sub-question per team, each team's concern its \
                           own, together covering the topic."
                .to_string()
        }
        Planning::Dpde => format!(
            "Each lead proposed its team's sub-question:\n{proposals}\nReconcile them: one \
             sub-question per team, without overlaps or gaps, keeping each team's proposal where \
             it holds."
        ),
    };
    let turn = ctx
        .speak(kit::ask(
            TurnKey::new(0, Phase::Plan, MODERATOR),
            format!(
                "You are the moderator at the root of a debate arranged as a tree of teams. {DATA_RULE}"
            ),
            format!("Topic: {topic}\n\nThe teams:\n{}\n{ask}", team_names(tree)),
            plan_reply(teams),
            kit::Limits::new(400, deadline),
        ))
        .await?;
    let questions: Vec<String> = turn
        .data
        .as_ref()
        .and_then(|d| d.get("sub_questions"))
        .and_then(Value::as_array)
        .map(|q| {
            q.iter()
                .filter_map(|s| s.as_str().map(|s| s.trim().to_string()))
                .collect()
        })
        .unwrap_or_default();
    for (i, team) in tree.teams.iter_mut().enumerate() {
        team.question = questions
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("Argue the topic from your team's concerns: {topic}"));
    }
    Ok(())
}

/// The round's escalations: each lead summarises its team's turns (teams side by side), then
/// the root summarises the escalations for the leads. Returns (team summaries by lead, root
/// summary); a lead whose summary failed is left out, for the caller to hand over.
pub async fn escalate(
    ctx: &Context,
    tree: &Tree,
    round: u32,
    topic: &str,
    team_turns: &dyn Fn(&[String]) -> String,
    seat_names: &dyn Fn(&str) -> String,
    deadline: Instant,
) -> Result<(Vec<(String, String)>, String), EngineError> {
    let asked = LeadsAsked {
        name: "moot_lead_summary",
        key: (round, Phase::Digest),
        task: "You summarise your team's round fairly, for your team and the root.",
        most_tokens: 400,
    };
    let speeches = lead_speeches(tree, &asked, seat_names, deadline, |team| {
        format!(
            "Topic: {topic}\nYour team's sub-question: {}\nRound {round}, your team's turns:{}\n\n\
             Summarise each member's argument in one line, naming the member, then say in \
             one line what the team should tell the root.",
            team.question,
            team_turns(&team.members)
        )
    });
    let turns = ctx.speak_all(speeches).await?;
    let summaries: Vec<(String, String)> = turns
        .iter()
        .filter(|t| t.status == TurnStatus::Ok)
        .map(|t| (t.seat.clone(), t.content.clone()))
        .collect();
    let escalations: String = summaries
        .iter()
        .map(|(lead, text)| format!("\n{}", fenced(lead, "escalation", text)))
        .collect();
    let root = ctx
        .speak(kit::prose_speech(
            TurnKey::new(round, Phase::Digest, MODERATOR),
            "moot_root_summary",
            format!(
                "You are the moderator at the root of a debate arranged as a tree. You summarise \
                 the teams' escalations fairly and take no side. {DATA_RULE}"
            ),
            format!(
                "Topic: {topic}\nRound {round}, the leads' escalations:{escalations}\n\nSummarise \
                 where the teams stand in a few lines, for the leads to read."
            ),
            Some(400),
            deadline,
        ))
        .await?;
    Ok((summaries, root.content))
}

/// What a tree's rounds escalated: each lead's summary (round, lead, text) and the root's.
#[derive(Debug, Default)]
pub struct Escalations {
    pub leads: Vec<(u32, String, String)>,
    pub roots: Vec<(u32, String)>,
}

/// Keeps a round's escalations, then hands over every team whose lead failed this round (it
/// did not speak, or wrote no summary) and tells the faces; returns a note per hand-over for
/// the record.
pub fn settle_round(
    ctx: &Context,
    tree: &mut Tree,
    escalations: &mut Escalations,
    round: u32,
    (summaries, root): (Vec<(String, String)>, String),
    lead_spoke: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let failed: Vec<String> = tree
        .teams
        .iter()
        .map(|t| t.lead.clone())
        .filter(|lead| !summaries.iter().any(|(l, _)| l == lead) || !lead_spoke(lead))
        .collect();
    for (lead, text) in summaries {
        escalations.leads.push((round, lead, text));
    }
    escalations.roots.push((round, root));
    let mut notes = Vec::new();
    for lead in &failed {
        if !tree.is_lead(lead) {
            continue;
        }
        if let Some(heir) = tree.hand_over(lead) {
            let note = format!(
                "{lead} failed as a lead in round {round}; its team was handed to {heir}'s team."
            );
            ctx.emit(Event::Notice {
                message: note.clone(),
            });
            notes.push(note);
            announce(ctx, tree);
        }
    }
    notes
}

/// What a seat of a tree is told beyond the turns it sees: its team and sub-question, and its
/// lead's summaries of the team (a leaf) or the root's summaries of every escalation (a lead).
/// `escalations` are (round, lead, summary); `roots` (round, summary).
pub fn told(
    tree: &Tree,
    viewer: &str,
    escalations: &Escalations,
    names: &dyn Fn(&str) -> String,
) -> String {
    let roots = &escalations.roots;
    use std::fmt::Write as _;
    let Some(team) = tree.team_of(viewer).map(|i| &tree.teams[i]) else {
        return String::new();
    };
    let mut out = format!(
        "\nThe debate is a tree. Your team: {}; its lead: {}. Your team's sub-question: {}\n",
        team.members
            .iter()
            .map(|m| names(m))
            .collect::<Vec<_>>()
            .join(", "),
        names(&team.lead),
        team.question
    );
    if tree.is_lead(viewer) {
        if !roots.is_empty() {
            out.push_str("The root's summaries of every team's escalation:\n");
            for (round, text) in roots {
                let _ = writeln!(out, "Round {round}: {}", fenced(MODERATOR, "summary", text));
            }
        }
    } else {
        let mine: Vec<&(u32, String, String)> = escalations
            .leads
            .iter()
            .filter(|(_, lead, _)| team.members.contains(lead))
            .collect();
        if mine.is_empty() {
            out.push_str(
                "You see your team only through your lead's summaries; there is none yet.\n",
            );
        } else {
            out.push_str("Your lead's summaries of your team:\n");
            for (round, lead, text) in mine {
                let _ = writeln!(out, "Round {round}: {}", fenced(lead, "summary", text));
            }
        }
    }
    out
}

/// Sets each team's lead for `phase` (when built from roles: `roles` is empty otherwise) and
/// says who leads now and why, as a notice journaled with the debate and a line for the
/// record; the tree is announced again when a lead changed and `announce_change` asks.
pub fn lead_phase(
    ctx: &Context,
    tree: &mut Tree,
    phase: Phase,
    roles: &[Role],
    announce_change: bool,
) -> Vec<String> {
    if roles.is_empty() {
        return Vec::new();
    }
    let changed = tree.lead_for(phase, roles);
    for line in &changed {
        ctx.emit(Event::Notice {
            message: format!("tree: {line}"),
        });
    }
    if announce_change && !changed.is_empty() {
        announce(ctx, tree);
    }
    changed
}

/// Says how the tree plans, and why when `--planning auto` chose it, as a journaled notice;
/// the line for the record.
pub fn planned(ctx: &Context, planning: Planning, reason: Option<&str>) -> Option<String> {
    let name = match planning {
        Planning::Cpde => "cpde",
        Planning::Dpde => "dpde",
    };
    let line = match reason {
        Some(reason) => format!("Planning: {name}, chosen automatically: {reason}."),
        None => format!("Planning: {name}, as --planning asked."),
    };
    ctx.emit(Event::Notice {
        message: line.clone(),
    });
    Some(line)
}

/// Announces the tree (again after a hand-over) for the workbench's diagram.
pub fn announce(ctx: &Context, tree: &Tree) {
    ctx.emit(Event::Topology {
        topology: "tree".into(),
        sees: tree.diagram(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn seats_group_into_teams_led_by_their_first_seat() {
        assert!(
            Tree::of(&ids(&["A"]))
                .unwrap_err()
                .to_string()
                .contains("at least two seats")
        );
        let two = Tree::of(&ids(&["A", "B"])).unwrap();
        assert_eq!(two.teams.len(), 1);
        let four = Tree::of(&ids(&["A", "B", "C", "D"])).unwrap();
        let shape: Vec<(String, Vec<String>)> = four
            .teams
            .iter()
            .map(|t| (t.lead.clone(), t.members.clone()))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("A".to_string(), ids(&["A", "B"])),
                ("C".to_string(), ids(&["C", "D"]))
            ]
        );
        let seven = Tree::of(&ids(&["A", "B", "C", "D", "E", "F", "G"])).unwrap();
        assert_eq!(
            seven
                .teams
                .iter()
                .map(|t| t.members.len())
                .collect::<Vec<_>>(),
            vec![3, 2, 2]
        );
        assert_eq!(Tree::of(&ids(&["A", "B", "C"])).unwrap().teams.len(), 2);
    }

    #[test]
    fn a_leaf_sees_only_itself_and_a_lead_its_team() {
        let tree = Tree::of(&ids(&["A", "B", "C", "D"])).unwrap();
        assert!(tree.sees("B", "B"));
        assert!(
            !tree.sees("B", "A"),
            "a leaf sees its lead through summaries only"
        );
        assert!(tree.sees("A", "B"));
        assert!(
            !tree.sees("A", "C"),
            "a lead sees other teams through the root only"
        );
        assert!(!tree.sees("C", "B"));
        let diagram = tree.diagram();
        assert_eq!(
            diagram[1],
            ("B".to_string(), vec!["A (lead's summary)".to_string()])
        );
        assert_eq!(
            diagram[0],
            (
                "A".to_string(),
                vec!["B".to_string(), "moderator (root)".to_string()]
            )
        );
    }

    #[test]
    fn a_failed_lead_hands_its_team_to_a_sibling() {
        let mut tree = Tree::of(&ids(&["A", "B", "C", "D"])).unwrap();
        tree.teams[0].question = "cost?".into();
        tree.teams[1].question = "risk?".into();
        assert_eq!(tree.hand_over("A").as_deref(), Some("C"));
        assert_eq!(tree.teams.len(), 1);
        assert_eq!(tree.teams[0].members, ids(&["C", "D", "A", "B"]));
        assert!(tree.sees("C", "B"), "the heir now leads B");
        assert_eq!(tree.teams[0].question, "risk? Also: cost?");
        assert_eq!(tree.hand_over("C"), None, "no sibling left");
        assert_eq!(tree.hand_over("B"), None, "not a lead");
        assert_eq!(
            Planning::choose(Some("dpde"), None).unwrap(),
            (Planning::Dpde, None)
        );
        assert!(
            Planning::choose(Some("x"), None)
                .unwrap_err()
                .to_string()
                .contains("auto")
        );
    }

    #[test]
    fn auto_planning_reads_one_deliverable_as_cpde_and_independent_parts_as_dpde() {
        let (one, why) = Planning::auto("Should we use Redis or PostgreSQL for caching?");
        assert_eq!(one, Planning::Cpde);
        assert!(why.contains("one deliverable"), "{why}");
        let (many, why) = Planning::auto(
            "Pick a session store for the API; choose a queue for the billing jobs; decide how we roll out the new schema",
        );
        assert_eq!(many, Planning::Dpde);
        assert!(
            why.contains("3 independent parts")
                && why.contains("“choose a queue for the billing jobs”"),
            "{why}"
        );
        let (listed, _) = Planning::auto(
            "Plan the migration:\n1. Move the sessions to the new cluster\n2. Rewrite the billing export job\n",
        );
        assert_eq!(listed, Planning::Dpde);
        // Short fragments are not parts of their own.
        assert_eq!(Planning::auto("Redis; or not?").0, Planning::Cpde);
        assert_eq!(
            Planning::choose(None, Some("a; b"))
                .unwrap()
                .1
                .as_deref()
                .map(|r| r.contains("one deliverable")),
            Some(true)
        );
    }

    fn seat(id: &str, perspective: &str) -> crate::debate::Seat {
        crate::debate::Seat {
            id: id.into(),
            perspective: perspective.into(),
            priorities: vec![],
            trade_offs: String::new(),
            stance: String::new(),
            provider: None,
            model: None,
        }
    }

    #[test]
    fn teams_group_by_role_affinity_and_each_phase_is_led_by_the_role_that_fits() {
        let catalog = crate::catalog::catalog(&[]);
        let roles: Vec<Role> = [
            ("A", "Performance Advocate"),
            ("B", "Simplicity Advocate"),
            ("C", "Security Advocate"),
            ("D", "Operational Simplicity"),
            ("E", "User Experience"),
            ("F", "Future Flexibility"),
        ]
        .iter()
        .map(|(id, name)| Role::of(&seat(id, name), &catalog))
        .collect();
        let mut tree = Tree::by_roles(&roles).unwrap();
        assert_eq!(tree.teams.len(), 2);
        assert_eq!(tree.teams[0].members.len(), 3);
        // No team holds two roles that pull against each other where it could avoid it.
        for team in &tree.teams {
            for a in &team.members {
                for b in &team.members {
                    let (a, b) = (
                        roles.iter().find(|r| &r.id == a).unwrap(),
                        roles.iter().find(|r| &r.id == b).unwrap(),
                    );
                    assert!(
                        a.affinity(b) > -100,
                        "{} with {} in {tree:?}",
                        a.name,
                        b.name
                    );
                }
            }
        }
        assert_ne!(
            tree,
            Tree::of(&["A", "B", "C", "D", "E", "F"].map(String::from)).unwrap()
        );
        // Rebuttals: the Security seat leads its team; closing: the simplicity roles.
        let changed = tree.lead_for(Phase::Rebuttal, &roles);
        let security_team = tree.team_of("C").unwrap();
        assert_eq!(tree.teams[security_team].lead, "C");
        assert!(
            changed
                .iter()
                .any(|l| l.contains("Security Advocate (C) leads team")
                    && l.contains("finding the weak points")),
            "{changed:?}"
        );
        tree.lead_for(Phase::Closing, &roles);
        let closing_leads: Vec<&str> = tree.teams.iter().map(|t| t.lead.as_str()).collect();
        assert!(
            closing_leads.iter().any(|l| ["B", "D"].contains(l)),
            "{closing_leads:?}"
        );
        // With nothing known of the roles, seat order and the first seat, as before.
        let unknown: Vec<Role> = ["P", "Q", "R"]
            .iter()
            .map(|id| Role::of(&seat(id, &format!("Seat {id}")), &catalog))
            .collect();
        let mut plain = Tree::by_roles(&unknown).unwrap();
        assert_eq!(plain, Tree::of(&["P", "Q", "R"].map(String::from)).unwrap());
        assert!(plain.lead_for(Phase::Rebuttal, &unknown).is_empty());
    }
}
