//! The audit trail read back: `moot audit ID` prints every request, reply, retry, vote, gate
//! and lesson a debate used, and `--verify` checks the trail's hashes and re-runs the protocol
//! over the journal alone to show it reaches the outcome that was recorded.

use crate::debate::{DebateStatus, Named as _};
use crate::sanitize;
use crate::session::{self, SessionError};
use crate::store::{AuditEntry, AuditKind, ChainCheck, Store};
use serde::Serialize;

/// One check of a verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// What `--verify` (or `--verify-record`) found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub id: String,
    pub checks: Vec<Check>,
    /// The closing line when every check passed, and when one failed.
    #[serde(skip)]
    pub verdict: (String, String),
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|check| check.passed)
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let mark = if check.passed { "ok  " } else { "FAIL" };
            out.push_str(&format!("{mark} {:<9} {}\n", check.name, check.detail));
        }
        out.push_str(if self.passed() {
            &self.verdict.0
        } else {
            &self.verdict.1
        });
        out.push('\n');
        out
    }
}

/// Checks the hashes of debate `id`'s trail, then re-runs its protocol over a copy of its
/// journal with no provider and compares how it ends with what was recorded.
pub async fn verify(
    registry: &crate::protocol::Registry,
    store: &Store,
    id: &str,
) -> Result<Verification, SessionError> {
    let debate = store.debate(id)?;
    let chained = store.check_chain(&debate.id)?;
    // An imported debate's turns were written elsewhere: there are no requests to re-run,
    // only its rows to hold against the chain they were journaled under.
    if let Some(from) = debate.config.get("imported_from").and_then(|v| v.as_str()) {
        let chained = chain(&chained);
        let imported = Check {
            name: "imported",
            passed: true,
            detail: sanitize::clean(&format!(
                "imported from {from}: its turns were written elsewhere, so there are no requests to re-run; the chain vouches for its rows as imported"
            )),
        };
        return Ok(Verification {
            verdict: (
                format!(
                    "{}: imported; its journal holds as it was imported.",
                    debate.id
                ),
                format!(
                    "{}: imported, and its journal has changed since (see FAIL above).",
                    debate.id
                ),
            ),
            id: debate.id,
            checks: vec![chained, imported],
        });
    }
    let summary = summary(store, &debate, &chained)?;
    let head = receipt_head(store, &debate.id)?;
    if !summary.passed || head.as_ref().is_some_and(|h| !h.passed) {
        // A row that contradicts its own journal is the finding, whatever status it claims.
        let mut checks = vec![chain(&chained), hashes(&store.audit(&debate.id)?), summary];
        checks.extend(head);
        return Ok(journal_verdict(debate.id.clone(), checks));
    }
    if !matches!(
        debate.status,
        DebateStatus::Completed | DebateStatus::Cancelled | DebateStatus::Paused
    ) {
        return Err(SessionError::Protocol(format!(
            "{} is {}; only a completed, cancelled or paused debate has an outcome to verify",
            debate.id, debate.status
        )));
    }
    let entries = store.audit(&debate.id)?;
    let mut checks = vec![chain(&chained), hashes(&entries), summary];
    checks.extend(head);
    let scratch = tempfile::tempdir().map_err(|e| {
        SessionError::Environment(format!(
            "cannot make a scratch directory for the re-run: {e}"
        ))
    })?;
    let rerun = session::rerun(registry, store, &debate.id, scratch.path()).await?;
    checks.push(Check {
        name: "journal",
        passed: rerun.asked.is_empty(),
        detail: if rerun.asked.is_empty() {
            "every reply the protocol asked for came from the journal".into()
        } else {
            format!(
                "the protocol asked for {} repl{} the journal does not hold: {}",
                rerun.asked.len(),
                if rerun.asked.len() == 1 { "y" } else { "ies" },
                rerun.asked.join("; ")
            )
        },
    });
    checks.push(Check {
        name: "ending",
        passed: rerun.status == debate.status,
        detail: format!(
            "recorded {}, re-run {}{}",
            debate.status,
            rerun.status,
            rerun
                .error
                .as_deref()
                .map(|e| format!(" ({})", sanitize::clean(e)))
                .unwrap_or_default()
        ),
    });
    if debate.status == DebateStatus::Completed {
        checks.push(outcome(store, &debate.id, rerun.outcome.as_ref())?);
    }
    Ok(journal_verdict(debate.id, checks))
}

