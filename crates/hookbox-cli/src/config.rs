//! `hookbox.toml`: the server's settings and the named agents (`--config FILE`, else
//! `$HOOKBOX_HOME/hookbox.toml`, else defaults).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use hookbox_env::DiskBudget;
use hookbox_llm::{Model, ModelConfig};
use hookbox_net::{ClientOptions, IpNet, ProxyOptions};
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    /// `[server]`.
    #[serde(default)]
    pub(crate) server: ServerSection,
    /// `[agents."NAME"]`: the models requests and commands select by name.
    #[serde(default)]
    pub(crate) agents: BTreeMap<String, ModelConfig>,
    /// `[network]`: how the HTTP hooks' client reaches its receivers.
    #[serde(default)]
    pub(crate) network: NetworkSection,
    /// `[sdk]`: SDK mode (the stream-json protocol the Python agent SDKs speak).
    #[serde(default)]
    pub(crate) sdk: SdkSection,
    /// `[sandbox]`: what each environment's sandbox may use.
    #[serde(default)]
    pub(crate) sandbox: SandboxSection,
}

/// `[sandbox]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxSection {
    /// Size of each new environment's file system in bytes (default 2 GiB).
    pub(crate) disk_bytes: Option<u64>,
    /// Inodes (files, directories, links) of each new environment's file system (default
    /// 100,000, or one per KiB of `disk_bytes` if that is fewer).
    pub(crate) disk_inodes: Option<u64>,
}

impl SandboxSection {
    /// The disk budget of new environments: [`DiskBudget::DEFAULT`] with this section applied,
    /// checked (errors name the field).
    pub(crate) fn disk_budget(&self) -> anyhow::Result<DiskBudget> {
        let bytes = self.disk_bytes.unwrap_or(DiskBudget::DEFAULT.bytes);
        let budget = DiskBudget {
            bytes,
            inodes: DiskBudget::inodes_for(bytes, self.disk_inodes),
        };
        budget
            .validate()
            .map_err(|problem| anyhow::anyhow!("invalid `[sandbox]` in hookbox.toml: {problem}"))?;
        Ok(budget)
    }
}

/// `[sdk]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SdkSection {
    /// The agent an SDK session uses when the SDK passes no `--model`.
    pub(crate) default_agent: Option<String>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerSection {
    pub(crate) listen: Option<String>,
    pub(crate) max_body_bytes: Option<usize>,
    pub(crate) max_upload_bytes: Option<u64>,
    pub(crate) allow_host_sources: Option<bool>,
    pub(crate) max_turns: Option<u32>,
    pub(crate) max_tokens: Option<u64>,
    /// Host names answered besides the listen address (421 for others).
    #[serde(default)]
    pub(crate) allowed_hosts: Vec<String>,
    /// Connections served at once (503 above).
    pub(crate) max_connections: Option<usize>,
    /// Seconds to wait for a request's headers.
    pub(crate) header_read_timeout_secs: Option<u64>,
    /// Seconds a request body may pause.
    pub(crate) idle_timeout_secs: Option<u64>,
}

/// `[network]`: address rules, extra trust roots and static name overrides for the client that
/// carries HTTP hooks. Relative `extra_ca_certs` paths are relative to the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetworkSection {
    /// Let HTTP hooks reach loopback receivers (default `false`; hooks only, never models).
    #[serde(default)]
    pub(crate) permit_loopback_hooks: bool,
    /// Non-public ranges HTTP hooks may reach anyway, e.g. `"10.77.0.0/24"`.
    #[serde(default)]
    pub(crate) allow_private_cidrs: Vec<String>,
    /// PEM files of extra root certificates trusted for HTTP hooks.
    #[serde(default)]
    pub(crate) extra_ca_certs: Vec<PathBuf>,
    /// Static name overrides like curl's `--resolve`: a name to one address or a list of them.
    #[serde(default)]
    pub(crate) resolve: BTreeMap<String, Addresses>,
    /// Let `hookbox env create`/`update` clone `repository` sources that are paths or
    /// `file://` URLs on this machine (default `false`; remote clones follow the rules above).
    #[serde(default)]
    pub(crate) allow_host_sources: bool,
    /// The directory relative `extra_ca_certs` paths start from (the config file's).
    #[serde(skip)]
    pub(crate) base: PathBuf,
}

