//! Runs the tests' stand-in OpenAI/Anthropic server by hand:
//! `cargo run --example standin -- [PORT] [LATENCY_MS]`, then
//! `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 moot --headless "…"`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let latency: u64 = args.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    let server = support::StandIn::start_on(
        port,
        support::Behaviour {
            latency: Duration::from_millis(latency),
            ..support::Behaviour::default()
        },
    )
    .await;
    println!("OPENAI_BASE_URL={}", server.openai_base());
    println!("ANTHROPIC_BASE_URL={}", server.anthropic_base());
    std::future::pending::<()>().await;
}
