//! The command line's arguments as the library's request: what `moot QUESTION --flags` asks of
//! a new debate, and which provider `--provider --model --base-url --script` name.

use crate::cli::{ProviderArgs, RunArgs};
use crate::providers::ProviderFlags;
use crate::session::DebateRequest;

impl From<&ProviderArgs> for ProviderFlags {
    fn from(args: &ProviderArgs) -> ProviderFlags {
        ProviderFlags {
            provider: args.provider.clone(),
            model: args.model.clone(),
            base_url: args.base_url.clone(),
            script: args.script.clone(),
        }
    }
}

impl From<&RunArgs> for DebateRequest {
    fn from(args: &RunArgs) -> DebateRequest {
        DebateRequest {
            question: args.question.join(" "),
            protocol: args.protocol.clone(),
            protocol_flags: args.protocol_flags.clone(),
            initiated_by: args.initiated_by.clone(),
            vote: args.vote.clone(),
            without_lessons: args.no_lessons,
            gates: args.gates.clone(),
            max_rounds: args.max_rounds,
            perspectives: args.perspectives,
            named_perspectives: args.named.clone(),
            seat_models: args.seat_models.clone(),
            checkpoints: args.checkpoints.enabled(),
            token_budget: args.token_budget.clone(),
            round_timeout_seconds: args.round_timeout,
            checkpoint_timeout_seconds: args.checkpoint_timeout,
            total_timeout_seconds: args.total_timeout,
            write_decision: args.no_write.then_some(false),
            decisions_dir: args.decisions_dir.clone(),
            follow_up: args.follow_up,
            sequential: args.sequential,
            provider: ProviderFlags::from(&args.provider),
            from_outside: false,
        }
    }
}