/// One address or several, as `[network] resolve` values.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Addresses {
    /// `"10.77.0.2"`.
    One(String),
    /// `["10.77.0.2", "10.77.0.3"]`.
    Many(Vec<String>),
}

impl NetworkSection {
    /// The options of the client that carries HTTP hooks: [`ClientOptions::default`] with this
    /// section applied. Every value is checked here; errors name the field, and the file for
    /// `extra_ca_certs`.
    pub(crate) fn hook_client_options(&self) -> anyhow::Result<ClientOptions> {
        let mut allow_private_cidrs = Vec::with_capacity(self.allow_private_cidrs.len());
        for (index, text) in self.allow_private_cidrs.iter().enumerate() {
            let cidr = text.trim().parse::<IpNet>().map_err(|_| {
                anyhow::anyhow!(
                    "invalid `[network] allow_private_cidrs[{index}]` = {text:?}: not a CIDR \
                     range (write e.g. \"10.77.0.0/24\" or \"fd00::/64\")"
                )
            })?;
            allow_private_cidrs.push(cidr);
        }
        let mut extra_root_certs_pem = Vec::with_capacity(self.extra_ca_certs.len());
        for (index, path) in self.extra_ca_certs.iter().enumerate() {
            let path = self.base.join(path);
            let pem = std::fs::read(&path).with_context(|| {
                format!(
                    "cannot read `[network] extra_ca_certs[{index}]` {}",
                    path.display()
                )
            })?;
            if !pem
                .windows(b"-----BEGIN CERTIFICATE-----".len())
                .any(|window| window == b"-----BEGIN CERTIFICATE-----")
            {
                bail!(
                    "`[network] extra_ca_certs[{index}]` {} is not a PEM certificate file (it \
                     has no `-----BEGIN CERTIFICATE-----` block)",
                    path.display()
                );
            }
            extra_root_certs_pem.push(pem);
        }
        let mut resolve = Vec::new();
        for (name, addresses) in &self.resolve {
            let texts = match addresses {
                Addresses::One(text) => std::slice::from_ref(text),
                Addresses::Many(texts) => texts.as_slice(),
            };
            if texts.is_empty() {
                bail!("`[network] resolve` gives `{name}` no address");
            }
            for text in texts {
                let address = text.trim().parse::<IpAddr>().map_err(|_| {
                    anyhow::anyhow!(
                        "invalid `[network] resolve` address {text:?} for `{name}`: not an IP \
                         address (write e.g. \"10.77.0.2\")"
                    )
                })?;
                resolve.push((name.clone(), address));
            }
        }
        Ok(ClientOptions {
            permit_loopback: self.permit_loopback_hooks,
            allow_private_cidrs,
            extra_root_certs_pem,
            resolve,
            ..ClientOptions::default()
        })
    }
    /// The options of the sandboxes' egress proxy: [`ProxyOptions::default`] with this
    /// section's `allow_private_cidrs`, `extra_ca_certs` (trusted for intercepted upstreams)
    /// and `resolve`, checked as in [`hook_client_options`](Self::hook_client_options). Never
    /// loopback: `permit_loopback_hooks` is for hooks only.
    pub(crate) fn egress_proxy_options(&self) -> anyhow::Result<ProxyOptions> {
        let parsed = self.hook_client_options()?;
        Ok(ProxyOptions {
            allow_private_cidrs: parsed.allow_private_cidrs,
            extra_root_certs_pem: parsed.extra_root_certs_pem,
            resolve: parsed.resolve,
            ..ProxyOptions::default()
        })
    }
}

