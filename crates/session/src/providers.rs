//! Which provider to use (flags → config → environment) and building it. A resolved
//! `ProviderSpec` carries no secret: keys are read from the environment when a provider is built.

use crate::config::{Config, RetryConfig};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::embedded::LocalSettings;
use crate::llm::endpoint::Endpoint;
use crate::llm::models::{self, ModelError};
use crate::llm::openai::OpenAiProvider;
use crate::llm::scripted::{ScriptError, ScriptedProvider};
use crate::llm::{CapabilityCache, Provider, ProviderKind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A provider as chosen, without secrets; stored in the debate's config snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderSpec {
    pub kind: ProviderKind,
    /// The config profile or preset it came from (ollama, openai, a [providers] key).
    pub name: String,
    pub base_url: Option<String>,
    pub model: String,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub script: Option<PathBuf>,
    pub temperature: Option<f32>,
    /// Settings of the embedded model, for `kind = "local"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSettings>,
    /// What serves when this keeps failing past its retries (`fallback` in its profile), in
    /// order; their own fallbacks are not followed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ProviderSpec>,
}

impl ProviderSpec {
    /// A scripted provider replaying `script` (tests, benchmarks, the recorded demo).
    pub fn scripted(script: impl Into<PathBuf>) -> ProviderSpec {
        ProviderSpec {
            script: Some(script.into()),
            ..preset_spec(ProviderKind::Scripted, "scripted", None, "script")
        }
    }

    /// An OpenAI-compatible server at `base_url` (…/v1), model discovered from it.
    pub fn openai(base_url: &str) -> ProviderSpec {
        preset_spec(
            ProviderKind::Openai,
            "openai",
            Some(base_url.to_string()),
            "",
        )
    }
}

fn preset_spec(
    kind: ProviderKind,
    name: &str,
    base_url: Option<String>,
    model: &str,
) -> ProviderSpec {
    ProviderSpec {
        kind,
        name: name.to_string(),
        base_url,
        model: model.to_string(),
        api_key_env: None,
        script: None,
        temperature: None,
        local: None,
        fallbacks: Vec::new(),
    }
}

/// Why no provider could be chosen or built; each says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("no LLM provider is configured. Use one of:\n{PROVIDER_OPTIONS}")]
    NoneConfigured,
    #[error(
        "unknown provider {0:?}: use openai, anthropic, ollama, local, scripted or a [providers.NAME] table from config.toml"
    )]
    Unknown(String),
    #[error("the scripted provider needs --script FILE (see assets/demo/)")]
    NoScript,
    #[error(
        "OpenAI needs an API key: set OPENAI_API_KEY (or point OPENAI_BASE_URL / --base-url at a local server)"
    )]
    OpenAiKey,
    #[error("Anthropic needs an API key: set ANTHROPIC_API_KEY")]
    AnthropicKey,
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Http(#[from] crate::llm::HttpSetupError),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The embedded model would not open (its opener's own error, said as it is).
    #[error(transparent)]
    Local(Box<dyn std::error::Error + Send + Sync>),
    #[error(
        "this moot was built without the embedded model (cargo feature `local`): rebuild with default features, or use a remote provider"
    )]
    NoLocalBuild,
}

/// Provider choices as asked (by the command line, the form, a request).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderFlags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub script: Option<PathBuf>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Every way to give moot a model, one per line.
pub const PROVIDER_OPTIONS: &str = "  \
    ANTHROPIC_API_KEY=…                    Anthropic\n  \
    OPENAI_API_KEY=…                       OpenAI (OPENAI_BASE_URL for any compatible server)\n  \
    OPENAI_BASE_URL=http://host:port/v1    vLLM, llama.cpp server, LM Studio, OpenRouter\n  \
    OLLAMA_HOST=127.0.0.1:11434            Ollama (found by itself when it runs on this machine)\n  \
    moot model pull, or --yes              the embedded model: offline, no key (--provider local)\n  \
    --provider scripted --script FILE      replay a recorded script (assets/demo/)\n  \
    or a [providers.NAME] table in config.toml with provider = \"NAME\"";

/// Where Ollama is expected: `OLLAMA_HOST` (scheme and port optional), else its default port.
pub fn ollama_host() -> String {
    let host = env("OLLAMA_HOST").unwrap_or_else(|| "127.0.0.1:11434".into());
    let host = host
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let host = host.replace("0.0.0.0", "127.0.0.1");
    if host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    {
        host
    } else {
        format!("{host}:11434")
    }
}

