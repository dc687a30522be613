//! The embedded model for real: llama.cpp in-process on the default GGUF (SmolLM2-135M). A
//! headless debate runs end to end on it; the provider streams, honours the reply schema under
//! its grammar, decodes concurrent seats together (each as its one-at-a-time twin would), keeps
//! each seat's cache between turns, cancels one sequence without the others, recomputes what
//! was evicted, and names bad files and context overflows.
//! `scripts/test` pulls the model and sets MOOT_TEST_MODEL; without it the default store is used.
#![cfg(feature = "local")]

#[path = "support/model.rs"]
mod model;

use model::model_path;
use moot::debate::Phase;
use moot::llm::embedded::LocalSettings;
use moot::llm::local::{LocalProvider, Timings};
use moot::llm::structured::extract_json;
use moot::llm::{ChatMessage, ChatRequest, Provider, ProviderKind, ReplyFormat, RequestLabel};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// One test computes on the model at a time: two llama.cpp engines (or an engine and the debate
/// subprocess) each running threads for every core starve each other on a 2-core CI machine.
/// An async mutex, so a failed test releases it rather than poisoning the rest.
static ONE_ENGINE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether `value` is valid under `schema`, by the JSON Schema spec.
fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
    validator.validate(value).map_err(|e| e.to_string())
}

fn settings() -> LocalSettings {
    // System prompts' caches and the model's widened copy are kept here, not in the models
    // directory the person uses.
    static KEPT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let kept = KEPT.get_or_init(|| tempfile::tempdir().unwrap());
    LocalSettings {
        threads: Some(2),
        openings: Some(kept.path().join("openings")),
        widened: Some(kept.path().join("widened")),
        ..LocalSettings::default()
    }
}

/// The default model, decoding up to `sequences` requests together.
fn with_sequences(sequences: u32) -> LocalProvider {
    LocalProvider::open(
        &model_path(),
        &LocalSettings {
            sequences: Some(sequences),
            ..settings()
        },
    )
    .unwrap()
}

/// `request`'s conversation carried on: its reply, then the user's `next` message.
fn next_turn(request: &ChatRequest, reply: &str, next: &str) -> ChatRequest {
    let mut turn = request.clone();
    turn.messages
        .push(ChatMessage::assistant(reply.to_string()));
    turn.messages.push(ChatMessage::user(next.to_string()));
    turn
}

