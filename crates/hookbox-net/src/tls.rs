//! The rustls configuration every HTTPS connection uses: the ring provider only, the platform's
//! root certificates plus configured extra roots.

use std::sync::{Arc, Mutex, PoisonError};

use rustls::ClientConfig;
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls_platform_verifier::Verifier;

use crate::NetError;

/// The certificate verifiers built so far in this process, by the extra roots they trust.
/// Building one reads and parses every file of the system's CA directory (a millisecond or
/// more), and a runtime builds several clients (models, hooks, the proxy's upstreams) with the
/// same roots; a process that started once keeps the roots it started with.
static VERIFIERS: Mutex<Vec<BuiltVerifier>> = Mutex::new(Vec::new());

/// A verifier and the extra roots (PEM documents) it was built with.
type BuiltVerifier = (Vec<Vec<u8>>, Arc<Verifier>);

/// Builds the TLS client configuration, offering HTTP/2 and HTTP/1.1 via ALPN.
pub(crate) fn client_config(extra_roots_pem: &[Vec<u8>]) -> Result<ClientConfig, NetError> {
    let provider = Arc::new(ring::default_provider());
    let verifier = verifier(extra_roots_pem, &provider)?;
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| NetError::Build(format!("TLS protocol versions: {error}")))?
        .dangerous() // Not dangerous: the platform verifier checks chains and names fully.
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform verifier that also trusts `extra_roots_pem`, built once per process.
fn verifier(
    extra_roots_pem: &[Vec<u8>],
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<Verifier>, NetError> {
    let mut built = VERIFIERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, verifier)) = built.iter().find(|(roots, _)| roots == extra_roots_pem) {
        return Ok(Arc::clone(verifier));
    }
    let verifier = Arc::new(
        Verifier::new_with_extra_roots(extra_roots(extra_roots_pem)?, Arc::clone(provider))
            .map_err(|error| {
                NetError::Build(format!(
                    "could not load the TLS root certificates ({error}); install the system CA \
                     bundle or configure extra root certificates"
                ))
            })?,
    );
    built.push((extra_roots_pem.to_vec(), Arc::clone(&verifier)));
    Ok(verifier)
}

/// Parses every configured PEM document; each must hold at least one certificate.
fn extra_roots(documents: &[Vec<u8>]) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let mut roots = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let position = index + 1;
        let before = roots.len();
        for certificate in CertificateDer::pem_slice_iter(document) {
            roots.push(certificate.map_err(|error| {
                NetError::Build(format!(
                    "extra root certificate #{position} is not valid PEM: {error}"
                ))
            })?);
        }
        if roots.len() == before {
            return Err(NetError::Build(format!(
                "extra root certificate #{position} contains no PEM `CERTIFICATE` block"
            )));
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::extra_roots;
    use crate::NetError;

    #[test]
    fn a_document_without_certificates_is_refused() {
        let error = extra_roots(&[b"not a certificate".to_vec()]).unwrap_err();
        assert!(matches!(&error, NetError::Build(message) if message.contains("#1")));
    }

    #[test]
    fn broken_pem_is_refused() {
        let broken = b"-----BEGIN CERTIFICATE-----\nnot base64!\n".to_vec();
        assert!(matches!(extra_roots(&[broken]), Err(NetError::Build(_))));
    }
}
