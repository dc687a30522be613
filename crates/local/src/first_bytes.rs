//! Which tokens a reply grammar may admit next, found without judging the whole vocabulary:
//! the vocabulary indexed by the first byte of each token's text, and for each byte the token
//! that is that byte alone. A token the grammar admits has a first byte the grammar admits, so
//! the grammar is asked about the one-byte tokens first and then only about the tokens that
//! begin with a byte it took.
//!
//! Sampling under a grammar judges the likeliest 40 tokens, then 1,024, then every token. On
//! the default model's 49,152 tokens the last took 3.4 ms a time (llama.cpp's grammar decodes
//! each token's text and walks its rules), about two thirds of the grammar's share of a reply's
//! time, where the grammar allows a few tokens (a key's quote, a closing brace) that the model
//! ranked past the first thousand.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

/// A model's vocabulary by first byte.
pub(super) struct FirstBytes {
    /// For each byte, a token whose whole text is that byte, where the vocabulary has one.
    probes: Vec<(u8, LlamaToken)>,
    /// The tokens whose text begins with each byte.
    by_byte: Vec<Vec<LlamaToken>>,
    /// Tokens no probe answers for, which are always judged: those with no text (control
    /// tokens, the end of a reply among them) and those whose first byte has no token of its
    /// own.
    unprobed: Vec<LlamaToken>,
}

