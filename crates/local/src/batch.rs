//! The embedded model's scheduler: the requests in flight decoded together in one llama.cpp
//! batch, one sequence each, joining and leaving between steps; and each sequence's KV cache
//! kept between requests, so a seat's next prompt re-reads only what is new to it, and an
//! opening the seats share is read once and copied; a system prompt is read once per model and
//! build, then loaded from disk (`openings`); a reply decoded alone is drafted ahead from its
//! context (`draft`).

use super::draft::draft;
use super::first_bytes::FirstBytes;
use super::openings::{Openings, WORTH_KEEPING};
use super::provider::{Job, LoadedModel, Timings, WorkerEvent, admit, fatal, recent_log};
use super::provider::{Utf8Stream, WIDE_K, top_candidates};
use llama_cpp_2::DecodeError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use moot_llm::provider::{Completion, FinishReason, LlmError, Usage};
use std::cell::OnceCell;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Instant;

/// How many of the likeliest tokens' logits a request's timings keep from its first step, for
/// comparing a batched reply with its one-at-a-time twin.
const FIRST_LOGITS: usize = 8;

/// One of the context's sequences and what its part of the KV cache holds.
#[derive(Default)]
struct Slot {
    /// The tokens whose keys and values the sequence holds, from position 0.
    cached: Vec<LlamaToken>,
    /// When it last served a request, on the scheduler's clock (least recent is reused first).
    used: u64,
    /// Whose request it last served.
    speaker: Option<String>,
    busy: bool,
}

/// A request being decoded in a slot.
struct Sequence {
    job: Job,
    /// Its slot, prompt and budget, and what it starts from (`awaiting` is cleared once the
    /// opening it waited for is copied).
    plan: Plan,
    grammar: Option<LlamaSampler>,
    penalties: LlamaSampler,
    tail: LlamaSampler,
    text: String,
    stream: Utf8Stream,
    generated: usize,
    /// The token sampled last, to be fed at the next step.
    next: Option<LlamaToken>,
    /// Tokens fed after `next` in the step just decoded, drafted from the context (`draft`):
    /// each is kept only if the sampler draws it anyway.
    drafted: Vec<LlamaToken>,
    drafted_tokens: usize,
    drafts_kept: usize,
    /// Where its logits are in the batch just decoded.
    logits: Option<i32>,
    started: Instant,
    prompt_done: Option<Instant>,
    first_token_ms: f64,
    first_logits: Vec<(i32, f32)>,
    grammar_fallbacks: usize,
    /// The most sequences decoded in one step while this one ran.
    together: usize,
}

impl Sequence {
    fn cancelled(&self) -> bool {
        self.job.cancel.load(Ordering::SeqCst) || self.job.events.is_closed()
    }
}

/// The worker's state: the context, its slots, the requests waiting and those in flight.
pub(super) struct Scheduler<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    template: LlamaChatTemplate,
    info: LoadedModel,
    slots: Vec<Slot>,
    waiting: VecDeque<Job>,
    running: Vec<Sequence>,
    clock: u64,
    batch: LlamaBatch<'m>,
    openings: Openings,
    /// The vocabulary by first byte, indexed when a grammar first refuses the widest net (a
    /// model that never writes under a grammar never indexes it).
    first_bytes: OnceCell<FirstBytes>,
}

