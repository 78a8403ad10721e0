//! `hookbox.toml`, the one settings type of every interface (`--config FILE`, else
//! `$HOOKBOX_HOME/hookbox.toml`, else defaults). Relative paths in it (`agents.*.script`,
//! `[network] extra_ca_certs`) are resolved against the file's directory when it is read.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use hookbox_env::{DEFAULT_CODE_TIMEOUT, DiskBudget};
use hookbox_llm::{Model, ModelConfig};
use hookbox_net::{ClientOptions, IpNet, ProxyOptions};
use serde::Deserialize;

/// The whole file, and the hookbox home it configures.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The hookbox home (`$HOOKBOX_HOME`): the store, environments and credentials live below
    /// it.
    #[serde(skip)]
    pub home: PathBuf,
    /// The file this was read from (`None`: the defaults); errors name it.
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// `[server]`.
    #[serde(default)]
    pub server: ServerSection,
    /// `[agents."NAME"]`: the models requests and commands select by name.
    #[serde(default)]
    pub agents: BTreeMap<String, ModelConfig>,
    /// `[network]`: how the HTTP hooks' client reaches its receivers.
    #[serde(default)]
    pub network: NetworkSection,
    /// `[sdk]`: SDK mode (the stream-json protocol the Python agent SDKs speak).
    #[serde(default)]
    pub sdk: SdkSection,
    /// `[sandbox]`: what each environment's sandbox may use.
    #[serde(default)]
    pub sandbox: SandboxSection,
    /// `[audit]`: durable delivery of `at_least_once` HTTP hooks.
    #[serde(default)]
    pub audit: crate::audit::AuditSection,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Size of each new environment's file system in bytes (default 2 GiB).
    pub disk_bytes: Option<u64>,
    /// Inodes (files, directories, links) of each new environment's file system (default
    /// 100,000, or one per KiB of `disk_bytes` if that is fewer).
    pub disk_inodes: Option<u64>,
    /// The time limit of one `code_execution` in seconds (default 300); the model may ask for
    /// less with the tool's `timeout` argument, never for more.
    pub code_timeout_secs: Option<u64>,
}

impl SandboxSection {
    /// The disk budget of new environments: [`DiskBudget::DEFAULT`] with this section applied,
    /// checked (errors name the field).
    pub fn disk_budget(&self) -> anyhow::Result<DiskBudget> {
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

    /// The time limit of one `code_execution`: `code_timeout_secs`, checked (1 second to one
    /// day), else [`DEFAULT_CODE_TIMEOUT`].
    pub fn code_timeout(&self) -> anyhow::Result<Duration> {
        match self.code_timeout_secs {
            None => Ok(DEFAULT_CODE_TIMEOUT),
            Some(seconds @ 1..=MAX_CODE_TIMEOUT_SECS) => Ok(Duration::from_secs(seconds)),
            Some(seconds) => bail!(
                "invalid `[sandbox] code_timeout_secs` in hookbox.toml: {seconds}; give a whole \
                 number of seconds from 1 to {MAX_CODE_TIMEOUT_SECS} (one day)"
            ),
        }
    }
}

/// The longest `[sandbox] code_timeout_secs` accepted: one day.
const MAX_CODE_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// `[sdk]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkSection {
    /// The agent an SDK session uses when the SDK passes no `--model`.
    pub default_agent: Option<String>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// The address `hookbox serve` listens on (default `127.0.0.1:8080`).
    pub listen: Option<String>,
    /// Largest request body in bytes (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// Largest file a resumable upload may declare, in bytes (default 1 GiB).
    pub max_upload_bytes: Option<u64>,
    /// Whether environment sources may read this host's filesystem (default `false`).
    pub allow_host_sources: Option<bool>,
    /// Model turns an interaction may take (default 32, at least 1).
    pub max_turns: Option<u32>,
    /// Tokens an interaction may use (default: no limit).
    pub max_tokens: Option<u64>,
    /// Host names answered besides the listen address (421 for others).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Connections served at once (503 above).
    pub max_connections: Option<usize>,
    /// Seconds to wait for a request's headers.
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds a request body may pause.
    pub idle_timeout_secs: Option<u64>,
}

