//! The values of `hookbox.toml`, checked when the runtime is built: each bad value is an error
//! `FILE: KEY: PROBLEM; HINT` naming the file, the key as the file spells it and what a valid
//! value looks like.

use std::net::IpAddr;
use std::time::Duration;

use hookbox_env::{DEFAULT_CODE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DiskBudget};
use hookbox_net::{ClientOptions, DomainError, DomainList, IpNet, ProxyOptions, is_host_name};

use super::{Addresses, Config};

/// Model turns per interaction unless `[server] max_turns` says otherwise.
const DEFAULT_MAX_TURNS: u32 = 32;

/// The longest `[sandbox] code_timeout_secs` accepted: one day.
const MAX_CODE_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// The start of every PEM certificate block.
const PEM_CERTIFICATE: &[u8] = b"-----BEGIN CERTIFICATE-----";

/// `[sdk] allowed_domains` and `denied_domains`, parsed: the operator's network for SDK
/// sessions' sandboxed `Bash`.
#[derive(Debug, Clone)]
pub struct SdkDomains {
    /// The ceiling: a host outside it is refused whatever the settings allow.
    pub allowed: DomainList,
    /// Hosts always refused.
    pub denied: DomainList,
}

/// The error for a bad value of `key` in `file`: `FILE: KEY: PROBLEM; HINT`.
pub(crate) fn key_error(file: &str, key: &str, problem: &str, hint: &str) -> anyhow::Error {
    anyhow::anyhow!("{file}: {key}: {problem}; {hint}")
}

/// `name` as a TOML key: bare when it may be, else quoted (`"a b"`, `"telemetry.example.com"`).
pub(crate) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

impl Config {
    /// The error for a bad value of `key` in this file (see [`key_error`]).
    fn bad(&self, key: &str, problem: &str, hint: &str) -> anyhow::Error {
        key_error(&self.name(), key, problem, hint)
    }

    /// `[server] max_turns`, checked (at least 1), else 32.
    pub fn max_turns(&self) -> anyhow::Result<u32> {
        match self.server.max_turns {
            Some(0) => Err(self.bad(
                "[server] max_turns",
                "0 turns would stop every interaction before it starts",
                "write a whole number of at least 1 (the default is 32)",
            )),
            Some(turns) => Ok(turns),
            None => Ok(DEFAULT_MAX_TURNS),
        }
    }

    /// The time limit of one `code_execution`: `[sandbox] code_timeout_secs`, checked (1
    /// second to one day), else [`DEFAULT_CODE_TIMEOUT`].
    pub fn code_timeout(&self) -> anyhow::Result<Duration> {
        match self.sandbox.code_timeout_secs {
            None => Ok(DEFAULT_CODE_TIMEOUT),
            Some(seconds @ 1..=MAX_CODE_TIMEOUT_SECS) => Ok(Duration::from_secs(seconds)),
            Some(seconds) => Err(self.bad(
                "[sandbox] code_timeout_secs",
                &format!("{seconds} is out of range"),
                &format!(
                    "write a whole number of seconds from 1 to {MAX_CODE_TIMEOUT_SECS} (one day)"
                ),
            )),
        }
    }

    /// How long a warm sandbox lives without calls: `[sandbox] idle_timeout_secs`, checked (1
    /// second to one day), else [`DEFAULT_IDLE_TIMEOUT`].
    pub fn idle_timeout(&self) -> anyhow::Result<Duration> {
        match self.sandbox.idle_timeout_secs {
            None => Ok(DEFAULT_IDLE_TIMEOUT),
            Some(seconds @ 1..=MAX_CODE_TIMEOUT_SECS) => Ok(Duration::from_secs(seconds)),
            Some(seconds) => Err(self.bad(
                "[sandbox] idle_timeout_secs",
                &format!("{seconds} is out of range"),
                &format!(
                    "write a whole number of seconds from 1 to {MAX_CODE_TIMEOUT_SECS} (one day)"
                ),
            )),
        }
    }

