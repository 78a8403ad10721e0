//! Which resolved addresses hookbox may dial: a table of non-public ranges, each with who may
//! admit it, checked on every address a request would connect to.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use Admission::{ListedCidr, Loopback, Never};

/// Who may admit an address in a non-public [`Range`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Loopback: a client built with `permit_loopback`, or a listed CIDR containing it.
    Loopback,
    /// Private and special-purpose ranges: only a CIDR listed in `allow_private_cidrs`.
    ListedCidr,
    /// Never dialed: unspecified, multicast, broadcast and cloud metadata addresses.
    Never,
}

/// A non-public address range.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Range {
    /// What the range is, for people.
    pub(crate) name: &'static str,
    /// The block, as text.
    pub(crate) block: &'static str,
    /// Who may admit it.
    pub(crate) admission: Admission,
}

impl fmt::Display for Range {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} ({})", self.name, self.block)
    }
}

const fn v4(octets: [u8; 4], prefix: u8, range: Range) -> (IpNet, Range) {
    let [a, b, c, d] = octets;
    let net = Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix);
    (IpNet::V4(net), range)
}

const fn v6(segments: [u16; 8], prefix: u8, range: Range) -> (IpNet, Range) {
    let [a, b, c, d, e, f, g, h] = segments;
    let net = Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), prefix);
    (IpNet::V6(net), range)
}

const fn range(name: &'static str, block: &'static str, admission: Admission) -> Range {
    Range {
        name,
        block,
        admission,
    }
}

/// IPv4 ranges, most specific first: the first containing row classifies an address.
#[rustfmt::skip]
const V4: [(IpNet, Range); 19] = [
    v4([169, 254, 169, 254], 32, range("cloud metadata", "169.254.169.254/32", Never)),
    v4([100, 100, 100, 200], 32, range("cloud metadata", "100.100.100.200/32", Never)),
    v4([168, 63, 129, 16], 32, range("cloud metadata", "168.63.129.16/32", Never)),
    v4([0, 0, 0, 0], 8, range("unspecified (this network)", "0.0.0.0/8", Never)),
    v4([127, 0, 0, 0], 8, range("loopback", "127.0.0.0/8", Loopback)),
    v4([10, 0, 0, 0], 8, range("private", "10.0.0.0/8", ListedCidr)),
    v4([172, 16, 0, 0], 12, range("private", "172.16.0.0/12", ListedCidr)),
    v4([192, 168, 0, 0], 16, range("private", "192.168.0.0/16", ListedCidr)),
    v4([100, 64, 0, 0], 10, range("shared address space (CGNAT)", "100.64.0.0/10", ListedCidr)),
    v4([169, 254, 0, 0], 16, range("link-local", "169.254.0.0/16", ListedCidr)),
    v4([192, 0, 0, 0], 24, range("IETF protocol assignments", "192.0.0.0/24", ListedCidr)),
    v4([192, 0, 2, 0], 24, range("documentation (TEST-NET-1)", "192.0.2.0/24", ListedCidr)),
    v4([198, 51, 100, 0], 24, range("documentation (TEST-NET-2)", "198.51.100.0/24", ListedCidr)),
    v4([203, 0, 113, 0], 24, range("documentation (TEST-NET-3)", "203.0.113.0/24", ListedCidr)),
    v4([198, 18, 0, 0], 15, range("benchmarking", "198.18.0.0/15", ListedCidr)),
    v4([192, 88, 99, 0], 24, range("6to4 relay anycast", "192.88.99.0/24", ListedCidr)),
    v4([224, 0, 0, 0], 4, range("multicast", "224.0.0.0/4", Never)),
    v4([255, 255, 255, 255], 32, range("broadcast", "255.255.255.255/32", Never)),
    v4([240, 0, 0, 0], 4, range("reserved", "240.0.0.0/4", ListedCidr)),
];

/// IPv6 ranges, most specific first. IPv4-mapped addresses (`::ffff:0:0/96`) are classified as
/// the IPv4 address they stand for, before this table.
#[rustfmt::skip]
const V6: [(IpNet, Range); 18] = [
    v6([0; 8], 128, range("unspecified", "::/128", Never)),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, range("loopback", "::1/128", Loopback)),
    v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128, range("cloud metadata", "fd00:ec2::254/128", Never)),
    v6([0; 8], 96, range("IPv4-compatible (deprecated)", "::/96", ListedCidr)),
    v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, range("NAT64 (embeds an IPv4 address)", "64:ff9b::/96", ListedCidr)),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, range("local-use NAT64 (embeds an IPv4 address)", "64:ff9b:1::/48", ListedCidr)),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, range("discard-only", "100::/64", ListedCidr)),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, range("Teredo (embeds an IPv4 address)", "2001::/32", ListedCidr)),
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, range("benchmarking", "2001:2::/48", ListedCidr)),
    v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, range("ORCHID", "2001:10::/28", ListedCidr)),
    v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, range("ORCHIDv2", "2001:20::/28", ListedCidr)),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, range("documentation", "2001:db8::/32", ListedCidr)),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, range("6to4 (embeds an IPv4 address)", "2002::/16", ListedCidr)),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, range("documentation", "3fff::/20", ListedCidr)),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, range("unique local", "fc00::/7", ListedCidr)),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, range("link-local", "fe80::/10", ListedCidr)),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, range("site-local (deprecated)", "fec0::/10", ListedCidr)),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, range("multicast", "ff00::/8", Never)),
];