fn journal_verdict(id: String, checks: Vec<Check>) -> Verification {
    Verification {
        verdict: (
            format!("{id}: the journal alone reproduces the recorded outcome."),
            format!(
                "{id}: DIVERGED — the journal does not reproduce what was recorded (see FAIL above)."
            ),
        ),
        id,
        checks,
    }
}

/// The stored record's receipt held against the chain: it names the chain entry (and that
/// entry's hash) the record was written at, so a journal cut back past it, or rewritten up to
/// it, shows. None for a record without a receipt (older ones, or none yet).
fn receipt_head(store: &Store, id: &str) -> Result<Option<Check>, SessionError> {
    let Some(receipt) = store
        .synthesis(id)?
        .and_then(|stored| crate::decision::Receipt::read(&stored.markdown))
    else {
        return Ok(None);
    };
    let anchored = store.chain_entry(id, receipt.entry)?;
    let (passed, detail) = match anchored {
        Some(hash) if hash == receipt.hash => (
            true,
            format!(
                "the record's receipt names chain entry {} (sha256:{}), which the journal holds as it was",
                receipt.entry, receipt.hash
            ),
        ),
        Some(hash) => (
            false,
            format!(
                "the record's receipt names chain entry {} as sha256:{}, but the journal's entry {} is sha256:{hash}: the journal was rewritten",
                receipt.entry, receipt.hash, receipt.entry
            ),
        ),
        None => (
            false,
            format!(
                "the journal ends before its receipt's head: the record names chain entry {}, which the journal no longer holds",
                receipt.entry
            ),
        ),
    };
    Ok(Some(Check {
        name: "receipt",
        passed,
        detail,
    }))
}

/// The debate row's summary columns held against the chained rows they summarise: its status
/// against the closing event every stop writes last (so a journal cut short at its end shows,
/// however the cut was made), its confidence against the chained record's. A debate that has
/// not stopped is vouched for as far as it has been chained.
fn summary(
    store: &Store,
    debate: &crate::debate::Debate,
    chained: &ChainCheck,
) -> Result<Check, SessionError> {
    use crate::debate::Event;
    let events = store.events(&debate.id)?;
    // What may follow the end: a contested result decided later (its new record) and a
    // follow-up drafted from it. Anything else after the last closing event, or no closing
    // event at all, means the journal was cut.
    let after_the_end = |e: &&Event| {
        matches!(
            e,
            Event::Synthesis { .. }
                | Event::FollowUp { .. }
                | Event::Checkpoint {
                    kind: crate::debate::AskKind::Choice,
                    ..
                }
                | Event::CheckpointAnswered {
                    kind: crate::debate::AskKind::Choice,
                    ..
                }
        )
    };
    let last = events.iter().rev().find(|e| !after_the_end(e));
    let closing = match last {
        Some(Event::DebateCompleted { status, .. }) => Some(*status),
        _ => None,
    };
    let last = last.map_or("none", |e| e.kind());
    let mut problems = Vec::new();
    match closing {
        Some(closed) if closed != debate.status => problems.push(format!(
            "the debate's row says {}, but the journal's closing event says {closed}: the row was changed after the debate stopped",
            debate.status
        )),
        None if matches!(
            debate.status,
            DebateStatus::Completed
                | DebateStatus::Cancelled
                | DebateStatus::Paused
                | DebateStatus::Failed
        ) =>
        {
            problems.push(format!(
                "the debate's row says {}, but the journal ends before the closing event every stop writes (its last event is {last}): rows were cut from its end",
                debate.status
            ))
        }
        _ => {}
    }
    let recorded = store.synthesis(&debate.id)?.map(|s| s.confidence);
    let column = store.stored_confidence(&debate.id)?;
    if let Some(column) = &column
        && recorded.map(|c| c.as_str()) != Some(column.as_str())
    {
        problems.push(format!(
            "the debate's row says confidence {column}, but its chained record says {}: the row was changed",
            recorded.map_or("none".to_string(), |c| c.to_string())
        ));
    }
    if !problems.is_empty() {
        return Ok(Check {
            name: "summary",
            passed: false,
            detail: sanitize::clean(&problems.join("; ")),
        });
    }
    let entries = chained.entries;
    Ok(Check {
        name: "summary",
        passed: true,
        detail: match closing {
            Some(closed) => format!(
                "{closed}, as the closing event that ends its journal says{}",
                recorded
                    .map(|c| format!("; confidence {c}, as its chained record says"))
                    .unwrap_or_default()
            ),
            None => format!(
                "{}: not stopped yet, so this vouches for the {entries} entries chained so far and nothing after them",
                debate.status
            ),
        },
    })
}