fn debater_request(seat: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        label: RequestLabel {
            round: 1,
            phase: Phase::Argument,
            seat: seat.into(),
            perspective: Some("Pragmatist".into()),
            request: "moot_argument",
        },
        system: "You are the Pragmatist in a debate. Reply with JSON only.".into(),
        messages: vec![ChatMessage::user(format!(
            "Question: {QUESTION}\nGive your argument, the speech acts it makes, your confidence and your position."
        ))],
        reply: Some(ReplyFormat {
            name: "debater_reply".into(),
            schema: moot::protocol::moves::debater_schema(),
        }),
        max_tokens: Some(max_tokens),
        temperature: Some(0.7),
        reply_bytes: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_replies_stream_and_validate_against_the_schema() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    assert_eq!(provider.kind(), ProviderKind::Local);
    let schema = moot::protocol::moves::debater_schema();
    let mut completed = 0;
    for seat in ["A", "B", "C", "D"] {
        let request = debater_request(seat, 600);
        let mut pieces = Vec::new();
        let (completion, timings) = provider
            .complete_timed(&request, &mut |piece: &str| pieces.push(piece.to_string()))
            .await
            .unwrap();
        assert!(pieces.len() > 5, "the reply streamed in pieces");
        assert_eq!(pieces.concat(), completion.text);
        let usage = completion.usage.unwrap();
        assert!(usage.input > 20 && usage.output as usize == timings.generated_tokens);
        assert!(usage.output <= 600);
        // The grammar bounds a reply to about the budget in characters; a model writing
        // one-character tokens can still reach max_tokens first, and then the reply is closed.
        if completion.finish == moot::llm::FinishReason::Length {
            assert!(
                extract_json(&completion.text).is_ok(),
                "{}",
                completion.text
            );
            continue;
        }
        completed += 1;
        let value: Value = serde_json::from_str(&completion.text)
            .unwrap_or_else(|e| panic!("{e}: {}", completion.text));
        validate(&value, &schema).unwrap_or_else(|e| panic!("{e}: {}", completion.text));
    }
    assert!(completed >= 2, "most replies finish within their budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_seats_share_one_model_and_all_finish() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let first = LocalProvider::open(&model_path(), &settings()).unwrap();
    let second = LocalProvider::open(&model_path(), &settings()).unwrap();
    assert_eq!(first.loaded(), second.loaded(), "one model, loaded once");
    let requests = [
        debater_request("A", 120),
        debater_request("B", 120),
        debater_request("C", 120),
    ];
    let (mut sink_a, mut sink_b, mut sink_c) = (|_: &str| {}, |_: &str| {}, |_: &str| {});
    let (a, b, c) = tokio::join!(
        first.complete(&requests[0], &mut sink_a),
        second.complete(&requests[1], &mut sink_b),
        first.complete(&requests[2], &mut sink_c),
    );
    for reply in [a, b, c] {
        let reply = reply.unwrap();
        assert!(extract_json(&reply.text).is_ok(), "{}", reply.text);
    }
}

/// A request as a seat of its own sends it, at temperature 0 so that its first token's
/// logits can be compared.
fn seat_request(seat: &str, persona: &str, max_tokens: u32) -> ChatRequest {
    let mut request = debater_request(seat, max_tokens);
    request.system = format!("You are {persona} in a debate. Reply with JSON only.");
    request.temperature = Some(0.0);
    request
}

/// Runs two requests at once on `provider`, each with its timings.
async fn together(
    provider: &LocalProvider,
    first: &ChatRequest,
    second: &ChatRequest,
) -> [(moot::llm::Completion, Timings); 2] {
    let (mut sink_a, mut sink_b) = (|_: &str| {}, |_: &str| {});
    let (a, b) = tokio::join!(
        provider.complete_timed(first, &mut sink_a),
        provider.complete_timed(second, &mut sink_b),
    );
    [a.unwrap(), b.unwrap()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_decoded_together_reply_in_full_as_their_one_at_a_time_twins_would() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let requests = [
        seat_request("A", "the Pragmatist", 80),
        seat_request("B", "the Skeptic", 80),
    ];
    // One sequence: the requests take turns, each on a cache that holds nothing of the other.
    let alone = with_sequences(1);
    let mut twins = Vec::new();
    for request in &requests {
        let (_, timings) = alone
            .complete_timed(request, &mut |_: &str| {})
            .await
            .unwrap();
        assert_eq!(timings.decoded_together, 1);
        twins.push(timings);
    }
    drop(alone);
    let batched = with_sequences(2);
    assert_eq!(batched.loaded().sequences, 2);
    #[cfg(moot_kernel_choice)]
    let kernels_before = moot::llm::local::kernel_counts();
    let replies = together(&batched, &requests[0], &requests[1]).await;
    // The attention, the prompts' and the steps', went to moot's own attention kernel where the
    // CPU has it (else to ggml's products), and the steps of two sequences to moot's own
    // kernel, over the weights packed where the CPU has AVX-512 VNNI (to ggml's kernel on a
    // CPU without AVX2), as did the prompts' products of the weights (four columns at a time
    // without VNNI). llamafile's tinyBLAS, built for x86-64-v2, has no kernel to compute any.
    #[cfg(moot_kernel_choice)]
    {
        let kernels = moot::llm::local::kernel_counts();
        if batched.loaded().cache_layout.contains("flash attention 1") {
            assert!(kernels.attention > kernels_before.attention, "{kernels:?}");
        } else {
            assert_eq!(kernels.attention, kernels_before.attention, "{kernels:?}");
            // The values weighed as a product, by moot's AVX2 kernel where the CPU runs it.
            if moot_attention::values::available() {
                assert!(kernels.values > kernels_before.values, "{kernels:?}");
            }
        }
        assert_eq!(kernels.llamafile, kernels_before.llamafile, "{kernels:?}");
        if moot::llm::local::own_kernel_built() {
            assert!(kernels.moot > kernels_before.moot, "{kernels:?}");
            // The model's weights, read packed where the build has that kernel.
            if moot::llm::local::packed_kernel_built() {
                assert!(kernels.packed > kernels_before.packed, "{kernels:?}");
                assert!(
                    kernels.prompts_packed > kernels_before.prompts_packed,
                    "{kernels:?}"
                );
            } else {
                assert!(
                    kernels.prompts_by_rows > kernels_before.prompts_by_rows,
                    "{kernels:?}"
                );
            }
        } else {
            assert!(kernels.ggml > kernels_before.ggml, "{kernels:?}");
        }
    }
    for ((completion, timings), twin) in replies.iter().zip(&twins) {
        assert_eq!(timings.decoded_together, 2, "decoded in one batch");
        assert!(
            extract_json(&completion.text).is_ok(),
            "a valid reply: {}",
            completion.text
        );
        assert_eq!(
            completion.usage.unwrap().output as usize,
            timings.generated_tokens
        );
        // Batched kernels are not bit-identical (two tokens a hair apart may swap places).
        assert_first_token_alike(timings, twin);
    }
}

/// The default model is stored as Q4_1, which llama.cpp reads slowly: it is loaded from a Q8_0
/// copy, made on the first load and found again by the next, whose likeliest first tokens are
/// the stored file's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_q4_1_model_is_read_from_a_q8_0_copy_made_once_that_answers_alike() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let copies = tempfile::tempdir().unwrap();
    let widening = LocalSettings {
        widened: Some(copies.path().to_path_buf()),
        ..settings()
    };
    let stored = moot::llm::gguf::inspect(&model_path()).unwrap();
    assert_eq!(
        stored.file_type,
        Some(3),
        "the default model is stored as Q4_1"
    );
    let copy_of = || {
        let files: Vec<PathBuf> = std::fs::read_dir(copies.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "one copy, nothing half-written: {files:?}");
        let modified = std::fs::metadata(&files[0]).unwrap().modified().unwrap();
        (files[0].clone(), modified)
    };
    let request = seat_request("A", "the Pragmatist", 1);
    let widened = LocalProvider::open(&model_path(), &widening).unwrap();
    let (copy, made) = copy_of();
    assert_eq!(
        moot::llm::gguf::inspect(&copy).unwrap().file_type,
        Some(7),
        "the copy is Q8_0"
    );
    // Q8_0 weights take more memory than Q4_1's: the copy is what was loaded.
    let stored_bytes = std::fs::metadata(model_path()).unwrap().len();
    assert!(
        widened.loaded().bytes > stored_bytes * 5 / 4,
        "{} bytes loaded from a {stored_bytes}-byte file",
        widened.loaded().bytes
    );
    assert_eq!(widened.loaded().path, model_path(), "named as stored");
    let (_, from_copy) = widened
        .complete_timed(&request, &mut |_: &str| {})
        .await
        .unwrap();
    drop(widened);
    let again = LocalProvider::open(&model_path(), &widening).unwrap();
    assert_eq!(copy_of(), (copy, made), "the next load finds the same copy");
    drop(again);
    let as_stored = LocalProvider::open(
        &model_path(),
        &LocalSettings {
            as_stored: true,
            ..widening.clone()
        },
    )
    .unwrap();
    assert!(as_stored.loaded().bytes <= stored_bytes);
    let (_, from_file) = as_stored
        .complete_timed(&request, &mut |_: &str| {})
        .await
        .unwrap();
    // Widening rounds each weight to the nearest of 255 levels.
    assert_first_token_alike(&from_copy, &from_file);
}

/// The same likeliest first token in both, and each of `reference`'s three likeliest among
/// `other`'s with a logit within 5 % of its own.
fn assert_first_token_alike(other: &Timings, reference: &Timings) {
    assert_eq!(
        other.first_logits.first().map(|(id, _)| *id),
        reference.first_logits.first().map(|(id, _)| *id),
        "{:?} vs {:?}",
        other.first_logits,
        reference.first_logits
    );
    for (id, expected) in reference.first_logits.iter().take(3) {
        let found = other
            .first_logits
            .iter()
            .find(|(token, _)| token == id)
            .map(|(_, logit)| *logit);
        assert!(
            found.is_some_and(|found| (found - expected).abs() <= 0.05 * expected.abs().max(1.0)),
            "token {id}: {:?} vs {:?}",
            other.first_logits,
            reference.first_logits
        );
    }
}

/// In a debate the moderator speaks alone first, and its turns leave caches in two of the
/// three slots; the two seats that then argue at once must still land on slots next to each
/// other, since llama.cpp computes sequences on slots 0 and 2 a step each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_after_the_moderator_are_computed_in_one_step() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = with_sequences(3);
    for (seat, role) in [
        ("M", "the moderator, framing the question"),
        ("M", "the moderator, opening the round"),
    ] {
        provider
            .complete_timed(&seat_request(seat, role, 8), &mut |_: &str| {})
            .await
            .unwrap();
    }
    let seats = [
        seat_request("A", "the Pragmatist", 40),
        seat_request("B", "the Skeptic", 40),
    ];
    for (_, timings) in together(&provider, &seats[0], &seats[1]).await {
        assert_eq!(timings.decoded_together, 2, "computed in one step");
    }
}