impl<'m> Scheduler<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        context: LlamaContext<'m>,
        template: LlamaChatTemplate,
        info: LoadedModel,
        openings: Openings,
    ) -> Scheduler<'m> {
        let sequences = info.sequences.max(1) as usize;
        let batch = LlamaBatch::new(context.n_batch().max(1) as usize, sequences as i32);
        Scheduler {
            model,
            context,
            template,
            info,
            slots: (0..sequences).map(|_| Slot::default()).collect(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            clock: 0,
            batch,
            openings,
            first_bytes: OnceCell::new(),
        }
    }

    /// Serves requests until every provider sharing the model is gone: between two steps of
    /// the batch, new requests join and finished or cancelled ones leave.
    pub(super) fn serve(mut self, queue: &mpsc::Receiver<Job>) {
        loop {
            if self.running.is_empty() && self.waiting.is_empty() {
                match queue.recv() {
                    Ok(job) => self.waiting.push_back(job),
                    Err(_) => return,
                }
            }
            while let Ok(job) = queue.try_recv() {
                self.waiting.push_back(job);
            }
            self.leave_cancelled();
            self.admit_waiting();
            if !self.running.is_empty() {
                self.step();
            }
        }
    }

    /// Sequences whose requester has gone (a timeout, a pause) stop here, before their next
    /// token; what their slot has evaluated stays for the next request.
    fn leave_cancelled(&mut self) {
        let mut index = 0;
        while index < self.running.len() {
            if self.running[index].cancelled() {
                let sequence = self.running.remove(index);
                self.slots[sequence.plan.slot].busy = false;
                let _ = sequence
                    .job
                    .events
                    .send(WorkerEvent::Failed(fatal("cancelled")));
            } else {
                index += 1;
            }
        }
        self.waiting
            .retain(|job| !(job.cancel.load(Ordering::SeqCst) || job.events.is_closed()));
    }

    /// The prompt's tokens and how many of them are its system part (0 when that part cannot
    /// be told apart), or why it cannot be run (a template that fails, a prompt longer than a
    /// sequence may hold).
    fn tokenize(&self, job: &Job) -> Result<(Vec<LlamaToken>, usize), LlmError> {
        let without_nul = |text: &str| text.replace('\0', "");
        let mut chat = Vec::with_capacity(job.messages.len() + 1);
        if !job.system.is_empty() {
            chat.push(
                LlamaChatMessage::new("system".into(), without_nul(&job.system)).map_err(fatal)?,
            );
        }
        for (role, content) in &job.messages {
            chat.push(LlamaChatMessage::new(role.clone(), without_nul(content)).map_err(fatal)?);
        }
        let prompt = self
            .model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|e| {
                fatal(format!(
                    "the chat template of {} could not be applied ({e}): set `chat_template = \
                     \"chatml\"` (or llama3, mistral-v7, …) in [providers.local]",
                    self.info.name
                ))
            })?;
        let tokens = self.tokens_of(&prompt);
        let room = self.info.context as usize;
        if tokens.len() + 16 > room {
            return Err(fatal(format!(
                "the prompt is {} tokens but the local model's context holds {room}: raise \
                 `context` in [providers.local] (this model was trained on {}), or end the \
                 debate sooner",
                tokens.len(),
                self.info.trained_context
            )));
        }
        let opening = chat
            .first()
            .filter(|_| !job.system.is_empty())
            .and_then(|system| {
                let text = self
                    .model
                    .apply_chat_template(&self.template, std::slice::from_ref(system), false)
                    .ok()
                    .filter(|text| prompt.starts_with(text.as_str()))?;
                let opening = self.tokens_of(&text);
                tokens.starts_with(&opening).then_some(opening.len())
            })
            .filter(|&length| length < tokens.len())
            .unwrap_or(0);
        Ok((tokens, opening))
    }

    /// `text` as the model's tokens, special tokens spelled out in it included.
    fn tokens_of(&self, text: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = vocab.tokenize(text.as_bytes(), true, true);
        // Templates that spell out the BOS token would otherwise get it twice.
        if tokens.len() >= 2 && tokens[0] == vocab.bos() && tokens[1] == vocab.bos() {
            tokens.remove(0);
        }
        tokens
    }

    /// Removes a slot's cells from position `from` on.
    fn forget(&mut self, slot: usize, from: usize) {
        let removed = self
            .context
            .clear_kv_cache_seq(Some(slot as u32), Some(from as u32), None);
        let from = if matches!(removed, Ok(true)) {
            from
        } else {
            let _ = self
                .context
                .clear_kv_cache_seq(Some(slot as u32), None, None);
            0
        };
        self.slots[slot].cached.truncate(from);
    }

    /// Starts as many waiting requests as there are free slots, in arrival order; the rest
    /// wait (untouched, so a long prompt is not tokenized again every step) for one in flight
    /// to end.
    fn admit_waiting(&mut self) {
        while let Some(slot) = self.idle_slot() {
            let Some(job) = self.waiting.pop_front() else {
                return;
            };
            match self.tokenize(&job) {
                Ok((prompt, opening)) => {
                    let plan =
                        self.place(slot, &job.speaker, prompt, opening, job.max_tokens as usize);
                    self.start(job, plan);
                }
                Err(error) => {
                    let _ = job.events.send(WorkerEvent::Failed(error));
                }
            }
        }
    }

    /// Any slot no request is using.
    fn idle_slot(&self) -> Option<usize> {
        self.slots.iter().position(|slot| !slot.busy)
    }

    /// How much of `cached` can stand for the start of `prompt`: the same tokens, then past
    /// the first that differs, cached tokens whose text is the prompt's next text (a reply
    /// the model generated, which the template quotes back but the tokenizer would cut
    /// otherwise), with the prompt retokenized after them.
    fn reach(&self, cached: &[LlamaToken], prompt: &PromptText) -> Reach {
        let same = common(cached, &prompt.tokens);
        if same == cached.len() || same >= prompt.tokens.len() {
            return (same, None);
        }
        let vocab = self.model.vocab();
        let rest = &prompt.bytes[prompt.offsets[same]..];
        let (mut at, mut matched) = (0, 0);
        let mut piece = Vec::new();
        for token in &cached[same..] {
            piece.clear();
            vocab.token_to_piece_into(*token, &mut piece, true, None);
            if piece.is_empty() || !rest[at..].starts_with(&piece) {
                break;
            }
            at += piece.len();
            matched += 1;
        }
        if matched == 0 {
            return (same, None);
        }
        let tail = vocab.tokenize(&rest[at..], false, true);
        // Some tokenizers add a space before any text: then the rest is not what it was.
        let mut again = Vec::new();
        for token in &tail {
            vocab.token_to_piece_into(*token, &mut again, true, None);
        }
        if again != rest[at..] {
            return (same, None);
        }
        let mut tokens = prompt.tokens[..same].to_vec();
        tokens.extend_from_slice(&cached[same..same + matched]);
        tokens.extend(tail);
        (same + matched, Some(tokens))
    }

    /// Where a prompt goes (an idle slot; `idle` is one) and what it starts from. Its first
    /// `opening` tokens are its system part, which may be kept on disk.
    fn place(
        &mut self,
        idle: usize,
        speaker: &str,
        prompt: Vec<LlamaToken>,
        opening: usize,
        max_tokens: usize,
    ) -> Plan {
        let text = PromptText::new(self.model, prompt);
        let mut reaches: Vec<Reach> = self
            .slots
            .iter()
            .map(|slot| self.reach(&slot.cached, &text))
            .collect();
        // An idle slot whose whole cache the prompt goes on from (a seat's own earlier turn),
        // holding most of it; else the speaker's own slot, whose cache only it would read on
        // from; else an empty one; else the one used least recently, whose cache is evicted.
        // What another slot holds of the prompt is copied below, so the choice is only about
        // what is lost: the moderator keeps its cache through a round of seats' turns.
        // Between slots that lose alike, one beside a busy slot: only sequences on consecutive
        // slots are computed in one step (see `fill_batch`), so two seats on slots 0 and 2
        // would take a step each.
        let beside_busy = |i: usize| {
            (i > 0 && self.slots[i - 1].busy) || self.slots.get(i + 1).is_some_and(|s| s.busy)
        };
        let loss = |i: usize| {
            let held = &self.slots[i];
            if !held.cached.is_empty() && reaches[i].0 == held.cached.len() {
                (Loss::Nothing, reaches[i].0, 0)
            } else if held.speaker.as_deref() == Some(speaker) {
                (Loss::OwnTurn, 0, 0)
            } else if held.cached.is_empty() {
                (Loss::Empty, 0, 0)
            } else {
                (Loss::Another, 0, held.used)
            }
        };
        let slot = (0..self.slots.len())
            .filter(|&i| !self.slots[i].busy)
            .max_by_key(|&i| {
                let (loss, reach, used) = loss(i);
                (loss, reach, beside_busy(i), std::cmp::Reverse(used))
            })
            .unwrap_or(idle);
        let evicted = self.slots[slot].cached.len() - reaches[slot].0;
        // Another slot (busy or not) may hold more of it: the opening every seat shares. A
        // copy takes the donor's whole part and then forgets what is not shared, so a few
        // tokens (the chat template's first) are read again instead.
        let donor = (0..self.slots.len())
            .filter(|&i| i != slot && reaches[i].0 > reaches[slot].0 + WORTH_WAITING_FOR)
            .max_by_key(|&i| reaches[i].0);
        let source = donor.unwrap_or(slot);
        let cached = reaches[source].0;
        // Or a request in flight is still reading more of it: this one waits for that much
        // to be read, then copies it, rather than reading it too.
        let in_flight = self
            .running
            .iter()
            .filter(|s| s.prompt_done.is_none() && s.plan.awaiting.is_none())
            .map(|s| (s.plan.slot, common(&s.plan.prompt, &text.tokens)))
            .filter(|&(_, n)| n > cached + WORTH_WAITING_FOR)
            .max_by_key(|&(_, n)| n);
        // Or its system part is kept on disk from an earlier run, and loading it beats what
        // the cache holds.
        let opening = if opening >= WORTH_KEEPING { opening } else { 0 };
        let on_disk =
            in_flight.is_none() && opening > cached && self.openings.kept(&text.tokens[..opening]);
        let prompt = match in_flight {
            Some(_) => text.tokens,
            None if on_disk => text.tokens,
            None => reaches[source].1.take().unwrap_or(text.tokens),
        };
        let budget = max_tokens.min((self.info.context as usize).saturating_sub(prompt.len()));
        let mut plan = Plan {
            slot,
            prompt,
            budget,
            reused: 0,
            evicted,
            awaiting: in_flight,
            opening: 0,
        };
        if in_flight.is_none() {
            if on_disk {
                self.forget(slot, 0);
                let opening_tokens = &plan.prompt[..opening];
                if self
                    .openings
                    .load(&mut self.context, slot as u32, opening_tokens)
                {
                    self.slots[slot].cached = opening_tokens.to_vec();
                    plan.reused = opening;
                    return plan;
                }
            }
            // At least the last prompt token is evaluated, for its logits.
            let keep = cached.min(plan.prompt.len() - 1);
            match donor {
                Some(donor) => self.copy(donor, slot, keep),
                None => self.forget(slot, keep),
            }
            plan.reused = self.slots[slot].cached.len();
            // Read here first: kept once read, for the next run.
            if plan.reused < opening {
                plan.opening = opening;
            }
        }
        plan
    }

    /// Gives slot `to` the first `keep` tokens slot `from` holds. Each sequence has its own
    /// part of the cache (so attention reads only its own cells), and llama.cpp copies between
    /// parts only whole: the rest is forgotten after the copy.
    fn copy(&mut self, from: usize, to: usize, keep: usize) {
        let _ = self
            .context
            .copy_kv_cache_seq(from as i32, to as i32, None, None);
        let kept = &self.slots[from].cached[..keep.min(self.slots[from].cached.len())];
        self.slots[to].cached = kept.to_vec();
        self.forget(to, keep);
    }

    /// Sequences waiting for another to read the opening they share take it once it is read
    /// (or as much as it read, when it left first).
    fn take_shared_openings(&mut self) {
        for index in 0..self.running.len() {
            let Some((donor, wanted)) = self.running[index].plan.awaiting else {
                continue;
            };
            let reading = self
                .running
                .iter()
                .any(|s| s.plan.slot == donor && s.prompt_done.is_none());
            if reading && self.slots[donor].cached.len() < wanted {
                continue;
            }
            let sequence = &self.running[index];
            let count = common(&self.slots[donor].cached, &sequence.plan.prompt)
                .min(wanted)
                .min(sequence.plan.prompt.len() - 1);
            let slot = sequence.plan.slot;
            self.copy(donor, slot, count);
            self.running[index].plan.reused = count;
            self.running[index].plan.awaiting = None;
        }
    }

    fn start(&mut self, job: Job, plan: Plan) {
        if self.running.is_empty() {
            self.context.reset_timings();
        }
        let grammar = match &job.grammar {
            Some(gbnf) => match LlamaSampler::grammar(self.model, gbnf, "root") {
                Ok(grammar) => Some(grammar),
                Err(e) => {
                    let error = fatal(format!(
                        "llama.cpp refused the reply grammar ({e}): {}",
                        recent_log()
                    ));
                    let _ = job.events.send(WorkerEvent::Failed(error));
                    return;
                }
            },
            None => None,
        };
        let penalties =
            LlamaSampler::penalties(self.model.n_vocab(), 64, job.repeat_penalty, 0.0, 0.0);
        let seed = getrandom::u32().unwrap_or(0x5eed);
        let tail = LlamaSampler::chain_simple([
            LlamaSampler::top_p(job.top_p, 1),
            LlamaSampler::temp(job.temperature),
            LlamaSampler::dist(seed),
        ]);
        self.clock += 1;
        self.slots[plan.slot].busy = true;
        self.slots[plan.slot].used = self.clock;
        self.slots[plan.slot].speaker = Some(job.speaker.clone());
        // `running` stays in slot order, which is the order a batch must list its sequences in
        // (see `fill_batch`).
        let at = self.running.partition_point(|s| s.plan.slot < plan.slot);
        self.running.insert(
            at,
            Sequence {
                job,
                plan,
                grammar,
                penalties,
                tail,
                text: String::new(),
                stream: Utf8Stream::default(),
                generated: 0,
                next: None,
                drafted: Vec::new(),
                drafted_tokens: 0,
                drafts_kept: 0,
                logits: None,
                started: Instant::now(),
                prompt_done: None,
                first_token_ms: 0.0,
                first_logits: Vec::new(),
                grammar_fallbacks: 0,
                together: 1,
            },
        );
    }

    /// One decode of the batch: each generating sequence's last token (a reply decoded alone,
    /// with the tokens drafted after it), then as much of the prompts still being read as the
    /// batch holds; then the tokens sampled for every sequence whose logits came out.
    fn step(&mut self) {
        self.take_shared_openings();
        let mut room = self.context.n_batch().max(1) as usize;
        let added = loop {
            let (added, used) = self.fill_batch(room);
            if used == 0 {
                return;
            }
            match self.context.decode(&mut self.batch) {
                Ok(()) => break added,
                // No run of free cells for the batch: send less at once.
                Err(DecodeError::NoKvCacheSlot) if used > added.len() => {
                    room = (used / 2).max(1);
                }
                Err(e) => {
                    self.fail_all(&e);
                    return;
                }
            }
        };
        // What llama.cpp computes in one step: the longest run of consecutive slots in the
        // batch (see `fill_batch`).
        let together = consecutive_run(
            added
                .iter()
                .map(|(index, _)| self.running[*index].plan.slot),
        );
        for (index, tokens) in added {
            let sequence = &mut self.running[index];
            sequence.together = sequence.together.max(together);
            self.slots[sequence.plan.slot].cached.extend(tokens);
        }
        self.keep_openings();
        let mut index = 0;
        while index < self.running.len() {
            match self.sample(index) {
                Ok(false) => index += 1,
                Ok(true) => self.finish(index, None),
                Err(error) => self.finish(index, Some(error)),
            }
        }
    }

    /// Keeps on disk each system part a sequence has just finished reading.
    fn keep_openings(&mut self) {
        for sequence in &mut self.running {
            let slot = sequence.plan.slot;
            let opening = sequence.plan.opening;
            if opening > 0 && self.slots[slot].cached.len() >= opening {
                sequence.plan.opening = 0;
                let cached = &self.slots[slot].cached;
                if cached.len() == opening && cached[..] == sequence.plan.prompt[..opening] {
                    self.openings.save(&self.context, slot as u32, cached);
                }
            }
        }
    }

    /// Builds the batch of at most `room` tokens: each generating sequence's last token (and
    /// its drafts, when it is the only one), then as much of the prompts still being read as
    /// fits. Returns what each sequence put in it and how many tokens it holds.
    ///
    /// The tokens are listed in the order of their sequences' ids: over caches of their own,
    /// llama.cpp decodes a batch in steps of consecutive sequence ids met in the batch's order,
    /// so a batch listing sequence 1 before 0 takes two steps where one would do.
    fn fill_batch(&mut self, room: usize) -> (Vec<(usize, Vec<LlamaToken>)>, usize) {
        self.batch.clear();
        // Generating sequences have the room first, a token each, so no reply stalls behind a
        // long prompt; the prompts being read share what is left, in slot order.
        let mut shares = vec![0; self.running.len()];
        let mut left = room;
        for (share, sequence) in shares.iter_mut().zip(&self.running) {
            if sequence.next.is_some() && left > 0 {
                *share = 1;
                left -= 1;
            }
        }
        // A reply decoded alone also takes the tokens drafted from its context. Over caches
        // of their own, llama.cpp computes sequences with unequal token counts in separate
        // passes, so replies decoded together take one token each.
        let mut drafts: &[LlamaToken] = &[];
        let mut generating = self
            .running
            .iter()
            .enumerate()
            .filter_map(|(index, sequence)| Some((index, sequence, sequence.next?)));
        if let (Some((alone, sequence, next)), None) = (generating.next(), generating.next())
            && shares[alone] == 1
        {
            // Tokens sampled this step beyond the budget would be thrown away.
            let most = sequence
                .job
                .drafts
                .min(sequence.plan.budget.saturating_sub(sequence.generated + 1))
                .min(left);
            drafts = draft(&self.slots[sequence.plan.slot].cached, &next, most);
            shares[alone] += drafts.len();
            left -= drafts.len();
        }
        for (share, sequence) in shares.iter_mut().zip(&self.running) {
            if sequence.next.is_none() && sequence.plan.awaiting.is_none() {
                let at = self.slots[sequence.plan.slot].cached.len();
                let end = match sequence.plan.opening {
                    opening if opening > at => opening,
                    _ => sequence.plan.prompt.len(),
                };
                *share = end.saturating_sub(at).min(left);
                left -= *share;
            }
        }
        let mut added: Vec<(usize, Vec<LlamaToken>)> = Vec::new();
        let mut used = 0;
        for (index, sequence) in self.running.iter_mut().enumerate() {
            sequence.logits = None;
            sequence.drafted.clear();
            if shares[index] == 0 {
                continue;
            }
            let seat = [sequence.plan.slot as i32];
            let at = self.slots[sequence.plan.slot].cached.len();
            if let Some(token) = sequence.next {
                if self.batch.add(token, at as i32, &seat, true).is_err() {
                    break;
                }
                sequence.logits = Some(used as i32);
                used += 1;
                let mut tokens = vec![token];
                if shares[index] > 1 {
                    for (offset, drafted) in drafts.iter().enumerate() {
                        let position = at + 1 + offset;
                        if self
                            .batch
                            .add(*drafted, position as i32, &seat, true)
                            .is_err()
                        {
                            break;
                        }
                        used += 1;
                        tokens.push(*drafted);
                        sequence.drafted.push(*drafted);
                    }
                }
                added.push((index, tokens));
                continue;
            }
            let prompt = &sequence.plan.prompt;
            let mut taken = Vec::with_capacity(shares[index]);
            for (position, token) in prompt.iter().enumerate().skip(at).take(shares[index]) {
                let last = position == prompt.len() - 1;
                if self
                    .batch
                    .add(*token, position as i32, &seat, last)
                    .is_err()
                {
                    break;
                }
                if last {
                    sequence.logits = Some(used as i32);
                }
                used += 1;
                taken.push(*token);
            }
            added.push((index, taken));
        }
        (added, used)
    }

    /// Fails every request in flight: the cache is in an unknown state, so the next requests
    /// start from an empty one.
    fn fail_all(&mut self, error: &DecodeError) {
        let message = format!("llama.cpp failed decoding ({error}): {}", recent_log());
        for sequence in self.running.drain(..) {
            let _ = sequence
                .job
                .events
                .send(WorkerEvent::Failed(fatal(&message)));
        }
        self.context.clear_kv_cache();
        for slot in &mut self.slots {
            *slot = Slot::default();
        }
    }

    /// Samples the next token of sequence `index` if its logits came out of the last step,
    /// and past each token drafted after it that the sampler draws anyway; true when its reply
    /// is complete. The drafts it did not draw are forgotten from the cache.
    fn sample(&mut self, index: usize) -> Result<bool, LlmError> {
        let Some(mut at) = self.running[index].logits else {
            return Ok(false);
        };
        let drafted = std::mem::take(&mut self.running[index].drafted);
        let mut kept = 0;
        let outcome = loop {
            match self.sample_at(index, at) {
                // Fed already, after the token before it: its logits are the next position's.
                Ok(Some(token)) if drafted.get(kept) == Some(&token) => {
                    kept += 1;
                    at += 1;
                }
                Ok(Some(token)) => {
                    self.running[index].next = Some(token);
                    break Ok(false);
                }
                Ok(None) => break Ok(true),
                Err(error) => break Err(error),
            }
        };
        let sequence = &mut self.running[index];
        sequence.drafted_tokens += drafted.len();
        sequence.drafts_kept += kept;
        if kept < drafted.len() {
            let slot = sequence.plan.slot;
            let keep = self.slots[slot].cached.len() - (drafted.len() - kept);
            self.forget(slot, keep);
        }
        outcome
    }

    /// Samples sequence `index`'s next token from the logits at `at` in the batch just
    /// decoded and passes it on to the requester: the token, or none when the reply is complete
    /// (an end token, or the budget reached).
    fn sample_at(&mut self, index: usize, at: i32) -> Result<Option<LlamaToken>, LlmError> {
        let sequence = &mut self.running[index];
        let now = Instant::now();
        sequence.prompt_done.get_or_insert(now);
        let logits = self.context.get_logits_ith(at);
        let mut candidates = top_candidates(logits, sequence.job.top_k);
        if sequence.generated == 0 && sequence.first_logits.is_empty() {
            sequence.first_logits = top_candidates(logits, FIRST_LOGITS)
                .data
                .iter()
                .map(|d| (d.id().0, d.logit()))
                .collect();
        }
        match sequence.grammar.as_mut() {
            None => sequence.penalties.apply(&mut candidates),
            Some(grammar) => {
                // The grammar judges the likeliest few first; only when it refuses them all is
                // a wider net, then the tokens that begin with a byte it admits (`first_bytes`;
                // the whole vocabulary is slow to check), given to it.
                admit(&mut candidates, &mut sequence.penalties, grammar);
                if candidates.data.is_empty() {
                    sequence.grammar_fallbacks += 1;
                    candidates = top_candidates(logits, WIDE_K);
                    admit(&mut candidates, &mut sequence.penalties, grammar);
                }
                if candidates.data.is_empty() {
                    let model = self.model;
                    candidates = self
                        .first_bytes
                        .get_or_init(|| FirstBytes::new(model))
                        .admitted(logits, |candidates| {
                            admit(candidates, &mut sequence.penalties, grammar)
                        });
                }
                // Nothing whose first byte the grammar admits alone (a reply stopped inside a
                // character): every token is judged.
                if candidates.data.is_empty() {
                    candidates = self.context.token_data_array_ith(at);
                    admit(&mut candidates, &mut sequence.penalties, grammar);
                    candidates.sorted = false;
                }
                candidates.selected = None;
            }
        }
        sequence.tail.apply(&mut candidates);
        let Some(token) = candidates.selected_token() else {
            return Err(fatal(
                "the sampler chose no token (the grammar admits none)",
            ));
        };
        if let Some(grammar) = sequence.grammar.as_mut() {
            grammar.accept(token);
        }
        sequence.penalties.accept(token);
        sequence.tail.accept(token);
        let vocab = self.model.vocab();
        if vocab.is_eog(token) {
            return Ok(None);
        }
        if sequence.generated == 0 {
            sequence.first_token_ms = sequence.started.elapsed().as_secs_f64() * 1000.0;
        }
        sequence.generated += 1;
        let piece = sequence
            .stream
            .push(&vocab.token_to_piece(token, false, None));
        if !piece.is_empty() {
            sequence.text.push_str(&piece);
            let _ = sequence.job.events.send(WorkerEvent::Text(piece));
        }
        if sequence.generated >= sequence.plan.budget {
            return Ok(None);
        }
        Ok(Some(token))
    }

    /// Ends sequence `index`: its reply (or error) to the requester, its slot free again with
    /// what it holds.
    fn finish(&mut self, index: usize, error: Option<LlmError>) {
        let sequence = self.running.remove(index);
        let slot = &mut self.slots[sequence.plan.slot];
        slot.busy = false;
        if let Some(error) = error {
            let _ = sequence.job.events.send(WorkerEvent::Failed(error));
            return;
        }
        let finish = if sequence.generated >= sequence.plan.budget {
            FinishReason::Length
        } else {
            FinishReason::Stop
        };
        let prompt_done = sequence.prompt_done.unwrap_or_else(Instant::now);
        let llama = self.context.timings();
        let timings = Timings {
            llama_prompt_tokens: llama.n_p_eval().max(0) as usize,
            llama_prompt_ms: llama.t_p_eval_ms(),
            llama_generated_tokens: llama.n_eval().max(0) as usize,
            llama_generation_ms: llama.t_eval_ms(),
            grammar_fallbacks: sequence.grammar_fallbacks,
            drafted_tokens: sequence.drafted_tokens,
            drafts_kept: sequence.drafts_kept,
            prompt_tokens: sequence.plan.prompt.len(),
            reused_tokens: sequence.plan.reused,
            evicted_tokens: sequence.plan.evicted,
            prompt_ms: (prompt_done - sequence.started).as_secs_f64() * 1000.0,
            generated_tokens: sequence.generated,
            generation_ms: prompt_done.elapsed().as_secs_f64() * 1000.0,
            first_token_ms: sequence.first_token_ms,
            first_logits: sequence.first_logits,
            decoded_together: sequence.together,
        };
        let completion = Completion {
            text: sequence.text,
            usage: Some(Usage {
                input: sequence.plan.prompt.len() as u64,
                output: sequence.generated as u64,
            }),
            model: self.info.name.clone(),
            finish,
        };
        let _ = sequence
            .job
            .events
            .send(WorkerEvent::Done(completion, timings));
    }
}

