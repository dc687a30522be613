//! The HTTP client every provider and model download of a run shares: rustls with ring and the
//! platform's roots, bounded connect time, moot's user agent.

use std::time::Duration;

/// The TLS and HTTP stack could not be set up (a broken platform certificate store, say).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up HTTP: {0}")]
pub struct HttpSetupError(#[from] reqwest::Error);

/// An HTTP client for every provider of a run.
pub fn http_client() -> Result<reqwest::Client, HttpSetupError> {
    // Installing twice is harmless; the first provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("moot/", env!("CARGO_PKG_VERSION")))
        .build()?)
}