/// The chain check as a line: every chained row reads as it was written, with no gap.
fn chain(check: &ChainCheck) -> Check {
    let upgraded = if check.upgraded > 0 {
        format!(
            "; {} of them chained at upgrade (journaled before the chain existed, so only \
             changes since the upgrade are caught)",
            check.upgraded
        )
    } else {
        String::new()
    };
    Check {
        name: "chain",
        passed: check.holds(),
        detail: match &check.problem {
            Some(problem) => sanitize::clean(problem),
            None if check.entries == 0 => "the debate has no chain".into(),
            None => format!(
                "{} rows chained, none changed, removed or added; head sha256:{}{upgraded}",
                check.entries,
                check.head.as_deref().unwrap_or("")
            ),
        },
    }
}

/// What `--verify-record FILE` found: the receipt the file carries, checked against the
/// journal's chain, and the file against the stored record.
pub fn verify_record(
    store: &Store,
    id: &str,
    file: &str,
    text: &str,
) -> Result<Verification, SessionError> {
    let debate = store.debate(id)?;
    let mut checks = Vec::new();
    let Some(receipt) = crate::decision::Receipt::read(text) else {
        checks.push(Check {
            name: "receipt",
            passed: false,
            detail: format!(
                "{file} carries no journal receipt (records written before moot kept receipts have none)"
            ),
        });
        return Ok(record_verdict(debate.id, file, checks));
    };
    let anchored = store.chain_entry(&debate.id, receipt.entry)?;
    checks.push(Check {
        name: "receipt",
        passed: receipt.debate == debate.id && anchored.as_deref() == Some(receipt.hash.as_str()),
        detail: if receipt.debate != debate.id {
            format!("{file} is a record of {}, not of {}", receipt.debate, debate.id)
        } else {
            match anchored {
                Some(hash) if hash == receipt.hash => format!(
                    "chain entry {} of the journal is sha256:{hash}, as the receipt says",
                    receipt.entry
                ),
                Some(hash) => format!(
                    "chain entry {} of the journal is sha256:{hash}, but the receipt says sha256:{}: \
                     the journal was rewritten after this record was written",
                    receipt.entry, receipt.hash
                ),
                None => format!(
                    "the journal's chain has no entry {}: it was cut short or rewritten after this \
                     record was written",
                    receipt.entry
                ),
            }
        },
    });
    let chained = store.check_chain(&debate.id)?;
    checks.push(chain(&chained));
    checks.push(summary(store, &debate, &chained)?);
    let stored = store.synthesis(&debate.id)?;
    checks.push(match stored {
        None => Check {
            name: "record",
            passed: false,
            detail: "the journal holds no record for this debate".into(),
        },
        Some(stored) => {
            let kept = sanitize::clean(&stored.markdown);
            if kept == text {
                Check {
                    name: "record",
                    passed: true,
                    detail: format!("{file} reads exactly as the journal's record"),
                }
            } else {
                Check {
                    name: "record",
                    passed: false,
                    detail: format!(
                        "{file} differs from the journal's record: {}",
                        first_difference(&kept, text)
                    ),
                }
            }
        }
    });
    Ok(record_verdict(debate.id, file, checks))
}

fn record_verdict(id: String, file: &str, checks: Vec<Check>) -> Verification {
    Verification {
        verdict: (
            format!("{file}: the journal's record of {id}, anchored in its chain as it stands."),
            format!("{file}: DOES NOT MATCH the journal of {id} (see FAIL above)."),
        ),
        id,
        checks,
    }
}

