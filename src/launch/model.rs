//! The embedded model: `moot model` (list, pull, remove) and pulling the default before a debate needs it.

use super::block_on;
use crate::cli::ModelCommand;
use crate::commands::{self, Failure};
use crate::llm::ProviderKind;
use crate::llm::models;
use crate::providers::{self, ProviderSpec};
use std::io::IsTerminal;

/// When a debate will run on the default embedded model and it is not here yet: pull it with
/// `--yes`, ask on a terminal, otherwise explain every way to proceed.
pub(super) fn ensure_local_model(spec: &ProviderSpec, yes: bool) -> Result<(), Failure> {
    let default = &models::DEFAULT_MODEL;
    if spec.kind != ProviderKind::Local
        || spec.model != default.name
        || models::default_model_present()
    {
        return Ok(());
    }
    let asked = !yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let consent = if yes {
        true
    } else if asked {
        // Neutral wording: this runs both when nothing else is configured and on --provider local.
        eprint!(
            "moot will use its embedded model {} ({} MB, {}), which is not in {} yet. Pull it now? [Y/n] ",
            default.name,
            default.bytes / 1_000_000,
            default.description,
            models::models_dir().display()
        );
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        matches!(answer.trim().to_lowercase().as_str(), "" | "y" | "yes")
    } else {
        false
    };
    if !consent {
        let why = if asked {
            format!(
                "not pulling {}. Pull it later with `moot model pull`",
                default.name
            )
        } else {
            format!(
                "the embedded model {} is not pulled yet and there is no terminal to ask: pull it \
                 with `moot model pull` (or run again with --yes)",
                default.name
            )
        };
        return Err(Failure::usage(format!(
            "{why}, or choose another provider:\n{}",
            providers::PROVIDER_OPTIONS
        )));
    }
    pull_default()
}

pub(super) fn pull_default() -> Result<(), Failure> {
    let default = &models::DEFAULT_MODEL;
    if let Some(path) = models::verified_default() {
        eprintln!(
            "moot: {} is already here ({})",
            default.name,
            path.display()
        );
        return Ok(());
    }
    eprintln!("moot: pulling {} ({})", default.name, default.description);
    let client = crate::llm::http_client().map_err(|e| Failure::runtime(e.to_string()))?;
    let stored =
        block_on(models::pull(default, &client))?.map_err(|e| Failure::runtime(e.to_string()))?;
    eprintln!(
        "moot: {} is ready at {}",
        stored.name,
        stored.path.display()
    );
    Ok(())
}

pub(super) fn model_command(action: ModelCommand) -> Result<i32, Failure> {
    match action {
        ModelCommand::Pull { name } => {
            if name.to_lowercase() != models::DEFAULT_MODEL.name {
                return Err(Failure::usage(format!(
                    "moot knows how to pull {} only; add any other GGUF model with `moot model add PATH|URL`",
                    models::DEFAULT_MODEL.name
                )));
            }
            pull_default()?;
        }
        ModelCommand::Add { source, name } => {
            let client = crate::llm::http_client().map_err(|e| Failure::runtime(e.to_string()))?;
            let stored = block_on(models::add(&source, name.as_deref(), &client))?
                .map_err(|e| Failure::usage(e.to_string()))?;
            println!(
                "added {} ({}); use it with --provider local --model {}",
                stored.name,
                stored.path.display(),
                stored.name
            );
        }
        ModelCommand::List { json } => commands::models(json)?,
        ModelCommand::Path { name } => {
            println!(
                "{}",
                models::locate(&name)
                    .map_err(|e| Failure::usage(e.to_string()))?
                    .display()
            );
        }
        ModelCommand::Kernels => println!("{}", kernels()),
        ModelCommand::Rm { name } => {
            let path = models::remove(&name).map_err(|e| Failure::usage(e.to_string()))?;
            println!("removed {}", path.display());
        }
    }
    Ok(0)
}

/// This CPU's kernels in a line (`q8_0 avx2, attention off`), or that this build has none.
fn kernels() -> String {
    #[cfg(feature = "local")]
    {
        crate::llm::local::worker::kernels_here()
    }
    #[cfg(not(feature = "local"))]
    {
        "this build has no embedded model".to_string()
    }
}
