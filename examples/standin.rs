//! Runs the tests' stand-in OpenAI/Anthropic server by hand:
//! `cargo run --example standin -- [PORT] [LATENCY_MS] [--always-conclude] [--no-concessions]
//! [--inject TEXT] [--strike ID] [--ad-hominem ID]`, then `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 moot --headless "…"`.
//! `--always-conclude --no-concessions --inject "…"` is the moderator that declares consensus
//! every round while no seat concedes and every argument carries an injection.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut behaviour = support::Behaviour::default();
    let mut numbers = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--always-conclude" => behaviour.always_conclude = true,
            "--no-concessions" => behaviour.no_concessions = true,
            "--inject" => behaviour.inject = args.next(),
            // A dialogue's moderator strikes, or flags as ad hominem, these move ids.
            "--strike" => behaviour
                .strike
                .extend(args.next().map(|id| &*Box::leak(id.into_boxed_str()))),
            "--ad-hominem" => behaviour
                .ad_hominem
                .extend(args.next().map(|id| &*Box::leak(id.into_boxed_str()))),
            number => numbers.extend(number.parse::<u64>().ok()),
        }
    }
    let port = numbers.first().copied().unwrap_or(0) as u16;
    behaviour.latency = Duration::from_millis(numbers.get(1).copied().unwrap_or(0));
    let server = support::StandIn::start_on(port, behaviour).await;
    println!("OPENAI_BASE_URL={}", server.openai_base());
    println!("ANTHROPIC_BASE_URL={}", server.anthropic_base());
    std::future::pending::<()>().await;
}
