//! Every reply schema moot sends an OpenAI-compatible server, run through llama.cpp's own
//! schema-to-grammar conversion and grammar parser, as a llama.cpp-based server would (a string
//! bound of 2,000 characters once killed llama-cpp-python's server on the first argument).

use crate::*;
use moot::llm::local::llama_cpp_2::llama_backend::LlamaBackend;
use moot::llm::local::llama_cpp_2::model::LlamaModel;
use moot::llm::local::llama_cpp_2::model::params::LlamaModelParams;
use moot::llm::local::llama_cpp_2::sampling::LlamaSampler;
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};

/// llama.cpp's `json_schema_to_grammar` (common/json-schema-to-grammar.cpp), or its error.
fn llama_cpp_grammar(schema: &Value) -> Result<String, String> {
    let text = CString::new(schema.to_string()).map_err(|e| e.to_string())?;
    let mut out = std::ptr::null_mut();
    // SAFETY: `text` is a valid C string for the call; on success `out` is a malloc'd C string
    // that is copied and then freed with the library's own free.
    unsafe {
        let status = moot::llm::local::llama_cpp_sys_2::llama_rs_json_schema_to_grammar(
            text.as_ptr(),
            false,
            &mut out,
        );
        if status != moot::llm::local::llama_cpp_sys_2::LLAMA_RS_STATUS_OK || out.is_null() {
            return Err(format!("llama.cpp could not convert it (status {status})"));
        }
        let grammar = CStr::from_ptr(out).to_string_lossy().into_owned();
        moot::llm::local::llama_cpp_sys_2::llama_rs_string_free(out);
        Ok(grammar)
    }
}

/// The schema a chat request carries in its `response_format`, by the schema's name.
fn sent_schema(body: &Value) -> Option<(String, Value)> {
    let format = body.get("response_format")?;
    if let Some(named) = format.get("json_schema") {
        return Some((named["name"].as_str()?.to_string(), named["schema"].clone()));
    }
    let schema = format.get("schema")?.clone();
    let title = schema["title"]
        .as_str()
        .unwrap_or("json_object")
        .to_string();
    Some((title, schema))
}

#[test]
fn every_schema_moot_sends_compiles_in_llama_cpps_own_grammar_converter() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config(
        "[retry]\nmax_attempts = 3\nbase_delay_ms = 5\nmax_delay_ms = 50\n[lessons]\nenabled = true\n",
    );
    dialogue_codebase(&home);
    let runs: [&[&str]; 4] = [
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            QUESTION,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--option",
            "A: Ship now",
            "--option",
            "B: Wait",
            PANEL_QUESTION,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "dialogue",
            "--max-rounds",
            "2",
            DIALOGUE_TOPIC,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "Skeptic",
            "--rounds",
            "3",
            "--order",
            "moderator",
            "--score",
            "Adopt a 4-day work week",
        ],
    ];
    for args in runs {
        let output = home.run(Some(&server), args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    }
    let mut schemas = BTreeMap::new();
    for seen in server.seen() {
        if let Some((name, schema)) = sent_schema(&seen.body) {
            schemas.entry(schema.to_string()).or_insert((name, schema));
        }
    }
    let names: std::collections::BTreeSet<&str> =
        schemas.values().map(|(name, _)| name.as_str()).collect();
    for expected in [
        "moot_analysis",
        "moot_argument",
        "moot_evaluation",
        "moot_synthesis",
        "moot_lessons",
        "moot_panel_recommendation",
        "moot_dialogue_move",
        "moot_dialogue_verdict",
        "moot_arena_argument",
        "moot_arena_scores",
    ] {
        assert!(
            names.contains(expected),
            "{expected} was not sent; sent: {names:?}"
        );
    }

    let backend = LlamaBackend::init().unwrap();
    let vocab = LlamaModel::load_from_file(
        &backend,
        support::model::model_path(),
        &LlamaModelParams::default().with_vocab_only(true),
    )
    .unwrap();
    let parses = |grammar: &str| LlamaSampler::grammar(&vocab, grammar, "root").is_ok();

    // The check can fail: a schema llama.cpp cannot convert, and a grammar it cannot parse.
    assert!(llama_cpp_grammar(&serde_json::json!({"$ref": "#/$defs/missing"})).is_err());
    assert!(!parses("root ::= ( \"a\""));

    let mut failures = Vec::new();
    for (name, schema) in schemas.values() {
        match llama_cpp_grammar(schema) {
            Ok(grammar) if parses(&grammar) => {}
            Ok(grammar) => failures.push(format!(
                "{name}: llama.cpp's parser refused the grammar ({} bytes)",
                grammar.len()
            )),
            Err(problem) => failures.push(format!("{name}: {problem}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} schemas fail in llama.cpp: {failures:#?}",
        failures.len(),
        schemas.len()
    );
}
