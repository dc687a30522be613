//! Makes untrusted text safe to print and to keep: strips terminal escape and control
//! sequences, and redacts API keys (those moot read for its providers, and anything shaped
//! like an `sk-…` key) so that a server echoing one back cannot leak it into the journal, the
//! screen, an export or a log.

use std::borrow::Cow;
use std::sync::RwLock;

/// Every secret moot has read this run (provider API keys).
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Secrets shorter than this are redacted only as whole tokens (never inside a longer word),
/// so a short key cannot mangle ordinary text; `register_secret` says when a key is that short.
pub const SHORT_SECRET: usize = 8;

/// Characters that can continue an `sk-…` key.
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Remembers a secret (an API key read for a provider, a password in a URL) so that nothing
/// moot stores or prints carries it, whatever its length. Returns true when it is shorter than
/// `SHORT_SECRET` (worth a warning: such a key is easy to guess).
pub fn register_secret(secret: &str) -> bool {
    let secret = secret.trim();
    if secret.is_empty() {
        return false;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
    secret.len() < SHORT_SECRET
}

/// `text` with every whole-token occurrence of `secret` replaced: not inside a longer run of
/// key characters.
fn redact_token(text: &str, secret: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(secret) {
        let previous = rest[..at].chars().next_back().or(before);
        let next = rest[at + secret.len()..].chars().next();
        let whole = previous.is_none_or(|c| !key_char(c)) && next.is_none_or(|c| !key_char(c));
        out.push_str(&rest[..at]);
        if whole {
            out.push_str("[redacted]");
            changed = true;
        } else {
            out.push_str(secret);
        }
        before = secret.chars().next_back();
        rest = &rest[at + secret.len()..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `text` with the credentials of every URL (`scheme://user:password@host`) replaced.
fn redact_url_credentials(text: &str) -> Option<String> {
    if !text.contains("://") || !text.contains('@') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let authority_start = at + 3;
        out.push_str(&rest[..authority_start]);
        let authority = &rest[authority_start..];
        let end = authority
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .unwrap_or(authority.len());
        match authority[..end].rfind('@') {
            Some(sign) if sign > 0 => {
                out.push_str("[redacted]");
                out.push_str(&authority[sign..end]);
                changed = true;
            }
            _ => out.push_str(&authority[..end]),
        }
        rest = &authority[end..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// `text` with every registered secret (anywhere when it is `SHORT_SECRET` or longer, as a
/// whole token when shorter), the credentials in URLs, and every `sk-…` token of 16 or more
/// key characters replaced by `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
        for secret in secrets.iter() {
            if !out.contains(secret.as_str()) {
                continue;
            }
            if secret.len() >= SHORT_SECRET {
                out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
            } else if let Some(redacted) = redact_token(&out, secret) {
                out = Cow::Owned(redacted);
            }
        }
    }
    if let Some(redacted) = redact_url_credentials(&out) {
        out = Cow::Owned(redacted);
    }
    if !out.contains("sk-") {
        return out;
    }
    let mut redacted = String::with_capacity(out.len());
    let mut rest: &str = &out;
    while let Some(at) = rest.find("sk-") {
        let starts_token = rest[..at].chars().next_back().is_none_or(|c| !key_char(c));
        let tail = &rest[at + 3..];
        let length = tail.find(|c: char| !key_char(c)).unwrap_or(tail.len());
        if starts_token && length >= 16 {
            redacted.push_str(&rest[..at]);
            redacted.push_str("[redacted]");
            rest = &tail[length..];
        } else {
            redacted.push_str(&rest[..at + 3]);
            rest = tail;
        }
    }
    redacted.push_str(rest);
    Cow::Owned(redacted)
}

/// Text safe to print: escapes and controls stripped (`strip`), then keys redacted (`redact`).
/// Every string moot prints goes through here.
pub fn clean(text: &str) -> String {
    // Escapes go first, so that one cannot hide a key from the redaction.
    redact(&strip(text)).into_owned()
}

/// Removes ANSI/VT escape sequences (CSI, OSC, DCS, APC, PM, SOS, single-character escapes),
/// C1 controls, bidirectional overrides and every C0 control except newline and tab. Carriage
/// returns become nothing, so "\r\n" stays one line break and a bare "\r" cannot overwrite
/// what came before.
fn strip(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_work) {
        return Cow::Borrowed(text);
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
    Cow::Owned(out)
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
        serde_json::Value::String(text) => {
            let cleaned = clean(text);
            if cleaned != *text {
                *text = cleaned;
            }
        }
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
    fn keys_are_redacted_wherever_they_appear() {
        register_secret("plain-secret-value-1234");
        assert!(register_secret("qz9v"));
        assert_eq!(
            redact("bad key plain-secret-value-1234 (HTTP 401)"),
            "bad key [redacted] (HTTP 401)"
        );
        assert_eq!(
            redact("Bearer sk-proj-abcdefghij0123456789XYZ, retry"),
            "Bearer [redacted], retry"
        );
        assert_eq!(
            redact("the task-sk-list and sk-short stay"),
            "the task-sk-list and sk-short stay"
        );
        assert_eq!(
            redact("qz9vx words stay; a qz9v one goes"),
            "qz9vx words stay; a [redacted] one goes"
        );
        assert_eq!(
            clean("\u{1b}[31msk-ant-api03-abcdefghijklmnop\u{1b}[0m"),
            "[redacted]"
        );
    }

    #[test]
    fn short_keys_are_redacted_as_whole_tokens_and_url_credentials_always() {
        assert!(register_secret("zx7k"));
        assert!(!register_secret("a-long-enough-secret-value"));
        assert_eq!(
            redact("key zx7k rejected; tzx7k and zx7k3 stay"),
            "key [redacted] rejected; tzx7k and zx7k3 stay"
        );
        assert_eq!(redact("Bearer zx7k"), "Bearer [redacted]");
        assert_eq!(
            redact("cannot reach http://proxyuser:hunter2@127.0.0.1:9/v1/chat and https://h/x@y"),
            "cannot reach http://[redacted]@127.0.0.1:9/v1/chat and https://h/x@y"
        );
        assert_eq!(
            redact(r#"{"base_url":"http://u:p@host/v1"}"#),
            r#"{"base_url":"http://[redacted]@host/v1"}"#
        );
    }

    #[test]
    fn json_strings_are_cleaned_recursively() {
        let mut value = serde_json::json!({"a": ["x\u{1b}[2Jy"], "b": {"c": "\u{7}z"}});
        clean_json(&mut value);
        assert_eq!(value, serde_json::json!({"a": ["xy"], "b": {"c": "z"}}));
    }
}
