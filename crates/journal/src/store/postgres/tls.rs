//! How the journal reaches its server: the URL's `sslmode` read as libpq reads it, over rustls.
//! `disable` speaks plain; `allow` and `prefer` (the default) encrypt when the server offers
//! it; `require` insists on encryption; those three check no certificate, as libpq does not.
//! `verify-ca` checks the server's certificate against `sslrootcert` (a PEM file; without one,
//! the system's roots), and `verify-full` its name too. A Unix socket never uses TLS.

use super::pool::Opener;
use crate::store::StoreError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a URL's `sslmode` asks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The connection `url` names, opened with the TLS its `sslmode` asks for. The URL handed to
/// the client keeps the modes it knows (`verify-*` is `require` plus our own checks) and
/// loses `sslrootcert`, which it does not.
pub(super) fn opener(url: &str, shown: &str) -> Result<Opener, StoreError> {
    let bad = |detail: String| StoreError::Open {
        path: shown.to_string(),
        detail,
    };
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = Mode::Prefer;
    let mut root = None;
    let mut kept = Vec::new();
    let mut socket = on_socket(base);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                mode = match value {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(bad(format!(
                            "sslmode={other} is not one of disable, allow, prefer, require, \
                             verify-ca, verify-full"
                        )));
                    }
                };
            }
            "sslrootcert" => root = Some(decoded(value)),
            _ => {
                if key == "host" {
                    socket = decoded(value).starts_with('/');
                }
                kept.push(pair.to_string());
            }
        }
    }
    kept.push(
        match mode {
            Mode::Disable => "sslmode=disable",
            Mode::Prefer => "sslmode=prefer",
            _ => "sslmode=require",
        }
        .to_string(),
    );
    let client_url = format!("{base}?{}", kept.join("&"));
    let mut settings: postgres::Config = client_url.parse().map_err(|e: postgres::Error| {
        bad(format!(
            "{} (a journal URL looks like postgres://user@host/database)",
            super::described(&e)
        ))
    })?;
    if settings.get_application_name().is_none() {
        settings.application_name(&application_name());
    }
    // A socket has no name a certificate could hold (the client would refuse to start TLS
    // on it at all); the server never offers TLS there anyway.
    if socket {
        return Ok(Arc::new(move || settings.connect(postgres::NoTls)));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        Mode::Disable | Mode::Prefer | Mode::Require => Arc::new(Unchecked {
            algorithms: provider.signature_verification_algorithms,
        }),
        Mode::VerifyCa | Mode::VerifyFull => {
            let checked = checked(root.as_deref(), provider.clone()).map_err(|e| bad(e.0))?;
            if mode == Mode::VerifyCa {
                Arc::new(AnyName(checked))
            } else {
                checked
            }
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let tls = MakeRustlsConnect::new(config);
    Ok(Arc::new(move || settings.connect(tls.clone())))
}

/// How this process's connections read in the server's `pg_stat_activity` (unless the URL
/// names them): which replica, on which host, holds which backend, so an operator (or a test
/// waiting for a killed replica's last commit) can tell them apart.
fn application_name() -> String {
    format!(
        "moot {}@{}",
        std::process::id(),
        crate::store::lease::host()
    )
}

/// Whether the URL's own host (before any `?host=`) is a socket's directory.
fn on_socket(base: &str) -> bool {
    let authority = base
        .split_once("://")
        .map_or(base, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    decoded(host).starts_with('/')
}

/// A URL's percent-escapes undone (a path in `sslrootcert`).
fn decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = value
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why the certificates to check a server against cannot be had.
#[derive(Debug)]
struct NoRoots(String);

/// The verifier of `verify-full`: against the certificates in `root`, or the system's roots.
fn checked(
    root: Option<&str>,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, NoRoots> {
    let Some(root) = root else {
        return rustls_platform_verifier::Verifier::new(provider)
            .map(|v| Arc::new(v) as Arc<dyn ServerCertVerifier>)
            .map_err(|e| {
                NoRoots(format!(
                    "the system's certificate roots cannot be read: {e}"
                ))
            });
    };
    let mut roots = rustls::RootCertStore::empty();
    let certificates = CertificateDer::pem_file_iter(root)
        .map_err(|e| NoRoots(format!("sslrootcert={root} cannot be read: {e}")))?;
    for certificate in certificates {
        let certificate =
            certificate.map_err(|e| NoRoots(format!("sslrootcert={root} is not PEM: {e}")))?;
        roots
            .add(certificate)
            .map_err(|e| NoRoots(format!("sslrootcert={root} holds a bad certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(NoRoots(format!("sslrootcert={root} holds no certificate")));
    }
    rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| NoRoots(e.to_string()))
}

/// `require`'s verifier: the connection is encrypted and the handshake's signatures hold,
/// but the certificate is taken as offered (libpq's `require`).
#[derive(Debug)]
struct Unchecked {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca`'s verifier: the chain must lead to a trusted root; the name is not checked.
#[derive(Debug)]
struct AnyName(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_path_reads_as_written() {
        assert_eq!(decoded("%2Fetc%2Fmoot%20ca.pem"), "/etc/moot ca.pem");
        assert_eq!(decoded("/plain/path%zz"), "/plain/path%zz");
    }

    #[test]
    fn an_unknown_sslmode_is_refused_with_the_modes_there_are() {
        let Err(StoreError::Open { detail, .. }) = opener(
            "postgres://moot@db/moot?sslmode=strict",
            "postgres://moot@db/moot",
        ) else {
            panic!("sslmode=strict was taken");
        };
        assert!(detail.contains("sslmode=strict"), "{detail}");
        assert!(detail.contains("verify-full"), "{detail}");
        let Err(StoreError::Open { detail, .. }) = opener(
            "postgres://moot@db/moot?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            "postgres://moot@db/moot",
        ) else {
            panic!("a missing root was taken");
        };
        assert!(detail.contains("/nonexistent/ca.pem"), "{detail}");
    }
}
