//! What moot can run: `protocols`, `perspectives` (the catalog) and `model list`.

use super::{Failure, one_line, print, print_json};
use crate::catalog;
use crate::config::Config;
use crate::llm::models;

/// `moot protocols`: every registered protocol with its one-line description and flags.
pub fn protocols(json: bool) -> Result<(), Failure> {
    if json {
        let list: Vec<serde_json::Value> = crate::protocol::builtin()
            .protocols()
            .map(|p| {
                serde_json::json!({
                    "name": p.name(),
                    "description": p.description(),
                    "flags": p.flags().iter().map(|f| format!("--{}", f.name)).collect::<Vec<_>>(),
                })
            })
            .collect();
        return print_json(&list);
    }
    let mut out = String::new();
    for protocol in crate::protocol::builtin().protocols() {
        out.push_str(&format!(
            "{:<10} {}\n",
            protocol.name(),
            protocol.description()
        ));
        for flag in protocol.flags() {
            out.push_str(&format!(
                "{:<10}   --{}{}  {}\n",
                "",
                flag.name,
                flag.value.map(|v| format!(" {v}")).unwrap_or_default(),
                flag.help
            ));
        }
    }
    print(&out)
}

pub fn perspectives(config: &Config, json: bool) -> Result<(), Failure> {
    let all = catalog::catalog(&config.debate.custom_perspectives);
    if json {
        return print_json(&all);
    }
    let mut out = String::new();
    for perspective in &all {
        out.push_str(&format!(
            "{}  [{}]\n  priorities: {}\n  trade-offs: {}\n",
            one_line(&perspective.name, 200),
            perspective.source,
            one_line(&perspective.priorities.join(", "), 400),
            one_line(&perspective.trade_offs, 400)
        ));
        if !perspective.opposes.is_empty() {
            out.push_str(&format!(
                "  pulls against: {}\n",
                one_line(&perspective.opposes.join(", "), 400)
            ));
        }
    }
    out.push_str("\nAdd your own under [[debate.custom_perspectives]] in config.toml.\n");
    print(&out)
}

/// `moot model list`: the models on this machine.
pub fn models(json: bool) -> Result<(), Failure> {
    let stored = models::list().map_err(|e| Failure::runtime(e.to_string()))?;
    if json {
        let rows: Vec<serde_json::Value> = stored
            .iter()
            .map(|model| {
                serde_json::json!({
                    "name": model.name,
                    "path": model.path,
                    "bytes": model.manifest.as_ref().map(|m| m.bytes),
                    "sha256": model.manifest.as_ref().map(|m| &m.sha256),
                    "architecture": model.manifest.as_ref().map(|m| &m.architecture),
                    "source": model.manifest.as_ref().map(|m| &m.source),
                    "default": model.name == models::DEFAULT_MODEL.name,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    if stored.is_empty() {
        println!(
            "no models in {}: `moot model pull` fetches the default ({}), `moot model add PATH|URL` adds a GGUF file",
            models::models_dir().display(),
            models::DEFAULT_MODEL.name
        );
        return Ok(());
    }
    println!(
        "{:<28} {:>9}  {:<10} {:<14} SOURCE",
        "NAME", "SIZE", "ARCH", "SHA-256"
    );
    for model in &stored {
        let (size, architecture, digest, source) = match &model.manifest {
            Some(m) => (
                format!("{:.1} MB", m.bytes as f64 / 1_000_000.0),
                m.architecture.clone(),
                m.sha256.chars().take(12).collect::<String>(),
                m.source.clone(),
            ),
            None => (
                "?".into(),
                "?".into(),
                "unverified".into(),
                "copied by hand".into(),
            ),
        };
        let marker = if model.name == models::DEFAULT_MODEL.name {
            " (default)"
        } else {
            ""
        };
        println!(
            "{:<28} {size:>9}  {architecture:<10} {digest:<14} {source}",
            format!("{}{marker}", model.name)
        );
    }
    Ok(())
}