/// What placing a request in a slot costs the slot's cache, from worst to best.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Loss {
    /// Another speaker's turn, which it might have gone on from.
    Another,
    /// Nothing, but another speaker could have had it.
    Empty,
    /// The speaker's own earlier turn, which the prompt does not go on from.
    OwnTurn,
    /// Nothing: the prompt goes on from all it holds.
    Nothing,
}

/// Where a request goes and what it starts from.
struct Plan {
    slot: usize,
    /// Its prompt, retokenized after a reply its slot generated and holds.
    prompt: Vec<LlamaToken>,
    budget: usize,
    /// Prompt tokens already in its slot's cache.
    reused: usize,
    /// Cached tokens other slots forgot to make room for it.
    evicted: usize,
    /// A request in flight reading the same opening (its slot, and how many tokens) that
    /// this one waits for and then shares.
    awaiting: Option<(usize, usize)>,
    /// The length of its system part when this request reads it and keeps it on disk once
    /// read (0 when not): its reading stops there for one step, so the file holds exactly it.
    opening: usize,
}

/// How many cached tokens can stand for a prompt's start, and the prompt retokenized to
/// follow them when that took more than the same tokens.
type Reach = (usize, Option<Vec<LlamaToken>>);

/// A shared opening shorter than this is read again rather than waited for or copied.
const WORTH_WAITING_FOR: usize = 32;

