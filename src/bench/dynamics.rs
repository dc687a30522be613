//! What the debate arm's later rounds did to its seats' answers ("debate or vote?"): the
//! majority vote of its own first round (a control that costs no call), answers that changed
//! from right to wrong and from wrong to right, and changes to the answer the other seats held
//! in the round before (conformity), and how often the others came to hold the first seat's
//! first answer (first-speaker anchoring).

use super::arms::{ArmResult, majority};
use super::data::matches;
use serde::Serialize;

/// A vote's tally over a run, with its interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub correct: usize,
    pub total: usize,
    pub accuracy: f64,
    /// The Wilson score interval at 95 %.
    pub ci_low: f64,
    pub ci_high: f64,
}

/// The debate arm's rounds, over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Dynamics {
    /// The majority of the debate's first round on each problem: what the debate would have
    /// answered had it voted at once.
    pub first_round_vote: Tally,
    /// A seat's answer in one round beside its answer in the next: how many were compared.
    pub transitions: usize,
    /// How many of those changed the answer.
    pub changed: usize,
    pub right_to_wrong: usize,
    pub wrong_to_right: usize,
    /// Changes to the answer more than half of the other seats gave in the round before.
    pub to_majority: usize,
    /// First-speaker anchoring: how often the other seats held the first seat's first answer.
    pub first_speaker: Anchoring,
}

/// Agreement with the first answer given (the first seat's, first in every listing the others
/// read): in the first round, before anyone had read it (what chance and the question give),
/// beside the last round.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Anchoring {
    /// Other seats' answers compared in each of the two rounds.
    pub compared: usize,
    pub agreed_first_round: usize,
    pub agreed_last_round: usize,
}

/// The dynamics of the debate arm's results, each beside its problem's expected answer.
pub fn of_debates<'a>(debates: impl IntoIterator<Item = (&'a ArmResult, &'a str)>) -> Dynamics {
    let mut dynamics = Dynamics::default();
    let right = |answer: &Option<String>, expected: &str| {
        answer.as_deref().is_some_and(|a| matches(a, expected))
    };
    for (result, expected) in debates {
        let Some(first) = result.rounds.first() else {
            continue;
        };
        let answers: Vec<Option<String>> = first.iter().map(|c| c.answer.clone()).collect();
        dynamics.first_round_vote.total += 1;
        if right(&majority(&answers), expected) {
            dynamics.first_round_vote.correct += 1;
        }
        if let (Some(lead), Some(last)) = (
            first.first().and_then(|c| c.answer.as_deref()),
            result.rounds.last().filter(|_| result.rounds.len() > 1),
        ) {
            let holds =
                |call: &super::arms::Call| call.answer.as_deref().is_some_and(|a| matches(a, lead));
            let anchor = &mut dynamics.first_speaker;
            anchor.compared += first
                .len()
                .saturating_sub(1)
                .min(last.len().saturating_sub(1));
            anchor.agreed_first_round += first.iter().skip(1).filter(|c| holds(c)).count();
            anchor.agreed_last_round += last.iter().skip(1).filter(|c| holds(c)).count();
        }
        for pair in result.rounds.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            for (seat, (was, now)) in before.iter().zip(after).enumerate() {
                dynamics.transitions += 1;
                let same = match (&was.answer, &now.answer) {
                    (Some(a), Some(b)) => matches(a, b),
                    (None, None) => true,
                    _ => false,
                };
                if same {
                    continue;
                }
                dynamics.changed += 1;
                match (right(&was.answer, expected), right(&now.answer, expected)) {
                    (true, false) => dynamics.right_to_wrong += 1,
                    (false, true) => dynamics.wrong_to_right += 1,
                    _ => {}
                }
                let others: Vec<&str> = before
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != seat)
                    .filter_map(|(_, call)| call.answer.as_deref())
                    .collect();
                // More than half of the other seats held the new answer.
                if let Some(now) = &now.answer
                    && others.iter().filter(|held| matches(held, now)).count() * 2
                        > before.len() - 1
                {
                    dynamics.to_majority += 1;
                }
            }
        }
    }
    let vote = &mut dynamics.first_round_vote;
    (vote.ci_low, vote.ci_high) = super::wilson(vote.correct, vote.total);
    vote.accuracy = if vote.total == 0 {
        0.0
    } else {
        vote.correct as f64 / vote.total as f64
    };
    dynamics
}

