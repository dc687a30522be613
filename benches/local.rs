//! The embedded model's speed on the default GGUF with 2 threads: prompt processing and
//! generation tokens per second as the provider delivers them, beside llama.cpp's own timings
//! of the same requests; time to first token of a debater turn; an argument phase of 1, 2 and
//! 3 seats decoded one after another and together, beside one seat on the same prompt; the
//! tokens per second of 1, 2 and 3 replies generated together (each its own prompt, up to 128
//! tokens); a seat's second turn beside its first; replies drafted ahead from their context
//! beside the same requests without; memory with the model loaded.
//! `cargo bench --bench local` (after `moot model pull`, or with MOOT_TEST_MODEL set).

#[path = "../tests/support/model.rs"]
mod model;

use model::model_path;
use moot::debate::Phase;
use moot::llm::embedded::LocalSettings;
use moot::llm::local::{LocalProvider, Timings};
use moot::llm::{ChatMessage, ChatRequest, Provider as _, ReplyFormat, RequestLabel};
use std::time::Instant;

const RUNS: usize = 5;

/// System prompts' caches are kept here for the run, so that every figure but `kept_opening`'s
/// starts from reading them, whatever earlier runs left in the models directory.
static KEPT: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

/// Resident and peak memory of this process, in MB, from /proc.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn request(seat: usize, words: usize, reply: Option<ReplyFormat>, max_tokens: u32) -> ChatRequest {
    // A different opening each time, so that no run reuses the previous prompt's cache.
    let filler = "Caching trades freshness for speed, and every layer adds operations work. "
        .repeat(words / 11 + 1);
    ChatRequest {
        label: RequestLabel {
            round: 1,
            phase: Phase::Argument,
            seat: format!("S{seat}"),
            perspective: None,
            request: "moot_argument",
        },
        system: format!("Session {seat}. You are a careful engineer in a debate."),
        messages: vec![ChatMessage::user(format!(
            "Run {seat}. {filler}\nQuestion: Should we use Redis or PostgreSQL for caching? Write at length."
        ))],
        reply,
        max_tokens: Some(max_tokens),
        temperature: Some(0.7),
        reply_bytes: None,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Run {
    timings: Timings,
    /// From the call to the first streamed text, queue included.
    first_text_ms: f64,
}

fn run(runtime: &tokio::runtime::Runtime, provider: &LocalProvider, request: &ChatRequest) -> Run {
    let started = Instant::now();
    let mut first = None;
    let (_, timings) = runtime
        .block_on(provider.complete_timed(request, &mut |_: &str| {
            first.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1000.0);
        }))
        .unwrap();
    Run {
        timings,
        first_text_ms: first.unwrap_or(f64::NAN),
    }
}