    /// The disk budget of new environments: [`DiskBudget::DEFAULT`] with `[sandbox]`
    /// `disk_bytes` and `disk_inodes` applied, checked.
    pub fn disk_budget(&self) -> anyhow::Result<DiskBudget> {
        let bytes = self.sandbox.disk_bytes.unwrap_or(DiskBudget::DEFAULT.bytes);
        if bytes < DiskBudget::MIN_BYTES {
            return Err(self.bad(
                "[sandbox] disk_bytes",
                &format!("{bytes} bytes is too small for a file system"),
                &format!(
                    "write a size in bytes of at least {} (4 MiB), such as 2147483648 (2 GiB, \
                     the default)",
                    DiskBudget::MIN_BYTES
                ),
            ));
        }
        let inodes = DiskBudget::inodes_for(bytes, self.sandbox.disk_inodes);
        let max = DiskBudget::max_inodes(bytes);
        if !(DiskBudget::MIN_INODES..=max).contains(&inodes) {
            return Err(self.bad(
                "[sandbox] disk_inodes",
                &format!("{inodes} is not an inode count a file system of {bytes} bytes can have"),
                &format!(
                    "write a number from {} to {max} (at most one per KiB of disk_bytes)",
                    DiskBudget::MIN_INODES
                ),
            ));
        }
        Ok(DiskBudget { bytes, inodes })
    }

    /// `[sandbox] disk_reserve_bytes` or its default
    /// ([`Environments::DEFAULT_DISK_RESERVE`](hookbox_env::Environments::DEFAULT_DISK_RESERVE)).
    pub fn disk_reserve(&self) -> u64 {
        self.sandbox
            .disk_reserve_bytes
            .unwrap_or(hookbox_env::Environments::DEFAULT_DISK_RESERVE)
    }

    /// `[sdk] allowed_domains` and `denied_domains`, checked: each entry must be a domain
    /// pattern.
    pub fn sdk_domains(&self) -> anyhow::Result<SdkDomains> {
        let list = |key: &str, domains: &[String]| {
            let mut list = DomainList::new(format!("`[sdk] {key}`"));
            list.add(&self.name(), domains).map_err(|error| {
                self.bad(
                    &format!("[sdk] {key}[{}]", error.index),
                    &format!(
                        "{:?} is not a domain pattern: {}",
                        error.entry, error.problem
                    ),
                    DomainError::HINT,
                )
            })?;
            Ok::<_, anyhow::Error>(list)
        };
        Ok(SdkDomains {
            allowed: list("allowed_domains", &self.sdk.allowed_domains)?,
            denied: list("denied_domains", &self.sdk.denied_domains)?,
        })
    }

    /// The options of the client that carries HTTP hooks: [`ClientOptions::default`] with
    /// `[network]` applied, every value checked.
    pub fn hook_client_options(&self) -> anyhow::Result<ClientOptions> {
        let network = &self.network;
        Ok(ClientOptions {
            permit_loopback: network.permit_loopback_hooks,
            allow_private_cidrs: self.private_cidrs()?,
            extra_root_certs_pem: self.extra_roots()?,
            resolve: self.resolve_overrides()?,
            ..ClientOptions::default()
        })
    }

    /// The options of the sandboxes' egress proxy: [`ProxyOptions::default`] with `[network]`
    /// `allow_private_cidrs`, `extra_ca_certs` (trusted for intercepted upstreams) and
    /// `resolve`, checked as in [`hook_client_options`](Self::hook_client_options). Never
    /// loopback: `permit_loopback_hooks` is for hooks only.
    pub fn egress_proxy_options(&self) -> anyhow::Result<ProxyOptions> {
        Ok(ProxyOptions {
            allow_private_cidrs: self.private_cidrs()?,
            extra_root_certs_pem: self.extra_roots()?,
            resolve: self.resolve_overrides()?,
            ..ProxyOptions::default()
        })
    }

    /// `[network] allow_private_cidrs`, parsed.
    fn private_cidrs(&self) -> anyhow::Result<Vec<IpNet>> {
        let texts = self.network.allow_private_cidrs.iter().enumerate();
        texts
            .map(|(index, text)| {
                text.trim().parse::<IpNet>().map_err(|_| {
                    self.bad(
                        &format!("[network] allow_private_cidrs[{index}]"),
                        &format!("{text:?} is not a CIDR range"),
                        "write one such as \"10.77.0.0/24\" or \"fd00::/64\"",
                    )
                })
            })
            .collect()
    }

