//! Makes untrusted model text safe to print: strips terminal escape and control sequences.

/// Removes ANSI/VT escape sequences (CSI, OSC, DCS, APC, PM, SOS, single-character escapes),
/// C1 controls and every C0 control except newline and tab. Carriage returns become nothing,
/// so "\r\n" stays one line break and a bare "\r" cannot overwrite what came before.
pub fn clean(text: &str) -> String {
    if !text.chars().any(needs_work) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => {
                    skip_string_sequence(&mut chars)
                }
                // ESC followed by intermediates then a final byte (e.g. ESC ( B).
                Some(next) if ('\u{20}'..='\u{2f}').contains(&next) => {
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if !('\u{20}'..='\u{2f}').contains(&n) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                skip_string_sequence(&mut chars)
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            // Bidirectional overrides can disguise text; drop them.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

fn needs_work(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    // Parameters and intermediates run until a final byte in 0x40..=0x7e.
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

fn skip_string_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    // Terminated by BEL, ST (ESC \) or the C1 ST.
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

/// Sanitizes every string inside a JSON value, for JSON that is printed or exported.
pub fn clean_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.chars().any(needs_work) => *text = clean(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(clean_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(clean_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_csi_osc_and_controls() {
        assert_eq!(clean("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(clean("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(clean("x\u{1b}]52;c;Zm9v\u{1b}\\y"), "xy");
        assert_eq!(clean("one\r\ntwo\rthree\u{8}"), "one\ntwothree");
        assert_eq!(clean("keep\ttabs\nand lines"), "keep\ttabs\nand lines");
        assert_eq!(clean("\u{9b}2Jgone"), "gone");
        assert_eq!(clean("\u{1b}(Bplain"), "plain");
        assert_eq!(clean("rtl\u{202e}txet"), "rtltxet");
        assert_eq!(clean("ünïcödé ✓"), "ünïcödé ✓");
    }

    #[test]
    fn unterminated_sequences_do_not_swallow_panics() {
        assert_eq!(clean("\u{1b}"), "");
        assert_eq!(clean("a\u{1b}["), "a");
        assert_eq!(clean("a\u{1b}]never ends"), "a");
    }

    #[test]
    fn json_strings_are_cleaned_recursively() {
        let mut value = serde_json::json!({"a": ["x\u{1b}[2Jy"], "b": {"c": "\u{7}z"}});
        clean_json(&mut value);
        assert_eq!(value, serde_json::json!({"a": ["xy"], "b": {"c": "z"}}));
    }
}
