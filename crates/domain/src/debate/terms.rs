//! The words of a question worth searching for: what gathering looks for in the code and
//! documents, and what lessons are matched by.

/// The most terms a topic gives.
const MOST_TERMS: usize = 8;

/// Words of the topic worth searching for: four letters or more (three for an acronym),
/// not a common or debating word, lowercased, at most eight, in order of appearance.
pub fn key_terms(topic: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "about", "above", "after", "again", "against", "also", "always", "because", "been",
        "before", "being", "better", "between", "both", "cannot", "could", "does", "doing", "done",
        "each", "either", "ever", "every", "from", "have", "having", "here", "instead", "into",
        "just", "keep", "like", "make", "many", "more", "most", "move", "much", "must", "need",
        "never", "only", "other", "over", "rather", "replace", "same", "should", "since", "some",
        "still", "such", "switch", "than", "that", "their", "them", "then", "there", "these",
        "they", "this", "those", "through", "under", "until", "very", "want", "were", "what",
        "when", "where", "whether", "which", "while", "will", "with", "would", "your", "ours",
        "adopt", "migrate", "stop", "start", "using", "used", "versus", "good", "worth", "hand",
        "rolled", "write", "writing", "our",
    ];
    let mut terms: Vec<String> = Vec::new();
    for word in topic.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let lower = word.to_lowercase();
        let acronym = word.len() == 3 && word.chars().all(|c| c.is_ascii_uppercase());
        if (lower.chars().count() < 4 && !acronym)
            || COMMON.contains(&lower.as_str())
            || lower.chars().all(|c| c.is_ascii_digit())
            || terms.contains(&lower)
        {
            continue;
        }
        terms.push(lower);
        if terms.len() == MOST_TERMS {
            break;
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_terms_keep_the_words_that_name_things() {
        assert_eq!(
            key_terms("We should replace our hand-rolled retry loop with tower's retry layer"),
            vec!["retry", "loop", "tower", "layer"]
        );
        assert_eq!(key_terms("Use SQS or Kafka?"), vec!["sqs", "kafka"]);
        assert!(key_terms("Should we?").is_empty());
    }
}
