//! How far apart two words are, for "did you mean" suggestions on a mistyped name.

/// How many edits turn `a` into `b`: a character inserted, deleted or changed, or two
/// neighbours swapped ("shwo" is one slip from "show"; optimal string alignment).
pub fn edits_apart(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back is what a swap is measured from.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let changed = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (previous[j] + 1)
                .min(row[j - 1] + 1)
                .min(previous[j - 1] + changed);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut previous, row);
    }
    previous[b.len()]
}

/// The name among `names` that `typed` is most likely a slip for: at most one edit away for a
/// short word, two for one of five letters or more, and never `typed` itself.
pub fn nearest<'a>(typed: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    let reach = if typed.chars().count() >= 5 { 2 } else { 1 };
    names
        .into_iter()
        .filter(|name| *name != typed)
        .map(|name| (edits_apart(&typed, name), name))
        .filter(|(edits, _)| *edits <= reach)
        .min_by_key(|(edits, _)| *edits)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_are_found_and_other_words_are_not() {
        assert_eq!(edits_apart("lst", "list"), 1);
        assert_eq!(edits_apart("shwo", "show"), 1);
        assert_eq!(edits_apart("kitten", "sitting"), 3);
        assert_eq!(edits_apart("", "abc"), 3);
        let names = ["list", "show", "search", "resume", "model"];
        assert_eq!(nearest("lst", names), Some("list"));
        assert_eq!(nearest("serach", names), Some("search"));
        assert_eq!(nearest("Should", names), None);
        assert_eq!(
            nearest("list", names),
            None,
            "a name is not a slip for itself"
        );
    }
}
