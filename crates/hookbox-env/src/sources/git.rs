//! Shallow `git clone` of a repository source, through hookbox-exec, under the same rules as
//! every other connection hookbox makes for a user.
//!
//! * `https://` and `http://` repositories are cloned with git's HTTP traffic forced through a
//!   hookbox egress proxy started for the clone, whose policy admits only the repository's host
//!   (and, for `https://`, only `CONNECT` to its port, with the ClientHello's SNI checked): the
//!   address rules apply as for the sandbox (loopback, private, link-local and metadata
//!   addresses refused unless `[network] allow_private_cidrs` lists them; this host's own
//!   addresses never), the dial goes to the checked address, and a redirect elsewhere is refused.
//! * `file://` URLs and paths on this machine are cloned only when the operator allows host
//!   sources (`allow_host_sources`).
//! * Every other transport (ssh, `git://`, `ext::`, which runs commands, `fd::`, …) is refused
//!   before git runs; git itself is run with `protocol.allow=never` plus the one protocol
//!   needed, `GIT_PROTOCOL_FROM_USER=0`, an empty environment and no user or system config.
//! * A failed remote clone gets one message whatever went wrong (refused by the rules, port
//!   closed or filtered, not a repository), so an API caller cannot map the network with it.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec};
use hookbox_net::{ClientOptions, DecisionLog, EgressPolicy, EgressProxy, ProxyOptions};
use serde_json::json;

use crate::sources::repository_url::RepositoryUrl;

/// How long one clone may take.
const CLONE_TIMEOUT: Duration = Duration::from_secs(300);

/// Bytes of git's output kept for error messages.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// What a clone may reach: the operator's network settings and whether this machine's own
/// repositories may be copied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CloneRules<'a> {
    /// `allow_private_cidrs`, `resolve` and the extra trusted roots (loopback is never
    /// permitted).
    pub(crate) network: &'a ClientOptions,
    /// Whether `file://` URLs and local paths may be cloned.
    pub(crate) allow_host_sources: bool,
    /// Where the clone's trusted roots are written (this process's directory under the home).
    pub(crate) run_dir: &'a Path,
}

/// Clones `url` at `git_ref` (branch or tag; the default branch when `None`) into `dest`, which
/// must not exist, under `rules`. Returns what went wrong as a sentence.
pub(crate) async fn clone(
    url: &str,
    git_ref: Option<&str>,
    dest: &Path,
    rules: CloneRules<'_>,
) -> Result<(), String> {
    match RepositoryUrl::of(url) {
        RepositoryUrl::Unsupported(transport) => Err(format!(
            "`{url}` uses {transport}, which hookbox does not clone: only https:// and http:// \
             repositories are fetched (through the network rules), and paths on this machine \
             when the operator sets `allow_host_sources`"
        )),
        RepositoryUrl::Local if !rules.allow_host_sources => Err(format!(
            "`{url}` is a repository on this machine, which is only cloned when the operator \
             sets `allow_host_sources` (hookbox.toml `[network] allow_host_sources = true`); \
             use an https:// URL"
        )),
        RepositoryUrl::Local => match Git::new(url, git_ref, dest, "file").run(&[]).await {
            Ok(()) => Ok(()),
            Err(Failure::NotRun(problem)) => Err(problem),
            Err(Failure::Git(stderr)) => Err(format!(
                "`git clone {url}` failed: {stderr}; check the path{}",
                if git_ref.is_some() {
                    " and that `ref` names a branch or tag"
                } else {
                    ""
                }
            )),
        },
        RepositoryUrl::Http { scheme, host, port } => {
            let git = Git::new(url, git_ref, dest, scheme);
            match clone_through_proxy(&git, &host, port, rules).await {
                Ok(()) => Ok(()),
                Err(Failure::NotRun(problem)) => Err(problem),
                // git's own words would tell a refused host from a closed or filtered port.
                Err(Failure::Git(_)) => Err(format!(
                    "could not clone `{url}`{}: the host is refused by the network rules, \
                     unreachable, or does not serve that repository (hookbox does not say which); \
                     check the URL{}, and that `[network] allow_private_cidrs` lists the range of \
                     a private host",
                    git_ref.map(|r| format!(" at `{r}`")).unwrap_or_default(),
                    if git_ref.is_some() { " and `ref`" } else { "" },
                )),
            }
        }
    }
}

