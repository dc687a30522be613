//! The replies moot asks models for, under the machinery that holds models to them: each
//! shipped schema compiles to a grammar whose every sentence parses and validates, fits its
//! budget, and is spelled out field by field for providers that may not keep to it.

use moot_llm::grammar::{Grammar, xorshift};
use moot_llm::instructions::{field_instructions, json_instructions};
use serde_json::Value;

/// Whether `value` is valid under `schema`, by the JSON Schema spec.
fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
    validator.validate(value).map_err(|e| e.to_string())
}

#[test]
fn debater_replies_sampled_from_the_grammar_parse_and_validate() {
    let schema = moot_protocols::protocol::moves::debater_schema();
    let grammar = Grammar::from_schema(&schema, 1800).unwrap();
    for seed in 0..300 {
        let text = grammar.sample(&mut xorshift(seed));
        let value: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        validate(&value, &schema).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert!(text.chars().count() <= grammar.max_len());
        assert!(grammar.accepts(&text), "seed {seed}: {text}");
        // A sentence ends with `}`, one byte.
        assert!(!grammar.accepts(&text[..text.len() - 1]), "seed {seed}");
    }
}

#[test]
fn the_dialogues_schemas_compile_and_their_sentences_validate() {
    use moot_domain::debate::{Act, Move, Phase, Relation, Turn};
    use moot_protocols::protocol::dialogue::replies::reply_schema;
    use moot_protocols::protocol::dialogue::rules::{Side, Stage, State};
    let claim = |id: &str, answers: &[&str]| Move {
        id: id.into(),
        act: Act::Claim,
        text: format!("text of {id}"),
        premises: vec![],
        answers: answers.iter().map(|s| s.to_string()).collect(),
        relation: (!answers.is_empty()).then_some(Relation::Rebut),
    };
    let turn = |seat: &str, phase: Phase, moves: Vec<Move>| Turn {
        moves,
        ..Turn::fixture(seat, 0, phase)
    };
    let opened = State::from_turns(&[
        turn("PRO", Phase::Opening, vec![claim("P1", &[])]),
        turn("OPP", Phase::Opening, vec![claim("O1", &["P1"])]),
    ]);
    let schemas = [
        reply_schema(&State::default(), Side::Pro, Stage::Opening),
        reply_schema(
            &State::from_turns(&[turn("PRO", Phase::Opening, vec![claim("P1", &[])])]),
            Side::Opp,
            Stage::Opening,
        ),
        reply_schema(&opened, Side::Pro, Stage::Argument),
        reply_schema(&opened, Side::Opp, Stage::Closing),
        reply_schema(&State::default(), Side::Opp, Stage::Closing),
        moot_protocols::protocol::dialogue::context_schema(),
        moot_protocols::protocol::dialogue::replies::verdict_schema(&["P1".into(), "O1".into()]),
        {
            use moot_engine::engine::ReplyShape as _;
            use moot_protocols::protocol::dialogue::discipline::RulingReplies;
            // A round with something to strike, and one with only moves to flag.
            let mut argued = vec![
                turn("PRO", Phase::Opening, vec![claim("P1", &[])]),
                turn("OPP", Phase::Opening, vec![claim("O1", &["P1"])]),
                turn("OPP", Phase::Argument, vec![claim("O2", &["P1"])]),
            ];
            argued[2].round = 1;
            RulingReplies::for_round(&State::from_turns(&argued), 1).schema()
        },
        moot_engine::engine::ReplyShape::schema(
            &moot_protocols::protocol::dialogue::discipline::RulingReplies {
                strikable: vec![],
                moves: vec![("O2".into(), Side::Opp)],
            },
        ),
    ];
    for schema in &schemas {
        let grammar =
            Grammar::from_schema(schema, 1800).unwrap_or_else(|e| panic!("{e}: {schema}"));
        for seed in 0..100 {
            let text = grammar.sample(&mut xorshift(seed));
            let value: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            validate(&value, schema).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        }
    }
}

#[test]
fn the_longest_reply_fits_the_budget() {
    let schema = moot_protocols::protocol::moves::debater_schema();
    // Below about 700 characters the floors (a move, 24-character strings) win, and a reply
    // may be cut at max_tokens and closed instead.
    for budget in [900, 1200, 2400, 6000] {
        let grammar = Grammar::from_schema(&schema, budget).unwrap();
        assert!(
            grammar.max_len() <= budget,
            "budget {budget}: longest sentence {}",
            grammar.max_len()
        );
    }
}