impl Dynamics {
    /// The section the bench report shows under its table, headed `title`, of the arm it
    /// calls `debate` ("debate", "mixed debate").
    pub fn to_markdown(&self, title: &str, debate: &str) -> String {
        let vote = &self.first_round_vote;
        let share = |n: usize| {
            if self.transitions == 0 {
                "–".to_string()
            } else {
                format!("{:.1} %", n as f64 * 100.0 / self.transitions as f64)
            }
        };
        format!(
            "\n## {title}\n\nThe majority of the {debate}'s own first round (no extra call): \
             {}/{} = {:.1} % ({:.1}–{:.1} %). What the later rounds did to the {} answers they \
             revisited:\n\n| changed | right → wrong | wrong → right | to the others' majority |\n\
             |---|---|---|---|\n| {} ({}) | {} ({}) | {} ({}) | {} ({}) |\n",
            vote.correct,
            vote.total,
            vote.accuracy * 100.0,
            vote.ci_low * 100.0,
            vote.ci_high * 100.0,
            self.transitions,
            self.changed,
            share(self.changed),
            self.right_to_wrong,
            share(self.right_to_wrong),
            self.wrong_to_right,
            share(self.wrong_to_right),
            self.to_majority,
            share(self.to_majority),
        ) + &self.first_speaker.to_markdown()
    }
}

impl Anchoring {
    fn to_markdown(&self) -> String {
        if self.compared == 0 {
            return String::new();
        }
        let share = |n: usize| n as f64 * 100.0 / self.compared as f64;
        format!(
            "\nFirst-speaker anchoring: the other seats held the first seat's first answer in \
             {}/{} = {:.1} % of their first-round answers (given before any seat read it) and \
             {}/{} = {:.1} % of their last-round answers.\n",
            self.agreed_first_round,
            self.compared,
            share(self.agreed_first_round),
            self.agreed_last_round,
            self.compared,
            share(self.agreed_last_round),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::arms::Call;

    fn round(answers: &[&str]) -> Vec<Call> {
        answers
            .iter()
            .map(|a| Call {
                reply: String::new(),
                answer: (!a.is_empty()).then(|| a.to_string()),
                tokens: 10,
                latency_ms: 1,
            })
            .collect()
    }

    fn debate(rounds: &[&[&str]]) -> ArmResult {
        ArmResult {
            answer: None,
            correct: false,
            tokens: 0,
            wall_ms: 0,
            critical_ms: 0,
            rounds: rounds.iter().map(|r| round(r)).collect(),
            check: None,
            samples: None,
        }
    }

    /// Each kind of change counted where it happens, against answers known in advance.
    #[test]
    fn flips_and_conformity_are_counted_seat_by_seat() {
        // Expected 7. Round 1: A right, B wrong (5), C wrong (5): the vote is wrong.
        // Round 2: A follows the others to 5 (right → wrong, to their majority), B finds 7
        // (wrong → right, which only one of the others held), C keeps 5.
        let first = debate(&[&["7", "5", "5"], &["5", "7", "5"]]);
        // Expected 3: everyone right and unchanged; the vote is right.
        let second = debate(&[&["3", "3", "3"], &["3", "3.0", "3"]]);
        let dynamics = of_debates([(&first, "7"), (&second, "3")]);
        assert_eq!(dynamics.first_round_vote.correct, 1);
        assert_eq!(dynamics.first_round_vote.total, 2);
        assert_eq!(dynamics.transitions, 6);
        assert_eq!(dynamics.changed, 2);
        assert_eq!(dynamics.right_to_wrong, 1);
        assert_eq!(dynamics.wrong_to_right, 1);
        assert_eq!(dynamics.to_majority, 1, "A to 5, which B and C held");
        // The first seat's first answers, 7 and 3: held by 0 + 2 others in round 1, by
        // 1 (B's 7) + 2 in the last.
        assert_eq!(
            dynamics.first_speaker,
            Anchoring {
                compared: 4,
                agreed_first_round: 2,
                agreed_last_round: 3
            }
        );
        assert!(
            dynamics.to_markdown("Debate or vote", "debate").contains("2/4 = 50.0 % of their first-round answers (given before any seat read it) and 3/4 = 75.0 % of their last-round answers"),
            "{}",
            dynamics.to_markdown("Debate or vote", "debate")
        );
        let shown = dynamics.to_markdown("Debate or vote", "debate");
        assert!(shown.contains("1/2 = 50.0 %"), "{shown}");
        assert!(
            shown.contains("| 2 (33.3 %) | 1 (16.7 %) | 1 (16.7 %) | 1 (16.7 %) |"),
            "{shown}"
        );
    }

    #[test]
    fn a_debate_of_one_round_changes_nothing() {
        let dynamics = of_debates([(&debate(&[&["4", "", "4"]]), "4")]);
        assert_eq!(dynamics.first_round_vote.correct, 1);
        assert_eq!((dynamics.transitions, dynamics.changed), (0, 0));
        assert!(
            dynamics
                .to_markdown("Debate or vote", "debate")
                .contains("| 0 (–) |")
        );
        assert_eq!(
            dynamics.first_speaker,
            Anchoring::default(),
            "no later round to compare"
        );
        assert!(
            !dynamics
                .to_markdown("Debate or vote", "debate")
                .contains("anchoring")
        );
    }
}
