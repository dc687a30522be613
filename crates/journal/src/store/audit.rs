//! The journal's audit trail: each request moot sent, each raw reply or failure, and the
//! votes, gates and lessons a debate used, timestamped, with the SHA-256 of each body and the
//! body itself deflate-compressed (or only its hash, when `audit = false`).

use super::{Sqlite, StoreError};
use flate2::read::DeflateDecoder;
use flate2::{Compress, Compression, FlushCompress, Status};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::io::Read;

crate::debate::vocabulary! {
    /// What an audit entry holds.
    pub enum AuditKind {
        /// A request as sent: model, parameters, system prompt, messages, schema.
        Request,
        /// A provider's raw reply text, its model, usage and finish.
        Response,
        /// An attempt that failed (and whether it was retried).
        Failure,
        /// A vote, a gate or the lessons a debate used, as the event that announced it.
        Event,
    }
}

/// Where an entry belongs: the turn it served (round 0 and seat `debate` for a debate-wide
/// entry) and the attempt at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditPlace {
    pub round: u32,
    pub phase: String,
    pub seat: String,
    pub attempt: u32,
    pub provider: String,
    pub model: String,
}

/// One entry read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    pub seq: i64,
    pub at: String,
    pub kind: AuditKind,
    #[serde(flatten)]
    pub place: AuditPlace,
    /// SHA-256 of the body's text, hex.
    pub sha256: String,
    /// The body's length in bytes before compression.
    pub size: u64,
    /// The body (JSON), when it was kept.
    pub body: Option<serde_json::Value>,
    /// Set when the stored body no longer matches its hash, or cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
}

/// Hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

thread_local! {
    /// A compressor per thread, reset between bodies: making one allocates and clears its
    /// tables, which cost more than compressing a typical body.
    static COMPRESSOR: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
}

/// Compressed (raw deflate) at the fastest level: every call of every debate is written here
/// and the trail is read rarely, so the bytes saved by a higher level cost more CPU than they
/// are worth.
pub(super) fn deflate(text: &str) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with_borrow_mut(|compressor| {
        compressor.reset();
        let input = text.as_bytes();
        let mut out = Vec::with_capacity(input.len() / 2 + 64);
        loop {
            // What the compressor has taken, since its reset: never more than the input.
            let taken = (compressor.total_in() as usize).min(input.len());
            let status = compressor
                .compress_vec(&input[taken..], &mut out, FlushCompress::Finish)
                .map_err(std::io::Error::other)?;
            if status == Status::StreamEnd {
                return Ok(out);
            }
            // The output was full: room for as much again.
            out.reserve(out.capacity().max(64));
        }
    })
}

fn inflate(bytes: &[u8]) -> std::io::Result<String> {
    let mut text = String::new();
    DeflateDecoder::new(bytes).read_to_string(&mut text)?;
    Ok(text)
}

impl Sqlite {
    /// Appends one entry. The body is redacted of every secret moot knows before it is hashed
    /// or stored; `keep_body` false stores the hash and size only.
    pub fn record_audit(
        &self,
        id: &str,
        kind: AuditKind,
        place: &AuditPlace,
        body: &serde_json::Value,
        keep_body: bool,
    ) -> Result<(), StoreError> {
        let entry = super::Entry::Audit {
            kind,
            place,
            body,
            keep_body,
        };
        self.append(id, &[entry])
    }

    /// A debate's audit trail in the order it was written; each body inflated and checked
    /// against its hash (a mismatch is reported on the entry, not hidden).
    pub fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = self.with(|connection| {
            let mut statement = connection.prepare(
                "SELECT seq, at, kind, round, phase, seat, attempt, provider, model, sha256, size, body
                 FROM audit WHERE debate_id = ?1 ORDER BY seq",
            )?;
            let rows = statement
                .query_map(params![id], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        AuditPlace {
                            round: row.get(3)?,
                            phase: row.get(4)?,
                            seat: row.get(5)?,
                            attempt: row.get(6)?,
                            provider: row.get(7)?,
                            model: row.get(8)?,
                        },
                        row.get::<_, String>(9)?,
                        row.get::<_, i64>(10)?,
                        row.get::<_, Option<Vec<u8>>>(11)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        Ok(rows
            .into_iter()
            .map(|(seq, at, kind, place, sha256, size, stored)| {
                audit_entry(seq, at, &kind, place, sha256, size, stored)
            })
            .collect())
    }
}

/// An audit entry read back from its columns: its body inflated and held to its hash (a
/// mismatch is reported on the entry, not hidden). Both journals read entries so.
pub(super) fn audit_entry(
    seq: i64,
    at: String,
    kind: &str,
    place: AuditPlace,
    sha256: String,
    size: i64,
    stored: Option<Vec<u8>>,
) -> AuditEntry {
    let (body, damage) = match stored.map(|bytes| inflate(&bytes)) {
        None => (None, None),
        Some(Err(e)) => (None, Some(format!("the stored body cannot be read: {e}"))),
        Some(Ok(text)) if sha256_hex(&text) != sha256 => (
            serde_json::from_str(&text).ok(),
            Some("the stored body does not match its hash".to_string()),
        ),
        Some(Ok(text)) => match serde_json::from_str(&text) {
            Ok(value) => (Some(value), None),
            Err(e) => (None, Some(format!("the stored body is not JSON: {e}"))),
        },
    };
    AuditEntry {
        seq,
        at,
        kind: kind.parse().unwrap_or(AuditKind::Event),
        place,
        sha256,
        size: size.max(0) as u64,
        body,
        damage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every body comes back whole, compressible or not.
    #[test]
    fn deflated_bodies_round_trip() {
        let mut noise = String::new();
        let mut x: u32 = 7;
        for _ in 0..200_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            noise.push(char::from(b'!' + (x >> 16) as u8 % 90));
        }
        for body in [
            "",
            "short",
            noise.as_str(),
            "short again",
            &"abc".repeat(50_000),
        ] {
            assert_eq!(inflate(&deflate(body).unwrap()).unwrap(), body);
        }
    }
}