/// The only IPv6 block with globally routable unicast addresses.
const GLOBAL_UNICAST: Ipv6Net = Ipv6Net::new_assert(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

/// Every other IPv6 address is reserved.
const OUTSIDE_GLOBAL_UNICAST: Range = range(
    "reserved (not global unicast)",
    "outside 2000::/3",
    ListedCidr,
);

/// The non-public range `ip` is in, or `None` for a public address. IPv4-mapped IPv6 addresses
/// are classified as their IPv4 address.
pub(crate) fn classify(ip: IpAddr) -> Option<&'static Range> {
    let ip = ip.to_canonical();
    let table: &'static [(IpNet, Range)] = match ip {
        IpAddr::V4(_) => &V4,
        IpAddr::V6(_) => &V6,
    };
    if let Some((_, range)) = table.iter().find(|(net, _)| net.contains(&ip)) {
        return Some(range);
    }
    match ip {
        IpAddr::V6(v6) if !GLOBAL_UNICAST.contains(&v6) => Some(&OUTSIDE_GLOBAL_UNICAST),
        _ => None,
    }
}

/// The address rules one client applies to every address it would dial.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressRules {
    /// Whether loopback addresses (`127.0.0.0/8`, `::1`) may be dialed.
    pub(crate) permit_loopback: bool,
    /// Non-public ranges an operator admits (loopback and special-purpose ranges included;
    /// `Never` ranges stay refused).
    pub(crate) allowed: Vec<IpNet>,
}

impl AddressRules {
    /// Whether `ip` may be dialed; if not, the range that refuses it.
    pub(crate) fn check(&self, ip: IpAddr) -> Result<(), &'static Range> {
        let Some(range) = classify(ip) else {
            return Ok(());
        };
        let canonical = ip.to_canonical();
        let listed = || {
            self.allowed
                .iter()
                .any(|net| net.contains(&ip) || net.contains(&canonical))
        };
        let admitted = match range.admission {
            Loopback => self.permit_loopback || listed(),
            ListedCidr => listed(),
            Never => false,
        };
        if admitted { Ok(()) } else { Err(range) }
    }

    /// The admitted addresses among `candidates` (the resolution of `host`), in order and
    /// without duplicates, IPv4-mapped ones in their IPv4 form; an error naming every refused
    /// address when none is admitted.
    pub(crate) fn admit(
        &self,
        host: &str,
        candidates: impl IntoIterator<Item = IpAddr>,
    ) -> Result<Vec<IpAddr>, AddressRefusal> {
        let mut admitted = Vec::new();
        let mut refused = Vec::new();
        for ip in candidates {
            let ip = ip.to_canonical();
            if admitted.contains(&ip) || refused.iter().any(|(seen, _)| *seen == ip) {
                continue;
            }
            match self.check(ip) {
                Ok(()) => admitted.push(ip),
                Err(range) => refused.push((ip, range)),
            }
        }
        if admitted.is_empty() {
            Err(AddressRefusal {
                host: host.to_owned(),
                refused,
            })
        } else {
            Ok(admitted)
        }
    }
}

