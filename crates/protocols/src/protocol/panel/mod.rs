//! The judges' panel (design note 001): judges with fixed stances recommend one of a few
//! options in isolation, then challenge each other until two thirds agree or the rounds run
//! out; the result is RECOMMENDED, or CONTESTED and left to the person.
//!
//! The rooms: `settings` (flags and `[panel]` → `PanelSettings`), `run` (the steps),
//! `replies` (each reply's schema and parser), `prompts` and `result` (the consensus check
//! and `PanelResult`).

mod prompts;
mod replies;
mod result;
mod run;
mod seats;
mod settings;

pub use result::{Change, Check, Chosen, PanelResult, check, check_ranked};
pub use settings::{Judge, OptionError, PanelOption, PanelSettings, Threshold, parse_option};

use super::{Flag, Outcome, SettingsError, SettingsInput, Undecidable};
use crate::debate::{Phase, Presentation, SidePanel};
use crate::protocol::refused;

/// The panel, as registered.
pub struct Panel;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const OPTIONS_SCHEMA: &str = "moot_panel_options";
pub const RECOMMENDATION_SCHEMA: &str = "moot_panel_recommendation";
pub const CHALLENGE_SCHEMA: &str = "moot_panel_challenge";

const FLAGS: &[Flag] = &[
    Flag::valued(
        "option",
        "ID: LABEL — DESCRIPTION",
        "An option the panel judges (repeat for each; default: the moderator proposes them)",
    )
    .repeatable(),
    Flag::CONTEXT,
    Flag::switch(
        "anonymous",
        "Show judges to each other as Judge 1, 2, 3 when they challenge each other",
    ),
    // A panel's first round is blind as it stands; the flag is taken so that one command
    // line asks every protocol for a blind first round, and the record says it held.
    super::kit::BLIND_FIRST_FLAG,
];

impl super::TypedProtocol for Panel {
    type Settings = PanelSettings;
    type Result = PanelResult;

    /// 2: a chosen contested result reads Low; a judge's unreadable later reply keeps its
    /// earlier recommendation; every judge's case is listed (issue 24).
    /// 3: a recommendation resting on less than a full reading (an abstention, a tie broken by
    /// rule, a reply that could not be read) is MEDIUM and says why (issue 68, C6, A2); a
    /// version-2 result reads as written.
    /// 4: the question to the person carries no emoji (its variation selector broke the
    /// result view's border) and lists the options one per line (A4).
    const RESULT_VERSION: u32 = 4;

