//! This host's own addresses, which the proxy never dials: hookbox's listeners (the REST API,
//! the proxy's own sockets, the hook receiver) and every other service on the machine stay out
//! of the sandbox's reach whatever `allow_private_cidrs` admits.
//!
//! An address belongs to this host when a socket can be bound to it (the kernel's own answer,
//! covering every interface, loopback included, at the moment of the dial). Loopback stays
//! dialable only under [`ProxyOptions::permit_loopback`](super::ProxyOptions::permit_loopback),
//! the tests' option, never the operator's; the proxy's own listeners never are.

use std::net::{IpAddr, SocketAddr, UdpSocket};

/// Why `address` may not be dialed, if it is one of this host's: one of `listeners` (an
/// unspecified listener address stands for every address on its port), or any address of this
/// host unless it is loopback and `permit_loopback`.
pub(super) fn refusal(
    address: &SocketAddr,
    listeners: &[SocketAddr],
    permit_loopback: bool,
) -> Option<String> {
    let ip = address.ip().to_canonical();
    let listener = listeners.iter().any(|listener| {
        listener.port() == address.port()
            && (listener.ip().is_unspecified() || listener.ip().to_canonical() == ip)
    });
    if listener {
        return Some(format!(
            "{address} is hookbox's own listener; the proxy does not connect to itself"
        ));
    }
    if (ip.is_loopback() && permit_loopback) || !is_local(ip) {
        return None;
    }
    Some(format!(
        "{ip} is an address of this host: the sandbox never reaches hookbox's own listeners or \
         any other service on this machine, whatever `allow_private_cidrs` admits"
    ))
}

/// Whether `ip` is assigned to this host (a socket can be bound to it).
fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::refusal;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn listeners_match_by_port_and_address() {
        let own = [address("127.0.0.1:3128"), address("0.0.0.0:8080")];
        for refused in ["127.0.0.1:3128", "[::ffff:127.0.0.1]:3128", "10.0.0.1:8080"] {
            assert!(
                refusal(&address(refused), &own, true).is_some(),
                "{refused}"
            );
        }
        for dialed in ["127.0.0.1:3129", "127.0.0.2:3128"] {
            assert!(refusal(&address(dialed), &own, true).is_none(), "{dialed}");
        }
    }

    #[test]
    fn this_hosts_addresses_are_refused_unless_loopback_is_permitted() {
        for local in ["127.0.0.1:80", "127.0.0.53:53", "[::1]:80"] {
            let reason = refusal(&address(local), &[], false).unwrap_or_default();
            assert!(
                reason.contains("an address of this host"),
                "{local}: {reason}"
            );
            assert!(refusal(&address(local), &[], true).is_none(), "{local}");
        }
        // Documentation addresses are never assigned to a test machine.
        assert!(refusal(&address("192.0.2.1:80"), &[], false).is_none());
    }
}