fn main() {
    let path = model_path();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (rss_before, _) = memory();
    let loading = Instant::now();
    // Without drafting: llama.cpp's own timing counts a decode of a token and its drafts as
    // prompt reading, so only replies written a token a decode compare with it.
    let settings = LocalSettings {
        threads: Some(2),
        openings: Some(KEPT.path().to_path_buf()),
        drafts: Some(0),
        ..LocalSettings::default()
    };
    let provider = LocalProvider::open(&path, &settings).unwrap();
    // The same model (drafting is a request's setting), drafting as a debate does.
    let drafting = LocalProvider::open(
        &path,
        &LocalSettings {
            drafts: None,
            ..settings.clone()
        },
    )
    .unwrap();
    let load_ms = loading.elapsed().as_secs_f64() * 1000.0;
    let (rss_loaded, _) = memory();
    let loaded = provider.loaded();
    println!(
        "model {} ({}, {:.1} M parameters, {:.1} MB), context {}, {} threads; loaded in {load_ms:.0} ms",
        loaded.name,
        loaded.architecture,
        loaded.parameters as f64 / 1e6,
        loaded.bytes as f64 / 1e6,
        loaded.context,
        loaded.threads
    );

    // Prompt processing: ~512 fresh prompt tokens, one generated token.
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for seat in 0..RUNS {
        let timings = run(&runtime, &provider, &request(seat, 380, None, 1)).timings;
        let evaluated = (timings.prompt_tokens - timings.reused_tokens) as f64;
        ours.push(evaluated / (timings.prompt_ms / 1000.0));
        theirs.push(timings.llama_prompt_tokens as f64 / (timings.llama_prompt_ms / 1000.0));
    }
    let (pp_ours, pp_theirs) = (median(ours), median(theirs));
    println!(
        "prompt processing: provider {pp_ours:.0} tok/s, llama.cpp's own timing {pp_theirs:.0} tok/s, ratio {:.2}",
        pp_ours / pp_theirs
    );

    // Generation, unconstrained and under the debater grammar.
    let schema = ReplyFormat {
        name: "debater_reply".into(),
        schema: moot::protocol::moves::debater_schema(),
    };
    for (label, reply) in [
        ("plain", None),
        ("schema-constrained", Some(schema.clone())),
    ] {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut counts = Vec::new();
        let mut fallbacks = 0;
        let (mut drafted_rates, mut drafted, mut kept) = (Vec::new(), 0, 0);
        for seat in 0..RUNS {
            let request = request(100 + seat, 40, reply.clone(), 128);
            let timings = run(&runtime, &provider, &request).timings;
            ours.push(timings.generated_tokens as f64 / (timings.generation_ms / 1000.0));
            theirs.push(
                timings.llama_generated_tokens as f64 / (timings.llama_generation_ms / 1000.0),
            );
            counts.push(timings.generated_tokens as f64);
            fallbacks += timings.grammar_fallbacks;
            // The same request drafted: a reply of its own (sampled afresh), as fast as it goes.
            let with_drafts = run(&runtime, &drafting, &request).timings;
            drafted_rates
                .push(with_drafts.generated_tokens as f64 / (with_drafts.generation_ms / 1000.0));
            drafted += with_drafts.drafted_tokens;
            kept += with_drafts.drafts_kept;
        }
        let (tg_ours, tg_theirs) = (median(ours), median(theirs));
        println!(
            "generation ({label}, median {:.0} tokens): provider {tg_ours:.0} tok/s, llama.cpp's own timing {tg_theirs:.0} tok/s, ratio {:.2} (the grammar refused all 40 likeliest tokens {fallbacks} times in {} tokens)",
            median(counts.clone()),
            tg_ours / tg_theirs,
            counts.iter().sum::<f64>()
        );
        println!(
            "  drafted ahead from the context, the same requests: {:.0} tok/s ({kept} of {drafted} drafted tokens kept)",
            median(drafted_rates)
        );
    }

    // Time to first token of a debater turn: a debate-sized prompt under the reply grammar.
    let mut first_token = Vec::new();
    let mut first_text = Vec::new();
    for seat in 0..RUNS {
        let result = run(
            &runtime,
            &provider,
            &request(200 + seat, 1000, Some(schema.clone()), 64),
        );
        first_token.push(result.timings.first_token_ms);
        first_text.push(result.first_text_ms);
    }
    println!(
        "time to first token of a debater turn (~1400-token prompt): {:.0} ms on the worker, {:.0} ms to the caller",
        median(first_token),
        median(first_text)
    );
    // Seats in turn, as a round runs them on the one worker: the real debater system prompts
    // for two catalog perspectives, A, B, A, B. What one seat's turn can reuse of the one before
    // it is the prefix their prompts share.
    let catalog = moot::catalog::catalog(&[]);
    let seats: Vec<moot::debate::Seat> = catalog
        .iter()
        .take(2)
        .zip(["A", "B"])
        .map(|(perspective, id)| moot::debate::Seat {
            id: id.into(),
            perspective: perspective.name.clone(),
            priorities: perspective.priorities.clone(),
            trade_offs: perspective.trade_offs.clone(),
            stance: format!("{} should decide it.", perspective.name),
            provider: None,
            model: None,
        })
        .collect();
    // A debater's system prompt as a debate sends it to this provider.
    let system = moot::llm::instructions::system_asking(
        &moot::protocol::text::debater_system(),
        &provider.schema_instructions(&schema),
    );
    let mut in_turn = Vec::new();
    let mut reused = Vec::new();
    let mut prompt_tokens = Vec::new();
    for turn in 0..2 * RUNS {
        let seat = &seats[turn % 2];
        let mut turn_request = request(300 + turn, 200, Some(schema.clone()), 64);
        turn_request.system = system.clone();
        turn_request.messages = vec![ChatMessage::user(format!(
            "Question: Should we use Redis or PostgreSQL for caching?\nRound {} of at most 5.\n\
             {}\nMake your argument for this round.",
            turn / 2 + 1,
            moot::protocol::text::seat_identity(seat)
        ))];
        let result = run(&runtime, &provider, &turn_request);
        if turn > 0 {
            in_turn.push(result.timings.first_token_ms);
            reused.push(result.timings.reused_tokens as f64);
            prompt_tokens.push(result.timings.prompt_tokens as f64);
        }
    }
    println!(
        "seats in turn (real debater system prompts, A B A B…): first token {:.0} ms, {:.0} of {:.0} prompt tokens reused from the seat before",
        median(in_turn),
        median(reused),
        median(prompt_tokens)
    );

    second_turn(&runtime, &provider, &seats[0], &system);
    // What follows opens models of its own. A debate runs one model (its seats and moderator
    // share it): with a second loaded, two OpenMP teams share the two cores, whose barriers
    // then sleep rather than spin, and every figure below measured the contention.
    drop(provider);
    drop(drafting);
    argument_phase(&runtime, &path, &seats, &system);
    generation_together(&runtime, &path);
    kept_opening(&runtime, &path, &seats[0], &system);

    let (rss_after, peak) = memory();
    println!(
        "memory: {rss_before:.1} MB before loading, {rss_loaded:.1} MB with the model loaded, {rss_after:.1} MB after these runs (peak {peak:.1} MB)"
    );
}