/// `[network]`: address rules, extra trust roots and static name overrides for the client that
/// carries HTTP hooks. Relative `extra_ca_certs` paths are relative to the config file
/// ([`Config::read`] resolves them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Let HTTP hooks reach loopback receivers (default `false`; hooks only, never models).
    #[serde(default)]
    pub permit_loopback_hooks: bool,
    /// Non-public ranges HTTP hooks may reach anyway, e.g. `"10.77.0.0/24"`.
    #[serde(default)]
    pub allow_private_cidrs: Vec<String>,
    /// PEM files of extra root certificates trusted for HTTP hooks.
    #[serde(default)]
    pub extra_ca_certs: Vec<PathBuf>,
    /// Static name overrides like curl's `--resolve`: a name to one address or a list of them.
    #[serde(default)]
    pub resolve: BTreeMap<String, Addresses>,
    /// Let `hookbox env create`/`update` clone `repository` sources that are paths or
    /// `file://` URLs on this machine (default `false`; remote clones follow the rules above).
    #[serde(default)]
    pub allow_host_sources: bool,
}

/// One address or several, as `[network] resolve` values.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Addresses {
    /// `"10.77.0.2"`.
    One(String),
    /// `["10.77.0.2", "10.77.0.3"]`.
    Many(Vec<String>),
}

impl NetworkSection {
    /// The options of the client that carries HTTP hooks: [`ClientOptions::default`] with this
    /// section applied. Every value is checked here; errors name the field, and the file for
    /// `extra_ca_certs`.
    pub fn hook_client_options(&self) -> anyhow::Result<ClientOptions> {
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
            let pem = std::fs::read(path).with_context(|| {
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
    pub fn egress_proxy_options(&self) -> anyhow::Result<ProxyOptions> {
        let parsed = self.hook_client_options()?;
        Ok(ProxyOptions {
            allow_private_cidrs: parsed.allow_private_cidrs,
            extra_root_certs_pem: parsed.extra_root_certs_pem,
            resolve: parsed.resolve,
            ..ProxyOptions::default()
        })
    }
}

/// Model turns per interaction unless `[server] max_turns` says otherwise.
const DEFAULT_MAX_TURNS: u32 = 32;

impl Config {
    /// The defaults for hookbox home `home` (no file).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            ..Self::default()
        }
    }

    /// Reads `explicit`, else `<home>/hookbox.toml` when it exists, else the defaults, for
    /// hookbox home `home`; relative paths in the file are resolved against its directory.
    pub fn read(explicit: Option<&Path>, home: &Path) -> anyhow::Result<Self> {
        let path: PathBuf = match explicit {
            Some(path) => path.to_path_buf(),
            None => {
                let path = home.join("hookbox.toml");
                if !path.exists() {
                    return Ok(Self::new(home));
                }
                path
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        Self::parse(&text, &path, home)
    }

    /// Parses `text`, the contents of the file at `path`, for hookbox home `home`; relative
    /// paths in it are resolved against `path`'s directory.
    pub fn parse(text: &str, path: &Path, home: &Path) -> anyhow::Result<Self> {
        let mut config: Self = toml::from_str(text)
            .with_context(|| format!("invalid config file {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new(""));
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        for agent in config.agents.values_mut() {
            if let Some(script) = &mut agent.script {
                *script = base.join(&*script);
            }
        }
        for certificate in &mut config.network.extra_ca_certs {
            *certificate = base.join(&*certificate);
        }
        config.home = home.to_path_buf();
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// How errors name this file: its path, or `hookbox.toml` for the defaults.
    pub fn name(&self) -> String {
        self.file.as_ref().map_or_else(
            || "hookbox.toml".to_owned(),
            |path| path.display().to_string(),
        )
    }

    /// `[server] max_turns`, checked (at least 1), else 32.
    pub fn max_turns(&self) -> anyhow::Result<u32> {
        match self.server.max_turns {
            Some(0) => bail!("invalid config: `[server] max_turns` must be at least 1"),
            Some(turns) => Ok(turns),
            None => Ok(DEFAULT_MAX_TURNS),
        }
    }

    /// The model of the agent named `name`, built with a client of its own; an unknown name
    /// lists the configured ones, and every agent is checked first. For callers without a
    /// [`Runtime`](crate::Runtime) (SDK mode); [`Agents::model`](crate::Agents::model) shares
    /// one client.
    pub fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        let client = hookbox_net::GuardedClient::new(&hookbox_llm::client_options())
            .context("cannot build the HTTP client")?;
        crate::Agents::new(self, client)?.model(name)
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
        read(text)?.network.hook_client_options()
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
        let default = Config::default().network.egress_proxy_options().unwrap();
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
