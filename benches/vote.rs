//! Tallying large elections: 1 000 voters ranking 50 candidates, by Condorcet (the pairwise
//! matrix), Borda and plurality. Target: Condorcet under 50 ms. `cargo bench --bench vote`.

use moot::vote::{Ballot, Method, Share, tally};

fn main() {
    divan::main();
}

/// Deterministic pseudo-random full rankings (xorshift shuffles).
fn election(voters: usize, candidates: usize) -> (Vec<String>, Vec<Ballot>) {
    let names: Vec<String> = (0..candidates).map(|i| format!("C{i}")).collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let ballots = (0..voters)
        .map(|v| {
            let mut ranking = names.clone();
            for i in (1..ranking.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                ranking.swap(i, j);
            }
            Ballot {
                voter: format!("v{v}"),
                ranking,
                confidence: 0.5 + (next() % 50) as f64 / 100.0,
                weight: 1.0,
            }
        })
        .collect();
    (names, ballots)
}

#[divan::bench(args = [Method::Condorcet, Method::Borda, Method::Plurality])]
fn thousand_voters_fifty_candidates(bencher: divan::Bencher, method: Method) {
    let (candidates, ballots) = election(1_000, 50);
    bencher.bench(|| tally(method, &candidates, &ballots, Share::TWO_THIRDS));
}
