//! TLS to servers an operator names (signal deliveries, `[[notify]]` destinations, PostgreSQL):
//! the public web roots, plus the certificates the operator listed (`webhook_ca_file`, a
//! destination's `ca_file`, `sslrootcert`).
//!
//! A listed certificate is trusted as a root (a local CA signing the receiver's certificate) and
//! also as the receiver's own certificate when the receiver presents exactly it. The second case
//! is the common local setup — `openssl req -x509 ... -subj /CN=localhost` makes one self-signed
//! certificate that OpenSSL marks as a CA — which WebPKI refuses as an end entity
//! (`CaUsedAsEndEntity`). The operator vouched for those exact bytes, so a byte-equal certificate
//! is accepted if it is within its validity period and names the host; the handshake signature
//! is still verified with its key. Anything else goes through the WebPKI verifier unchanged.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_name};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the operator's certificates could not be used; a file's error names the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a PEM certificate bundle: {error:?}", .path.display())]
    NotPem {
        path: PathBuf,
        error: rustls::pki_types::pem::Error,
    },
    #[error("{}: no PEM certificate in it", .0.display())]
    NoCertificate(PathBuf),
    #[error("cannot build the certificate verifier: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    #[error("cannot configure TLS: {0}")]
    Protocols(#[from] Error),
}

/// The certificates of a PEM file (a bundle is fine); an error names the file.
pub fn read_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let pem = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::NotPem {
            path: path.to_path_buf(),
            error,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(path.to_path_buf()));
    }
    Ok(certs)
}

/// The client configuration deliveries use: web roots and `listed` as roots, and `listed`
/// certificates accepted as the receiver's own.
pub fn client_config(listed: &[CertificateDer<'static>]) -> Result<rustls::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    // A certificate that cannot be a root (say, a leaf with a non-CA key usage) may still be
    // pinned below; only a file with no usable certificate at all is refused earlier.
    roots.add_parsable_certificates(listed.iter().cloned());
    let webpki =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()?;
    let verifier = ListedOrWebPki {
        listed: listed.to_vec(),
        webpki,
        provider: provider.clone(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(config)
}

#[derive(Debug)]
struct ListedOrWebPki {
    listed: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ListedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let refused = match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(e) => e,
        };
        if !self
            .listed
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            return Err(refused);
        }
        check_validity(end_entity, now)?;
        verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn check_validity(cert: &CertificateDer<'_>, now: UnixTime) -> Result<(), Error> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let now = now.as_secs() as i64;
    let validity = parsed.validity();
    if now < validity.not_before.timestamp() {
        return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
    }
    if now > validity.not_after.timestamp() {
        return Err(Error::InvalidCertificate(CertificateError::Expired));
    }
    Ok(())
}
