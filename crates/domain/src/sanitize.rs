//! Makes untrusted text safe to print and to keep: strips terminal escape and control
//! sequences, and redacts API keys (those moot read for its providers, what is left of one a
//! server cut short, and anything shaped like an `sk-…` key) so that a server echoing one back
//! cannot leak it into the journal, the screen, an export or a log. Output of programs that
//! ran model-written code goes further (`redact_output`): private-key blocks and high-entropy
//! tokens go too.

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

/// The fewest characters of a key, cut short at either end, that are still redacted as a
/// piece of it.
const KEY_PIECE: usize = 10;

/// `text` with every whole token that is the start or the end of `secret` (at least
/// `KEY_PIECE` characters of it) replaced: what is left of a key that someone cut short
/// before moot saw it (a server clipping a reply to a schema's length, a window of output).
fn redact_pieces(text: &str, secret: &str) -> Option<String> {
    if secret.len() <= KEY_PIECE || !secret.is_char_boundary(KEY_PIECE) {
        return None;
    }
    let head = &secret[..KEY_PIECE];
    let tail_at = secret.len() - KEY_PIECE;
    let tail = secret.get(tail_at..)?;
    if !text.contains(head) && !text.contains(tail) {
        return None;
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let bytes = text.as_bytes();
    let is_key = |at: usize| bytes.get(at).is_some_and(|b| key_char(char::from(*b)));
    for (at, _) in text.match_indices(head) {
        if at > 0 && is_key(at - 1) {
            continue;
        }
        let end = (at..text.len()).find(|&i| !is_key(i)).unwrap_or(text.len());
        if secret.starts_with(&text[at..end]) {
            spans.push((at, end));
        }
    }
    for (at, _) in text.match_indices(tail) {
        let end = at + KEY_PIECE;
        if is_key(end) {
            continue;
        }
        let start = (0..at).rev().find(|&i| !is_key(i)).map_or(0, |i| i + 1);
        if secret.ends_with(&text[start..end]) {
            spans.push((start, end));
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for (start, end) in spans {
        if start < from {
            continue;
        }
        out.push_str(&text[from..start]);
        out.push_str("[redacted]");
        from = end;
    }
    out.push_str(&text[from..]);
    Some(out)
}

/// `text` with every registered secret (anywhere when it is `SHORT_SECRET` or longer, as a
/// whole token when shorter, and what is left of one cut short), the credentials in URLs, and
/// every `sk-…` token of 16 or more key characters (or of 8 or more cut short with `…`)
/// replaced by `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
        for secret in secrets.iter() {
            if secret.len() >= SHORT_SECRET && out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
            } else if secret.len() < SHORT_SECRET
                && out.contains(secret.as_str())
                && let Some(redacted) = redact_token(&out, secret)
            {
                out = Cow::Owned(redacted);
            }
            if let Some(redacted) = redact_pieces(&out, secret) {
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
        let cut_short = length >= 8 && tail[length..].starts_with('…');
        if starts_token && (length >= 16 || cut_short) {
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

/// The shortest run of base64 characters judged as a possible secret by its entropy.
const ENTROPY_TOKEN: usize = 32;
/// Bits per character above which such a run is taken for a secret: random base64 reaches
/// about 5 over 32 characters, words and identifiers stay near 4, hexadecimal at most 4.
const ENTROPY_BITS: f64 = 4.5;

/// Output of a program that ran model-written code (a hook, hidden tests), made safe to keep
/// and to send to a model: `redact`, then every PEM-style block (`-----BEGIN … -----` to its
/// `-----END … -----`, or to the end when it has none) and every high-entropy token (a run of
/// `ENTROPY_TOKEN` or more base64 characters holding letters and digits above `ENTROPY_BITS`
/// a character, and the base64 lines around one) replaced by a marker.
pub fn redact_output(text: &str) -> String {
    let text = redact(text);
    let text = redact_armored_blocks(&text);
    redact_high_entropy(&text)
}

/// `text` with each armored block replaced by `[redacted: LABEL block]`.
fn redact_armored_blocks(text: &str) -> String {
    const BEGIN: &str = "-----BEGIN ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(BEGIN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + BEGIN.len()..];
        let label_end = after
            .find("-----")
            .filter(|&e| e <= 64 && !after[..e].contains('\n'));
        let Some(label_end) = label_end else {
            out.push_str(BEGIN);
            rest = after;
            continue;
        };
        let label = after[..label_end].trim();
        let body = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let resume = match body.find(&end_marker) {
            Some(end) => &body[end + end_marker.len()..],
            None => "",
        };
        out.push_str(&format!("[redacted: {label} block]"));
        rest = resume;
    }
    out.push_str(rest);
    out
}

fn base64_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_')
}

/// Shannon entropy of `token`'s characters, in bits a character.
fn entropy(token: &str) -> f64 {
    let mut counts = [0u32; 128];
    let mut n = 0u32;
    for b in token.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
        n += 1;
    }
    let n = f64::from(n.max(1));
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `token` reads as a path (`/tmp/moot-hook-KikEcH/cache`): short parts between
/// slashes, where random base64 has a slash about once in 64 characters.
fn path_like(token: &str) -> bool {
    token.contains('/') && token.split('/').all(|part| part.len() < 24)
}

fn high_entropy(token: &str) -> bool {
    // `NAME=value` and paths are judged by their parts (base64's own `=` only pads its end,
    // and a slash stands about once in its 64 characters, so its parts stay long).
    let body = token.trim_end_matches('=');
    for separator in ['=', '/'] {
        if body.contains(separator) {
            return body.split(separator).any(high_entropy);
        }
    }
    body.len() >= ENTROPY_TOKEN
        && body.bytes().any(|b| b.is_ascii_digit())
        && body.bytes().any(|b| b.is_ascii_alphabetic())
        && entropy(body) > ENTROPY_BITS
}

/// `text` with high-entropy tokens replaced, and lines wholly of base64 that touch a line
/// where one was found (the rest of an encoded block, wrapped) replaced with them.
fn redact_high_entropy(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let flagged: Vec<bool> = lines
        .iter()
        .map(|line| line.split(|c: char| !base64_char(c)).any(high_entropy))
        .collect();
    // A line of encoded data, not a word, a path or a `NAME=value`: base64 characters only,
    // `=` only as padding at its end, with a digit or padding.
    let encoded = |line: &str| {
        let t = line.trim();
        let body = t.trim_end_matches('=');
        t.len() >= 4
            && t.chars().all(base64_char)
            && !body.contains('=')
            && !path_like(body)
            && t.chars()
                .any(|c| c.is_ascii_digit() || matches!(c, '=' | '+' | '/'))
    };
    // A wrapped block: encoded lines next to a flagged line, spreading both ways.
    let mut gone = flagged.clone();
    for i in 1..lines.len() {
        if gone[i - 1] && encoded(lines[i]) {
            gone[i] = true;
        }
    }
    for i in (0..lines.len().saturating_sub(1)).rev() {
        if gone[i + 1] && encoded(lines[i]) {
            gone[i] = true;
        }
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if gone[i] && !flagged[i] {
            out.push_str("[redacted: encoded data]");
        } else if flagged[i] {
            let mut token = String::new();
            for c in line.chars().chain(std::iter::once('\n')) {
                if base64_char(c) {
                    token.push(c);
                    continue;
                }
                if high_entropy(&token) {
                    out.push_str("[redacted: high-entropy token]");
                } else {
                    out.push_str(&token);
                }
                token.clear();
                if c != '\n' {
                    out.push(c);
                }
            }
        } else {
            out.push_str(line);
        }
    }
    out
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

    /// A registered key a server cut short (its start, with or without `…`) or a window cut
    /// (its end) is still redacted; ordinary words sharing a few of its letters are not.
    #[test]
    fn what_is_left_of_a_key_cut_short_is_redacted() {
        register_secret("sk-PIECESECRET123456");
        assert_eq!(redact("Key: sk-PIECESEC; more"), "Key: [redacted]; more");
        assert_eq!(redact("Key: sk-PIECESECRET12…"), "Key: [redacted]…");
        assert_eq!(redact("…CESECRET123456 was it"), "…[redacted] was it");
        assert_eq!(redact("sk-PIECE stays"), "sk-PIECE stays");
        assert_eq!(redact("sk-PIECESECX is another"), "sk-PIECESECX is another");
        // An `sk-` key nobody registered, cut with an ellipsis.
        assert_eq!(redact("sk-unknownab… was cut"), "[redacted]… was cut");
    }

    /// Output of model-written code: a private key (raw or base64, wrapped) and a random
    /// token go; test names, paths, hashes and counts stay.
    #[test]
    fn program_output_loses_private_keys_and_random_tokens_and_keeps_the_rest() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----";
        let out = redact_output(&format!("read: {key}\nnext line"));
        assert_eq!(
            out,
            "read: [redacted: OPENSSH PRIVATE KEY block]\nnext line"
        );
        let cut = redact_output("-----BEGIN FAKE KEY----- PROBEFAKESSHKEY and the rest");
        assert_eq!(cut, "[redacted: FAKE KEY block]");
        let encoded = "LS0tLS1CRUdJTiBGQUtFIEtFWS0tLS0tIFBST0JFRkFLRVNTSEtFWTAxMjM0NTY3ODlh\nYmNkZWYwMTIzNDU2Nzg5YWJjZGVm\nPQ==";
        let out = redact_output(&format!("b64: {encoded}\ntest result: ok. 3 passed"));
        assert!(!out.contains("LS0tLS1"), "{out}");
        assert!(!out.contains("YmNkZWYw"), "{out}");
        assert!(!out.contains("PQ=="), "{out}");
        assert!(out.ends_with("test result: ok. 3 passed"), "{out}");
        let ordinary = "test tests::test_unicode_normalization_keeps_accents ... ok\n\
                        /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/x.rs:12\n\
                        commit 4f5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5\n\
                        XDG_CACHE_HOME=/tmp/moot-hook-KikEcH9q/cache/go-build2\n\
                        PWD=/tmp/moot-DEB-3xgvnve6/src/module_1/tests_2\n\
                        npm_config_cache=/tmp/moot-hook-oUHtFj7Z/cache/npm\n\
                        at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5\n\
                        test result: ok. 12 passed; 0 failed";
        assert_eq!(redact_output(ordinary), ordinary);
        let token = "token: Zq3xK9mP2vL8nR4tW7yB1cD6fG0hJ5sA";
        assert_eq!(
            redact_output(token),
            "token: [redacted: high-entropy token]"
        );
    }

    #[test]
    fn json_strings_are_cleaned_recursively() {
        let mut value = serde_json::json!({"a": ["x\u{1b}[2Jy"], "b": {"c": "\u{7}z"}});
        clean_json(&mut value);
        assert_eq!(value, serde_json::json!({"a": ["xy"], "b": {"c": "z"}}));
    }
}
