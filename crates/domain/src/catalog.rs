//! The perspective catalog (built-ins from perspectives/*.toml plus the user's) and the
//! keyword heuristic that picks perspectives for a question, keeping at least one opposed pair.

use serde::{Deserialize, Serialize};

/// A viewpoint a debater argues from: a built-in (`perspectives/*.toml`) or one the user
/// defines in `[[debate.custom_perspectives]]`, read by the same type.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Perspective {
    pub name: String,
    pub priorities: Vec<String>,
    pub trade_offs: String,
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Perspectives whose trade-offs pull the other way.
    #[serde(default)]
    pub opposes: Vec<String>,
    /// The arena's persona fields (design note 003): the role's name, how it argues, and what
    /// it knows; optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_context: Option<String>,
    /// "built-in" or "config": set by `catalog`, never read from a file (a perspective from
    /// the config or a stored debate has none).
    #[serde(default, skip_deserializing, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

const BUILT_IN: [(&str, &str); 6] = [
    (
        "performance-advocate.toml",
        include_str!("../perspectives/performance-advocate.toml"),
    ),
    (
        "simplicity-advocate.toml",
        include_str!("../perspectives/simplicity-advocate.toml"),
    ),
    (
        "security-advocate.toml",
        include_str!("../perspectives/security-advocate.toml"),
    ),
    (
        "future-flexibility.toml",
        include_str!("../perspectives/future-flexibility.toml"),
    ),
    (
        "user-experience.toml",
        include_str!("../perspectives/user-experience.toml"),
    ),
    (
        "operational-simplicity.toml",
        include_str!("../perspectives/operational-simplicity.toml"),
    ),
];

/// The built-in perspectives, parsed once per process: every debate a server starts reads
/// the catalog, and parsing the six files again was about 1 % of a served debate's CPU.
static BUILT_IN_PARSED: std::sync::LazyLock<Vec<Perspective>> = std::sync::LazyLock::new(|| {
    BUILT_IN
        .iter()
        .map(|(file, text)| {
            let mut p: Perspective = toml::from_str(text)
                .unwrap_or_else(|e| panic!("built-in perspective {file} is invalid: {e}"));
            p.source = "built-in".into();
            p
        })
        .collect()
});

/// The built-in catalog, then the user's perspectives (a user perspective with a built-in's
/// name replaces it).
pub fn catalog(custom: &[Perspective]) -> Vec<Perspective> {
    let mut perspectives = BUILT_IN_PARSED.clone();
    for user in custom {
        let perspective = Perspective {
            name: user.name.trim().to_string(),
            source: "config".into(),
            ..user.clone()
        };
        match perspectives
            .iter_mut()
            .find(|p| p.name.eq_ignore_ascii_case(&perspective.name))
        {
            Some(existing) => *existing = perspective,
            None => perspectives.push(perspective),
        }
    }
    perspectives
}

/// Looks a perspective up by name, case-insensitively.
pub fn find<'a>(catalog: &'a [Perspective], name: &str) -> Option<&'a Perspective> {
    catalog
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
}

fn opposed(a: &Perspective, b: &Perspective) -> bool {
    a.opposes.iter().any(|n| n.eq_ignore_ascii_case(&b.name))
        || b.opposes.iter().any(|n| n.eq_ignore_ascii_case(&a.name))
}

/// How well each perspective fits the question's words, plus boosts from detected constraints.
pub fn relevance(catalog: &[Perspective], words: &[String], boosts: &[(&str, i32)]) -> Vec<i32> {
    catalog
        .iter()
        .map(|p| {
            let hits = p
                .keywords
                .iter()
                .filter(|k| words.iter().any(|w| w == &k.to_lowercase()))
                .count() as i32;
            let name_hits = p
                .priorities
                .iter()
                .filter(|priority| {
                    words
                        .iter()
                        .any(|w| priority.to_lowercase().contains(w.as_str()) && w.len() > 4)
                })
                .count() as i32;
            let boost: i32 = boosts
                .iter()
                .filter(|(name, _)| p.name.eq_ignore_ascii_case(name))
                .map(|(_, b)| *b)
                .sum();
            hits * 2 + name_hits + boost
        })
        .collect()
}

/// Why the perspectives a person named cannot be seated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatingError {
    #[error(
        "unknown perspective {name:?}; known: {known} (add your own under [[debate.custom_perspectives]])"
    )]
    Unknown { name: String, known: String },
    #[error("{0} perspectives were named; a debate seats 2 to 4")]
    TooMany(usize),
}