/// Whether an Ollama server answers at `host` (host:port) within half a second: a plain
/// `GET /api/version`, so that an unconfigured run can use one that is already there.
pub fn ollama_answers(host: &str) -> bool {
    use std::io::{Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    let Ok(addresses) = host.to_socket_addrs() else {
        return false;
    };
    let limit = Duration::from_millis(500);
    for address in addresses {
        let Ok(mut stream) = TcpStream::connect_timeout(&address, limit) else {
            continue;
        };
        let _ = stream.set_read_timeout(Some(limit));
        let _ = stream.set_write_timeout(Some(limit));
        let request = format!("GET /api/version HTTP/1.0\r\nHost: {host}\r\n\r\n");
        if stream.write_all(request.as_bytes()).is_err() {
            continue;
        }
        let mut reply = Vec::new();
        let _ = stream.take(4096).read_to_end(&mut reply);
        let reply = String::from_utf8_lossy(&reply);
        if reply.starts_with("HTTP/1.") && reply.contains(" 200 ") && reply.contains("version") {
            return true;
        }
    }
    false
}

/// Resolves the provider: flags, then config, then the environment (Anthropic, OpenAI, an
/// Ollama that answers), then the embedded model.
pub fn resolve(flags: &ProviderFlags, config: &Config) -> Result<ProviderSpec, ProviderError> {
    let chosen = settled_choice(flags, config)
        .or_else(|| {
            if ollama_answers(&ollama_host()) {
                Some("ollama".into())
            } else if cfg!(feature = "embedded") {
                Some("local".into())
            } else {
                None
            }
        })
        .ok_or(ProviderError::NoneConfigured)?;
    let mut spec = named_spec(&chosen, config)?;
    if let Some(model) = &flags.model {
        spec.model = model.clone();
    }
    if let Some(base_url) = &flags.base_url {
        spec.base_url = Some(base_url.clone());
    }
    if let Some(script) = &flags.script {
        spec.script = Some(script.clone());
    }
    if spec.kind == ProviderKind::Scripted && spec.script.is_none() {
        return Err(ProviderError::NoScript);
    }
    Ok(spec)
}

/// The provider the resolution order settles on without asking the network: flags, config,
/// then the environment's keys; `None` when an Ollama that answers or the embedded model
/// would decide.
pub fn settled_choice(flags: &ProviderFlags, config: &Config) -> Option<String> {
    flags
        .provider
        .clone()
        .or_else(|| config.provider.clone())
        .or_else(|| {
            if flags.script.is_some() {
                Some("scripted".into())
            } else if env("ANTHROPIC_API_KEY").is_some() {
                Some("anthropic".into())
            } else if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() {
                Some("openai".into())
            } else {
                None
            }
        })
}

/// A spec for a config profile name or a preset (openai, anthropic, ollama, scripted).
pub fn named_spec(name: &str, config: &Config) -> Result<ProviderSpec, ProviderError> {
    let mut spec = profile_spec(name, config)?;
    if let Some(profile) = config.providers.get(name) {
        for fallback in &profile.fallback {
            if fallback == name {
                continue;
            }
            spec.fallbacks.push(profile_spec(fallback, config)?);
        }
    }
    Ok(spec)
}

/// A profile's (or kind's) spec, its fallbacks aside.
fn profile_spec(name: &str, config: &Config) -> Result<ProviderSpec, ProviderError> {
    if let Some(profile) = config.providers.get(name) {
        let preset = preset(profile.kind.into())?;
        return Ok(ProviderSpec {
            kind: preset.kind,
            name: name.to_string(),
            base_url: profile.base_url.clone().or(preset.base_url),
            model: profile.model.clone().unwrap_or(preset.model),
            api_key_env: profile.api_key_env.clone().or(preset.api_key_env),
            script: profile.script.clone(),
            temperature: profile.temperature,
            local: (profile.kind == ProviderKind::Local).then(|| profile.local.clone()),
            fallbacks: Vec::new(),
        });
    }
    preset(name)
}

fn preset(name: &str) -> Result<ProviderSpec, ProviderError> {
    let spec = match name {
        "openai" => ProviderSpec {
            kind: ProviderKind::Openai,
            name: "openai".into(),
            base_url: Some(
                env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into()),
            ),
            // Empty: asked of the server (`GET /models`); a local server lists the one it serves.
            model: env("OPENAI_MODEL").unwrap_or_else(|| {
                if env("OPENAI_BASE_URL").is_some() {
                    String::new()
                } else {
                    "gpt-4o-mini".into()
                }
            }),
            api_key_env: Some("OPENAI_API_KEY".into()),
            script: None,
            temperature: None,
            local: None,
            fallbacks: Vec::new(),
        },
        "ollama" => {
            let host = format!("http://{}", ollama_host());
            ProviderSpec {
                kind: ProviderKind::Openai,
                name: "ollama".into(),
                base_url: Some(format!("{}/v1", host.trim_end_matches('/'))),
                model: env("OLLAMA_MODEL").unwrap_or_default(),
                api_key_env: None,
                script: None,
                temperature: None,
                local: None,
                fallbacks: Vec::new(),
            }
        }
        "anthropic" => ProviderSpec {
            kind: ProviderKind::Anthropic,
            name: "anthropic".into(),
            base_url: Some(
                env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".into()),
            ),
            model: env("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into()),
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
            script: None,
            temperature: None,
            local: None,
            fallbacks: Vec::new(),
        },
        "scripted" => preset_spec(ProviderKind::Scripted, "scripted", None, "script"),
        "local" => ProviderSpec {
            local: Some(LocalSettings::default()),
            ..preset_spec(
                ProviderKind::Local,
                "local",
                None,
                models::DEFAULT_MODEL.name,
            )
        },
        other => return Err(ProviderError::Unknown(other.to_string())),
    };
    Ok(spec)
}

/// Warnings about keys found while building providers, for the debate to announce.
static WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn warn(warning: String) {
    let mut warnings = WARNINGS.lock().unwrap_or_else(|e| e.into_inner());
    if !warnings.contains(&warning) {
        warnings.push(warning);
    }
}

/// The warnings about keys gathered so far (each told once).
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The password in a URL's `user:password@`, if it has one.
fn url_password(url: &str) -> Option<&str> {
    let authority = url.split("://").nth(1)?.split(['/', '?', '#']).next()?;
    let credentials = &authority[..authority.rfind('@')?];
    credentials.split_once(':').map(|(_, password)| password)
}

/// Opens the embedded model a spec names: handed down by the program that runs debates (the
/// binary's opener starts it in a worker process), so that choosing and building providers
/// never names the embedded engine.
pub type OpenEmbedded = fn(
    model: &std::path::Path,
    settings: &LocalSettings,
) -> Result<Arc<dyn Provider>, Box<dyn std::error::Error + Send + Sync>>;

/// What one debate's providers are built with: the HTTP client and the learned request shapes
/// they share, the retry policy, and the embedded model's opener if this program has one.
#[derive(Clone)]
pub struct Builder {
    pub client: crate::llm::LazyClient,
    pub capabilities: Arc<CapabilityCache>,
    pub retry: RetryConfig,
    pub embedded: Option<OpenEmbedded>,
}

impl Builder {
    /// Builds a provider from a spec, reading its key from the environment.
    pub fn build(&self, spec: &ProviderSpec) -> Result<Arc<dyn Provider>, ProviderError> {
        build(spec, self)
    }
}

fn build(spec: &ProviderSpec, with: &Builder) -> Result<Arc<dyn Provider>, ProviderError> {
    let (client, capabilities, retry) = (&with.client, &with.capabilities, &with.retry);
    if !spec.fallbacks.is_empty() {
        let primary = ProviderSpec {
            fallbacks: Vec::new(),
            ..spec.clone()
        };
        let mut chain = vec![(spec.name.clone(), build(&primary, with)?)];
        for fallback in &spec.fallbacks {
            chain.push((fallback.name.clone(), build(fallback, with)?));
        }
        // The turn's last attempt goes to the next provider.
        let limit = retry.max_attempts.saturating_sub(1);
        return Ok(Arc::new(crate::llm::cascade::Cascade::new(chain, limit)));
    }
    let idle = Duration::from_secs(retry.idle_timeout_seconds);
    let key = spec.api_key_env.as_deref().and_then(env);
    if let Some(key) = &key
        && crate::sanitize::register_secret(key)
    {
        warn(format!(
            "the key in {} is only {} characters long: moot redacts it wherever it stands as a \
             word, but a key that short is easy to guess; use the one your provider issued",
            spec.api_key_env.as_deref().unwrap_or("the key variable"),
            key.trim().chars().count()
        ));
    }
    if let Some(password) = spec.base_url.as_deref().and_then(url_password) {
        crate::sanitize::register_secret(password);
    }
    let endpoint = |base_url: String| -> Result<Endpoint, ProviderError> {
        let (key, model) = (key.clone(), &spec.model);
        Ok(Endpoint::new(
            client.get()?,
            &base_url,
            key,
            model,
            capabilities.clone(),
            idle,
        ))
    };
    match spec.kind {
        ProviderKind::Openai => {
            let base_url = OPENAI
                .url(spec, key.as_deref())
                .ok_or(ProviderError::OpenAiKey)?;
            let hint = if spec.name == "ollama" {
                "start Ollama (`ollama serve`) or set OLLAMA_HOST to where it runs".to_string()
            } else {
                "set OPENAI_BASE_URL (or --base-url) to a running OpenAI-compatible server, OLLAMA_HOST for Ollama, or OPENAI_API_KEY for OpenAI".to_string()
            };
            Ok(Arc::new(OpenAiProvider::new(endpoint(base_url)?, hint)))
        }
        ProviderKind::Anthropic => {
            let base_url = ANTHROPIC
                .url(spec, key.as_deref())
                .ok_or(ProviderError::AnthropicKey)?;
            Ok(Arc::new(AnthropicProvider::new(endpoint(base_url)?)))
        }
        ProviderKind::Scripted => {
            let path = spec.script.as_ref().ok_or(ProviderError::NoScript)?;
            Ok(Arc::new(ScriptedProvider::load(path)?))
        }
        ProviderKind::Local => {
            let open = with.embedded.ok_or(ProviderError::NoLocalBuild)?;
            let path = models::locate(&spec.model)?;
            open(&path, &spec.local.clone().unwrap_or_default()).map_err(ProviderError::Local)
        }
    }
}

/// A hosted service a provider kind defaults to: its API's base URL, and its host.
struct Hosted {
    url: &'static str,
    host: &'static str,
}

const OPENAI: Hosted = Hosted {
    url: "https://api.openai.com/v1",
    host: "api.openai.com",
};

const ANTHROPIC: Hosted = Hosted {
    url: "https://api.anthropic.com",
    host: "api.anthropic.com",
};

impl Hosted {
    /// The spec's base URL, or this service's; None when that URL is this service and there
    /// is no key, which it would refuse.
    fn url(&self, spec: &ProviderSpec, key: Option<&str>) -> Option<String> {
        let base_url = spec.base_url.clone().unwrap_or_else(|| self.url.into());
        (key.is_some() || !base_url.contains(self.host)).then_some(base_url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted run never builds the HTTP client (reading the platform's certificates);
    /// the first provider that speaks HTTP builds it, and later ones share it.
    #[test]
    fn the_http_client_is_built_by_the_first_provider_that_needs_it() {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/demo/redis-vs-postgres.json"
        );
        let builder = Builder {
            client: crate::llm::LazyClient::default(),
            capabilities: Arc::new(CapabilityCache::default()),
            retry: RetryConfig::default(),
            embedded: None,
        };
        builder.build(&ProviderSpec::scripted(script)).unwrap();
        assert!(!builder.client.is_built());
        builder
            .build(&ProviderSpec::openai("http://127.0.0.1:9/v1"))
            .unwrap();
        assert!(builder.client.is_built());
    }

    #[test]
    fn a_local_profile_carries_its_settings_and_no_secret() {
        let config = Config::parse(
            "[providers.qwen]\nkind = \"local\"\nmodel = \"qwen2.5-3b\"\ncontext = 2048\nthreads = 1\ntop_k = 20\nchat_template = \"chatml\"\n",
            std::path::Path::new("config.toml"),
        )
        .unwrap();
        let spec = named_spec("qwen", &config).unwrap();
        assert_eq!(spec.kind, ProviderKind::Local);
        assert_eq!(spec.model, "qwen2.5-3b");
        assert_eq!(spec.api_key_env, None);
        let local = spec.local.unwrap();
        assert_eq!(
            (local.context, local.threads, local.top_k),
            (Some(2048), Some(1), Some(20))
        );
        assert_eq!(local.chat_template.as_deref(), Some("chatml"));
        let preset = named_spec("local", &Config::default()).unwrap();
        assert_eq!(preset.model, models::DEFAULT_MODEL.name);
    }

    #[test]
    fn the_ollama_probe_needs_an_answer_that_looks_like_ollama() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            for body in ["{\"version\":\"0.6.2\"}", "<html>hello</html>"] {
                let (mut socket, _) = listener.accept().unwrap();
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(reply.as_bytes()).unwrap();
            }
        });
        assert!(ollama_answers(&host));
        assert!(!ollama_answers(&host), "any web server is not Ollama");
        server.join().unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_host = closed.local_addr().unwrap().to_string();
        drop(closed);
        assert!(!ollama_answers(&closed_host));
    }
}