fn hashes(entries: &[AuditEntry]) -> Check {
    let damaged: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            entry
                .damage
                .as_ref()
                .map(|damage| format!("#{} {damage}", entry.seq))
        })
        .collect();
    let kept = entries.iter().filter(|e| e.body.is_some()).count();
    if entries.is_empty() {
        return Check {
            name: "hashes",
            passed: true,
            detail: "no audit trail to check (the debate ran before moot kept one)".into(),
        };
    }
    Check {
        name: "hashes",
        passed: damaged.is_empty(),
        detail: if damaged.is_empty() {
            format!(
                "{} entries, {kept} bodies match their SHA-256 ({} kept as hashes only)",
                entries.len(),
                entries.len() - kept
            )
        } else {
            damaged.join("; ")
        },
    }
}

/// The re-run's closing document against the stored one, the record's date aside (a re-run on
/// another day dates its copy that day).
fn outcome(
    store: &Store,
    id: &str,
    rerun: Option<&crate::protocol::Outcome>,
) -> Result<Check, SessionError> {
    let stored = store.synthesis(id)?;
    let (Some(stored), Some(rerun)) = (stored, rerun) else {
        return Ok(Check {
            name: "outcome",
            passed: false,
            detail: "the recorded outcome or the re-run's is missing".into(),
        });
    };
    let stored_date = stored
        .data
        .get("date")
        .and_then(|d| d.as_str())
        .unwrap_or(&rerun.date)
        .to_string();
    let undated = |text: &str| {
        untimed(text)
            .replace(&rerun.date, "<date>")
            .replace(&stored_date, "<date>")
    };
    let markdown = (
        undated(crate::decision::without_receipt(&stored.markdown)),
        undated(&rerun.markdown),
    );
    // The version says which moot wrote the result, not what the debate concluded: a result
    // journaled before versions reproduces as today's version.
    // Compared as JSON values, not as text: the same result may list an object's keys in
    // another order (N11: a false DIVERGED whose difference could not be named).
    let unversioned = |data: &serde_json::Value| {
        let mut data = data.clone();
        if let Some(map) = data.as_object_mut() {
            map.remove(crate::protocol::RESULT_VERSION_KEY);
        }
        serde_json::from_str::<serde_json::Value>(&undated(&data.to_string()))
            .unwrap_or(serde_json::Value::Null)
    };
    let data = (unversioned(&stored.data), unversioned(&rerun.data));
    let versions = (
        crate::protocol::result_version_of(&stored.data),
        crate::protocol::result_version_of(&rerun.data),
    );
    let differs =
        markdown.0 != markdown.1 || data.0 != data.1 || stored.confidence != rerun.confidence;
    if differs && versions.0 < versions.1 {
        // A result an older moot wrote is read by today's rules: a difference is what the new
        // version changed, not a sign of tampering (the chain check answers that), and it is
        // named rather than hidden.
        let at = if markdown.0 != markdown.1 {
            first_difference(&markdown.0, &markdown.1)
        } else {
            "its data".to_string()
        };
        return Ok(Check {
            name: "outcome",
            passed: true,
            detail: format!(
                "recorded by result version {}; this moot writes version {}, which reads \
                 differently ({at}); the journal itself is unchanged",
                versions.0, versions.1
            ),
        });
    }
    let detail = if markdown.0 != markdown.1 {
        format!(
            "the record differs: {}",
            first_difference(&markdown.0, &markdown.1)
        )
    } else if data.0 != data.1 {
        format!(
            "the record reads the same but its data differ at {}",
            json_difference(&data.0, &data.1, "$").unwrap_or_else(|| "?".into())
        )
    } else if stored.confidence != rerun.confidence {
        format!(
            "confidence recorded {}, re-run {}",
            stored.confidence, rerun.confidence
        )
    } else {
        return Ok(Check {
            name: "outcome",
            passed: true,
            detail: format!(
                "the same record ({} lines) and data, confidence {}",
                stored.markdown.lines().count(),
                stored.confidence
            ),
        });
    };
    Ok(Check {
        name: "outcome",
        passed: false,
        detail,
    })
}

