//! Each seat's persona: from a `--persona` file, else the catalog, else written by the
//! moderator in the setup step.

use super::replies::PersonasReply;
use super::{ArenaSettings, PersonaSpec};
use crate::arena::{self, Persona};
use crate::debate::{MODERATOR, Phase, TurnKey, TurnStatus};
use crate::engine::{Context, EngineError};
use crate::protocol::{Common, kit};
use serde_json::Map;
use std::collections::HashSet;
use tokio::time::Instant;

/// Personas: from a `--persona` file, else the catalog, else written by the moderator.
/// A catalog perspective as a persona: its stance from its trade-offs and priorities, its
/// instructions its own or drawn from them.
fn from_catalog(p: &crate::catalog::Perspective) -> PersonaSpec {
    PersonaSpec {
        role_name: p.role_name.clone().unwrap_or_else(|| p.name.clone()),
        agent_id: None,
        stance_summary: format!("{} (priorities: {})", p.trade_offs, p.priorities.join(", ")),
        instructions: p.instructions.clone().unwrap_or_else(|| {
            format!(
                "Argue from the priorities of the {}: {}.",
                p.name,
                p.priorities.join(", ")
            )
        }),
        background_context: p.background_context.clone().unwrap_or_default(),
    }
}

/// The plain persona that stands in for a role no one wrote one for.
fn plain(role: &str) -> PersonaSpec {
    PersonaSpec {
        role_name: role.to_string(),
        agent_id: None,
        stance_summary: format!("Argue as the {role} would."),
        instructions: format!("Make the strongest case a {role} would make, with evidence."),
        background_context: String::new(),
    }
}

pub(super) async fn personas(
    ctx: &Context,
    common: &Common,
    settings: &ArenaSettings,
    topic: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<Persona>, EngineError> {
    let mut found: Vec<Option<PersonaSpec>> = settings
        .seats
        .iter()
        .map(|role| {
            settings
                .personas
                .iter()
                .find(|p| p.role_name.eq_ignore_ascii_case(role))
                .cloned()
                .or_else(|| crate::catalog::find(&common.catalog, role).map(from_catalog))
        })
        .collect();
    let missing: Vec<String> = settings
        .seats
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(role, _)| role.clone())
        .collect();
    if !missing.is_empty() {
        // moot as the moderator makes no model call, personas included: the seats it has no
        // persona for get plain ones, and the record says so.
        let by_system = settings.moderator == super::Moderator::System;
        let written = if by_system {
            notes.push(format!(
                "moot wrote plain personas for {} (with --moderator system no model writes them; give --persona files for fuller ones).",
                missing.join(", ")
            ));
            Vec::new()
        } else {
            setup_personas(ctx, common, topic, &settings.seats, &missing).await?
        };
        for (slot, role) in found.iter_mut().zip(&settings.seats) {
            if slot.is_none() {
                *slot = Some(
                    match written
                        .iter()
                        .find(|p| p.role_name.eq_ignore_ascii_case(role))
                    {
                        Some(spec) => spec.clone(),
                        None => {
                            if !by_system {
                                notes.push(format!(
                                    "The moderator wrote no persona for {role}; a plain one stands in."
                                ));
                            }
                            plain(role)
                        }
                    },
                );
            }
        }
    }
    let mut used: HashSet<String> = HashSet::new();
    Ok(found
        .into_iter()
        .flatten()
        .map(|spec| {
            let base = spec
                .agent_id
                .filter(|id| arena::is_safe_name(id))
                .unwrap_or_else(|| arena::agent_id(&spec.role_name));
            let mut id = base.clone();
            let mut n = 2;
            while !used.insert(id.clone()) {
                id = format!("{base}_{n}");
                n += 1;
            }
            Persona {
                agent_id: id,
                debate_id: ctx.debate_id.clone(),
                role_name: spec.role_name,
                stance_summary: spec.stance_summary,
                instructions: spec.instructions,
                background_context: spec.background_context,
                extra: Map::new(),
            }
        })
        .collect())
}

/// The moderator's setup step: personas for the roles given by name only.
async fn setup_personas(
    ctx: &Context,
    common: &Common,
    topic: &str,
    roles: &[String],
    missing: &[String],
) -> Result<Vec<PersonaSpec>, EngineError> {
    let prompt = format!(
        "Topic: {topic}\nThe seats: {}.\n\nWrite a persona for each of these roles: {}. A persona \
         gives the stance to take (one or two sentences), instructions on how to argue it (style, \
         key points to make and refute, sources to prefer) and background context it should know. \
         Make the seats' stances genuinely different.",
        roles.join(", "),
        missing.join(", ")
    );
    let turn = ctx
        .speak(kit::ask(
            TurnKey::new(0, Phase::Analysis, MODERATOR),
            "You are the moderator of a debate arena. You set it up; you take no side.".into(),
            prompt,
            PersonasReply {
                missing: missing.to_vec(),
            },
            kit::Limits::new(1200, Instant::now() + common.round_timeout),
        ))
        .await?;
    if turn.status == TurnStatus::Failed {
        return Err(EngineError::Provider(
            turn.note.unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    Ok(turn
        .data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.get("personas")?.clone()).ok())
        .unwrap_or_default())
}