    fn name(&self) -> &'static str {
        "panel"
    }

    fn description(&self) -> &'static str {
        "judges with fixed stances (Risk, Value, Effort) recommend an option in isolation, then \
         challenge each other; two thirds agreeing is RECOMMENDED, else CONTESTED"
    }

    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution {
        result.resolution()
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<PanelSettings, SettingsError> {
        settings::build(input)
    }

    /// Built as for a run, with the same checks (a `consensus_threshold` of 5 was refused only
    /// when the panel ran): from config alone, building reads nothing and writes nothing.
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        settings::build(input).map(|_| ())
    }

    /// A resume may give the options while none are settled: the moderator's proposal could
    /// not be used, or the person has not accepted it yet; never once a judge has spoken.
    fn with_options(
        &self,
        mut settings: PanelSettings,
        options: &[String],
        turns: &[crate::debate::Turn],
    ) -> Result<PanelSettings, SettingsError> {
        if !settings.options.is_empty() {
            return Err(refused!(
                "it was started with its options ({}); they cannot change on resume",
                settings
                    .options
                    .iter()
                    .map(|o| o.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if turns.iter().any(|turn| turn.phase != Phase::Options) {
            return Err(
                "its judges have already weighed the moderator's options; they cannot change now"
                    .into(),
            );
        }
        let given = options
            .iter()
            .map(|text| parse_option(text))
            .collect::<Result<Vec<_>, _>>()?;
        settings::check_options(&given)?;
        if given.len() < 2 {
            return Err("a panel needs at least two options: give --option once for each".into());
        }
        settings.options = given;
        Ok(settings)
    }

    fn unsettled(&self, result: &PanelResult) -> Option<String> {
        (!result.consensus).then(|| "the judges disagreed (CONTESTED)".to_string())
    }

    /// Round 1 is each judge alone with the question: no earlier panel's judges reach it,
    /// not even through lessons.
    fn withholds_lessons(&self) -> fn(&crate::debate::TurnKey) -> bool {
        |key| key.round == 1 && key.phase == Phase::Recommendation
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            panels: vec![SidePanel::Standings],
            ..Presentation::own_seats(
                "judge",
                "Result",
                "The moderator is framing the options to judge…",
            )
        }
    }

    super::runs!(run::run);

    fn decide(
        &self,
        mut result: PanelResult,
        choice: &str,
        by: &str,
    ) -> Result<Outcome<PanelResult>, Undecidable> {
        if result.consensus {
            let agreed = result.recommended_option.as_deref().unwrap_or("?");
            return Err(Undecidable::Agreed(agreed.to_string()));
        }
        let choice = choice.trim().to_uppercase();
        if !result.options.iter().any(|o| o.id == choice) {
            let options = result.options.iter().map(|o| o.id.clone()).collect();
            return Err(Undecidable::NoSuchOption { choice, options });
        }
        result.choose(choice, by);
        Ok(result.into_outcome())
    }
}

#[cfg(test)]
mod tests {
    use super::prompts::*;
    use super::result::*;
    use super::settings::*;

    fn options(ids: &[&str]) -> Vec<PanelOption> {
        ids.iter()
            .map(|id| PanelOption {
                id: id.to_string(),
                label: format!("option {id}"),
                description: String::new(),
            })
            .collect()
    }

    fn votes(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        pairs
            .iter()
            .map(|(j, v)| (j.to_string(), v.map(str::to_string)))
            .collect()
    }

    /// Seed review 000/001 #4: the choice says who backs what (options nobody backs are left
    /// out), not "Review perspectives above" with nothing above, and lists no option itself.
    #[test]
    fn the_choice_prompt_names_the_backers_and_nothing_unbacked() {
        let result: PanelResult = serde_json::from_value(serde_json::json!({
            "question_id": "DEB-x", "question": "q", "consensus": false,
            "confidence": "REQUIRES_INPUT",
            "distribution": {"A": ["risk"], "B": [], "C": ["value", "effort"]},
            "perspectives": {}, "change_log": [], "options": [], "rounds": 1,
            "threshold": "3/4", "voters": 3, "agreeing": 2, "option_order": {},
            "date": "2026-11-25"
        }))
        .unwrap();
        assert_eq!(
            result.choice_prompt(),
            "No option reached 3/4 of the 3 judges (backed: A by risk; C by value, effort). \
             Each judge's case is in the result (s)."
        );
    }

    /// C6: a ranked vote with an abstention and a Borda tie broken by option order is no
    /// full reading: the check says what it rests on, and the record and the outcome read
    /// MEDIUM with the reasons, not "every judge ranked every option".
    #[test]
    fn a_ranked_vote_with_an_abstention_and_a_tie_claims_no_high_confidence() {
        let ballots = [
            crate::vote::Ballot::new("risk", &["A", "B", "C"]),
            crate::vote::Ballot::new("value", &["B", "A", "C"]),
            crate::vote::Ballot::new("effort", &[]),
        ];
        let check = check_ranked(
            &options(&["A", "B", "C"]),
            &ballots,
            crate::vote::Method::Borda,
            Threshold::TWO_THIRDS,
        );
        assert!(
            check.caveats.iter().any(|c| c == "effort abstained"),
            "{:?}",
            check.caveats
        );
        assert!(
            check
                .caveats
                .iter()
                .any(|c| c.contains("tie between A and B")),
            "{:?}",
            check.caveats
        );
        let full = check_ranked(
            &options(&["A", "B", "C"]),
            &[
                crate::vote::Ballot::new("risk", &["A", "B", "C"]),
                crate::vote::Ballot::new("value", &["A", "C", "B"]),
                crate::vote::Ballot::new("effort", &["B", "A", "C"]),
            ],
            crate::vote::Method::Borda,
            Threshold::TWO_THIRDS,
        );
        assert!(full.caveats.is_empty(), "{:?}", full.caveats);
        let mut result: PanelResult = serde_json::from_value(serde_json::json!({
            "question_id": "DEB-x", "question": "q", "consensus": true,
            "recommended_option": "A", "confidence": "MEDIUM",
            "perspectives": {}, "change_log": [], "options": [], "rounds": 1,
            "threshold": "2/3", "voters": 2, "agreeing": 1, "option_order": {},
            "decided_by": "borda: A 3.0 · B 3.0 · C 0.0",
            "date": "2026-12-02"
        }))
        .unwrap();
        result.caveats = check.caveats.clone();
        let outcome = result.into_outcome();
        assert_eq!(outcome.confidence, crate::debate::Confidence::Medium);
        assert!(
            outcome.markdown.contains("**Confidence:** MEDIUM (decided by borda: A 3.0 · B 3.0 · C 0.0; it rests on less than a full reading: effort abstained; a tie between A and B"),
            "{}",
            outcome.markdown
        );
        assert!(!outcome.markdown.contains("every judge ranked every option"));
    }

    /// A2: the evaluation round's reply must assess every option; one without `assessments`
    /// goes back for its repair instead of being taken as an evaluation.
    #[test]
    fn a_judges_evaluation_without_assessments_is_refused_for_repair() {
        use crate::engine::ReplyParser as _;
        let shape = super::replies::JudgeReplies {
            options: vec!["A".into(), "B".into()],
            order: vec!["A".into(), "B".into()],
            challenge: false,
            others: Vec::new(),
            require_reason: false,
            ranked: false,
        };
        let key = crate::debate::TurnKey::new(1, crate::debate::Phase::Recommendation, "A");
        let transcript = crate::engine::Transcript {
            key: &key,
            turns: &[],
            repair: false,
        };
        let reply = serde_json::json!({"reasoning": "A is simpler.", "recommended": "A", "perspective": "simple"});
        let refused = shape.parse(&reply, &transcript).unwrap_err();
        assert!(
            refused.to_string().contains("`assessments` is missing"),
            "{refused}"
        );
        let mut whole = reply.clone();
        whole["assessments"] = serde_json::json!([
            {"option": "A", "pros": "simple", "cons": "slow"},
            {"option": "B", "pros": "fast", "cons": "complex"}
        ]);
        assert!(shape.parse(&whole, &transcript).is_ok());
    }

    /// Seed review 004 #14: a Condorcet count says how many options each beats head to head,
    /// not first places under the name of points (here every option has one first place).
    #[test]
    fn a_condorcet_count_is_told_in_pairwise_wins() {
        let ballots = [
            crate::vote::Ballot::new("risk", &["B", "A", "C"]),
            crate::vote::Ballot::new("value", &["C", "A", "B"]),
            crate::vote::Ballot::new("effort", &["A", "B", "C"]),
        ];
        let check = check_ranked(
            &options(&["A", "B", "C"]),
            &ballots,
            crate::vote::Method::Condorcet,
            Threshold::TWO_THIRDS,
        );
        assert_eq!(
            check.decided_by.as_deref(),
            Some("condorcet: pairwise wins A 2 · B 1 · C 0")
        );
    }

    /// Seed review 000/001 #14: the stance is quoted whole, so the prompt reads right whatever
    /// word a stance starts with.
    #[test]
    fn a_judges_prompt_quotes_its_stance() {
        let value = default_judges()
            .into_iter()
            .find(|j| j.name == "Value")
            .unwrap();
        let system = judge_system(&value);
        assert!(
            system.contains("Your stance, which you must keep: optimistic: maximise user value."),
            "{system}"
        );
        assert!(!system.contains("with a optimistic"), "{system}");
    }

    #[test]
    fn two_of_three_is_consensus_at_0_67_exactly_as_a_fraction() {
        // 2/3 < 0.67 in floating point, yet the note means two thirds.
        let threshold = Threshold::from_decimal(0.67).unwrap();
        assert_eq!(threshold, Threshold::TWO_THIRDS);
        assert!(threshold.reached(2, 3));
        assert!(!threshold.reached(1, 3));
        assert!(!Threshold::from_decimal(0.75).unwrap().reached(2, 3));
        assert!(Threshold::from_decimal(0.75).unwrap().reached(3, 4));
        assert!(Threshold::from_decimal(1.0).unwrap().reached(3, 3));
        assert!(!Threshold::from_decimal(1.0).unwrap().reached(2, 3));
        let check = check(
            &options(&["A", "B", "C"]),
            &votes(&[
                ("risk", Some("A")),
                ("value", Some("A")),
                ("effort", Some("C")),
            ]),
            threshold,
        );
        assert_eq!(check.consensus.as_deref(), Some("A"));
    }

    #[test]
    fn thresholds_outside_the_open_half_to_one_are_refused() {
        for bad in [0.5, 0.2, 1.01, -1.0, f64::NAN] {
            assert!(Threshold::from_decimal(bad).is_err(), "{bad}");
        }
        assert_eq!(Threshold::from_decimal(0.6).unwrap().to_string(), "3/5");
    }

    #[test]
    fn ties_empty_options_and_lone_judges_have_defined_outcomes() {
        let abc = options(&["A", "B", "C"]);
        // A tie for the largest share is no consensus; options without votes stay listed.
        let tie = check(
            &options(&["A", "B", "C", "D"]),
            &votes(&[
                ("a", Some("A")),
                ("b", Some("A")),
                ("c", Some("B")),
                ("d", Some("B")),
            ]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!(tie.consensus, None);
        assert_eq!(tie.distribution["C"], Vec::<String>::new());
        // One valid recommendation is never a consensus, however unanimous.
        let lone = check(
            &abc,
            &votes(&[("risk", Some("A")), ("value", None), ("effort", None)]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!((lone.consensus, lone.voters), (None, 1));
        // The denominator is the valid recommendations: 2 of 2 with one unparseable judge.
        let two = check(
            &abc,
            &votes(&[("risk", Some("B")), ("value", Some("B")), ("effort", None)]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!(two.consensus.as_deref(), Some("B"));
        let none = check(&abc, &votes(&[]), Threshold::TWO_THIRDS);
        assert_eq!((none.consensus, none.voters), (None, 0));
    }

    #[test]
    fn options_parse_with_or_without_a_description() {
        assert_eq!(
            parse_option("a: Local-first sync — full offline editing").unwrap(),
            PanelOption {
                id: "A".into(),
                label: "Local-first sync".into(),
                description: "full offline editing".into()
            }
        );
        assert_eq!(parse_option("B: Online only").unwrap().description, "");
        assert_eq!(
            parse_option("Online only").unwrap_err(),
            OptionError::NoId("Online only".into())
        );
        let bad_id = parse_option("AB: x").unwrap_err();
        assert!(bad_id.to_string().contains("one letter"), "{bad_id}");
        assert_eq!(
            parse_option("C:  — nothing").unwrap_err(),
            OptionError::NoLabelWritten("C".into())
        );
        let twice = vec![parse_option("A: x").unwrap(), parse_option("a: y").unwrap()];
        assert_eq!(
            check_options(&twice).unwrap_err().to_string(),
            "option id A is given twice; every option needs its own letter"
        );
    }

    /// Seed review 000/001 #1: a resume may give the options until a judge has spoken, and
    /// they are checked as `--option` is.
    #[test]
    fn options_given_on_resume_are_taken_until_a_judge_speaks() {
        use super::{Panel, Phase};
        use crate::debate::{Turn, TurnKey};
        use crate::protocol::TypedProtocol;
        let unset = || PanelSettings {
            options: Vec::new(),
            judges: default_judges(),
            context: String::new(),
            context_cut: Vec::new(),
            max_rounds: 2,
            consensus_threshold: Threshold::TWO_THIRDS,
            timeout_per_judge: 60,
            require_stance_maintenance: true,
            require_change_documentation: true,
            anonymous: false,
            blind_first: false,
        };
        let given = ["A: One".to_string(), "B: Two — the other".to_string()];
        let proposal = Turn::pending(TurnKey::new(0, Phase::Options, "moderator"), "x", "x");
        let taken = Panel
            .with_options(unset(), &given, std::slice::from_ref(&proposal))
            .unwrap();
        assert_eq!(taken.options[1].description, "the other");
        let judged = Turn::pending(TurnKey::new(1, Phase::Recommendation, "risk"), "x", "x");
        let late = Panel.with_options(unset(), &given, &[proposal, judged]);
        assert!(late.unwrap_err().message().contains("already weighed"));
        let again = Panel.with_options(taken, &given, &[]);
        assert!(
            again
                .unwrap_err()
                .message()
                .contains("started with its options (A, B)")
        );
        let one = Panel.with_options(unset(), &given[..1], &[]);
        assert!(one.unwrap_err().message().contains("at least two options"));
        let bad = Panel.with_options(unset(), &["One".to_string()], &[]);
        assert!(bad.unwrap_err().message().contains("no id"));
    }

    #[test]
    fn every_judge_sees_its_own_stable_order() {
        let abcd = options(&["A", "B", "C", "D"]);
        let risk = order_for("DEB-1", "risk", &abcd);
        assert_eq!(risk, order_for("DEB-1", "risk", &abcd));
        let mut sorted = risk.clone();
        sorted.sort();
        assert_eq!(sorted, vec!["A", "B", "C", "D"]);
        let orders: Vec<Vec<String>> = ["risk", "value", "effort", "cost", "ops"]
            .iter()
            .map(|j| order_for("DEB-1", j, &abcd))
            .collect();
        assert!(orders.iter().any(|o| *o != orders[0]), "{orders:?}");
    }
}
