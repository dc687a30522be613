//! Talking to language models: the streaming `Provider` trait, its HTTP and scripted
//! implementations, retries, and tolerant handling of structured (JSON) replies.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The domain and the OS crate under the names the modules here use.
use moot_domain::{debate, sanitize};
use moot_os::paths;

pub mod anthropic;
pub mod capability;
pub mod cascade;
pub mod embedded;
pub mod endpoint;
pub mod gguf;
pub mod grammar;
pub mod http;
pub mod instructions;
pub mod models;
pub mod openai;
pub mod provider;
pub mod retry;
pub mod scripted;
pub mod sse;
pub mod structured;

pub use capability::{Capabilities, CapabilityCache, StructuredMode};
pub use http::{HttpSetupError, LazyClient, http_client};
pub use provider::{
    ChatMessage, ChatRequest, Completion, FinishReason, LlmError, Provider, ProviderKind,
    REQUEST_HEADER, ReplyFormat, RequestLabel, TextSink, Usage, estimate_tokens,
};
pub use retry::RetryPolicy;
