//! What a face asks of a new debate, in the library's own terms: the command line, the
//! workbench's form and `moot serve` each build a `DebateRequest` and hand it to `assemble`,
//! which checks it the same way for all of them.

use crate::providers::ProviderFlags;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A new debate as asked for; every field left empty takes the config's value (or the
/// protocol's default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DebateRequest {
    pub question: String,
    /// The protocol that runs it (`None`: `protocol =` in the config, else moderated).
    pub protocol: Option<String>,
    /// The options the protocol adds, by flag name (`option`, `topology`, `context`…) → the
    /// values given; a switch given once has one empty value.
    pub protocol_flags: BTreeMap<String, Vec<String>>,
    /// An outside agent that names itself (`agent:NAME`), recorded as who started it.
    pub initiated_by: Option<String>,
    /// End with a vote counted this way (plurality, borda, …).
    pub vote: Option<String>,
    /// Neither give this debate lessons nor write lessons from it.
    pub without_lessons: bool,
    /// The gates it stops at for approval (turns gates on), instead of `[gates]`.
    pub gates: Option<Vec<String>>,
    /// 1 to 20.
    pub max_rounds: Option<u32>,
    /// How many perspectives are seated, 2 to 4.
    pub perspectives: Option<u32>,
    /// The catalog perspectives to seat (or, for a protocol that reads them so, to focus on).
    pub named_perspectives: Vec<String>,
    /// Checkpoints on or off.
    pub checkpoints: Option<bool>,
    /// Per-seat token budget per round: a number, or 0 / "unlimited".
    pub token_budget: Option<String>,
    pub round_timeout_seconds: Option<u64>,
    pub checkpoint_timeout_seconds: Option<u64>,
    pub total_timeout_seconds: Option<u64>,
    /// Write the decision record file (`None`: as the config says).
    pub write_decision: Option<bool>,
    /// Where decision records go, relative to the working directory.
    pub decisions_dir: Option<PathBuf>,
    /// Also write an issue draft next to the record.
    pub follow_up: bool,
    /// Make every call one after another.
    pub sequential: bool,
    /// The provider asked for (by name, model, URL or script), resolved against the config.
    pub provider: ProviderFlags,
    /// Seats on providers of their own, each `SEAT=PROVIDER[:MODEL]`: the seat by its letter
    /// (A–D) or its perspective's name, the provider a kind or a configured profile.
    pub seat_models: Vec<String>,
    /// Asked from off this machine (the HTTP API): nothing is gathered from the directory
    /// moot runs in, whatever the protocol.
    pub from_outside: bool,
}

impl DebateRequest {
    /// A request for `question` with everything else from the config.
    pub fn new(question: impl Into<String>) -> DebateRequest {
        DebateRequest {
            question: question.into(),
            ..DebateRequest::default()
        }
    }

    /// Gate points as given, each possibly a comma-separated list (as `--gates` takes them):
    /// one point each, trimmed, empty ones left out.
    pub fn gate_points(given: &[String]) -> Vec<String> {
        given
            .iter()
            .flat_map(|g| g.split(','))
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect()
    }

    /// The ranges the command line's parser holds its flags to, held for every face: a
    /// request built by the server or a library caller gets the same refusal.
    pub(super) fn check_ranges(&self) -> Result<(), crate::protocol::SettingsError> {
        if let Some(rounds) = self.max_rounds
            && !(1..=20).contains(&rounds)
        {
            return Err(crate::protocol::refused!(
                "--max-rounds {rounds}: a debate runs 1 to 20 rounds"
            ));
        }
        if let Some(count) = self.perspectives
            && !(2..=4).contains(&count)
        {
            return Err(crate::protocol::refused!(
                "--perspectives {count}: a debate seats 2 to 4 perspectives"
            ));
        }
        for (flag, seconds) in [
            ("--round-timeout", self.round_timeout_seconds),
            ("--checkpoint-timeout", self.checkpoint_timeout_seconds),
            ("--total-timeout", self.total_timeout_seconds),
        ] {
            if let Some(seconds) = seconds
                && !(1..=crate::engine::LONGEST_WAIT_SECONDS).contains(&seconds)
            {
                return Err(crate::protocol::refused!(
                    "{flag} {seconds}: give 1 second to a year ({} seconds)",
                    crate::engine::LONGEST_WAIT_SECONDS
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_points_read_lists_as_the_command_line_does() {
        let given = [
            "after_round, before_synthesis".to_string(),
            " ,".to_string(),
        ];
        assert_eq!(
            DebateRequest::gate_points(&given),
            ["after_round", "before_synthesis"]
        );
    }
}