/// `text` with every RFC 3339 timestamp (`2026-11-22T21:30:05Z`) as `<time>`: when a turn was
/// written down is the clock's, not the outcome's.
fn untimed(text: &str) -> String {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.len() - i >= shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(s, b)| match s {
                b'd' => b.is_ascii_digit(),
                other => other == b,
            });
        if fits {
            let mut end = i + shape.len();
            while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
                end += 1;
            }
            if bytes.get(end) == Some(&b'Z') {
                end += 1;
            } else if matches!(bytes.get(end), Some(b'+' | b'-')) && bytes.len() >= end + 6 {
                end += 6;
            }
            out.push_str("<time>");
            i = end;
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The path of the first place two JSON values part, with both sides.
fn json_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                match y.get(key) {
                    Some(other) => {
                        if let Some(found) = json_difference(value, other, &format!("{path}.{key}"))
                        {
                            return Some(found);
                        }
                    }
                    None => return Some(format!("{path}.{key} (only recorded)")),
                }
            }
            y.keys()
                .find(|key| !x.contains_key(*key))
                .map(|key| format!("{path}.{key} (only in the re-run)"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| json_difference(p, q, &format!("{path}[{i}]"))),
        // Numbers compare as written: serde_json takes -0.0 for 0.0, and a difference in
        // the last bit must still be named.
        (Value::Number(x), Value::Number(y)) if x.to_string() == y.to_string() => None,
        (Value::Number(_), Value::Number(_)) => Some(format!(
            "{path}: recorded {a}, re-run {b} (the same number to a hair: a computation \
             depends on an order it should not)"
        )),
        _ if a == b => None,
        _ => Some(format!(
            "{path}: recorded {}, re-run {}",
            sanitize::clean(&a.to_string())
                .chars()
                .take(120)
                .collect::<String>(),
            sanitize::clean(&b.to_string())
                .chars()
                .take(120)
                .collect::<String>()
        )),
    }
}

/// Where two texts first part, line by line.
fn first_difference(recorded: &str, rerun: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (recorded.lines().collect(), rerun.lines().collect());
    for index in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(index), b.get(index));
        if x != y {
            let shown = |line: Option<&&str>| {
                line.map(|l| format!("{:?}", sanitize::clean(l)))
                    .unwrap_or_else(|| "nothing".into())
            };
            return format!(
                "line {}: recorded {}, re-run {}",
                index + 1,
                shown(x),
                shown(y)
            );
        }
    }
    "only in line endings".into()
}

/// The trail as text: a heading, then each entry with its body.
pub fn to_text(id: &str, question: &str, entries: &[AuditEntry]) -> String {
    let count = |kind: AuditKind| entries.iter().filter(|e| e.kind == kind).count();
    let size: u64 = entries.iter().map(|e| e.size).sum();
    let mut out = format!(
        "{id} · {}\n{} entries: {} requests, {} responses, {} failures, {} events; {} of text\n",
        sanitize::clean(question),
        entries.len(),
        count(AuditKind::Request),
        count(AuditKind::Response),
        count(AuditKind::Failure),
        count(AuditKind::Event),
        kilobytes(size),
    );
    for entry in entries {
        let place = &entry.place;
        let whom = if entry.kind == AuditKind::Event {
            place.phase.clone()
        } else {
            format!(
                "round {} · {} · {} · attempt {} · {} {}",
                place.round, place.phase, place.seat, place.attempt, place.provider, place.model
            )
        };
        out.push_str(&format!(
            "\n#{} {} {:<8} {} · sha256 {}\n",
            entry.seq,
            entry.at,
            entry.kind,
            sanitize::clean(&whom),
            &entry.sha256[..12.min(entry.sha256.len())]
        ));
        if let Some(damage) = &entry.damage {
            out.push_str(&format!("  !! {damage}\n"));
        }
        match &entry.body {
            None => out.push_str(&format!(
                "  (body not kept: audit = false; {} bytes)\n",
                entry.size
            )),
            Some(body) => out.push_str(&indent(&body_text(entry.kind, body))),
        }
    }
    out
}

fn kilobytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}\n")).collect()
}