/// The prompt a seat argues from in round 2 of a moderated debate, built by the protocol's
/// own `debater_prompt`: what every seat is shown (the question, the seats, the moderator's
/// opening, ten open arguments, the task), then which seat it is and its position so far. The
/// question names the run, so no run reuses another's beyond the system prompt.
fn argument_request(
    seat: &moot::debate::Seat,
    seats: &[moot::debate::Seat],
    system: &str,
    run: usize,
) -> ChatRequest {
    let pose = "Weigh operational cost against latency: the service reads a session on every \
                request, writes it on login, and the team runs PostgreSQL already. "
        .repeat(6);
    let graph = moot::argue::ArgumentGraph {
        arguments: (0..10)
            .map(|n| moot::argue::Argument {
                id: format!("{}1.{n}", seats[n % seats.len()].id),
                seat: seats[n % seats.len()].id.clone(),
                round: 1,
                text: format!(
                    "Point {n}: a managed Redis adds a moving part the on-call rota must learn."
                ),
                score: 0.5,
                retracted: false,
                struck: false,
                conceded_by: Vec::new(),
                challenged_by: Vec::new(),
            })
            .collect(),
        relations: Vec::new(),
    };
    let question = format!("Should we use Redis or PostgreSQL for caching? (run {run})");
    let guidance = ["Write at least 300 words.".to_string()];
    let position = format!(
        "From {}: keep sessions in PostgreSQL; add Redis only once reads pass 5 ms at p99.",
        seat.perspective
    );
    let prompt =
        moot::protocol::moderated::debater_prompt(&moot::protocol::moderated::DebaterInput {
            question: &question,
            constraints: &[],
            seat,
            seats,
            round: 2,
            max_rounds: 3,
            pose: &pose,
            guidance: &guidance,
            challenge: None,
            previous_position: Some(&position),
            graph: &graph,
            this_round: &[],
            rebuttal: false,
        });
    let mut request = request(run, 0, None, PHASE_REPLY_TOKENS as u32);
    request.system = system.to_string();
    request.messages = vec![ChatMessage::user(prompt)];
    // As a debate asks: at the provider's own temperature.
    request.temperature = None;
    request
}