/// A turn that goes on from no sequence's cache takes the sequence its speaker's last turn
/// left, not the one idle longest: the moderator, who spoke before the seat, keeps its cache
/// for its next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_speakers_fresh_turn_takes_its_own_sequence_not_anothers() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = with_sequences(2);
    let complete = |request: ChatRequest| {
        let provider = &provider;
        async move {
            provider
                .complete_timed(&request, &mut |_: &str| {})
                .await
                .unwrap()
                .1
        }
    };
    let moderator = seat_request("moderator", "the moderator, opening the round", 8);
    let opened = complete(moderator.clone()).await;
    let argued = complete(seat_request("A", "the Pragmatist", 8)).await;
    assert_eq!(
        argued.evicted_tokens, 0,
        "a sequence of its own: {argued:?}"
    );
    // Its rebuttal's prompt goes on from neither cache (another system prompt).
    let rebutted = complete(seat_request(
        "A",
        "the Pragmatist, rebutting the Skeptic",
        8,
    ))
    .await;
    assert!(
        rebutted.evicted_tokens > 0,
        "both sequences were full: {rebutted:?}"
    );
    let again = complete(moderator).await;
    assert_eq!(
        again.reused_tokens,
        opened.prompt_tokens - 1,
        "the moderator's cache was kept: {again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seats_second_turn_reads_only_what_is_new_to_it() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    let first = seat_request("A", "the Pragmatist", 150);
    let (reply, opening) = provider
        .complete_timed(&first, &mut |_: &str| {})
        .await
        .unwrap();
    // Another seat speaks in between, as in a round. Its prompt shares only the chat
    // template's first few tokens with the first: too few to copy a whole part of the cache
    // for, so it reads them on a slot of its own.
    let (_, between) = provider
        .complete_timed(&seat_request("B", "the Skeptic", 60), &mut |_: &str| {})
        .await
        .unwrap();
    assert_eq!(between.reused_tokens, 0, "{between:?}");
    assert_eq!(between.evicted_tokens, 0, "{between:?}");
    let second = next_turn(
        &first,
        &reply.text,
        "The Skeptic says PostgreSQL is enough. Rebut it in your next argument.",
    );
    let (_, rebuttal) = provider
        .complete_timed(&second, &mut |_: &str| {})
        .await
        .unwrap();
    assert!(
        rebuttal.reused_tokens >= opening.prompt_tokens,
        "the first turn's prompt is still cached: {rebuttal:?}"
    );
    let evaluated = rebuttal.prompt_tokens - rebuttal.reused_tokens;
    assert!(
        evaluated * 10 <= rebuttal.prompt_tokens * 5,
        "the second turn read {evaluated} of {} tokens",
        rebuttal.prompt_tokens
    );
}

