//! Convergence judgement and the synthesis document, from the moderator's validated replies
//! and the derived views. Pure functions: the same turns always give the same verdict.

use crate::argue::{ArgumentGraph, CommitmentStore};
use crate::debate::{
    Act, Confidence, ConvergenceSignal, PerspectiveSummary, Seat, Synthesis, Turn, today,
};
use serde_json::Value;

/// Facts measured from one round's moves, for the moderator's evaluation.
pub fn round_signals(turns: &[Turn], graph: &ArgumentGraph, seats: &[Seat]) -> Vec<String> {
    let mut signals = Vec::new();
    for turn in turns {
        for mv in &turn.moves {
            match mv.act {
                Act::Concede => signals.push(format!(
                    "Seat {} conceded {}",
                    turn.seat,
                    if mv.answers.is_empty() {
                        mv.text.clone()
                    } else {
                        mv.answers.join(", ")
                    }
                )),
                Act::Retract => signals.push(format!("Seat {} retracted {}", turn.seat, mv.text)),
                _ => {}
            }
        }
    }
    for seat in seats {
        let scores: Vec<f64> = graph
            .arguments
            .iter()
            .filter(|a| a.seat == seat.id && !a.retracted)
            .map(|a| a.score)
            .collect();
        if !scores.is_empty() {
            signals.push(format!(
                "Seat {} holds {} argument(s), mean score {:.2}",
                seat.id,
                scores.len(),
                scores.iter().sum::<f64>() / scores.len() as f64
            ));
        }
    }
    signals
}

/// Decides whether the debate goes on. Returns the decision (continue, clarify, conclude) and,
/// when concluding, why.
#[allow(clippy::too_many_arguments)]
pub fn judge(
    round: u32,
    max_rounds: u32,
    assessment: &str,
    decision: &str,
    agreement: bool,
    leader: Option<&str>,
    everyone_repeats: bool,
    active_seats: usize,
) -> (&'static str, ConvergenceSignal) {
    if active_seats == 0 {
        return ("conclude", ConvergenceSignal::NoSeatsLeft);
    }
    if agreement {
        return ("conclude", ConvergenceSignal::Agreement);
    }
    if round >= 2 && (everyone_repeats || (assessment == "stagnating" && decision == "conclude")) {
        return ("conclude", ConvergenceSignal::Stagnation);
    }
    if decision == "conclude" {
        let signal = match (assessment, leader) {
            (_, Some(_)) => ConvergenceSignal::ClearWinner,
            ("stagnating", None) => ConvergenceSignal::Stagnation,
            _ => ConvergenceSignal::Agreement,
        };
        return ("conclude", signal);
    }
    if round >= max_rounds {
        return ("conclude", ConvergenceSignal::MaxRounds);
    }
    if decision == "clarify" {
        return ("clarify", ConvergenceSignal::None);
    }
    ("continue", ConvergenceSignal::None)
}

pub fn describe_signal(signal: ConvergenceSignal) -> &'static str {
    match signal {
        ConvergenceSignal::None => "it is still open",
        ConvergenceSignal::Agreement => "the perspectives reached agreement",
        ConvergenceSignal::Stagnation => "the arguments stagnated",
        ConvergenceSignal::ClearWinner => "one perspective clearly prevailed",
        ConvergenceSignal::MaxRounds => {
            "the maximum number of rounds was reached without convergence"
        }
        ConvergenceSignal::HumanEnded => "the human ended it at a checkpoint",
        ConvergenceSignal::TimeLimit => "the total time limit was reached",
        ConvergenceSignal::NoSeatsLeft => "no seat was left able to argue",
    }
}

/// Every concession in the debate, as text for prompts and notes.
pub fn concessions(turns: &[Turn], graph: &ArgumentGraph) -> Vec<String> {
    turns
        .iter()
        .flat_map(|t| t.moves.iter().map(move |m| (t, m)))
        .filter(|(_, m)| m.act == Act::Concede)
        .map(|(turn, mv)| {
            let target = mv
                .answers
                .iter()
                .filter_map(|id| graph.get(id).map(|a| format!("[{}] {}", a.id, a.text)))
                .collect::<Vec<_>>()
                .join(", ");
            let what = if target.is_empty() {
                mv.text.clone()
            } else {
                target
            };
            format!("Seat {} conceded {}", turn.seat, what)
        })
        .collect()
}

