//! The HTTPS identity of [`TestHttpServer::start_https`](crate::TestHttpServer::start_https): a fixed
//! test CA and a server certificate for `localhost` and `127.0.0.1` that it signed (ECDSA P-256,
//! made once with openssl, valid until 2126; the CA's key was discarded). Test-only: never trust
//! this CA outside tests.

use std::io;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// PEM of the CA that signed the HTTPS test server's certificate. Give it to a client as an extra
/// trusted root to reach [`TestHttpServer::start_https`](crate::TestHttpServer::start_https).
pub const TEST_CA_PEM: &[u8] = include_bytes!("../fixtures/tls/ca.pem");

const SERVER_CERT_PEM: &[u8] = include_bytes!("../fixtures/tls/server.pem");
const SERVER_KEY_PEM: &[u8] = include_bytes!("../fixtures/tls/server.key");

/// A TLS acceptor (ring provider, HTTP/1.1 via ALPN) presenting the test server certificate.
pub(crate) fn acceptor() -> io::Result<TlsAcceptor> {
    let certificates = CertificateDer::pem_slice_iter(SERVER_CERT_PEM)
        .collect::<Result<Vec<_>, _>>()
        .map_err(io::Error::other)?;
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY_PEM).map_err(io::Error::other)?;
    acceptor_for(certificates, key)
}

/// A throwaway CA made at run time and a server certificate it signed for chosen names, for
/// HTTPS test servers under names other than `localhost` (the fixed test CA's key is gone).
pub struct TestCertificates {
    ca_pem: String,
    acceptor: TlsAcceptor,
}

impl TestCertificates {
    /// A new CA and a server certificate for `names` (DNS names or IP literals).
    pub fn for_names(names: &[&str]) -> io::Result<Self> {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let failed = |error: rcgen::Error| io::Error::other(error.to_string());
        let ca_key = KeyPair::generate().map_err(failed)?;
        let mut ca_params = CertificateParams::default();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "hookbox test CA (run time)");
        let ca = ca_params.self_signed(&ca_key).map_err(failed)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().map_err(failed)?;
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let params = CertificateParams::new(names).map_err(failed)?;
        let certificate = params.signed_by(&key, &issuer).map_err(failed)?;
        let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
            .map_err(io::Error::other)?;
        Ok(Self {
            ca_pem: ca.pem(),
            acceptor: acceptor_for(vec![certificate.der().clone()], key)?,
        })
    }

    /// The CA's certificate (PEM), for clients to trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }
}

/// A TLS acceptor (ring provider, HTTP/1.1 via ALPN) presenting `certificates` and `key`.
fn acceptor_for(
    certificates: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> io::Result<TlsAcceptor> {
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(io::Error::other)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
