//! DNS rebinding: a web page whose name resolves to this server's address makes the browser send
//! requests (and read the replies) with the page's own name in `Host`. Only the listen address,
//! the `localhost` forms of a loopback one and the operator's `allowed_hosts` are answered;
//! anything else gets 421.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The host names a server answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHosts {
    /// Lower-case names and address literals (IPv6 in brackets), without ports.
    names: Vec<String>,
    /// Whether any address literal is allowed (listening on every address: `0.0.0.0`, `::`).
    any_address: bool,
}

impl AllowedHosts {
    /// The names for a server listening on `local`, plus `configured` (`[server] allowed_hosts`).
    pub(crate) fn new(local: SocketAddr, configured: &[String]) -> Self {
        let mut names: Vec<String> = configured.iter().map(|name| normalise(name)).collect();
        let ip = local.ip();
        names.push(literal(ip));
        if ip.is_loopback() || ip.is_unspecified() {
            names.extend(["localhost", "127.0.0.1", "[::1]"].map(str::to_owned));
        }
        Self {
            names,
            any_address: ip.is_unspecified(),
        }
    }

    /// Whether `host` (a `Host` header or URI authority, with or without a port) is allowed.
    pub(crate) fn allows(&self, host: &str) -> bool {
        let name = normalise(strip_port(host));
        if name.is_empty() {
            return false;
        }
        if self.names.contains(&name) {
            return true;
        }
        self.any_address
            && name
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok()
    }
}

/// `ip` as it appears in a `Host` header.
fn literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Lower case, without a trailing dot.
fn normalise(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// `host` without its `:port`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Refuses requests whose `Host` (or absolute URI) names a host this server does not answer to.
pub(crate) async fn check(
    State(allowed): State<Arc<AllowedHosts>>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|value| value.to_str().unwrap_or_default());
    let authority = request
        .uri()
        .authority()
        .map(axum::http::uri::Authority::as_str);
    let ok = host.is_some_and(|host| allowed.allows(host))
        && authority.is_none_or(|authority| allowed.allows(authority));
    if ok {
        return next.run(request).await;
    }
    let shown = host.unwrap_or("(none)");
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "misdirected_request",
        format!(
            "this server does not answer to host `{shown}`; use its listen address, or have its \
             operator add the name to `[server] allowed_hosts` in hookbox.toml"
        ),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn loopback_servers_answer_to_their_localhost_forms_only() {
        let allowed = AllowedHosts::new(
            "127.0.0.1:8080".parse().unwrap(),
            &["Box.Example.".to_owned()],
        );
        for host in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8080",
            "box.example",
            "box.example:443",
        ] {
            assert!(allowed.allows(host), "{host}");
        }
        for host in [
            "",
            ":8080",
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1:8080",
            "[::2]",
            "127.0.0.1.nip.io",
        ] {
            assert!(!allowed.allows(host), "{host}");
        }
    }

    #[test]
    fn servers_on_every_address_answer_to_address_literals() {
        let allowed = AllowedHosts::new("[::]:80".parse().unwrap(), &[]);
        for host in ["10.1.2.3", "[fe80::1]:80", "localhost:80"] {
            assert!(allowed.allows(host), "{host}");
        }
        assert!(!allowed.allows("rebound.example"));
        let specific = AllowedHosts::new("10.1.2.3:80".parse().unwrap(), &[]);
        assert!(specific.allows("10.1.2.3:80"));
        assert!(!specific.allows("localhost:80"));
        assert!(!specific.allows("10.1.2.4"));
    }
}