pub struct SynthesisParts<'a> {
    pub debate_id: &'a str,
    pub question: &'a str,
    pub seats: &'a [Seat],
    pub rounds: u32,
    /// The moderator's validated synthesis, if it gave one.
    pub data: Option<&'a Value>,
    pub graph: &'a ArgumentGraph,
    pub stores: &'a [CommitmentStore],
    pub signal: ConvergenceSignal,
    pub positions: &'a [(String, String)],
    pub notes: Vec<String>,
    pub provider: &'a str,
}

/// The decision document: the moderator's synthesis where valid, completed from the derived
/// views; confidence capped at Low when max rounds ended the debate without convergence.
pub fn build_synthesis(parts: SynthesisParts<'_>) -> Synthesis {
    let data = parts.data;
    let text = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let list =
        |key: &str| crate::protocol::moderator::string_list(data.and_then(|d| d.get(key)), 8);
    let mut notes = parts.notes;

    let perspectives_considered: Vec<PerspectiveSummary> = parts
        .seats
        .iter()
        .map(|seat| {
            let from_model = data
                .and_then(|d| d.get("perspectives"))
                .and_then(Value::as_array)
                .and_then(|items| {
                    items.iter().find(|p| {
                        p.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| n.eq_ignore_ascii_case(&seat.perspective))
                    })
                });
            let key_arguments = from_model
                .map(|p| crate::protocol::moderator::string_list(p.get("key_arguments"), 6))
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| top_arguments(parts.graph, &seat.id));
            let trade_offs_accepted = from_model
                .map(|p| crate::protocol::moderator::string_list(p.get("trade_offs_accepted"), 4))
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| vec![seat.trade_offs.clone()]);
            PerspectiveSummary {
                name: seat.perspective.clone(),
                key_arguments,
                trade_offs_accepted,
            }
        })
        .collect();

    let mut agreements = list("agreements");
    if agreements.is_empty() {
        agreements = shared_commitments(parts.stores, parts.seats.len());
    }
    let mut tensions = list("tensions");
    if tensions.is_empty() {
        tensions = cross_seat_attacks(parts.graph);
    }
    let (recommendation, mut confidence) = match (text("recommendation"), data) {
        (Some(recommendation), Some(d)) => (
            recommendation,
            d.get("confidence")
                .and_then(Value::as_str)
                .and_then(Confidence::parse)
                .unwrap_or(Confidence::Low),
        ),
        _ => {
            notes.push("The moderator's synthesis was unusable; this one is derived from the argument scores.".into());
            (
                derived_recommendation(parts.graph, parts.seats, parts.positions),
                Confidence::Low,
            )
        }
    };
    if parts.signal == ConvergenceSignal::MaxRounds {
        confidence = confidence.min(Confidence::Low);
        notes.push(
            "The debate hit its round limit without converging, so confidence is Low.".into(),
        );
    }
    let mut caveats = list("caveats");
    if caveats.is_empty() && parts.signal == ConvergenceSignal::MaxRounds {
        caveats.push(
            "The perspectives did not converge; revisit if the open tensions are resolved.".into(),
        );
    }
    notes.push(format!("Ended because {}.", describe_signal(parts.signal)));
    notes.push(format!("Argued by {}.", parts.provider));
    Synthesis {
        title: text("title").unwrap_or_else(|| title_from(parts.question)),
        date: today(),
        debate_id: parts.debate_id.to_string(),
        rounds: parts.rounds,
        perspectives: parts.seats.iter().map(|s| s.perspective.clone()).collect(),
        question: parts.question.to_string(),
        perspectives_considered,
        agreements,
        tensions,
        recommendation,
        confidence,
        caveats,
        dissent: text("dissent").unwrap_or_default(),
        action_items: list("action_items"),
        notes,
    }
}

fn top_arguments(graph: &ArgumentGraph, seat: &str) -> Vec<String> {
    let mut own: Vec<_> = graph
        .arguments
        .iter()
        .filter(|a| a.seat == seat && !a.retracted)
        .collect();
    own.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    own.into_iter()
        .take(3)
        .map(|a| format!("{} [{}]", a.text, a.id))
        .collect()
}

/// Propositions every seat is committed to.
fn shared_commitments(stores: &[CommitmentStore], seats: usize) -> Vec<String> {
    let Some(first) = stores.first() else {
        return Vec::new();
    };
    if stores.len() < seats || seats < 2 {
        return Vec::new();
    }
    first
        .commitments
        .iter()
        .filter(|c| {
            let key = crate::argue::commitments::normalize(&c.text);
            stores[1..].iter().all(|s| {
                s.commitments
                    .iter()
                    .any(|o| crate::argue::commitments::normalize(&o.text) == key)
            })
        })
        .map(|c| c.text.clone())
        .collect()
}