impl FirstBytes {
    /// Indexes `model`'s vocabulary by the text llama.cpp's grammar reads for each token (its
    /// piece, special tokens rendered).
    pub(super) fn new(model: &LlamaModel) -> FirstBytes {
        let vocab = model.vocab();
        let mut probes: Vec<Option<LlamaToken>> = vec![None; 256];
        let mut by_byte: Vec<Vec<LlamaToken>> = vec![Vec::new(); 256];
        let mut textless = Vec::new();
        let mut piece = Vec::new();
        for id in 0..model.n_vocab() {
            let token = LlamaToken::new(id);
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, true, None);
            match piece.first() {
                // The grammar judges an end token by whether the reply may end, not its text.
                Some(&first) if !vocab.is_eog(token) => {
                    if piece.len() == 1 {
                        probes[first as usize].get_or_insert(token);
                    }
                    by_byte[first as usize].push(token);
                }
                _ => textless.push(token),
            }
        }
        let mut unprobed = textless;
        for (byte, tokens) in by_byte.iter_mut().enumerate() {
            if probes[byte].is_none() {
                unprobed.append(tokens);
            }
        }
        FirstBytes {
            probes: probes
                .iter()
                .enumerate()
                .filter_map(|(byte, token)| Some((byte as u8, (*token)?)))
                .collect(),
            by_byte,
            unprobed,
        }
    }

    /// Every token `admit` (the grammar, with whatever else the sampler applies first) lets
    /// through, with its logit from `logits`: of the tokens whose first byte it admits as a
    /// token of its own, and the tokens no probe answers for, those it keeps. `admit` keeps in
    /// an array only what it admits.
    pub(super) fn admitted(
        &self,
        logits: &[f32],
        mut admit: impl FnMut(&mut LlamaTokenDataArray),
    ) -> LlamaTokenDataArray {
        let data = |tokens: &mut dyn Iterator<Item = LlamaToken>| -> Vec<LlamaTokenData> {
            tokens
                .filter_map(|token| {
                    let logit = *logits.get(usize::try_from(token.0).ok()?)?;
                    Some(LlamaTokenData::new(token, logit, 0.0))
                })
                .collect()
        };
        let mut probes = LlamaTokenDataArray::new(
            data(&mut self.probes.iter().map(|(_, token)| *token)),
            false,
        );
        admit(&mut probes);
        let admitted: Vec<u8> = probes
            .data
            .iter()
            .filter_map(|data| {
                self.probes
                    .iter()
                    .find(|(_, token)| *token == data.id())
                    .map(|(byte, _)| *byte)
            })
            .collect();
        let mut candidates = LlamaTokenDataArray::new(
            data(
                &mut admitted
                    .iter()
                    .flat_map(|byte| self.by_byte[*byte as usize].iter().copied())
                    .chain(self.unprobed.iter().copied()),
            ),
            false,
        );
        admit(&mut candidates);
        candidates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llama_cpp_2::sampling::LlamaSampler;
    use moot_llm::grammar::{Grammar, xorshift};

    /// What `grammar` admits of `candidates`.
    fn admit(grammar: &mut LlamaSampler, candidates: &mut LlamaTokenDataArray) {
        grammar.apply(candidates);
        candidates.data.retain(|data| data.logit().is_finite());
    }

    fn ids(candidates: &LlamaTokenDataArray) -> Vec<i32> {
        let mut ids: Vec<i32> = candidates.data.iter().map(|data| data.id().0).collect();
        ids.sort_unstable();
        ids
    }

    /// A reply of the debater's shape (prose, a list of either of two kinds of move with
    /// enumerated acts, a bounded number, a sentence): each construct a reply grammar has.
    fn reply_schema() -> serde_json::Value {
        let text = serde_json::json!({"type": "string", "minLength": 1, "maxLength": 200});
        let answers = serde_json::json!({"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3});
        let relation =
            serde_json::json!({"type": "string", "enum": ["support", "rebut", "undercut", "none"]});
        serde_json::json!({
            "type": "object",
            "properties": {
                "argument": {"type": "string", "minLength": 1, "maxLength": 1600},
                "moves": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"anyOf": [
                    {"type": "object", "properties": {
                        "id": {"type": "string", "maxLength": 16},
                        "act": {"type": "string", "enum": ["claim", "why", "concede", "retract"]},
                        "text": text, "answers": answers, "relation": relation
                    }, "required": ["act", "text"]},
                    {"type": "object", "properties": {
                        "id": {"type": "string", "maxLength": 16},
                        "act": {"type": "string", "const": "since"},
                        "text": text,
                        "premises": {"type": "array", "items": text, "minItems": 1, "maxItems": 3},
                        "answers": answers, "relation": relation
                    }, "required": ["act", "text", "premises"]}
                ]}},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "position": {"type": "string", "maxLength": 200}
            },
            "required": ["argument", "moves", "confidence", "position"]
        })
    }

    /// Along replies written token by token under a reply grammar (each token drawn from
    /// what it admits), the tokens found by first byte are exactly those the grammar admits of
    /// the whole vocabulary, at every step: inside strings, where most bytes are admitted,
    /// where a key, a quote or a brace is the only way on, and at the end, where only an end
    /// token is. Runs on the test model (`MOOT_TEST_MODEL`, which `scripts/test` sets).
    #[test]
    fn the_tokens_found_by_first_byte_are_every_token_the_grammar_admits() {
        let Some(path) = std::env::var_os("MOOT_TEST_MODEL") else {
            eprintln!("MOOT_TEST_MODEL is not set: no model to index");
            return;
        };
        let model = super::super::provider::load_model(std::path::Path::new(&path)).unwrap();
        let index = FirstBytes::new(&model);
        let vocabulary = model.n_vocab() as usize;
        assert!(!index.probes.is_empty() && !index.unprobed.is_empty());
        let indexed: usize =
            index.by_byte.iter().map(Vec::len).sum::<usize>() + index.unprobed.len();
        assert_eq!(indexed, vocabulary, "every token is indexed once");
        let gbnf = Grammar::from_schema(&reply_schema(), 240)
            .unwrap()
            .to_gbnf();
        let logits = vec![0.0f32; vocabulary];
        let (mut narrow_steps, mut steps, mut ended) = (0, 0, 0);
        for seed in 1..=2 {
            let mut grammar = LlamaSampler::grammar(&model, &gbnf, "root").unwrap();
            let mut next = xorshift(seed);
            for _ in 0..400 {
                let mut everything = LlamaTokenDataArray::new(
                    (0..vocabulary as i32)
                        .map(|id| LlamaTokenData::new(LlamaToken::new(id), 0.0, 0.0))
                        .collect(),
                    false,
                );
                admit(&mut grammar, &mut everything);
                let found = index.admitted(&logits, |candidates| admit(&mut grammar, candidates));
                assert_eq!(ids(&found), ids(&everything), "after {steps} steps");
                steps += 1;
                if everything.data.len() < 100 {
                    narrow_steps += 1;
                }
                // On through a token that is not the end of the reply.
                let Some(token) = (0..everything.data.len())
                    .map(|_| everything.data[next() as usize % everything.data.len()].id())
                    .find(|token| !model.vocab().is_eog(*token))
                else {
                    // Only the end is left: the reply is whole.
                    ended += 1;
                    break;
                };
                grammar.accept(token);
            }
        }
        assert!(
            narrow_steps > 0,
            "some steps admitted only a few tokens ({steps} steps)"
        );
        assert_eq!(
            ended, 2,
            "each walk ran to the end of its reply, which only an end token takes"
        );
    }
}
