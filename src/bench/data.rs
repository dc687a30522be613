//! The problems `moot bench` asks: Du et al.'s generated arithmetic, the bundled grade-school
//! word problems, multiple-choice questions (MMLU-shaped), code problems with hidden tests
//! (HumanEval-shaped), or a JSONL file of any of them; and how a reply's final answer is read
//! and checked.

use super::BenchError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One problem and its exact answer (for a choice, its letter; for code, `pass`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub question: String,
    pub answer: String,
    /// A multiple-choice question's choices, lettered A, B, … in this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// A code problem: what the code must define and the hidden tests it must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeTask>,
}

/// A code problem in the HumanEval shape: the prompt (a stub with its docstring, for Python;
/// what to write, for the shell), the function it must define, and the tests the model never
/// sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeTask {
    pub task_id: String,
    pub prompt: String,
    pub entry_point: String,
    pub test: String,
    /// `python` (HumanEval's: the tests define `check(candidate)`) or `sh` (the tests are
    /// shell lines run after the function's definition, failing with a non-zero exit).
    pub language: String,
}

/// How a problem's reply is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A number, after the last `Answer:`.
    Number,
    /// A letter among this many choices, after the last `Answer:`.
    Letter(usize),
    /// A whole function, in the reply's last fenced block.
    Code,
}

impl Problem {
    /// A problem with a plain answer.
    pub fn plain(question: String, answer: String) -> Problem {
        Problem {
            question,
            answer,
            choices: Vec::new(),
            code: None,
        }
    }

    pub fn format(&self) -> Format {
        match (&self.code, self.choices.len()) {
            (Some(_), _) => Format::Code,
            (None, 0) => Format::Number,
            (None, n) => Format::Letter(n),
        }
    }

    /// What the model is asked: the question, with its lettered choices.
    pub fn asked(&self) -> String {
        if self.choices.is_empty() {
            return self.question.clone();
        }
        let mut text = format!("{}\n", self.question);
        for (letter, choice) in ('A'..).zip(&self.choices) {
            text.push_str(&format!("\n{letter}. {choice}"));
        }
        text
    }
}

impl Format {
    /// The system prompt of a call.
    pub fn system(self) -> &'static str {
        match self {
            Format::Number => {
                "Solve the problem. Reason briefly, step by step, then end with a final line of \
                 the form `Answer: <number>`."
            }
            Format::Letter(_) => {
                "Answer the multiple-choice question. Reason briefly, then end with a final line \
                 of the form `Answer: <letter>`."
            }
            Format::Code => {
                "Write the code asked for. Reply with the complete function, its signature \
                 included, in one fenced code block, and nothing after the block."
            }
        }
    }

    /// What a debate's later round, or a protocol's record, is asked to end with.
    pub fn closing(self) -> &'static str {
        match self {
            Format::Number => "End with a final line `Answer: <number>`.",
            Format::Letter(_) => "End with a final line `Answer: <letter>`.",
            Format::Code => "Give the complete function in one fenced code block, last.",
        }
    }

    /// The answer a reply gives in this format.
    pub fn read(self, reply: &str) -> Option<String> {
        match self {
            Format::Number => final_answer(reply),
            Format::Letter(choices) => final_letter(reply, choices),
            Format::Code => final_code(reply),
        }
    }
}