fn cross_seat_attacks(graph: &ArgumentGraph) -> Vec<String> {
    graph
        .relations
        .iter()
        .filter(|e| e.kind != crate::debate::Relation::Support)
        .filter_map(|e| {
            let from = graph.get(&e.from)?;
            let to = graph.get(&e.to)?;
            (from.seat != to.seat).then(|| {
                format!(
                    "Seat {} [{}] {}s seat {} [{}]: {}",
                    from.seat,
                    from.id,
                    e.kind.as_str(),
                    to.seat,
                    to.id,
                    to.text
                )
            })
        })
        .take(5)
        .collect()
}

fn derived_recommendation(
    graph: &ArgumentGraph,
    seats: &[Seat],
    positions: &[(String, String)],
) -> String {
    let mean = |seat: &str| {
        let scores: Vec<f64> = graph
            .arguments
            .iter()
            .filter(|a| a.seat == seat && !a.retracted)
            .map(|a| a.score)
            .collect();
        if scores.is_empty() {
            0.0
        } else {
            scores.iter().sum::<f64>() / scores.len() as f64
        }
    };
    let leader = seats.iter().max_by(|a, b| {
        mean(&a.id)
            .partial_cmp(&mean(&b.id))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    match leader {
        Some(seat) => {
            let position = positions
                .iter()
                .find(|(id, _)| id == &seat.id)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| format!("follow the {} perspective", seat.perspective));
            format!(
                "{position} ({} held the strongest surviving arguments, mean score {:.2}.)",
                seat.perspective,
                mean(&seat.id)
            )
        }
        None => "No perspective produced arguments; no recommendation can be made.".into(),
    }
}

fn title_from(question: &str) -> String {
    let trimmed = question.trim().trim_end_matches('?').trim();
    let words: Vec<&str> = trimmed.split_whitespace().take(12).collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judging_follows_the_convergence_signals() {
        assert_eq!(
            judge(1, 5, "converging", "continue", true, None, false, 2),
            ("conclude", ConvergenceSignal::Agreement)
        );
        assert_eq!(
            judge(2, 5, "stagnating", "continue", false, None, true, 2),
            ("conclude", ConvergenceSignal::Stagnation)
        );
        // Repetition in round 1 cannot be stagnation: there is no earlier round.
        assert_eq!(
            judge(1, 5, "new_ground", "continue", false, None, true, 2),
            ("continue", ConvergenceSignal::None)
        );
        assert_eq!(
            judge(2, 5, "converging", "conclude", false, Some("A"), false, 2),
            ("conclude", ConvergenceSignal::ClearWinner)
        );
        assert_eq!(
            judge(5, 5, "new_ground", "continue", false, None, false, 2),
            ("conclude", ConvergenceSignal::MaxRounds)
        );
        assert_eq!(
            judge(2, 5, "new_ground", "clarify", false, None, false, 2),
            ("clarify", ConvergenceSignal::None)
        );
        assert_eq!(
            judge(2, 5, "new_ground", "continue", false, None, false, 0),
            ("conclude", ConvergenceSignal::NoSeatsLeft)
        );
    }

    #[test]
    fn max_rounds_caps_confidence_at_low_and_fills_from_derived_views() {
        let seats = vec![Seat {
            id: "A".into(),
            perspective: "Performance Advocate".into(),
            priorities: vec!["latency".into()],
            trade_offs: "complexity for speed".into(),
            stance: String::new(),
            provider: None,
            model: None,
        }];
        let data = serde_json::json!({"recommendation": "Use Redis", "confidence": "High", "perspectives": []});
        let synthesis = build_synthesis(SynthesisParts {
            debate_id: "DEB-x",
            question: "Redis or Postgres?",
            seats: &seats,
            rounds: 5,
            data: Some(&data),
            graph: &ArgumentGraph::default(),
            stores: &[],
            signal: ConvergenceSignal::MaxRounds,
            positions: &[],
            notes: vec![],
            provider: "scripted / demo",
        });
        assert_eq!(synthesis.confidence, Confidence::Low);
        assert_eq!(synthesis.recommendation, "Use Redis");
        assert_eq!(
            synthesis.perspectives_considered[0].trade_offs_accepted,
            vec!["complexity for speed"]
        );
        assert_eq!(synthesis.title, "Redis or Postgres");
        assert!(synthesis.notes.iter().any(|n| n.contains("round limit")));
    }
}