/// A reply decoded alone is drafted ahead from its own context: one that copies its prompt
/// keeps drafted tokens, and the drafts the sampler did not draw leave the cache, so the next
/// turn, read on from what the first left, sees what a model that read it all afresh sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_decoded_alone_keeps_the_drafts_it_draws_and_forgets_the_rest() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let passage = "Redis keeps the hot keys in memory and answers in well under a millisecond, \
                   while PostgreSQL keeps every write durable and lets the team run one \
                   database instead of two.";
    let first = ChatRequest {
        label: RequestLabel {
            round: 1,
            phase: Phase::Argument,
            seat: "A".into(),
            perspective: None,
            request: "copy",
        },
        system: "You copy text exactly.".into(),
        messages: vec![ChatMessage::user(format!(
            "Copy this passage twice, word for word:\n{passage}"
        ))],
        reply: None,
        max_tokens: Some(120),
        temperature: Some(0.0),
        reply_bytes: None,
    };
    let provider = with_sequences(1);
    let (reply, copied) = provider
        .complete_timed(&first, &mut |_: &str| {})
        .await
        .unwrap();
    assert!(copied.drafts_kept > 0, "{copied:?}\n{}", reply.text);
    assert!(
        copied.drafted_tokens > copied.drafts_kept,
        "some drafts were not drawn, and had to be forgotten: {copied:?}\n{}",
        reply.text
    );
    let mut second = next_turn(
        &first,
        &reply.text,
        "Now say in one word which of the two it favours.",
    );
    second.max_tokens = Some(1);
    let (_, follow_up) = provider
        .complete_timed(&second, &mut |_: &str| {})
        .await
        .unwrap();
    assert!(
        follow_up.reused_tokens >= copied.prompt_tokens + copied.generated_tokens / 2,
        "the next turn goes on from the first's cache: {follow_up:?}"
    );
    drop(provider);
    // A model loaded afresh holds nothing of the first turn and reads the second whole.
    let fresh = with_sequences(1);
    let (_, reference) = fresh
        .complete_timed(&second, &mut |_: &str| {})
        .await
        .unwrap();
    assert!(
        reference.reused_tokens < copied.prompt_tokens,
        "{reference:?}"
    );
    assert_first_token_alike(&follow_up, &reference);
}