    /// `[network] extra_ca_certs`, read (each must hold a PEM certificate).
    fn extra_roots(&self) -> anyhow::Result<Vec<Vec<u8>>> {
        let hint = "give the path of a PEM file of CA certificates (relative paths are \
                    relative to this file)";
        let paths = self.network.extra_ca_certs.iter().enumerate();
        paths
            .map(|(index, path)| {
                let key = format!("[network] extra_ca_certs[{index}]");
                let pem = std::fs::read(path).map_err(|error| {
                    self.bad(
                        &key,
                        &format!("cannot read {}: {error}", path.display()),
                        hint,
                    )
                })?;
                if !pem
                    .windows(PEM_CERTIFICATE.len())
                    .any(|window| window == PEM_CERTIFICATE)
                {
                    return Err(self.bad(
                        &key,
                        &format!(
                            "{} has no `-----BEGIN CERTIFICATE-----` block",
                            path.display()
                        ),
                        hint,
                    ));
                }
                Ok(pem)
            })
            .collect()
    }

    /// `[network] resolve`, as (name, address) pairs.
    fn resolve_overrides(&self) -> anyhow::Result<Vec<(String, IpAddr)>> {
        let address_hint = "write an IP address such as \"10.77.0.2\", or a list such as \
                            [\"10.77.0.2\", \"fd00::2\"]";
        let mut pairs = Vec::new();
        for (name, addresses) in &self.network.resolve {
            let key = format!("[network] resolve.{}", toml_key(name));
            if !is_host_name(name) {
                return Err(self.bad(
                    &key,
                    "not a domain name",
                    "write a domain name such as \"telemetry.example.com\"",
                ));
            }
            let texts = match addresses {
                Addresses::One(text) => std::slice::from_ref(text),
                Addresses::Many(texts) => texts.as_slice(),
            };
            if texts.is_empty() {
                return Err(self.bad(&key, "no address", address_hint));
            }
            for text in texts {
                let address = text.trim().parse::<IpAddr>().map_err(|_| {
                    self.bad(
                        &key,
                        &format!("{text:?} is not an IP address"),
                        address_hint,
                    )
                })?;
                pairs.push((name.clone(), address));
            }
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::path::Path;

    use super::Config;

    /// `text` as if it were this crate's directory's `hookbox.toml`.
    fn read(text: &str) -> anyhow::Result<Config> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("hookbox.toml");
        Config::parse(text, &path, Path::new("/nonexistent"))
    }

    fn parse(text: &str) -> anyhow::Result<hookbox_net::ClientOptions> {
        read(text)?.hook_client_options()
    }

    /// The error `text` gives (parsing, then building the hooks' client options), with the
    /// crate's directory shown as `DIR`.
    fn error(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err()).replace(env!("CARGO_MANIFEST_DIR"), "DIR")
    }

    #[test]
    fn an_absent_section_gives_the_strict_defaults() {
        assert_eq!(parse("").unwrap(), hookbox_net::ClientOptions::default());
        assert_eq!(
            parse("[network]\n").unwrap(),
            hookbox_net::ClientOptions::default()
        );
    }