/// The letter a reply chooses: the first standalone choice letter after its last `answer`,
/// else the last one in the reply written as `(B)` or `B.` at a line's start.
pub fn final_letter(reply: &str, choices: usize) -> Option<String> {
    let letters: Vec<char> = ('A'..).take(choices.min(26)).collect();
    let standalone = |text: &str| -> Vec<char> {
        let chars: Vec<char> = text.chars().collect();
        (0..chars.len())
            .filter(|&i| {
                let c = chars[i].to_ascii_uppercase();
                letters.contains(&c)
                    && chars[i].is_ascii_uppercase()
                    && (i == 0 || !chars[i - 1].is_alphanumeric())
                    && chars.get(i + 1).is_none_or(|n| !n.is_alphanumeric())
            })
            .map(|i| chars[i])
            .collect()
    };
    let lower = reply.to_lowercase();
    if let Some(at) = lower.rfind("answer")
        && let Some(first) = standalone(&reply[at + "answer".len()..]).first()
    {
        return Some(first.to_string());
    }
    reply.lines().rev().find_map(|line| {
        let line = line.trim();
        let first = line.chars().next()?;
        let rest = line.get(first.len_utf8()..)?;
        (letters.contains(&first) && (rest.starts_with('.') || rest.starts_with(')')))
            .then(|| first.to_string())
            .or_else(|| {
                line.strip_prefix('(')
                    .and_then(|l| l.chars().next())
                    .filter(|c| letters.contains(c))
                    .map(|c| c.to_string())
            })
    })
}

/// The code a reply gives: its last fenced block, else the whole reply when it has none.
pub fn final_code(reply: &str) -> Option<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in reply.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(String::new()),
            }
            continue;
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    let code = blocks.pop().unwrap_or_else(|| reply.to_string());
    (!code.trim().is_empty()).then_some(code)
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
            Problem::plain(
                format!(
                    "What is the result of {a}+{b}*{c}+{d}-{e}*{f}? Make sure to state your answer at the end of the response."
                ),
                (a + b * c + d - e * f).to_string(),
            )
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

/// The JSON object on each non-blank line, with its line number.
fn json_lines(
    text: &str,
    name: &str,
    shape: &str,
) -> Result<Vec<(usize, serde_json::Value)>, BenchError> {
    let mut values = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        // Blank lines (a trailing one, a gap between groups) hold no problem.
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "{name}:{number}:{}: not JSON ({e}); every line must be one object {shape}",
                e.column()
            )
        })?;
        values.push((number, value));
    }
    if values.is_empty() {
        return Err(BenchError::Data(format!("{name} has no problems")));
    }
    Ok(values)
}

