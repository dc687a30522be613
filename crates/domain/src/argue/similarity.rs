//! Word-shingle overlap between two texts, for the repetition guardrail.

use std::collections::HashSet;

const SHINGLE: usize = 3;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn shingles(words: &[String]) -> Vec<String> {
    if words.len() < SHINGLE {
        return if words.is_empty() {
            Vec::new()
        } else {
            vec![words.join(" ")]
        };
    }
    words.windows(SHINGLE).map(|w| w.join(" ")).collect()
}

/// The share of `current`'s word trigrams that already appeared in `previous` (0.0–1.0).
pub fn repetition_ratio(current: &str, previous: &str) -> f64 {
    let current = shingles(&words(current));
    if current.is_empty() {
        return 0.0;
    }
    let previous: HashSet<String> = shingles(&words(previous)).into_iter().collect();
    let repeated = current.iter().filter(|s| previous.contains(*s)).count();
    repeated as f64 / current.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_text_repeats_fully_and_new_text_not_at_all() {
        let a = "Redis keeps hot keys in memory so reads are fast";
        assert_eq!(repetition_ratio(a, a), 1.0);
        assert_eq!(repetition_ratio("something else entirely new here", a), 0.0);
        assert_eq!(repetition_ratio("", a), 0.0);
    }

    #[test]
    fn partial_overlap_is_proportional() {
        let previous = "one two three four five six";
        // trigrams of current: [one two three] [two three four] [three four seven] [four seven eight]
        let current = "one two three four seven eight";
        assert_eq!(repetition_ratio(current, previous), 0.5);
    }
}