/// The tokens each reply of an argument phase is capped at.
const PHASE_REPLY_TOKENS: usize = 96;
/// Phases counted for each seat count (those whose every reply ran to its cap), and the most
/// tried. Ten tries had left a kind with two counted runs in one bench run (two seats, whose
/// replies must both run to the cap), a median too thin to compare.
const PHASE_RUNS: usize = 5;
const PHASE_ATTEMPTS: usize = 16;

/// The wall time of an argument phase: `seats` requests one after another on a one-sequence
/// model, and together on a model that decodes them in one batch; each beside one seat alone on
/// the same prompt (its own request of that phase: a prompt shows every seat of the phase, so a
/// one-seat phase's prompt is shorter, by some 40 tokens a seat), and beside a one-seat phase.
/// Replies are sampled as a debate samples them, and only phases whose every reply ran to its
/// 96-token cap are counted (the prompt asks for far more), so the sides compare the same
/// work: replies that ended where they liked made the batched side generate more (182 tokens
/// for two seats against 115), and a reply that stopped at 38 tokens made one seat look twice
/// as fast as it is.
fn argument_phase(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
    catalog_seats: &[moot::debate::Seat],
    system: &str,
) {
    let mut seats = catalog_seats.to_vec();
    let mut third = seats[0].clone();
    third.id = "C".into();
    third.perspective = "Operations".into();
    seats.push(third);
    // The first `count` seats' requests, on prompts that show the first `shown` seats.
    let phase = |provider: &LocalProvider, (count, shown): (usize, usize), together, run| {
        let requests: Vec<ChatRequest> = seats[..count]
            .iter()
            .map(|seat| argument_request(seat, &seats[..shown], system, run))
            .collect();
        let started = Instant::now();
        let generated = if together {
            generated_at_once(runtime, provider, &requests)
        } else {
            requests
                .iter()
                .map(|request| run_request(runtime, provider, request).generated_tokens)
                .sum()
        };
        (started.elapsed().as_secs_f64(), generated)
    };
    // Phases of 1, 2 and 3 seats, and one seat on the prompts of 2 and of 3.
    let kinds = [(1, 1), (2, 2), (3, 3), (1, 2), (1, 3)];
    for (label, sequences, together) in [("one after another", 1, false), ("together", 4, true)] {
        let provider = LocalProvider::open(
            path,
            &LocalSettings {
                threads: Some(2),
                openings: Some(KEPT.path().to_path_buf()),
                sequences: Some(sequences),
                ..LocalSettings::default()
            },
        )
        .unwrap();
        // A first run fills the cache with what runs share (the system prompt's opening).
        phase(&provider, (3, 3), together, 999);
        // The kinds take turns, so that a host that slows down or speeds up part way (a shared
        // machine's neighbours) moves every kind's runs alike, not one kind's.
        let mut walls = kinds.map(|_| Vec::new());
        let mut tried = kinds.map(|_| 0);
        for attempt in 0..PHASE_ATTEMPTS {
            for (kind, &(count, shown)) in kinds.iter().enumerate() {
                if walls[kind].len() == PHASE_RUNS {
                    continue;
                }
                // A run number of its own for every phase, so none reuses another's prompt.
                let run = 1000 * kind + attempt;
                let (wall, generated) = phase(&provider, (count, shown), together, run);
                tried[kind] += 1;
                if generated == PHASE_REPLY_TOKENS * count {
                    walls[kind].push(wall);
                }
            }
        }
        let walls = walls.map(|walls| {
            let counted = walls.len();
            (counted > 0).then(|| (median(walls), counted))
        });
        let ratio = |wall: f64, of: Option<(f64, usize)>| match of {
            Some((alone, _)) => format!("{:.2}", wall / alone),
            None => "-".into(),
        };
        let mut line = format!("argument phase, {label}:");
        // Phases of 1, 2 and 3 seats, each found by its shape.
        let of_shape = |shape: (usize, usize)| kinds.iter().position(|&kind| kind == shape);
        for count in 1..=3 {
            let Some(kind) = of_shape((count, count)) else {
                continue;
            };
            let full = PHASE_REPLY_TOKENS * count;
            let Some((wall, counted)) = walls[kind] else {
                line.push_str(&format!(
                    " {count} seat(s): no run of {} ran every reply to its cap;",
                    tried[kind]
                ));
                continue;
            };
            if count == 1 {
                line.push_str(&format!(
                    " 1 seat {wall:.2} s ({full} tokens generated, {counted} of {} runs);",
                    tried[kind]
                ));
                continue;
            }
            // One seat on this phase's own prompt.
            let same = of_shape((1, count)).and_then(|kind| walls[kind]);
            let same_wall = same.map_or("unmeasured".into(), |(wall, _)| format!("{wall:.2} s"));
            line.push_str(&format!(
                " {count} seats {wall:.2} s ({} × one seat on the same prompt, {same_wall}; {} × a one-seat phase; {full} tokens generated, {counted} of {} runs);",
                ratio(wall, same),
                ratio(wall, of_shape((1, 1)).and_then(|kind| walls[kind])),
                tried[kind]
            ));
        }
        println!("{}", line.trim_end_matches(';'));
    }
}