/// A debate's system prompts are the same every run: the first run keeps what it read of one
/// on disk, and a model loaded afresh loads it rather than reading it, with the same reply to
/// come; a torn file is read again and replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_prompt_read_once_is_loaded_by_the_next_run() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let kept = tempfile::tempdir().unwrap();
    let mut request = debater_request("A", 4);
    // The system prompt a debate sends the embedded model.
    let reply = request.reply.as_ref().unwrap();
    request.system = moot::llm::instructions::system_asking(
        &moot::protocol::text::debater_system(),
        &moot::llm::instructions::field_instructions("moot_argument", &reply.schema),
    );
    request.temperature = Some(0.0);
    // Each run loads the model afresh: the one before dropped the only provider of its engine.
    let run = || {
        let settings = LocalSettings {
            openings: Some(kept.path().to_path_buf()),
            ..settings()
        };
        let request = &request;
        async move {
            let provider = LocalProvider::open(&model_path(), &settings).unwrap();
            let (_, timings) = provider
                .complete_timed(request, &mut |_: &str| {})
                .await
                .unwrap();
            timings
        }
    };
    let files = || {
        std::fs::read_dir(kept.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect::<Vec<_>>()
    };
    let first = run().await;
    assert_eq!(first.reused_tokens, 0, "{first:?}");
    let kept_files = files();
    assert_eq!(
        kept_files.len(),
        1,
        "the system part is kept: {kept_files:?}"
    );

    let second = run().await;
    assert!(
        second.reused_tokens >= 64 && second.reused_tokens < second.prompt_tokens,
        "the system part came from disk and the rest was read: {second:?}"
    );
    assert_eq!(
        second.first_logits.first().map(|(id, _)| *id),
        first.first_logits.first().map(|(id, _)| *id)
    );
    for ((_, loaded), (_, read)) in second.first_logits.iter().zip(&first.first_logits).take(3) {
        assert!(
            (loaded - read).abs() <= 0.05 * read.abs().max(1.0),
            "{:?} vs {:?}",
            second.first_logits,
            first.first_logits
        );
    }

    std::fs::write(&kept_files[0], b"torn").unwrap();
    let third = run().await;
    assert_eq!(
        third.reused_tokens, 0,
        "a torn file is not loaded: {third:?}"
    );
    assert!(
        std::fs::metadata(&kept_files[0]).unwrap().len() > 4,
        "and is written again"
    );
    let fourth = run().await;
    assert_eq!(fourth.reused_tokens, second.reused_tokens, "{fourth:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_sequence_stops_without_disturbing_the_other() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    let long = seat_request("A", "the Pragmatist", 2000);
    let short = seat_request("B", "the Skeptic", 100);
    // The long reply is dropped once both stream: they are then decoded together.
    let (long_streams, long_seen) = tokio::sync::oneshot::channel::<()>();
    let (short_streams, short_seen) = tokio::sync::oneshot::channel::<()>();
    let mut long_streams = Some(long_streams);
    let mut on_long = |_: &str| {
        if let Some(signal) = long_streams.take() {
            let _ = signal.send(());
        }
    };
    let cancelled = provider.complete_timed(&long, &mut on_long);
    let pieces = std::sync::Mutex::new(String::new());
    let short_streams = std::sync::Mutex::new(Some(short_streams));
    let mut on_short = |piece: &str| {
        pieces.lock().unwrap().push_str(piece);
        if let Some(signal) = short_streams.lock().unwrap().take() {
            let _ = signal.send(());
        }
    };
    let kept = provider.complete_timed(&short, &mut on_short);
    tokio::pin!(kept);
    // Dropping the long request is how a timeout or a pause cancels it.
    tokio::select! {
        _ = cancelled => panic!("a 2000-token reply should not finish before it is dropped"),
        _ = async { let _ = tokio::join!(long_seen, short_seen); } => {}
        _ = &mut kept => panic!("the short reply was still streaming when both had started"),
    }
    let (completion, timings) = kept.await.unwrap();
    assert_eq!(timings.decoded_together, 2, "they ran together");
    assert_eq!(*pieces.lock().unwrap(), completion.text, "its stream whole");
    assert!(
        extract_json(&completion.text).is_ok(),
        "{}",
        completion.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_cache_is_recomputed() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    // Two sequences for three seats: the third seat's turn takes the sequence idle longest,
    // forgetting what it held.
    let small = LocalSettings {
        context: Some(512),
        sequences: Some(2),
        ..settings()
    };
    let provider = LocalProvider::open(&model_path(), &small).unwrap();
    assert_eq!(provider.loaded().cache, 1024);
    let seat = |name: &str, persona: &str| {
        let mut request = seat_request(name, persona, 60);
        request.messages = vec![ChatMessage::user(format!(
            "{persona} speaks. {}\nQuestion: {QUESTION}",
            "Caching trades freshness for speed. ".repeat(40)
        ))];
        request
    };
    let (a, b, c) = (
        seat("A", "the Pragmatist"),
        seat("B", "the Skeptic"),
        seat("C", "the Operator"),
    );
    let mut turns = Vec::new();
    for request in [&a, &b, &c, &a, &b] {
        let (completion, timings) = provider
            .complete_timed(request, &mut |_: &str| {})
            .await
            .unwrap();
        assert!(
            extract_json(&completion.text).is_ok(),
            "{}",
            completion.text
        );
        turns.push(timings);
    }
    assert_eq!(turns[0].evicted_tokens + turns[1].evicted_tokens, 0);
    assert!(turns[2].evicted_tokens > 0, "{:?}", turns[2]);
    // Whichever of A and B was forgotten reads its prompt again, and still replies in full.
    assert!(
        turns[3..]
            .iter()
            .any(|again| again.reused_tokens * 2 < again.prompt_tokens),
        "{:?}",
        &turns[3..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_request_stops_and_the_next_one_runs() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    let (first_piece, seen) = tokio::sync::oneshot::channel::<()>();
    let mut first_piece = Some(first_piece);
    let long = debater_request("A", 2000);
    let cancelled = async {
        provider
            .complete(&long, &mut |_: &str| {
                if let Some(signal) = first_piece.take() {
                    let _ = signal.send(());
                }
            })
            .await
    };
    // Dropping the request once it streams is how a timeout or a pause cancels it.
    tokio::select! {
        _ = cancelled => panic!("a 2000-token reply should not finish before it is dropped"),
        _ = seen => {}
    }
    let started = std::time::Instant::now();
    let reply = provider
        .complete(&debater_request("B", 60), &mut |_: &str| {})
        .await
        .unwrap();
    assert!(reply.usage.unwrap().output <= 60);
    assert!(
        started.elapsed().as_secs() < 60,
        "the dropped request did not keep the worker busy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_at_max_tokens_is_closed_into_a_value() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    let reply = provider
        .complete(&debater_request("A", 12), &mut |_: &str| {})
        .await
        .unwrap();
    assert_eq!(
        reply.finish,
        moot::llm::FinishReason::Length,
        "{}",
        reply.text
    );
    assert!(
        serde_json::from_str::<Value>(&reply.text).is_err(),
        "cut mid-object"
    );
    let closed = extract_json(&reply.text).unwrap();
    assert!(closed.is_object(), "{closed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_context_is_a_clear_error() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let small = LocalSettings {
        context: Some(512),
        ..settings()
    };
    let provider = LocalProvider::open(&model_path(), &small).unwrap();
    let mut request = debater_request("A", 50);
    request.messages = vec![ChatMessage::user("caching ".repeat(1500))];
    let error = provider
        .complete(&request, &mut |_: &str| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("context holds 512"), "{error}");
    assert!(error.contains("[providers.local]"), "{error}");
}

#[test]
fn bad_model_files_are_named_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("page.gguf");
    std::fs::write(&html, "<html>rate limited</html>").unwrap();
    let error = LocalProvider::open(&html, &settings())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("page.gguf") && error.contains("not a GGUF model"),
        "{error}"
    );
    assert!(error.contains("moot model pull"), "{error}");
    let whole = std::fs::read(model_path()).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let error = LocalProvider::open(&cut, &settings())
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("truncated"), "{error}");
}

/// moot in `home` (its own config, data dir and no Ollama within reach), with `args`.
fn moot_in(home: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moot"));
    command
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("MOOT_HOME", home.join("moot-home"))
        .env("MOOT_CONFIG", home.join("config.toml"))
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .args(args)
        .stdin(Stdio::null());
    command
}

/// A 1-round, 2-seat debate on `model`, without checkpoints; one round, because a moderator on
/// this tiny model calls agreement that no move supports, so a second round would always run,
/// and cost minutes on CI.
fn one_round_on(model: &std::path::Path) -> Vec<&str> {
    vec![
        "--provider",
        "local",
        "--model",
        model.to_str().unwrap(),
        "--max-rounds",
        "1",
        "--perspectives",
        "2",
        "--no-checkpoints",
    ]
}

#[test]
fn a_headless_debate_on_the_default_model_completes() {
    let _engine = ONE_ENGINE_AT_A_TIME.blocking_lock();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let model = model_path();
    let output = moot_in(
        home.path(),
        &[&["--headless"], &one_round_on(&model)[..], &[QUESTION]].concat(),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let synthesis = events
        .iter()
        .find(|e| e["type"] == "synthesis")
        .expect("a synthesis");
    let notes = synthesis.to_string();
    assert!(notes.contains("demonstration"), "{notes}");
    let debater_turns: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn_completed")
        .filter(|e| matches!(e["phase"].as_str(), Some("argument" | "rebuttal")))
        .collect();
    assert!(
        debater_turns.len() >= 4,
        "two seats, each with an argument and a rebuttal"
    );
    for turn in debater_turns {
        assert_eq!(turn["status"], "ok", "{turn}");
        assert_eq!(turn["provider"], "local");
        let moves = turn["moves"].as_array().unwrap();
        assert!(!moves.is_empty(), "{turn}");
        for step in moves {
            let act = step["act"].as_str().unwrap();
            assert!(
                ["claim", "why", "concede", "retract", "since"].contains(&act),
                "{step}"
            );
        }
    }
    let record = std::fs::read_dir(home.path().join("docs/decisions"))
        .unwrap()
        .next()
        .expect("the decision record")
        .unwrap()
        .path();
    let text = std::fs::read_to_string(record).unwrap();
    assert!(text.contains("## Recommendation") && text.contains("local / "));
}

/// Its grammar holds every structured reply to the schema, so the model is told what each
/// field means in a short list, not the schema's JSON text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_model_is_asked_for_a_reply_by_its_fields_not_the_schemas_text() {
    let _engine = ONE_ENGINE_AT_A_TIME.lock().await;
    let provider = LocalProvider::open(&model_path(), &settings()).unwrap();
    let reply = ReplyFormat {
        name: "moot_argument".into(),
        schema: moot::protocol::moves::debater_schema(),
    };
    let words = provider.schema_instructions(&reply);
    assert_eq!(
        words,
        moot::llm::instructions::field_instructions(&reply.name, &reply.schema)
    );
    assert!(
        words.contains("\n- argument: a string of at most 1600 characters")
            && !words.contains("\"properties\""),
        "{words}"
    );
}

/// The worker process the moot with pid `parent` runs the embedded model in, once it runs.
fn worker_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let ppid = status
                .lines()
                .find_map(|l| l.strip_prefix("PPid:"))?
                .trim()
                .parse::<u32>()
                .ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (ppid == parent
                && String::from_utf8_lossy(&cmdline).contains(moot::llm::local::worker::SUBCOMMAND))
            .then_some(pid)
        })
}