/// Why a clone failed.
enum Failure {
    /// git could not be run, timed out, or the clone could not be set up: the sentence to show.
    NotRun(String),
    /// git ran and failed, saying this on standard error.
    Git(String),
}

/// Runs `git` with its HTTP(S) traffic through an egress proxy admitting only `host` (and, for
/// `CONNECT`, only `port`).
async fn clone_through_proxy(
    git: &Git<'_>,
    host: &str,
    port: u16,
    rules: CloneRules<'_>,
) -> Result<(), Failure> {
    let not_run = Failure::NotRun;
    let network = rules.network;
    let proxy = EgressProxy::new(ProxyOptions {
        allow_private_cidrs: network.allow_private_cidrs.clone(),
        resolve: network.resolve.clone(),
        connect_ports: vec![port],
        ..ProxyOptions::default()
    })
    .map_err(|err| not_run(format!("cannot set up the proxy for the clone: {err}")))?;
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [{"domain": host}]})))
        .map_err(|err| not_run(format!("`{host}` is not a valid repository host: {err}")))?;
    let log: DecisionLog = Arc::new(|_| {});
    let (address, serving) = proxy
        .spawn_on_loopback(Arc::new(policy), log)
        .await
        .map_err(|err| not_run(format!("cannot open the proxy for the clone: {err}")))?;
    let bundle = match network.extra_root_certs_pem.as_slice() {
        [] => None,
        roots => Some(
            crate::egress::write_bundle(rules.run_dir, &roots.concat()).map_err(|err| {
                not_run(format!(
                    "cannot write the trusted roots for the clone: {err}"
                ))
            })?,
        ),
    };
    let mut config = vec![format!("http.proxy=http://{address}")];
    if let Some(bundle) = &bundle {
        config.push(format!("http.sslCAInfo={}", bundle.display()));
    }
    let result = git.run(&config).await;
    serving.abort();
    result
}

/// One `git clone` to run.
struct Git<'a> {
    url: &'a str,
    git_ref: Option<&'a str>,
    dest: &'a Path,
    /// The one protocol git may use.
    protocol: &'static str,
}

impl<'a> Git<'a> {
    fn new(url: &'a str, git_ref: Option<&'a str>, dest: &'a Path, protocol: &'static str) -> Self {
        Self {
            url,
            git_ref,
            dest,
            protocol,
        }
    }

    /// Runs the clone with `extra` `-c` settings.
    async fn run(&self, extra: &[String]) -> Result<(), Failure> {
        // Built from `shell` and then overridden, so fields hookbox-exec adds keep their defaults.
        let mut spec = ProcessSpec::shell("", CLONE_TIMEOUT);
        spec.program = "git".into();
        let mut args: Vec<OsString> = Vec::new();
        let protocol = self.protocol;
        for setting in [
            "protocol.allow=never".to_owned(),
            format!("protocol.{protocol}.allow=always"),
            "credential.helper=".to_owned(),
            "core.askPass=".to_owned(),
        ]
        .iter()
        .chain(extra)
        {
            args.extend(["-c".into(), setting.into()]);
        }
        args.extend(["clone", "--quiet", "--depth", "1"].map(OsString::from));
        if let Some(git_ref) = self.git_ref {
            args.extend(["--branch".into(), git_ref.into()]);
        }
        args.extend([
            "--".into(),
            self.url.into(),
            self.dest.as_os_str().to_owned(),
        ]);
        spec.args = args;
        spec.env_clear = true;
        let home = self.dest.parent().unwrap_or(self.dest);
        spec.env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), home.as_os_str().to_owned()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ("GIT_PROTOCOL_FROM_USER".into(), "0".into()),
            ("GIT_ALLOW_PROTOCOL".into(), protocol.into()),
        ];
        spec.output_limit = OUTPUT_LIMIT;
        let output = hookbox_exec::run(&spec).await.map_err(|err| {
            Failure::NotRun(format!(
                "{err}; install git, or use an inline or local source"
            ))
        })?;
        match output.exit {
            ExitKind::Exited(0) => Ok(()),
            ExitKind::TimedOut => Err(Failure::NotRun(format!(
                "`git clone {}` did not finish within {} s",
                self.url,
                CLONE_TIMEOUT.as_secs()
            ))),
            ExitKind::Exited(_) | ExitKind::Signaled(_) => {
                Err(Failure::Git(output.stderr.to_text().trim().to_owned()))
            }
        }
    }
}
