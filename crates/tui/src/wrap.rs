//! Word wrapping by display width, done once per turn and cached, never per frame.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `text` without emoji variation selectors (U+FE0E, U+FE0F). Terminals disagree on whether
/// "⚠️" (a narrow character asked to look like an emoji) takes one column or two, so a line
/// holding it could push a border out of place (A4); without the selector every terminal and
/// the layout agree on one column.
pub fn without_variation_selectors(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\u{fe0e}', '\u{fe0f}']) {
        std::borrow::Cow::Owned(text.replace(['\u{fe0e}', '\u{fe0f}'], ""))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Wraps text into lines of at most `width` columns, breaking at spaces where possible and
/// inside words longer than a line. Blank lines are kept.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let text = without_variation_selectors(text);
    let width = width.max(1);
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        let mut line_width = 0;
        for word in paragraph.split(' ') {
            let word_width = word.width();
            let gap = usize::from(!line.is_empty());
            if line_width + gap + word_width <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                line_width += gap + word_width;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                line_width = 0;
            }
            if word_width <= width {
                line.push_str(word);
                line_width = word_width;
                continue;
            }
            // A word longer than the line is split by characters.
            for c in word.chars() {
                let w = c.width().unwrap_or(0);
                if line_width + w > width && !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    line_width = 0;
                }
                line.push(c);
                line_width += w;
            }
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_keeps_paragraphs_and_splits_long_words() {
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
        assert_eq!(wrap("a\n\nb", 5), vec!["a", "", "b"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(
            wrap("日本語のテキスト", 6),
            vec!["日本語", "のテキ", "スト"]
        );
        assert_eq!(wrap("", 3), vec![""]);
        assert!(wrap("x y", 0).iter().all(|l| !l.is_empty()));
    }
}
