//! TLS to PostgreSQL, with libpq's `sslmode` meanings (managed servers — RDS, Cloud SQL, Neon,
//! Supabase — want at least `require`): `disable` plain; `prefer` (the default) and `require`
//! encrypted without checking the certificate (`require` refuses a server without TLS);
//! `verify-ca` the certificate chains to `sslrootcert` (or the public web roots); `verify-full`
//! that and the certificate names the host. tokio-postgres reads neither `verify-*` nor
//! `sslrootcert`, so both are taken off the URL here and the rest is its to parse.

use crate::api::percent::percent_decode;
use crate::tls::TlsError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::sync::Arc;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`, all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A URL read: the connection's config and the TLS connector its mode wants.
pub struct Target {
    pub config: tokio_postgres::Config,
    pub tls: MakeRustlsConnect,
    pub mode: Mode,
}

/// A PostgreSQL URL whose TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("sslmode={0} is not one of disable, prefer, require, verify-ca, verify-full")]
    SslMode(String),
    #[error("not a PostgreSQL URL ({0})")]
    NotUrl(#[source] tokio_postgres::Error),
    #[error(
        "sslrootcert is read only with sslmode=verify-ca or verify-full; with another mode \
         the certificate would not be checked against it"
    )]
    RootCertUnread,
    #[error("sslrootcert {0}")]
    RootCert(#[source] TlsError),
    #[error(
        "sslmode=verify-ca needs sslrootcert=/path/to/ca.pem (the CA the server's certificate \
         chains to); or use verify-full, which also checks the host name"
    )]
    VerifyCaWithoutRoot,
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("sslrootcert: cannot build the certificate verifier: {0}")]
    RootVerifier(#[source] rustls::client::VerifierBuilderError),
    #[error("cannot configure TLS: {0}")]
    Protocols(#[source] Error),
}

/// Why one connection was not made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
}

/// Reads a `postgres://` URL with its `sslmode` and `sslrootcert`.
pub fn target(url: &str) -> Result<Target, TargetError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = Mode::Prefer;
    let mut root: Option<String> = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "sslmode" => {
                mode = match v {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => return Err(TargetError::SslMode(other.to_string())),
                }
            }
            "sslrootcert" => root = Some(percent_decode(v, false)),
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let mut config: tokio_postgres::Config = url.parse().map_err(TargetError::NotUrl)?;
    config.ssl_mode(match mode {
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        _ => SslMode::Require,
    });
    if root.is_some() && !matches!(mode, Mode::VerifyCa | Mode::VerifyFull) {
        return Err(TargetError::RootCertUnread);
    }
    let listed = match &root {
        Some(path) => {
            crate::tls::read_pem(std::path::Path::new(path)).map_err(TargetError::RootCert)?
        }
        None => Vec::new(),
    };
    // libpq's rules: verify-ca needs the root file (the public roots would vouch for any
    // domain's certificate, and the name is not checked); verify-full with a root file trusts
    // that file alone, without one the public roots (and the name is checked).
    if mode == Mode::VerifyCa && listed.is_empty() {
        return Err(TargetError::VerifyCaWithoutRoot);
    }
    let client = match mode {
        Mode::VerifyFull if listed.is_empty() => crate::tls::client_config(&[])?,
        Mode::VerifyFull => with_verifier(only_roots(&listed)?)?,
        Mode::VerifyCa => with_verifier(Arc::new(ChainOnly::new(&listed)?))?,
        _ => with_verifier(Arc::new(Unchecked(provider())))?,
    };
    Ok(Target {
        config,
        tls: MakeRustlsConnect::new(client),
        mode,
    })
}

/// The WebPKI verifier (chain and name) with these certificates as its only roots.
fn only_roots(
    listed: &[CertificateDer<'static>],
) -> Result<Arc<WebPkiServerVerifier>, TargetError> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(listed.iter().cloned());
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(TargetError::RootVerifier)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn with_verifier(v: Arc<dyn ServerCertVerifier>) -> Result<rustls::ClientConfig, TargetError> {
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TargetError::Protocols)?
        .dangerous()
        .with_custom_certificate_verifier(v)
        .with_no_client_auth())
}

fn signatures(
    provider: &CryptoProvider,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    let algs = &provider.signature_verification_algorithms;
    if tls13 {
        verify_tls13_signature(message, cert, dss, algs)
    } else {
        verify_tls12_signature(message, cert, dss, algs)
    }
}

/// `prefer` / `require`: encrypted, the certificate not checked (libpq's meaning; the handshake's
/// signatures still are).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

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
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signatures(&self.0, m, c, d, false)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signatures(&self.0, m, c, d, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the name is not checked.
#[derive(Debug)]
struct ChainOnly {
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl ChainOnly {
    fn new(listed: &[CertificateDer<'static>]) -> Result<Self, TargetError> {
        let provider = provider();
        let webpki = only_roots(listed)?;
        Ok(ChainOnly { webpki, provider })
    }
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signatures(&self.provider, m, c, d, false)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        signatures(&self.provider, m, c, d, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// One connection (migrations, tests), over the URL's TLS.
pub async fn connect(
    url: &str,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), ConnectError> {
    let t = target(url)?;
    let (client, conn) = t.config.connect(t.tls).await?;
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((client, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_modes_are_read_and_taken_off_the_url() {
        let t = target("postgres://u@h/db?sslmode=verify-full&options=-c%20x%3D1").unwrap();
        assert_eq!(t.mode, Mode::VerifyFull);
        assert_eq!(t.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(target("postgres://u@h/db").unwrap().mode, Mode::Prefer);
        assert_eq!(
            target("postgres://u@h/db?sslmode=disable")
                .unwrap()
                .config
                .get_ssl_mode(),
            SslMode::Disable
        );
        let e = target("postgres://u@h/db?sslmode=verify-everything")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("verify-everything"), "{e}");
        let e = target("postgres://u@h/db?sslmode=require&sslrootcert=/x.pem")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("verify-ca or verify-full"), "{e}");
        let e = target("postgres://u@h/db?sslmode=verify-ca")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("needs sslrootcert"), "{e}");
        assert_eq!(
            percent_decode("%2Fetc%2Fca.pem%zz%", false),
            "/etc/ca.pem%zz%"
        );
        assert_eq!(percent_decode("%a\u{e9}", false), "%a\u{e9}");
        let e = target("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nope.pem")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("sslrootcert") && e.contains("/nope.pem"), "{e}");
    }
}