/// A field as trimmed, non-empty text (a number read as its text).
fn text_of(value: &serde_json::Value, field: &str) -> Option<String> {
    match value.get(field) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn parse_jsonl(text: &str, name: &str) -> Result<Vec<Problem>, BenchError> {
    json_lines(text, name, "{\"question\": …, \"answer\": …}")?
        .into_iter()
        .map(|(number, value)| {
            match (
                value.get("question").and_then(|q| q.as_str()),
                text_of(&value, "answer"),
            ) {
                (Some(question), Some(answer)) if !question.trim().is_empty() => {
                    Ok(Problem::plain(question.trim().to_string(), answer))
                }
                _ => Err(BenchError::Data(format!(
                    "{name}:{number}: needs a non-empty \"question\" (text) and \"answer\" (text or number)"
                ))),
            }
        })
        .collect()
}

/// Multiple-choice lines, MMLU-shaped: `{"question", "choices": [2–26 texts], "answer"}`, the
/// answer a letter (`"B"`) or the choice's index from 0 (MMLU's `1`).
pub fn parse_choice_jsonl(text: &str, name: &str) -> Result<Vec<Problem>, BenchError> {
    let shape = "{\"question\": …, \"choices\": [...], \"answer\": \"B\" or 1}";
    json_lines(text, name, shape)?
        .into_iter()
        .map(|(number, value)| {
            let bad = |why: &str| {
                BenchError::Data(format!("{name}:{number}: {why}; each line is {shape}"))
            };
            let question = text_of(&value, "question").ok_or_else(|| bad("no \"question\""))?;
            let choices: Vec<String> = value
                .get("choices")
                .and_then(|c| c.as_array())
                .map(|c| {
                    c.iter()
                        .filter_map(|c| match c {
                            serde_json::Value::String(s) => Some(s.trim().to_string()),
                            serde_json::Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !(2..=26).contains(&choices.len()) || choices.iter().any(String::is_empty) {
                return Err(bad("\"choices\" must be 2–26 non-empty texts"));
            }
            let letter = match value.get("answer") {
                Some(serde_json::Value::Number(n)) => n
                    .as_u64()
                    .filter(|&i| (i as usize) < choices.len())
                    .map(|i| char::from(b'A' + i as u8).to_string()),
                Some(serde_json::Value::String(s)) => {
                    let s = s.trim().to_ascii_uppercase();
                    let valid = s.len() == 1
                        && s.as_bytes()[0] >= b'A'
                        && ((s.as_bytes()[0] - b'A') as usize) < choices.len();
                    valid.then_some(s)
                }
                _ => None,
            }
            .ok_or_else(|| {
                bad("\"answer\" must be one of the choices' letters, or its index from 0")
            })?;
            Ok(Problem {
                question,
                answer: letter,
                choices,
                code: None,
            })
        })
        .collect()
}

/// Code problems, HumanEval-shaped: `{"task_id", "prompt", "entry_point", "test"}` and an
/// optional `"language"` (`python`, HumanEval's, by default; or `sh`).
pub fn parse_code_jsonl(text: &str, name: &str) -> Result<Vec<Problem>, BenchError> {
    let shape = "{\"task_id\": …, \"prompt\": …, \"entry_point\": …, \"test\": …}";
    json_lines(text, name, shape)?
        .into_iter()
        .map(|(number, value)| {
            let bad = |why: String| BenchError::Data(format!("{name}:{number}: {why}; each line is {shape}"));
            let field = |f: &str| text_of(&value, f).ok_or_else(|| bad(format!("no \"{f}\"")));
            let (task_id, prompt, entry_point, test) =
                (field("task_id")?, field("prompt")?, field("entry_point")?, field("test")?);
            let identifier = entry_point
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && entry_point.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !identifier {
                return Err(bad(format!("\"entry_point\" {entry_point:?} is not a function name")));
            }
            let language = text_of(&value, "language").unwrap_or_else(|| "python".into());
            if !["python", "sh"].contains(&language.as_str()) {
                return Err(bad(format!("\"language\" {language:?}: moot runs python or sh")));
            }
            let question = match language.as_str() {
                "sh" => format!(
                    "Write a POSIX shell function `{entry_point}`: {prompt}\nReply with the function in one ```sh fenced block."
                ),
                _ => format!(
                    "Complete this Python function. Reply with the whole function, its signature included, in one ```python fenced block.\n\n```python\n{prompt}\n```"
                ),
            };
            Ok(Problem {
                question,
                answer: "pass".into(),
                choices: Vec::new(),
                code: Some(CodeTask {
                    task_id,
                    prompt,
                    entry_point,
                    test,
                    language,
                }),
            })
        })
        .collect()
}

/// The bundled multiple-choice questions, written for moot.
const CHOICE: &str = include_str!("../../data/bench/choice.jsonl");
/// The bundled code problems, written for moot, in the shell so they run anywhere.
const CODE: &str = include_str!("../../data/bench/code.jsonl");

/// The bundled set `name` (`choice` or `code`), the first `count`.
pub fn bundled(name: &str, count: usize) -> Result<Vec<Problem>, BenchError> {
    let read = match name {
        "choice" => parse_choice_jsonl(CHOICE, "the bundled choice questions")?,
        _ => parse_code_jsonl(CODE, "the bundled code problems")?,
    };
    Ok(read.into_iter().take(count).collect())
}

/// A JSONL file read in the shape of set `set` (`choice`, `code`, or plain questions).
pub fn dataset_as(path: &Path, set: &str) -> Result<Vec<Problem>, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the dataset {}: {e}", path.display()))?;
    let name = path.display().to_string();
    match set {
        "choice" => parse_choice_jsonl(&text, &name),
        "code" => parse_code_jsonl(&text, &name),
        _ => parse_jsonl(&text, &name),
    }
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
