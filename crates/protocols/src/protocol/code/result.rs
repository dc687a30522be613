//! What a code debate concludes: the `CodeResult` (versions, tests, the winner, findings,
//! reflections) as its outcome, and the recommendation the record makes.

use super::Outcome;
use super::settings::CodeSettings;
use super::workshop::Workshop;
use crate::code::record::{CodeResult, Reflection};
use crate::code::versions::{Version, Winner};
use crate::debate::Confidence;

/// The uniform outcome: the chosen version, by its tests then its quality score; the
/// consensus score is the share of the red team's findings a version closed (1 with none).
pub(super) fn resolution(result: &CodeResult) -> crate::debate::Resolution {
    let closed = result
        .findings
        .iter()
        .filter(|f| f.closed_by.is_some())
        .count();
    // A version that fails its tests is nobody's winner (C7): the record recommends none, and
    // the outcome says the same.
    let failing = result.winner.is_some_and(|n| {
        result
            .versions
            .iter()
            .any(|v| v.number == n && v.hooks_ok == Some(false))
    });
    crate::debate::Resolution {
        winner: result
            .winner
            .filter(|_| !failing)
            .map(|n| format!("version {n}")),
        method: match (failing, result.winner) {
            (true, Some(n)) => {
                format!("no version passes its tests (version {n} passes the most)")
            }
            _ if result.tests.is_empty() => "quality score (no tests ran)".into(),
            _ => "tests, then quality score".into(),
        },
        final_consensus_score: if result.findings.is_empty() {
            1.0
        } else {
            closed as f64 / result.findings.len() as f64
        },
    }
}

/// The outcome of a debate whose phases ran: the result with `chosen` as its winner.
pub(super) fn outcome(
    shop: &Workshop<'_>,
    chosen: Option<Winner>,
    findings: Vec<crate::code::record::Finding>,
    reflections: Vec<Reflection>,
) -> Outcome<CodeResult> {
    let (common, settings) = (shop.common, shop.settings);
    let recommendation = recommendation(shop, chosen.as_ref());
    let result = CodeResult {
        task: common.question.clone(),
        clarifications: shop.clarifications.clone(),
        versions: shop.versions.clone(),
        winner: None,
        winner_reason: String::new(),
        tests: shop.tests.clone(),
        findings,
        reflections,
        recommendation,
        hooks_note: settings.hooks_note.clone(),
        notes: shop
            .notes
            .iter()
            .cloned()
            .chain(unsandboxed_note(settings, &shop.tests))
            .collect(),
    }
    .with_winner(chosen);
    let confidence = if result.versions.iter().any(Version::passes) {
        Confidence::High
    } else {
        Confidence::Low
    };
    Outcome {
        markdown: result.to_markdown(),
        confidence,
        data: result,
        section: Some("code_result".into()),
        date: crate::debate::today(),
    }
}

/// What the record recommends doing with the chosen version: apply it (and how), or why not.
fn recommendation(shop: &Workshop<'_>, chosen: Option<&Winner>) -> String {
    let (ctx, settings) = (shop.ctx, shop.settings);
    let failing = chosen.is_some_and(|w| {
        shop.versions
            .iter()
            .any(|v| v.number == w.number && v.hooks_ok == Some(false))
    });
    match chosen {
        // A version that fails its tests is never recommended for applying.
        Some(w) if failing => format!(
            "No version passes its tests, so none is recommended for applying. Version {} passes the most; `moot code apply {} --version {} --failing` applies it anyway.",
            w.number, ctx.debate_id, w.number
        ),
        Some(w) if settings.in_git => format!(
            "Apply version {} with `moot code apply {} --version {}` (each version is a commit in moot's own git dir for the debate, not in your repository; `moot code diff {} 1 {}` compares them).",
            w.number, ctx.debate_id, w.number, ctx.debate_id, w.number
        ),
        Some(w) => format!(
            "Apply version {} with `moot code apply {} --version {}` (outside git it writes the version's files, refusing any you changed since the debate started).",
            w.number, ctx.debate_id, w.number
        ),
        None => "No version was written; nothing to apply.".into(),
    }
}

/// What the record says when hooks ran model-written code with no box, or with nothing to
/// cap their processes (the person passed `--unsandboxed-hooks` where moot could not build
/// one, or as root with no writable cgroup).
fn unsandboxed_note(
    settings: &CodeSettings,
    tests: &[(u32, crate::code::hooks::HookResult)],
) -> Option<String> {
    let ran = || tests.iter().filter(|(_, r)| r.error.is_none());
    let unboxed = ran().filter(|(_, r)| r.sandbox.is_none()).count();
    let uncapped = ran()
        .filter(|(_, r)| r.sandbox.is_some() && r.limits.is_none())
        .count();
    if !settings.hooks.iter().any(|h| h.unsandboxed) {
        return None;
    }
    let mut said = Vec::new();
    if unboxed > 0 {
        said.push(format!(
            "{unboxed} hook runs ran model-written code without a box (--unsandboxed-hooks): they could read and write anything you can"
        ));
    }
    if uncapped > 0 {
        said.push(format!(
            "{uncapped} hook runs ran model-written code with no cap on their processes or memory (--unsandboxed-hooks)"
        ));
    }
    (!said.is_empty()).then(|| said.join("; "))
}
