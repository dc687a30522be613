//! Derived views at scale: gradual scores and commitment stores over a large debate, and the
//! streaming prose extractor. `cargo bench --bench argue`.

use moot::argue::{argument_graph, commitment_stores};
use moot::debate::{Act, Move, Phase, Relation, Turn, TurnStatus};
use moot::llm::structured::FieldStreamer;

fn main() {
    divan::main();
}

/// `rounds` rounds of 4 seats, each turn making 4 moves that answer earlier arguments.
fn debate(rounds: u32) -> Vec<Turn> {
    let seats = ["A", "B", "C", "D"];
    let mut turns = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for round in 1..=rounds {
        for (s, seat) in seats.iter().enumerate() {
            let mut moves = Vec::new();
            for n in 1..=4u32 {
                let id = format!("{seat}{round}.{n}");
                let target = ids
                    .get((round as usize * 7 + s * 3 + n as usize) % ids.len().max(1))
                    .cloned();
                let relation = match n % 3 {
                    0 => Relation::Support,
                    1 => Relation::Rebut,
                    _ => Relation::Undercut,
                };
                moves.push(Move {
                    id: id.clone(),
                    act: if n == 4 { Act::Since } else { Act::Claim },
                    text: format!("proposition {id} about caching and latency budgets"),
                    premises: if n == 4 {
                        vec![format!("premise of {id}")]
                    } else {
                        vec![]
                    },
                    answers: target.into_iter().collect(),
                    relation: Some(relation),
                });
                ids.push(id);
            }
            turns.push(Turn {
                round,
                phase: Phase::Argument,
                seat: seat.to_string(),
                content: "x".repeat(800),
                moves,
                confidence: Some(0.6),
                tokens_in: 0,
                tokens_out: 0,
                tokens_estimated: false,
                latency_ms: 0,
                provider: "bench".into(),
                model: "bench".into(),
                status: TurnStatus::Ok,
                data: None,
                note: None,
            });
        }
    }
    turns
}

#[divan::bench(args = [5, 20, 125])]
fn argument_graph_with_scores(bencher: divan::Bencher, rounds: u32) {
    let turns = debate(rounds);
    bencher.bench(|| argument_graph(divan::black_box(&turns)));
}

#[divan::bench(args = [5, 20, 125])]
fn commitment_stores_of_four_seats(bencher: divan::Bencher, rounds: u32) {
    let turns = debate(rounds);
    let seats: Vec<String> = ["A", "B", "C", "D"].iter().map(|s| s.to_string()).collect();
    bencher.bench(|| commitment_stores(&seats, divan::black_box(&turns)));
}

#[divan::bench]
fn streaming_prose_out_of_a_2kb_reply_in_8_byte_chunks(bencher: divan::Bencher) {
    let reply = serde_json::json!({"argument": "Redis keeps \"hot\" keys in memory.\n".repeat(60), "moves": []}).to_string();
    let chunks: Vec<String> = reply
        .as_bytes()
        .chunks(8)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    bencher.bench(|| {
        let mut streamer = FieldStreamer::new("argument");
        let mut total = 0;
        for chunk in &chunks {
            total += streamer.feed(chunk).len();
        }
        total
    });
}
