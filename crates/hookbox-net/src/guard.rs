//! The checks every request passes before anything is sent, in this order: the URL and its
//! scheme; the egress policy's decision on the canonical host (before any DNS lookup); for an
//! IP-literal host, the address rules (named hosts are checked at resolution, by the guarded
//! resolver); then the configured headers, overwritten by the policy's `transform` and
//! `credential`.

use std::net::IpAddr;

use reqwest::Url;
use reqwest::header::HeaderMap;

use crate::{EgressPolicy, GuardedClient, NetError, headers, target};

/// A request that passed every check: where to send it and with which headers.
pub(crate) struct Checked {
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
}

/// What every request carries into the checks, whatever its method.
pub(crate) struct Outgoing<'a> {
    pub(crate) url: &'a str,
    pub(crate) policy: &'a EgressPolicy,
    pub(crate) headers: &'a [(String, String)],
}

/// Runs every pre-send check of `client` on `request`. The caller adds the headers its method
/// sets itself (`Content-Type` for JSON posts).
pub(crate) fn check(client: &GuardedClient, request: &Outgoing<'_>) -> Result<Checked, NetError> {
    let url = target::check(request.url, client.https_only)?;
    let refused = |reason: String| NetError::PolicyRefused {
        url: request.url.to_owned(),
        reason,
    };
    let host = url.host_str().ok_or_else(|| NetError::InvalidUrl {
        url: request.url.to_owned(),
        reason: "the URL has no host".to_owned(),
    })?;
    let decision = match &client.credentials {
        Some(credentials) => request
            .policy
            .decide_with_credentials(host, credentials.source()),
        None => request.policy.decide(host),
    };
    if !decision.allowed {
        return Err(refused(decision.reason));
    }
    if !decision.inject.is_empty() && url.scheme() != "https" {
        return Err(refused(format!(
            "{}, whose `transform`/`credential` headers are only sent over HTTPS (use an \
             https:// URL)",
            decision.reason
        )));
    }
    // The URL parser has already turned every IPv4 spelling (`2130706433`, `0x7f.1`, `127.1`,
    // octal) into dotted decimal, so an IP-literal host always parses here.
    let literal = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host)
        .parse::<IpAddr>();
    if let Ok(ip) = literal {
        client
            .addresses
            .admit(host, [ip])
            .map_err(|refusal| NetError::AddressRefused {
                url: request.url.to_owned(),
                reason: refusal.to_string(),
            })?;
    }
    let mut headers = headers::configured(request.headers)?;
    headers::overwrite(&mut headers, &decision.inject)?;
    Ok(Checked { url, headers })
}