/// A crash inside the embedded model's worker (here `kill -SEGV` while a turn is written) ends
/// only the worker: moot prints what happened and exits 1 (not by a signal of its own), the
/// debate is stored as failed, and `moot resume` completes it on a fresh worker.
#[test]
fn a_worker_killed_mid_turn_fails_the_debate_with_what_happened_and_a_resume_completes_it() {
    let _engine = ONE_ENGINE_AT_A_TIME.blocking_lock();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let moot = |args: &[&str]| moot_in(home.path(), args);
    let model = model_path();
    let mut debate = moot(
        &[
            &["--headless", "--no-lessons"],
            &one_round_on(&model)[..],
            &[QUESTION],
        ]
        .concat(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = debate.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    // Mid-turn: once a seat's argument streams, the worker is killed. A kill that falls
    // between two requests fails none (the next one starts a fresh worker): that worker is
    // killed in turn, until one dies mid-request and the debate stops.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let (mut id, mut arguing, mut killed) = (None, false, Vec::new());
    while let Ok(line) =
        lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "debate_created" {
            id = event["id"].as_str().map(str::to_string);
        }
        arguing |= event["type"] == "turn_delta" && event["phase"] == "argument";
        if arguing
            && let Some(worker) = worker_of(debate.id())
            && !killed.contains(&worker)
        {
            // SAFETY: signalling a process of this test's own child.
            assert_eq!(
                unsafe { libc::kill(worker as libc::pid_t, libc::SIGSEGV) },
                0
            );
            killed.push(worker);
        }
    }
    assert!(!killed.is_empty(), "no argument streamed in time");
    let id = id.expect("the debate's id");
    let output = debate.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "moot itself was not killed: {stderr}"
    );
    assert!(
        stderr.contains("the embedded model's worker was killed by signal 11 (segmentation fault)"),
        "{stderr}"
    );
    let shown = moot(&["show", &id, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["status"], "failed", "{}", shown["error"]);
    let resumed = moot(&["resume", &id, "--headless", "--no-checkpoints"])
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let shown = moot(&["show", &id, "--json"]).output().unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["status"], "completed");
}

