//! The HTTP client every provider and model download of a run shares: rustls with ring and the
//! platform's roots, bounded connect time, moot's user agent.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The TLS and HTTP stack could not be set up (a broken platform certificate store, say).
#[derive(Debug, thiserror::Error)]
pub enum HttpSetupError {
    #[error("cannot set up HTTP: {0}")]
    Client(#[from] reqwest::Error),
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] rustls::Error),
}

/// The TLS set-up every client of the process shares, as reqwest would build it (ring, TLS 1.2
/// and 1.3, the platform's verifier, h2 then http/1.1): built once, because building it reads
/// and parses the system's root certificates, a fifth of `moot serve`'s CPU when each debate
/// built its own.
fn tls() -> Result<rustls::ClientConfig, HttpSetupError> {
    static SHARED: OnceLock<Result<rustls::ClientConfig, rustls::Error>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let verifier = rustls_platform_verifier::Verifier::new(provider.clone())?;
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Ok(config)
        })
        .clone()
        .map_err(HttpSetupError::Tls)
}

/// An HTTP client for every provider of a run. Clients are made per debate rather than shared
/// by the process, because a pooled connection belongs to the runtime that opened it.
pub fn http_client() -> Result<reqwest::Client, HttpSetupError> {
    // Installing twice is harmless; the first provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls()?)
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("moot/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

/// The body of `response`, at most `cap` bytes of it: reading stops there, and the rest is
/// never taken from the connection. Returns the bytes and whether the body went on past the
/// cap. Every body moot reads whole goes through here (a reply streams through its own cap).
pub async fn body_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A run's HTTP client, built the first time a provider asks for one: a debate on the embedded
/// model or a script never reads the platform's certificates. Clones share the one client.
#[derive(Clone, Default)]
pub struct LazyClient(Arc<OnceLock<reqwest::Client>>);

impl LazyClient {
    pub fn get(&self) -> Result<reqwest::Client, HttpSetupError> {
        if let Some(client) = self.0.get() {
            return Ok(client.clone());
        }
        let client = http_client()?;
        Ok(self.0.get_or_init(|| client).clone())
    }

    /// Whether a client has been built yet.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn is_built(&self) -> bool {
        self.0.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared TLS set-up is the one reqwest takes as its own (an unrecognised one would
    /// fail every https request), and it offers HTTP/2 first.
    #[test]
    fn clients_share_one_tls_set_up_that_reqwest_accepts() {
        let config = tls().unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(http_client().is_ok());
        let unknown = reqwest::Client::builder()
            .tls_backend_preconfigured(String::from("not a TLS config"))
            .build();
        assert!(
            unknown.is_err(),
            "reqwest refuses a TLS set-up it does not know"
        );
    }
}
