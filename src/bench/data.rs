//! The problems `moot bench` asks: Du et al.'s generated arithmetic, the bundled grade-school
//! word problems, or a JSONL file; and how a reply's final answer is read and checked.

use super::BenchError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One problem and its exact answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub question: String,
    pub answer: String,
}

/// The bundled word problems, written for moot, answers checked by hand and by arithmetic.
const WORDS: &str = include_str!("../../data/bench/words.jsonl");

/// A deterministic generator (SplitMix64): the same seed asks the same problems anywhere.
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A whole number in `0..=most`.
    pub fn up_to(&mut self, most: u64) -> u64 {
        self.draw() % (most + 1)
    }
}

/// Du et al.'s arithmetic task: `a+b*c+d-e*f`, numbers 0–30, with its exact value.
pub fn arithmetic(count: usize, seed: u64) -> Vec<Problem> {
    let mut random = Seeded::new(seed);
    (0..count)
        .map(|_| {
            let [a, b, c, d, e, f] = [(); 6].map(|_| random.up_to(30) as i64);
            Problem {
                question: format!(
                    "What is the result of {a}+{b}*{c}+{d}-{e}*{f}? Make sure to state your answer at the end of the response."
                ),
                answer: (a + b * c + d - e * f).to_string(),
            }
        })
        .collect()
}

/// The bundled word problems, the first `count` (all when there are fewer).
pub fn words(count: usize) -> Result<Vec<Problem>, BenchError> {
    Ok(parse_jsonl(WORDS, "the bundled word problems")?
        .into_iter()
        .take(count)
        .collect())
}

/// A JSONL file of `{"question": …, "answer": …}` lines (the answer a string or a number).
pub fn dataset(path: &Path) -> Result<Vec<Problem>, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the dataset {}: {e}", path.display()))?;
    parse_jsonl(&text, &path.display().to_string())
}

fn parse_jsonl(text: &str, name: &str) -> Result<Vec<Problem>, BenchError> {
    let mut problems = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        // Blank lines (a trailing one, a gap between groups) hold no problem.
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "{name}:{number}:{}: not JSON ({e}); every line must be one object {{\"question\": …, \"answer\": …}}",
                e.column()
            )
        })?;
        let question = value.get("question").and_then(|q| q.as_str());
        let answer = match value.get("answer") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        match (question, answer) {
            (Some(question), Some(answer))
                if !question.trim().is_empty() && !answer.trim().is_empty() =>
            {
                problems.push(Problem {
                    question: question.trim().to_string(),
                    answer: answer.trim().to_string(),
                })
            }
            _ => {
                return Err(BenchError::Data(format!(
                    "{name}:{number}: needs a non-empty \"question\" (text) and \"answer\" (text or number)"
                )));
            }
        }
    }
    if problems.is_empty() {
        return Err(BenchError::Data(format!("{name} has no problems")));
    }
    Ok(problems)
}

/// The final answer a reply gives: the first number after its last `Answer:`, else its last
/// number; commas in numbers and a trailing period ignored. None when it names no number.
pub fn final_answer(reply: &str) -> Option<String> {
    let lower = reply.to_lowercase();
    let tail = lower.rfind("answer").map(|at| &reply[at..]);
    let numbers = |text: &str| -> Vec<String> {
        let mut found = Vec::new();
        let mut current = String::new();
        let chars: Vec<char> = text.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let starts_negative = c == '-'
                && current.is_empty()
                && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit())
                && (i == 0 || !chars[i - 1].is_ascii_alphanumeric());
            if c.is_ascii_digit() || starts_negative {
                current.push(c);
            } else if (c == '.' || c == ',')
                && !current.is_empty()
                && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit())
            {
                if c == '.' {
                    current.push('.');
                }
            } else if !current.is_empty() {
                found.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            found.push(current);
        }
        found
    };
    tail.and_then(|t| numbers(t).into_iter().next())
        .or_else(|| numbers(reply).pop())
}

/// Whether a given answer matches the expected one: numerically when both are numbers, else
/// as text (case, spaces and a final period aside).
pub fn matches(given: &str, expected: &str) -> bool {
    match (given.trim().parse::<f64>(), expected.trim().parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() < 1e-6,
        _ => {
            let norm = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
            norm(given) == norm(expected)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_du_et_al_s_task_with_exact_answers_and_the_same_for_a_seed() {
        let problems = arithmetic(50, 7);
        assert_eq!(problems, arithmetic(50, 7));
        assert_ne!(problems, arithmetic(50, 8));
        for problem in &problems {
            let expression = problem
                .question
                .trim_start_matches("What is the result of ")
                .split('?')
                .next()
                .unwrap();
            let numbers: Vec<i64> = expression
                .split(['+', '*', '-'])
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(numbers.len(), 6);
            assert!(numbers.iter().all(|n| (0..=30).contains(n)));
            let [a, b, c, d, e, f] = numbers[..] else {
                unreachable!()
            };
            assert_eq!(problem.answer, (a + b * c + d - e * f).to_string());
        }
    }

    #[test]
    fn the_bundled_word_problems_load_with_numeric_answers() {
        let all = words(usize::MAX).unwrap();
        assert!(all.len() >= 20);
        assert!(all.iter().all(|p| p.answer.parse::<f64>().is_ok()));
        assert_eq!(words(3).unwrap().len(), 3);
    }

    #[test]
    fn a_bad_dataset_line_is_named_by_number() {
        // Seed review 004 #14: blank lines (a trailing one, a gap) are not errors.
        let read = parse_jsonl(
            "{\"question\": \"q\", \"answer\": 1}\n\n{\"question\": \"r\", \"answer\": 2}\n\n",
            "d.jsonl",
        )
        .unwrap();
        assert_eq!(read.len(), 2);
        let err = parse_jsonl(
            "{\"question\": \"q\", \"answer\": 1}\n{\"question\": ",
            "d.jsonl",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("d.jsonl:2:"), "{err}");
        assert!(err.contains("not JSON"), "{err}");
        let err = parse_jsonl("{\"question\": \"q\"}", "d.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("d.jsonl:1: needs"), "{err}");
        assert_eq!(
            parse_jsonl("{\"question\": \"q\", \"answer\": 4.5}", "d").unwrap()[0].answer,
            "4.5"
        );
    }

    #[test]
    fn the_final_answer_is_read_after_the_last_answer_marker() {
        for (reply, answer) in [
            ("2+3=5, then 5*2=10. Answer: 10", "10"),
            ("So the answer is -42.", "-42"),
            ("First 3, then 1,250 in all", "1250"),
            ("It costs 2.50 dollars", "2.50"),
            ("x-3 is not negative: Answer: 7", "7"),
        ] {
            assert_eq!(final_answer(reply).as_deref(), Some(answer), "{reply}");
        }
        assert_eq!(final_answer("no idea"), None);
        assert!(matches("2.50", "2.5"));
        assert!(matches(" Paris. ", "paris"));
        assert!(!matches("41", "42"));
    }
}