// Only some of the pty helpers are used here.
#[allow(dead_code)]
#[path = "support/pty.rs"]
mod pty;

/// The same crash in the workbench: the failure is on the screen, the workbench stays up, and
/// it leaves when asked, the terminal restored.
#[test]
fn a_worker_killed_in_the_workbench_is_shown_and_the_workbench_stays_up() {
    let _engine = ONE_ENGINE_AT_A_TIME.blocking_lock();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let model = model_path();
    let mut screen = pty::Pty::spawn(&mut pty::moot(
        home.path(),
        None,
        &[
            &one_round_on(&model)[..],
            &["--no-lessons", "--no-write", QUESTION],
        ]
        .concat(),
    ));
    // Once the debate is past its start (the model loaded, the moderator's first turns in),
    // a turn is under way in the worker.
    screen.wait_until(|text| text.contains("running ·") && !text.contains("starting ·"));
    let worker = worker_of(screen.pid()).expect("the embedded model runs in a worker process");
    // SAFETY: signalling a process of this test's own child.
    let kill = |pid: u32| assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGSEGV) }, 0);
    kill(worker);
    // A kill between two requests fails none: the next one starts a fresh worker, which is
    // killed in turn, until one dies mid-request.
    let killed = std::cell::RefCell::new(vec![worker]);
    let shown = screen.wait_until(|text| {
        if text.contains("worker was killed by signal 11") {
            return true;
        }
        if let Some(fresh) = worker_of(screen.pid())
            && !killed.borrow().contains(&fresh)
        {
            kill(fresh);
            killed.borrow_mut().push(fresh);
        }
        false
    });
    assert!(shown.contains("failed"), "{shown}");
    // SAFETY: asking whether our own child lives (signal 0 sends nothing).
    assert_eq!(
        unsafe { libc::kill(screen.pid() as libc::pid_t, 0) },
        0,
        "the workbench is still up"
    );
    screen.press(b"q");
    let status = screen.wait_exit();
    assert!(status.code().is_some(), "it left on its own: {status:?}");
    let (entered, left) = pty::alternate_screen(&screen.output());
    assert!(entered < left, "the terminal was given back");
}