impl ConfigFile {
    /// The options of the client that carries HTTP hooks ([`NetworkSection`]), with hookbox
    /// home `home`'s credential store for allowlist `credential`s when `home` is given. Prints
    /// a loud warning when loopback receivers are permitted.
    pub(crate) fn hook_client_options(&self, home: Option<&Path>) -> anyhow::Result<ClientOptions> {
        let mut options = self.network.hook_client_options()?;
        if let Some(home) = home {
            options.credentials = Some(crate::commands::credentials::source(home)?);
        }
        if options.permit_loopback {
            crate::render::print_error(
                "WARNING: hookbox.toml sets `[network] permit_loopback_hooks = true`: HTTP hooks \
                 may reach services on this host's loopback interface (127.0.0.0/8, ::1). Only \
                 use this for a self-hosted hook receiver you trust.\n",
            );
        }
        Ok(options)
    }

    /// The model of the agent named `name`, built and ready; an unknown name lists the
    /// configured ones.
    pub(crate) fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        let Some(config) = self.agents.get(name) else {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            if known.is_empty() {
                bail!(
                    "no agent named `{name}`: hookbox.toml configures no agents; add an \
                     [agents.\"{name}\"] table with provider and model"
                );
            }
            bail!(
                "no agent named `{name}`; configured agents: {}",
                known.join(", ")
            );
        };
        let client = hookbox_net::GuardedClient::new(&hookbox_llm::client_options())
            .context("cannot build the HTTP client")?;
        hookbox_llm::build(config, client).with_context(|| format!("cannot set up agent `{name}`"))
    }
}

/// Reads `explicit`, else `<home>/hookbox.toml` when it exists, else the defaults.
pub(crate) fn read(explicit: Option<&Path>, home: &Path) -> anyhow::Result<ConfigFile> {
    let path: PathBuf = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let path = home.join("hookbox.toml");
            if !path.exists() {
                return Ok(ConfigFile::default());
            }
            path
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    let mut file: ConfigFile =
        toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))?;
    file.network.base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(file)
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::path::Path;

    use super::ConfigFile;

    fn parse(text: &str) -> anyhow::Result<hookbox_net::ClientOptions> {
        let mut file: ConfigFile = toml::from_str(text)?;
        file.network.base = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
        file.network.hook_client_options()
    }

    fn error(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
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
        let mut file: ConfigFile = toml::from_str(
            r#"
            [network]
            permit_loopback_hooks = true
            allow_private_cidrs = ["10.77.0.0/24"]
            extra_ca_certs = ["../hookbox-test-support/fixtures/tls/ca.pem"]
            resolve = { "telemetry.example.com" = "10.77.0.2" }
            "#,
        )
        .unwrap();
        file.network.base = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
        let options = file.network.egress_proxy_options().unwrap();
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
        let default = ConfigFile::default()
            .network
            .egress_proxy_options()
            .unwrap();
        assert_eq!(default, hookbox_net::ProxyOptions::default());
    }

    #[test]
    fn bad_values_are_errors_naming_the_field() {
        let message = error("[network]\nallow_private_cidrs = [\"10.0.0.0/8\", \"10.0.0.0/33\"]");
        assert!(
            message.contains("allow_private_cidrs[1]") && message.contains("10.0.0.0/33"),
            "{message}"
        );
        let message = error("[network]\nextra_ca_certs = [\"/nonexistent/ca.pem\"]");
        assert!(
            message.contains("extra_ca_certs[0]") && message.contains("/nonexistent/ca.pem"),
            "{message}"
        );
        let message = error("[network]\nextra_ca_certs = [\"Cargo.toml\"]");
        assert!(
            message.contains("Cargo.toml") && message.contains("not a PEM"),
            "{message}"
        );
        let message = error("[network]\nresolve = { \"a.example\" = \"not-an-ip\" }");
        assert!(
            message.contains("resolve") && message.contains("a.example"),
            "{message}"
        );
        let message = error("[network]\nresolve = { \"a.example\" = [] }");
        assert!(message.contains("no address"), "{message}");
        let message = error("[network]\npermit_loopback = true");
        assert!(message.contains("permit_loopback"), "{message}");
    }
}
