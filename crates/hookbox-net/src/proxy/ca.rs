//! The per-environment certificate authority the egress proxy terminates intercepted TLS with.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, date_time_ymd,
};
use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::NetError;

/// How many leaf certificates one CA keeps; the oldest is dropped (and re-issued when needed).
const LEAF_CACHE_CAPACITY: usize = 256;

/// A per-environment certificate authority (ECDSA P-256, made with rcgen on ring), and the leaf
/// certificates it issued for intercepted hosts.
///
/// Only the **certificate** leaves this value ([`certificate_pem`](Self::certificate_pem)), to be
/// installed in the sandbox's trust store and named by `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`,
/// `CURL_CA_BUNDLE`, `NODE_EXTRA_CA_CERTS`, `GIT_SSL_CAINFO` and `PIP_CERT`. The private key is
/// generated in memory and never exported: there is no accessor, no serialization, and `Debug`
/// shows neither the key nor the certificate. It lives as long as the value (one environment);
/// the CA is limited to issuing end-entity certificates (path length 0).
pub struct ProxyCa {
    certificate_pem: String,
    issuer: Issuer<'static, KeyPair>,
    leaves: Mutex<LeafCache>,
}

/// Issued leaves by host, oldest first for eviction.
#[derive(Default)]
struct LeafCache {
    by_host: HashMap<String, Arc<CertifiedKey>>,
    order: VecDeque<String>,
}

impl ProxyCa {
    /// Generates a new CA whose subject names `label` (an environment id, for operators reading
    /// the sandbox's trust store). Valid from the start of last year for ten years.
    pub fn generate(label: &str) -> Result<Self, NetError> {
        let failed = |error: rcgen::Error| NetError::Build(format!("proxy CA: {error}"));
        let key = KeyPair::generate().map_err(failed)?;
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        name.push(DnType::OrganizationName, "hookbox");
        name.push(
            DnType::CommonName,
            format!("hookbox egress proxy CA {label}"),
        );
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let year = current_year();
        params.not_before = date_time_ymd(year - 1, 1, 1);
        params.not_after = date_time_ymd(year + 10, 1, 1);
        let certificate = params.self_signed(&key).map_err(failed)?;
        Ok(Self {
            certificate_pem: certificate.pem(),
            issuer: Issuer::new(params, key),
            leaves: Mutex::new(LeafCache::default()),
        })
    }

    /// The CA certificate (PEM), for the sandbox's trust store.
    pub fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// A TLS server configuration presenting this CA's leaf for `host` (ring, HTTP/1.1 only):
    /// what the proxy shows a sandbox whose TLS it intercepts, and what a local receiver trusted
    /// through this CA can serve.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, NetError> {
        let leaf = self.leaf(host)?;
        let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| NetError::Build(format!("TLS protocol versions: {error}")))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Leaf(leaf)));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The leaf certificate and key for `host` (a canonical DNS name), issued on first use and
    /// cached.
    pub(crate) fn leaf(&self, host: &str) -> Result<Arc<CertifiedKey>, NetError> {
        if let Some(leaf) = self.cache().by_host.get(host) {
            return Ok(Arc::clone(leaf));
        }
        let leaf = Arc::new(self.issue(host)?);
        let mut cache = self.cache();
        if !cache.by_host.contains_key(host) {
            while cache.order.len() >= LEAF_CACHE_CAPACITY {
                if let Some(oldest) = cache.order.pop_front() {
                    cache.by_host.remove(&oldest);
                }
            }
            cache.order.push_back(host.to_owned());
            cache.by_host.insert(host.to_owned(), Arc::clone(&leaf));
        }
        Ok(leaf)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LeafCache> {
        self.leaves.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn issue(&self, host: &str) -> Result<CertifiedKey, NetError> {
        let failed = |error: rcgen::Error| {
            NetError::Build(format!("leaf certificate for `{host}`: {error}"))
        };
        let key = KeyPair::generate().map_err(failed)?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(failed)?;
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, host);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let year = current_year();
        params.not_before = date_time_ymd(year - 1, 1, 1);
        params.not_after = date_time_ymd(year + 1, 12, 31);
        let certificate = params.signed_by(&key, &self.issuer).map_err(failed)?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signing_key = ring::default_provider()
            .key_provider
            .load_private_key(der)
            .map_err(|error| NetError::Build(format!("leaf key for `{host}`: {error}")))?;
        let chain: Vec<CertificateDer<'static>> = vec![certificate.der().clone()];
        Ok(CertifiedKey::new(chain, signing_key))
    }

    #[cfg(test)]
    fn cached_hosts(&self) -> usize {
        self.cache().by_host.len()
    }
}

impl fmt::Debug for ProxyCa {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ProxyCa")
            .field("cached_leaves", &self.cache().by_host.len())
            .finish_non_exhaustive()
    }
}

/// Presents one leaf certificate (callers check the SNI before the handshake goes on).
#[derive(Debug)]
struct Leaf(Arc<CertifiedKey>);

impl ResolvesServerCert for Leaf {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

/// The current UTC year (close enough for validity bounds a year either side).
fn current_year() -> i32 {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let years = seconds / 31_556_952;
    1970 + i32::try_from(years).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{LEAF_CACHE_CAPACITY, ProxyCa};

    #[test]
    fn debug_shows_neither_key_nor_certificate() {
        let ca = ProxyCa::generate("env-1").unwrap();
        let debug = format!("{ca:?}");
        assert!(!debug.contains("BEGIN"), "{debug}");
        assert!(!debug.contains("env-1"), "{debug}");
        assert!(
            ca.certificate_pem()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        assert!(!ca.certificate_pem().contains("PRIVATE KEY"));
    }

    #[test]
    fn leaves_are_cached_and_the_cache_is_bounded() {
        let ca = ProxyCa::generate("env").unwrap();
        let first = ca.leaf("a.example.com").unwrap();
        assert!(Arc::ptr_eq(&first, &ca.leaf("a.example.com").unwrap()));
        for index in 0..LEAF_CACHE_CAPACITY + 3 {
            ca.leaf(&format!("h{index}.example.com")).unwrap();
        }
        assert_eq!(ca.cached_hosts(), LEAF_CACHE_CAPACITY);
        assert!(!Arc::ptr_eq(&first, &ca.leaf("a.example.com").unwrap()));
    }
}