/// A debater reply with an argument of `argument_chars` characters and `moves` claims of
/// `text_chars` characters each, written as a formatter would.
fn debater_reply(argument_chars: usize, moves: usize, text_chars: usize) -> String {
    let claim = |n: usize| {
        format!(
            "{{\"id\": \"m{n}\", \"act\": \"claim\", \"text\": \"{}\"}}",
            "t".repeat(text_chars)
        )
    };
    let moves: Vec<String> = (1..=moves).map(claim).collect();
    format!(
        "{{\n  \"argument\": \"{}\",\n  \"moves\": [\n    {}\n  ],\n  \"confidence\": 0.7,\n  \"position\": \"Use Redis.\"\n}}",
        "a".repeat(argument_chars),
        moves.join(",\n    ")
    )
}

/// The recognizer also accepts every sampled sentence and refuses it cut short
/// (`debater_replies_sampled_from_the_grammar_parse_and_validate`).
#[test]
fn the_recognizer_used_below_tells_a_reply_from_one_the_schema_refuses() {
    let schema = moot_protocols::protocol::moves::debater_schema();
    let grammar = Grammar::from_schema(&schema, 3600).unwrap();
    assert!(grammar.accepts(&debater_reply(40, 1, 20)));
    assert!(!grammar.accepts(&debater_reply(40, 0, 20)), "minItems 1");
}

/// An embedded-model argument is granted 1,200 tokens; its prose must have room for the
/// 80-200 words the system prompt asks for, and its moves for a sentence each. (Shares split
/// evenly with every string falling to the 24-character floor gave the prose 140
/// characters and each move's proposition 24, so every argument was cut mid-sentence.)
#[test]
fn the_debaters_prose_keeps_its_weight_when_the_budget_is_small() {
    let schema = moot_protocols::protocol::moves::debater_schema();
    let grammar = Grammar::from_schema(&schema, 1200 * 3).unwrap();
    assert!(grammar.max_len() <= 3600, "{}", grammar.max_len());
    assert!(
        grammar.accepts(&debater_reply(500, 2, 70)),
        "an argument of 80 words and two moves of a sentence each"
    );
    // Bounded all the same: the prose and the number of moves shrink with the budget.
    assert!(!grammar.accepts(&debater_reply(1500, 1, 20)));
    assert!(!grammar.accepts(&debater_reply(40, 6, 20)));
    let roomy = Grammar::from_schema(&schema, 6000 * 3).unwrap();
    assert!(roomy.accepts(&debater_reply(1500, 6, 200)));
    assert!(
        !roomy.accepts(&debater_reply(1700, 1, 20)),
        "maxLength holds"
    );
}

/// Whitespace is what a JSON formatter writes: a small model once spent its budget on runs
/// of newlines between a key and its colon.
#[test]
fn whitespace_is_a_space_or_one_newline_with_indentation() {
    let schema = moot_protocols::protocol::moves::debater_schema();
    let grammar = Grammar::from_schema(&schema, 3600).unwrap();
    let formatted = debater_reply(40, 1, 20);
    assert!(grammar.accepts(&formatted));
    assert!(grammar.accepts(&formatted.replace("\n", "").replace("  ", "")));
    for bloated in [
        formatted.replacen("\"confidence\": ", "\"confidence\"  \n:\n\n\n\n", 1),
        formatted.replacen("\"confidence\"", "\"confidence\" ", 1),
        formatted.replacen(",\n  \"position\"", ",\n\n\n  \"position\"", 1),
        formatted.replacen(",\n  \"position\"", ",\n          \"position\"", 1),
    ] {
        assert!(!grammar.accepts(&bloated), "{bloated}");
    }
}

#[test]
fn replies_moot_asks_for_are_said_in_fewer_characters_with_every_field_named() {
    let ids = ["A1.1".to_string(), "B1.1".to_string()];
    for (name, schema) in [
        (
            "moot_argument",
            moot_protocols::protocol::moves::debater_schema(),
        ),
        ("moot_code", moot_protocols::code::reply::schema()),
        (
            "moot_dialogue_verdict",
            moot_protocols::protocol::dialogue::replies::verdict_schema(&ids),
        ),
    ] {
        let fields = field_instructions(name, &schema);
        let whole = json_instructions(name, &schema);
        assert!(fields.len() < whole.len(), "{name}: {fields}");
        for key in schema["properties"]
            .as_object()
            .expect("an object schema")
            .keys()
        {
            assert!(
                fields.contains(&format!("\n- {key}")),
                "{name} lost {key}: {fields}"
            );
        }
    }
}