/// The longest run of consecutive numbers in `slots` (ascending).
fn consecutive_run(slots: impl IntoIterator<Item = usize>) -> usize {
    let (mut longest, mut run, mut last) = (0, 0, None);
    for slot in slots {
        run = if last.is_some_and(|l: usize| l + 1 == slot) {
            run + 1
        } else {
            1
        };
        longest = longest.max(run);
        last = Some(slot);
    }
    longest
}

/// How many leading tokens two lists have in common.
fn common(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A prompt's tokens with their text, byte offset by byte offset.
struct PromptText {
    tokens: Vec<LlamaToken>,
    bytes: Vec<u8>,
    /// Where each token's text starts in `bytes` (and, last, its end).
    offsets: Vec<usize>,
}

impl PromptText {
    fn new(model: &LlamaModel, tokens: Vec<LlamaToken>) -> PromptText {
        let vocab = model.vocab();
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        for token in &tokens {
            offsets.push(bytes.len());
            vocab.token_to_piece_into(*token, &mut bytes, true, None);
        }
        offsets.push(bytes.len());
        PromptText {
            tokens,
            bytes,
            offsets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::consecutive_run;

    /// Only sequences on consecutive slots count as computed together.
    #[test]
    fn a_step_computes_the_longest_run_of_consecutive_slots() {
        assert_eq!(consecutive_run([]), 0);
        assert_eq!(consecutive_run([2]), 1);
        assert_eq!(consecutive_run([0, 1, 2]), 3);
        assert_eq!(consecutive_run([0, 2]), 1);
        assert_eq!(consecutive_run([0, 2, 3]), 2);
    }
}