/// Picks `count` perspectives: the named ones first (all must exist), then the most relevant,
/// and makes sure at least one pair is opposed so the seats do not all agree.
pub fn select(
    catalog: &[Perspective],
    scores: &[i32],
    count: usize,
    named: &[String],
) -> Result<Vec<Perspective>, SeatingError> {
    let mut chosen: Vec<usize> = Vec::new();
    for name in named {
        let index = catalog
            .iter()
            .position(|p| p.name.eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| SeatingError::Unknown {
                name: name.clone(),
                known: catalog
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if !chosen.contains(&index) {
            chosen.push(index);
        }
    }
    if chosen.len() > 4 {
        return Err(SeatingError::TooMany(chosen.len()));
    }
    let count = count.clamp(2, 4).max(chosen.len());
    let mut ranked: Vec<usize> = (0..catalog.len()).collect();
    // Stable: equal scores keep catalog order, so selection is deterministic.
    ranked.sort_by_key(|&i| -scores.get(i).copied().unwrap_or(0));
    let fixed = chosen.len();
    for &i in &ranked {
        if chosen.len() >= count {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    let has_opposition = chosen.iter().enumerate().any(|(n, &a)| {
        chosen[n + 1..]
            .iter()
            .any(|&b| opposed(&catalog[a], &catalog[b]))
    });
    if !has_opposition && chosen.len() > fixed {
        let anchor = chosen[0];
        if let Some(&opponent) = ranked
            .iter()
            .find(|&&i| !chosen.contains(&i) && opposed(&catalog[anchor], &catalog[i]))
        {
            let last = chosen.len() - 1;
            chosen[last] = opponent;
        }
    }
    Ok(chosen.into_iter().map(|i| catalog[i].clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    }

    #[test]
    fn the_six_built_ins_load() {
        let names: Vec<String> = catalog(&[]).into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            vec![
                "Performance Advocate",
                "Simplicity Advocate",
                "Security Advocate",
                "Future Flexibility",
                "User Experience",
                "Operational Simplicity"
            ]
        );
    }

    #[test]
    fn caching_question_picks_performance_and_operations() {
        let all = catalog(&[]);
        let scores = relevance(
            &all,
            &words("Should we use Redis or PostgreSQL for caching?"),
            &[],
        );
        let picked = select(&all, &scores, 2, &[]).unwrap();
        let names: Vec<&str> = picked.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["Operational Simplicity", "Performance Advocate"]
        );
        assert!(opposed(&picked[0], &picked[1]));
    }

    #[test]
    fn an_aligned_pick_is_swapped_for_an_opponent() {
        let mut all = catalog(&[]);
        for p in &mut all {
            p.opposes.clear();
        }
        all[0].opposes = vec!["User Experience".into()];
        // Scores favour Performance and Simplicity, which are not opposed here.
        let scores = vec![5, 4, 0, 0, 0, 0];
        let picked = select(&all, &scores, 2, &[]).unwrap();
        assert_eq!(picked[0].name, "Performance Advocate");
        assert_eq!(picked[1].name, "User Experience");
    }

    #[test]
    fn named_perspectives_come_first_and_unknown_names_are_refused() {
        let all = catalog(&[]);
        let scores = vec![0; all.len()];
        let picked = select(
            &all,
            &scores,
            2,
            &["security advocate".into(), "User Experience".into()],
        )
        .unwrap();
        assert_eq!(picked.len(), 2);
        assert_eq!(picked[0].name, "Security Advocate");
        let err = select(&all, &scores, 2, &["Wizard".into()]).unwrap_err();
        assert!(
            err.to_string().contains("unknown perspective \"Wizard\""),
            "{err}"
        );
    }

    /// A custom perspective as debates stored it before the two types were one (every field,
    /// the unset ones null) still reads; a `source` in a file is refused, since moot sets it.
    #[test]
    fn stored_custom_perspectives_read_and_a_source_in_a_file_is_refused() {
        let stored = serde_json::json!({
            "name": "Compliance First", "priorities": ["audit trails"], "trade_offs": "slower",
            "keywords": [], "opposes": [], "role_name": null, "instructions": null,
            "background_context": null
        });
        let read: Perspective = serde_json::from_value(stored).unwrap();
        assert_eq!(
            (read.name.as_str(), read.role_name.as_deref()),
            ("Compliance First", None)
        );
        assert!(
            !serde_json::to_value(&read)
                .unwrap()
                .as_object()
                .unwrap()
                .contains_key("source"),
            "a perspective catalog() did not place carries no source"
        );
        let refused = toml::from_str::<Perspective>(
            "name = \"X\"\npriorities = []\ntrade_offs = \"\"\nsource = \"built-in\"\n",
        )
        .unwrap_err();
        assert!(refused.to_string().contains("source"), "{refused}");
    }

    #[test]
    fn user_perspectives_extend_and_override() {
        let custom = vec![
            Perspective {
                name: "Compliance First".into(),
                priorities: vec!["audit trails".into()],
                trade_offs: "slower".into(),
                keywords: vec!["audit".into()],
                opposes: vec![],
                role_name: Some("Compliance Officer".into()),
                instructions: None,
                background_context: None,
                source: String::new(),
            },
            Perspective {
                name: "security advocate".into(),
                priorities: vec!["zero trust".into()],
                trade_offs: "friction".into(),
                keywords: vec![],
                opposes: vec![],
                role_name: None,
                instructions: None,
                background_context: None,
                source: String::new(),
            },
        ];
        let all = catalog(&custom);
        assert_eq!(all.len(), 7);
        assert_eq!(
            find(&all, "Security Advocate").unwrap().priorities,
            vec!["zero trust"]
        );
        assert_eq!(find(&all, "compliance first").unwrap().source, "config");
    }
}
