//! `moot bench`'s arms against the stand-in server answering every call after 200 ms: the
//! debate arm's wall time against its critical path on each problem (3 agents × 2 rounds), and
//! eight problems run one at a time against four at a time (`--jobs`).
//! `cargo bench --bench compare`.

#[path = "../tests/support/mod.rs"]
mod support;

use moot::bench::arms::{self, Arm, Shape};
use moot::bench::{self, BenchSettings, data};
use moot::llm::{CapabilityCache, Provider, RetryPolicy};
use moot::providers::{self, ProviderSpec};
use moot::store::Store;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Behaviour, StandIn};

const LATENCY: Duration = Duration::from_millis(200);

fn provider(server: &StandIn) -> Arc<dyn Provider> {
    providers::Builder {
        client: moot::llm::LazyClient::default(),
        capabilities: Arc::new(CapabilityCache::default()),
        retry: moot::config::RetryConfig::default(),
        embedded: None,
    }
    .build(&ProviderSpec::openai(&server.openai_base()))
    .unwrap()
}

fn shape() -> Shape {
    Shape {
        agents: 3,
        rounds: 2,
        samples: 6,
        retry: RetryPolicy::default(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn main() {
    let server = StandIn::start_in_background(Behaviour {
        latency: LATENCY,
        ..Behaviour::default()
    });
    let provider = provider(&server);
    let runtime = runtime();
    println!(
        "debate arm, 3 agents × 2 rounds, stand-in at {} ms a call:",
        LATENCY.as_millis()
    );
    let mut worst: f64 = 0.0;
    for problem in data::arithmetic(8, 11) {
        let result = runtime
            .block_on(arms::debate(provider.as_ref(), &shape(), &problem))
            .unwrap();
        let ratio = result.wall_ms as f64 / result.critical_ms as f64;
        worst = worst.max(ratio);
        println!(
            "  wall {:>4} ms, critical path {:>4} ms, ratio {ratio:.3}",
            result.wall_ms, result.critical_ms
        );
    }
    println!("  worst ratio {worst:.3} (target ≤ 1.05)");
    for jobs in [1, 4] {
        let settings = BenchSettings {
            set: "arithmetic".into(),
            problems: data::arithmetic(8, 12),
            seed: 12,
            arms: vec![Arm::Debate],
            agents: 3,
            rounds: 2,
            samples: 6,
            jobs,
            provider: "stand-in".into(),
            protocol: None,
            unsandboxed_hooks: false,
            seat_models: Default::default(),
        };
        let store = Store::in_memory().unwrap();
        let id = bench::new_run_id();
        store
            .create_bench_run(&id, &serde_json::to_value(&settings).unwrap())
            .unwrap();
        let started = Instant::now();
        runtime
            .block_on(bench::run(
                &store,
                &id,
                &settings,
                &bench::Runners::on(provider.clone()),
                &shape(),
                &|_, _| {},
            ))
            .unwrap();
        println!(
            "8 problems, debate arm, --jobs {jobs}: {} ms (one problem's critical path is ~{} ms)",
            started.elapsed().as_millis(),
            2 * LATENCY.as_millis()
        );
    }
    SERVER.set(server).ok();
    divan::main();
}

static SERVER: std::sync::OnceLock<StandIn> = std::sync::OnceLock::new();

#[divan::bench(sample_count = 5, sample_size = 1)]
fn debate_arm_one_problem() -> Duration {
    let provider = provider(SERVER.get().unwrap());
    let problem = &data::arithmetic(1, 3)[0];
    let started = Instant::now();
    runtime()
        .block_on(arms::debate(provider.as_ref(), &shape(), problem))
        .unwrap();
    started.elapsed()
}