    #[test]
    fn every_field_maps_onto_the_client_options() {
        let ca = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../hookbox-test-support/fixtures/tls/ca.pem"
        );
        let options = parse(&format!(
            r#"
            [network]
            permit_loopback_hooks = true
            allow_private_cidrs = ["10.77.0.0/24", " fd00::/64 "]
            extra_ca_certs = ["{ca}", "../hookbox-test-support/fixtures/tls/ca.pem"]
            resolve = {{ "telemetry.example.com" = "10.77.0.2", "b.example" = ["10.77.0.3", "::1"]
                      }}
            "#
        ))
        .unwrap();
        assert!(options.permit_loopback);
        assert!(options.https_only);
        assert_eq!(
            options.allow_private_cidrs,
            [
                "10.77.0.0/24".parse().unwrap(),
                "fd00::/64".parse::<hookbox_net::IpNet>().unwrap()
            ]
        );
        assert_eq!(options.extra_root_certs_pem.len(), 2);
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert_eq!(
            options.resolve,
            [
                ("b.example".to_owned(), ip("10.77.0.3")),
                ("b.example".to_owned(), ip("::1")),
                ("telemetry.example.com".to_owned(), ip("10.77.0.2")),
            ]
        );
        assert!(hookbox_net::GuardedClient::new(&options).is_ok());
    }

    #[test]
    fn the_egress_proxy_gets_the_ranges_roots_and_overrides_but_never_loopback() {
        let file = read(
            r#"
            [network]
            permit_loopback_hooks = true
            allow_private_cidrs = ["10.77.0.0/24"]
            extra_ca_certs = ["../hookbox-test-support/fixtures/tls/ca.pem"]
            resolve = { "telemetry.example.com" = "10.77.0.2" }
            "#,
        )
        .unwrap();
        let options = file.egress_proxy_options().unwrap();
        assert!(!options.permit_loopback);
        assert_eq!(
            options.allow_private_cidrs,
            ["10.77.0.0/24".parse::<hookbox_net::IpNet>().unwrap()]
        );
        assert_eq!(options.extra_root_certs_pem.len(), 1);
        assert_eq!(
            options.resolve,
            [(
                "telemetry.example.com".to_owned(),
                "10.77.0.2".parse::<IpAddr>().unwrap()
            )]
        );
        assert_eq!(options.connect_ports, [443]);
        assert!(hookbox_net::EgressProxy::new(options).is_ok());
        let default = Config::default().egress_proxy_options().unwrap();
        assert_eq!(default, hookbox_net::ProxyOptions::default());
    }

    #[test]
    fn a_bad_resolve_host_names_the_file_and_the_key_once() {
        assert_eq!(
            error("[network]\nresolve = { \"a b\" = \"10.0.0.1\" }"),
            "DIR/hookbox.toml: [network] resolve.\"a b\": not a domain name; write a domain name \
             such as \"telemetry.example.com\""
        );
    }

    #[test]
    fn bad_network_values_name_the_file_the_key_and_a_valid_value() {
        let cases = [
            (
                "allow_private_cidrs = [\"10.0.0.0/8\", \"10.0.0.0/33\"]",
                "DIR/hookbox.toml: [network] allow_private_cidrs[1]: \"10.0.0.0/33\" is not a CIDR \
                 range; write one such as \"10.77.0.0/24\" or \"fd00::/64\"",
            ),
            (
                "extra_ca_certs = [\"/nonexistent/ca.pem\"]",
                "DIR/hookbox.toml: [network] extra_ca_certs[0]: cannot read /nonexistent/ca.pem: \
                 No such file or directory (os error 2); give the path of a PEM file of CA \
                 certificates (relative paths are relative to this file)",
            ),
            (
                "extra_ca_certs = [\"Cargo.toml\"]",
                "DIR/hookbox.toml: [network] extra_ca_certs[0]: DIR/Cargo.toml has no \
                 `-----BEGIN CERTIFICATE-----` block; give the path of a PEM file of CA \
                 certificates (relative paths are relative to this file)",
            ),
            (
                "resolve = { \"a.example\" = \"not-an-ip\" }",
                "DIR/hookbox.toml: [network] resolve.\"a.example\": \"not-an-ip\" is not an IP \
                 address; write an IP address such as \"10.77.0.2\", or a list such as \
                 [\"10.77.0.2\", \"fd00::2\"]",
            ),
            (
                "resolve = { \"a.example\" = [] }",
                "DIR/hookbox.toml: [network] resolve.\"a.example\": no address; write an IP \
                 address such as \"10.77.0.2\", or a list such as [\"10.77.0.2\", \"fd00::2\"]",
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(error(&format!("[network]\n{line}")), expected, "{line}");
        }
    }

    #[test]
    fn what_the_parser_refuses_names_the_file_line_and_key() {
        let cases = [
            (
                "[network]\nresolve = { \"a.example\" = 5 }",
                "DIR/hookbox.toml:2: [network] resolve.\"a.example\": not an address; write an IP \
                 address such as \"10.77.0.2\", or a list such as [\"10.77.0.2\", \"fd00::2\"]",
            ),
            (
                "[network]\npermit_loopback = true",
                "DIR/hookbox.toml:2: [network]: unknown field `permit_loopback`, expected one of \
                 `permit_loopback_hooks`, `allow_private_cidrs`, `extra_ca_certs`, `resolve`, \
                 `allow_host_sources`",
            ),
            (
                "[server]\nmax_turns = \"x\"",
                "DIR/hookbox.toml:2: [server] max_turns: invalid type: string \"x\", expected u32",
            ),
            (
                "[agents.\"a.b\"]\nprovider = 5",
                "DIR/hookbox.toml:2: [agents.\"a.b\"] provider: wanted string or table",
            ),
            (
                "[server\n",
                "DIR/hookbox.toml:1: unclosed table, expected `]`",
            ),
        ];
        for (text, expected) in cases {
            let error =
                format!("{:#}", read(text).unwrap_err()).replace(env!("CARGO_MANIFEST_DIR"), "DIR");
            assert_eq!(error, expected, "{text}");
        }
    }

    #[test]
    fn bad_sandbox_and_server_values_name_the_file_and_the_key() {
        let message = |text: &str, check: fn(&Config) -> anyhow::Result<()>| {
            format!("{:#}", check(&read(text).unwrap()).unwrap_err())
                .replace(env!("CARGO_MANIFEST_DIR"), "DIR")
        };
        assert_eq!(
            message("[server]\nmax_turns = 0", |config| config
                .max_turns()
                .map(drop)),
            "DIR/hookbox.toml: [server] max_turns: 0 turns would stop every interaction before it \
             starts; write a whole number of at least 1 (the default is 32)"
        );
        assert_eq!(
            message("[sandbox]\ncode_timeout_secs = 0", |config| {
                config.code_timeout().map(drop)
            }),
            "DIR/hookbox.toml: [sandbox] code_timeout_secs: 0 is out of range; write a whole \
             number of seconds from 1 to 86400 (one day)"
        );
        assert_eq!(
            message("[sandbox]\ndisk_bytes = 1000", |config| {
                config.disk_budget().map(drop)
            }),
            "DIR/hookbox.toml: [sandbox] disk_bytes: 1000 bytes is too small for a file system; \
             write a size in bytes of at least 4194304 (4 MiB), such as 2147483648 (2 GiB, the \
             default)"
        );
        assert_eq!(
            message(
                "[sandbox]\ndisk_bytes = 4194304\ndisk_inodes = 10",
                |config| { config.disk_budget().map(drop) }
            ),
            "DIR/hookbox.toml: [sandbox] disk_inodes: 10 is not an inode count a file system of \
             4194304 bytes can have; write a number from 64 to 4096 (at most one per KiB of \
             disk_bytes)"
        );
    }

    #[test]
    fn sdk_domains_are_checked_and_name_the_file_the_key_and_the_entry() {
        let domains = read(
            "[sdk]\nallowed_domains = [\"*.example.com\", \"api.test\"]\n\
             denied_domains = [\"bad.example.com\"]",
        )
        .unwrap()
        .sdk_domains()
        .unwrap();
        assert_eq!(domains.allowed.to_string(), "`*.example.com`, `api.test`");
        assert_eq!(domains.denied.to_string(), "`bad.example.com`");
        let none = read("").unwrap().sdk_domains().unwrap();
        assert!(none.allowed.is_empty() && none.denied.is_empty());
        for (text, key, entry) in [
            (
                "[sdk]\nallowed_domains = [\"ok.test\", \"https://example.com/x\"]",
                "[sdk] allowed_domains[1]",
                "\"https://example.com/x\"",
            ),
            (
                "[sdk]\ndenied_domains = [\"a.*.example.com\"]",
                "[sdk] denied_domains[0]",
                "\"a.*.example.com\"",
            ),
        ] {
            let error = format!("{:#}", read(text).unwrap().sdk_domains().unwrap_err())
                .replace(env!("CARGO_MANIFEST_DIR"), "DIR");
            assert!(
                error.starts_with(&format!(
                    "DIR/hookbox.toml: {key}: {entry} is not a domain pattern: "
                )) && error.ends_with(hookbox_net::DomainError::HINT),
                "{error}"
            );
        }
    }
}
