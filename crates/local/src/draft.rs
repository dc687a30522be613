//! Drafts for a reply decoded alone, taken from its own context (prompt lookup): the tokens that
//! followed the latest earlier place where the reply's two newest tokens stand side by side.
//! The scheduler feeds them after the newest token and keeps each one the sampler then draws
//! anyway, so a reply that quotes its prompt (an evaluation naming the seats' claims, a
//! synthesis quoting them) is written several tokens a step, and nothing it writes changes.

/// The most tokens drafted a step by default: with the newest token, four columns, which the
/// packed kernel multiplies in one pass over the weights.
pub(super) const DEFAULT_DRAFTS: usize = 3;
/// The most a setting may ask for: drafts past the first few are seldom all drawn, and each
/// costs its column in every step.
pub(super) const MOST_DRAFTS: usize = 16;

/// Up to `most` tokens that followed the latest earlier place where `cached`'s last token stood
/// just before `next` (the token about to be fed after `cached`); none when there is no such
/// place.
pub(super) fn draft<'c, T: PartialEq>(cached: &'c [T], next: &T, most: usize) -> &'c [T] {
    let Some(last) = cached.last() else {
        return &[];
    };
    if most == 0 {
        return &[];
    }
    // `first` is where the pair starts; what follows it must lie within `cached`.
    (0..cached.len().saturating_sub(2))
        .rev()
        .find(|&first| cached[first] == *last && cached[first + 1] == *next)
        .map_or(&[], |first| {
            let from = first + 2;
            &cached[from..(from + most).min(cached.len())]
        })
}

#[cfg(test)]
mod tests {
    use super::draft;

    #[test]
    fn a_draft_is_what_followed_the_latest_earlier_pair() {
        // ... 7 8 1 2 ... 7 8 3 4 5 ... 7 | next 8
        let cached = [7, 8, 1, 2, 9, 7, 8, 3, 4, 5, 6, 7];
        assert_eq!(draft(&cached, &8, 3), &[3, 4, 5]);
        assert_eq!(draft(&cached, &8, 2), &[3, 4]);
        assert_eq!(draft(&cached, &8, 0), &[] as &[i32]);
    }

    #[test]
    fn no_draft_without_an_earlier_pair_or_anything_after_it() {
        assert_eq!(draft(&[1, 2, 3], &4, 3), &[] as &[i32]);
        assert_eq!(draft(&[] as &[i32], &4, 3), &[] as &[i32]);
        // The only earlier pair (5, 5) ends the cache: nothing followed it yet.
        assert_eq!(draft(&[1, 5, 5], &5, 3), &[] as &[i32]);
        // A draft stops where the cache does.
        assert_eq!(draft(&[5, 6, 7, 5], &6, 3), &[7, 5]);
    }
}