/// Generation alone, together: 1, 2 and 3 requests with short prompts of their own, decoded
/// in one batch, as tokens generated per second of wall time (the argument phase's figures
/// also hold prompt reading and replies that end at different lengths). Where moot chooses
/// the kernels, each run is made on moot's own kernel and then on ggml's, so that whatever
/// else the machine does falls on both.
fn generation_together(runtime: &tokio::runtime::Runtime, path: &std::path::Path) {
    #[cfg(moot_kernel_choice)]
    let kernels = [("moot's kernel", true), ("ggml's kernels", false)];
    #[cfg(not(moot_kernel_choice))]
    let kernels = [("llama.cpp's kernels", true)];
    let provider = LocalProvider::open(
        path,
        &LocalSettings {
            threads: Some(2),
            openings: Some(KEPT.path().to_path_buf()),
            sequences: Some(3),
            ..LocalSettings::default()
        },
    )
    .unwrap();
    let provider = &provider;
    let mut rates = vec![[Vec::new(), Vec::new(), Vec::new()]; kernels.len()];
    for run in 0..3 {
        for count in 1..=3 {
            for (kernel, (_, own)) in kernels.iter().enumerate() {
                use_own_kernel(*own);
                let requests: Vec<ChatRequest> = (0..count)
                    .map(|seat| request(1000 + 100 * run + 10 * kernel + seat, 20, None, 128))
                    .collect();
                let started = Instant::now();
                let generated = generated_at_once(runtime, provider, &requests);
                let wall = started.elapsed().as_secs_f64();
                rates[kernel][count - 1].push(generated as f64 / wall);
            }
        }
    }
    use_own_kernel(true);
    for ((label, _), rates) in kernels.iter().zip(rates) {
        let mut line =
            format!("generation together, {label} (tokens per second of wall time, all replies):");
        let mut alone = 0.0;
        for (count, rates) in rates.into_iter().enumerate() {
            let rate = median(rates);
            if count == 0 {
                alone = rate;
            }
            line.push_str(&format!(
                " {}: {rate:.0} tok/s ({:.2} × one);",
                count + 1,
                rate / alone
            ));
        }
        println!("{}", line.trim_end_matches(';'));
    }
}