/// No address of a host may be dialed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{host}` has no address hookbox may dial: {}", describe(.refused))]
pub(crate) struct AddressRefusal {
    /// The host as requested.
    pub(crate) host: String,
    /// Each address it resolved to, with the range that refuses it.
    pub(crate) refused: Vec<(IpAddr, &'static Range)>,
}

fn describe(refused: &[(IpAddr, &'static Range)]) -> String {
    if refused.is_empty() {
        return "it resolved to no address".to_owned();
    }
    let reasons: Vec<String> = refused
        .iter()
        .map(|(ip, range)| {
            let rule = match range.admission {
                Loopback => "refused unless the client permits loopback",
                ListedCidr => "refused unless its range is listed in allow_private_cidrs",
                Never => "never dialed",
            };
            format!("{ip} is {range}, {rule}")
        })
        .collect();
    reasons.join("; ")
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::{AddressRules, Admission, V4, V6, classify};

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn every_row_names_its_own_block_and_is_reachable() {
        for (net, range) in V4.iter().chain(V6.iter()) {
            assert_eq!(net.to_string(), range.block);
            let ends = [net.network(), net.broadcast()];
            assert!(
                ends.iter().any(|end| classify(*end) == Some(range)),
                "{net} is shadowed"
            );
        }
    }

    #[test]
    fn classifies_every_non_public_range() {
        for (address, name) in [
            ("0.0.0.0", "unspecified (this network)"),
            ("0.1.2.3", "unspecified (this network)"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared address space (CGNAT)"),
            ("100.127.255.255", "shared address space (CGNAT)"),
            ("169.254.1.1", "link-local"),
            ("169.254.169.254", "cloud metadata"),
            ("100.100.100.200", "cloud metadata"),
            ("192.0.0.8", "IETF protocol assignments"),
            ("192.0.2.1", "documentation (TEST-NET-1)"),
            ("198.51.100.7", "documentation (TEST-NET-2)"),
            ("203.0.113.9", "documentation (TEST-NET-3)"),
            ("198.19.0.1", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "IPv4-compatible (deprecated)"),
            ("64:ff9b::7f00:1", "NAT64 (embeds an IPv4 address)"),
            ("64:ff9b::808:808", "NAT64 (embeds an IPv4 address)"),
            ("64:ff9b:1::1", "local-use NAT64 (embeds an IPv4 address)"),
            ("2001::1", "Teredo (embeds an IPv4 address)"),
            ("2001:db8::1", "documentation"),
            ("2002:7f00:1::", "6to4 (embeds an IPv4 address)"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fd00:ec2::254", "cloud metadata"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local (deprecated)"),
            ("ff02::1", "multicast"),
            ("4000::1", "reserved (not global unicast)"),
        ] {
            let range = classify(ip(address));
            assert_eq!(range.map(|r| r.name), Some(name), "{address}");
        }
    }

    #[test]
    fn public_addresses_are_not_classified() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "169.253.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
        ] {
            assert_eq!(classify(ip(address)), None, "{address}");
        }
    }

    #[test]
    fn loopback_needs_the_permission_or_a_listed_cidr() {
        let strict = AddressRules::default();
        assert!(strict.check(ip("127.0.0.1")).is_err());
        let permitted = AddressRules {
            permit_loopback: true,
            allowed: Vec::new(),
        };
        for address in ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(permitted.check(ip(address)), Ok(()), "{address}");
        }
        assert!(permitted.check(ip("10.0.0.1")).is_err());
        let listed = AddressRules {
            permit_loopback: false,
            allowed: vec!["127.0.0.1/32".parse().unwrap()],
        };
        assert_eq!(listed.check(ip("127.0.0.1")), Ok(()));
        assert!(listed.check(ip("127.0.0.2")).is_err());
    }

    #[test]
    fn listed_cidrs_admit_exactly_their_range_and_never_the_never_ranges() {
        let rules = AddressRules {
            permit_loopback: true,
            allowed: vec![
                "10.77.0.0/16".parse().unwrap(),
                "169.254.0.0/16".parse().unwrap(),
                "fd00::/8".parse().unwrap(),
            ],
        };
        assert_eq!(rules.check(ip("10.77.0.2")), Ok(()));
        assert_eq!(rules.check(ip("::ffff:10.77.255.255")), Ok(()));
        assert_eq!(rules.check(ip("fd12::1")), Ok(()));
        assert_eq!(rules.check(ip("169.254.1.1")), Ok(()));
        assert!(rules.check(ip("10.78.0.1")).is_err());
        assert!(rules.check(ip("10.76.255.255")).is_err());
        assert!(rules.check(ip("192.168.0.1")).is_err());
        for never in [
            "169.254.169.254",
            "fd00:ec2::254",
            "0.0.0.0",
            "::",
            "224.0.0.1",
        ] {
            let range = rules.check(ip(never)).unwrap_err();
            assert_eq!(range.admission, Admission::Never, "{never}");
        }
    }

    #[test]
    fn admit_keeps_the_admitted_addresses_or_names_every_refusal() {
        let rules = AddressRules::default();
        let admitted = rules
            .admit("h", [ip("127.0.0.1"), ip("8.8.8.8"), ip("::ffff:8.8.8.8")])
            .unwrap();
        assert_eq!(admitted, [ip("8.8.8.8")]);
        let refusal = rules
            .admit("evil.example", [ip("127.0.0.1"), ip("169.254.169.254")])
            .unwrap_err();
        let message = refusal.to_string();
        assert!(message.contains("`evil.example`"), "{message}");
        assert!(
            message.contains(
                "127.0.0.1 is loopback (127.0.0.0/8), refused unless the client permits loopback"
            ),
            "{message}"
        );
        assert!(
            message
                .contains("169.254.169.254 is cloud metadata (169.254.169.254/32), never dialed"),
            "{message}"
        );
        let nothing = rules.admit("empty.example", []).unwrap_err();
        assert!(nothing.to_string().contains("resolved to no address"));
    }
}