/// A body as a person reads it: a request's prompt as messages, a reply's text, an event as
/// JSON.
fn body_text(kind: AuditKind, body: &serde_json::Value) -> String {
    let field = |name: &str| body.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let text = match kind {
        AuditKind::Request => {
            let mut text = format!(
                "model {} at {}; max_tokens {}, temperature {}{}\n[system]\n{}\n",
                field("model"),
                field("endpoint"),
                body["max_tokens"],
                body["temperature"],
                body.get("schema")
                    .and_then(|s| s.get("name"))
                    .and_then(|n| n.as_str())
                    .map(|name| format!("; reply schema {name}"))
                    .unwrap_or_default(),
                field("system"),
            );
            for message in body
                .get("messages")
                .and_then(|m| m.as_array())
                .into_iter()
                .flatten()
            {
                text.push_str(&format!(
                    "[{}]\n{}\n",
                    message["role"].as_str().unwrap_or("?"),
                    message["content"].as_str().unwrap_or("")
                ));
            }
            text
        }
        AuditKind::Response => format!(
            "model {}, finish {}, usage {}\n{}",
            field("model"),
            field("finish"),
            body["usage"],
            field("text")
        ),
        AuditKind::Failure => format!(
            "{} ({})",
            field("error"),
            if body["retryable"].as_bool() == Some(true) {
                "retried when attempts remained"
            } else {
                "not retryable"
            }
        ),
        AuditKind::Event => serde_json::to_string_pretty(body).unwrap_or_default(),
    };
    sanitize::clean(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_not_part_of_an_outcome() {
        assert_eq!(
            untimed("at 2026-11-22T21:30:05Z and 2026-11-22T21:30:05.123+01:00, é"),
            "at <time> and <time>, é"
        );
        assert_eq!(untimed("2026-11-22 only"), "2026-11-22 only");
    }

    /// N11: the same result with an object's keys in another order is the same outcome; a
    /// value that differs is still named.
    #[tokio::test]
    async fn an_outcome_is_compared_as_json_values_whatever_the_key_order() {
        use crate::debate::Confidence;
        let store = Store::in_memory().unwrap();
        store
            .create_debate(&crate::store::running_debate("DEB-order001"))
            .unwrap();
        let stored = crate::store::StoredSynthesis {
            markdown: "# Result\n".into(),
            data: serde_json::json!({"b": {"y": 1, "x": 2}, "a": [1, 2]}),
            confidence: Confidence::Medium,
            path: None,
            follow_up_path: None,
            section: None,
        };
        store.save_synthesis("DEB-order001", &stored).unwrap();
        let rerun = |data: serde_json::Value| crate::protocol::Outcome {
            markdown: "# Result\n".into(),
            confidence: Confidence::Medium,
            data,
            section: None,
            date: crate::debate::today(),
        };
        let reordered =
            rerun(serde_json::from_str(r#"{"a": [1, 2], "b": {"x": 2, "y": 1}}"#).unwrap());
        let check = outcome(&store, "DEB-order001", Some(&reordered)).unwrap();
        assert!(check.passed, "{}", check.detail);
        let changed = rerun(serde_json::json!({"a": [1, 2], "b": {"x": 3, "y": 1}}));
        let check = outcome(&store, "DEB-order001", Some(&changed)).unwrap();
        assert!(!check.passed);
        assert!(check.detail.contains("$.b.x"), "{}", check.detail);
    }

    #[test]
    fn numbers_that_part_in_the_last_bit_are_named() {
        let recorded = serde_json::json!({"computed": {"opp": {"score": 0.9992}}});
        let rerun = serde_json::json!({"computed": {"opp": {"score": 0.9992000000000001}}});
        let found = json_difference(&recorded, &rerun, "$").unwrap();
        assert!(
            found.starts_with("$.computed.opp.score: recorded 0.9992, re-run 0.9992000000000001"),
            "{found}"
        );
        assert_eq!(json_difference(&recorded, &recorded.clone(), "$"), None);
    }

    #[test]
    fn the_first_difference_is_named_by_line() {
        assert_eq!(
            first_difference("a\nb\nc", "a\nB\nc"),
            r#"line 2: recorded "b", re-run "B""#
        );
        assert_eq!(
            first_difference("a", "a\nmore"),
            r#"line 2: recorded nothing, re-run "more""#
        );
    }
}