/// Sends steps to moot's own kernel or to ggml's, where moot chooses.
fn use_own_kernel(own: bool) {
    #[cfg(moot_kernel_choice)]
    moot::llm::local::use_own_kernel(own);
    #[cfg(not(moot_kernel_choice))]
    let _ = own;
}

/// Runs `requests` all at once; the tokens they generated together.
fn generated_at_once(
    runtime: &tokio::runtime::Runtime,
    provider: &LocalProvider,
    requests: &[ChatRequest],
) -> usize {
    let replies =
        runtime.block_on(futures_util::future::join_all(requests.iter().map(
            |r| async move { provider.complete_timed(r, &mut |_: &str| {}).await },
        )));
    replies
        .into_iter()
        .map(|r| r.unwrap().1.generated_tokens)
        .sum()
}

fn run_request(
    runtime: &tokio::runtime::Runtime,
    provider: &LocalProvider,
    request: &ChatRequest,
) -> Timings {
    runtime
        .block_on(provider.complete_timed(request, &mut |_: &str| {}))
        .unwrap()
        .1
}

/// A debater's first turn in a process that has just loaded the model: its system prompt read,
/// and loaded from the file the run before kept.
fn kept_opening(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
    seat: &moot::debate::Seat,
    system: &str,
) {
    let (mut read, mut loaded, mut opening) = (Vec::new(), Vec::new(), 0);
    for run in 0..3 {
        let kept = tempfile::tempdir().unwrap();
        let settings = LocalSettings {
            threads: Some(2),
            openings: Some(kept.path().to_path_buf()),
            ..LocalSettings::default()
        };
        let first_token = |run: usize| {
            // A new provider on the only engine's settings: the model is loaded afresh.
            let provider = LocalProvider::open(path, &settings).unwrap();
            let request = argument_request(seat, std::slice::from_ref(seat), system, run);
            run_request(runtime, &provider, &request)
        };
        read.push(first_token(700 + run).first_token_ms);
        let again = first_token(710 + run);
        opening = again.reused_tokens;
        loaded.push(again.first_token_ms);
    }
    let (read, loaded) = (median(read), median(loaded));
    println!(
        "a debater's first turn after the model loads: first token {read:.0} ms reading the system prompt, {loaded:.0} ms loading its {opening} tokens from the file the run before kept ({:.2} ×)",
        loaded / read
    );
}

/// A seat's second turn beside its first: the first's prompt and reply come back as the
/// history the second goes on from, as a conversation does.
fn second_turn(
    runtime: &tokio::runtime::Runtime,
    provider: &LocalProvider,
    seat: &moot::debate::Seat,
    system: &str,
) {
    let (mut share, mut first_ttft, mut second_ttft) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..RUNS {
        let seats = std::slice::from_ref(seat);
        let first = argument_request(seat, seats, system, 500 + run);
        let mut reply = String::new();
        let (_, opening) = runtime
            .block_on(provider.complete_timed(&first, &mut |piece: &str| reply.push_str(piece)))
            .unwrap();
        let mut second = first.clone();
        second.messages.push(ChatMessage::assistant(reply));
        second.messages.push(ChatMessage::user(
            "The Skeptic answers that PostgreSQL's unlogged tables are enough. Rebut it.",
        ));
        let rebuttal = run_request(runtime, provider, &second);
        share.push(
            (rebuttal.prompt_tokens - rebuttal.reused_tokens) as f64
                / rebuttal.prompt_tokens as f64,
        );
        first_ttft.push(opening.first_token_ms);
        second_ttft.push(rebuttal.first_token_ms);
    }
    let (first, second) = (median(first_ttft), median(second_ttft));
    println!(
        "a seat's second turn: reads {:.0} % of its prompt; first token {second:.0} ms against {first:.0} ms on its first turn ({:.2} ×)",
        median(share) * 100.0,
        second / first
    );
}
