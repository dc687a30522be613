//! A stored debate read back as every face shows it: its document with the uniform outcome its
//! protocol reads from the stored result, and the list as `moot list --json` and
//! `GET /v1/debates` give it.

use crate::protocol::Registry;
use crate::report::{self, DebateDocument};
use crate::store::{DebateSummary, Store, StoreError};

/// A debate as `list --json` gives it: its summary, the uniform outcome once it has one, and
/// who started it.
#[derive(serde::Serialize)]
pub struct Listed {
    #[serde(flatten)]
    summary: DebateSummary,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    concluded: Option<crate::debate::Concluded>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initiated_by: Option<String>,
}

/// The debates as `list --json` gives them (and `GET /v1/debates`).
pub fn listed(
    registry: &Registry,
    store: &Store,
    debates: Vec<DebateSummary>,
) -> Result<Vec<Listed>, StoreError> {
    let mut listed = Vec::with_capacity(debates.len());
    for summary in debates {
        let stored = store.synthesis(&summary.id)?;
        let concluded = stored.and_then(|s| {
            concluded_by(registry, &summary.protocol, Some(&s.data))
                .map(|r| crate::debate::Concluded::new(r, s.confidence))
        });
        let initiated_by = report::initiated_by(&store.debate(&summary.id)?);
        listed.push(Listed {
            summary,
            concluded,
            initiated_by,
        });
    }
    Ok(listed)
}

/// The debate's document with the uniform outcome its protocol reads from the stored result.
pub fn document(
    registry: &Registry,
    store: &Store,
    id: &str,
) -> Result<DebateDocument, StoreError> {
    let document = report::document(store, id)?;
    let resolution = concluded_by(
        registry,
        &document.debate.protocol,
        document.synthesis.as_ref().map(|s| &s.data),
    );
    Ok(document.with_conclusion(resolution))
}

/// What the protocol named reads from a stored result; `None` for a protocol not in
/// `registry` or a result it cannot read.
fn concluded_by(
    registry: &Registry,
    protocol: &str,
    data: Option<&serde_json::Value>,
) -> Option<crate::debate::Resolution> {
    registry.named(protocol).ok()?.resolution(data?)
}
