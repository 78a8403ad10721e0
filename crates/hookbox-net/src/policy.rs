//! The egress policy of one environment (its `network` member): which hosts requests may go to,
//! and which headers are injected on the way.
//!
//! The policy is decided on the canonical host name before any DNS lookup; the address rules
//! (see [`ClientOptions`](crate::ClientOptions)) then apply to whatever the name resolves to.

mod parse;
mod pattern;

use std::fmt;

use serde_json::Value;

use crate::host;
use pattern::Pattern;

/// Where requests may go, parsed from an environment's `network` member with
/// [`EgressPolicy::from_network`]. `Debug` output never shows `transform` header values.
#[derive(Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    mode: Mode,
}

#[derive(Clone, PartialEq, Eq)]
enum Mode {
    Public,
    Disabled,
    Allowlist(Vec<Entry>),
}

/// One `network.allowlist[]` entry.
#[derive(Clone, PartialEq, Eq)]
struct Entry {
    pattern: Pattern,
    transform: Vec<(String, String)>,
    credential: Option<String>,
}

/// A `network` value that is not a valid policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid egress policy: `{path}` {reason}")]
pub struct PolicyError {
    /// The JSON path of the offending value, e.g. `network.allowlist[2].domain`.
    pub path: String,
    /// What is wrong with it (never a header value).
    pub reason: String,
}

/// The policy's answer for one host. `Debug` output shows injected header names only.
#[derive(Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether requests to the host may be sent.
    pub allowed: bool,
    /// Headers to set on the request, replacing configured headers of the same name (the
    /// matching entry's `transform`, in order).
    pub inject: Vec<(String, String)>,
    /// Which rule decided, for traces and error messages.
    pub reason: String,
}

impl EgressPolicy {
    /// `network` omitted: public egress, nothing injected (the address rules still apply).
    pub const PUBLIC: Self = Self { mode: Mode::Public };

    /// `network: "disabled"`: no egress at all.
    pub const DISABLED: Self = Self {
        mode: Mode::Disabled,
    };

    /// Parses an environment's `network` member (`None` when it is absent): `"disabled"`,
    /// `{"allowlist": "disabled"}`, or `{"allowlist": [{"domain", "transform"?, "credential"?},
    /// …]}`. Absent, `null` and `{}` mean public egress. Domains are canonicalized like request
    /// hosts; `transform` is an object of headers or a list of such objects; unknown members are
    /// refused.
    pub fn from_network(network: Option<&Value>) -> Result<Self, PolicyError> {
        parse::network(network)
    }

    /// Decides whether `host` (as written in a URL: a domain name or an IP literal) may be
    /// contacted, before any DNS lookup. The host is canonicalized first (lowercase, one
    /// trailing dot removed, IDNA to ASCII); a host without a canonical form is refused.
    ///
    /// Allowlist entries are tried in the order they are listed and the **first** matching entry
    /// decides alone: its `transform` is injected and later entries are ignored, so put specific
    /// entries (with their transforms) before broad ones such as `*`. An entry with a
    /// `credential` refuses the request, because hookbox cannot resolve credentials yet and will
    /// not send a request without its secret.
    pub fn decide(&self, host: &str) -> Decision {
        if self.mode == Mode::Disabled {
            return Decision::refused("the egress policy is \"disabled\": no egress".to_owned());
        }
        let canonical = match host::canonical(host) {
            Ok(canonical) => canonical,
            Err(error) => return Decision::refused(error.to_string()),
        };
        let Mode::Allowlist(entries) = &self.mode else {
            return Decision {
                allowed: true,
                inject: Vec::new(),
                reason: "no `network` policy: public egress".to_owned(),
            };
        };
        let Some((index, entry)) = entries
            .iter()
            .enumerate()
            .find(|(_, entry)| entry.pattern.matches(&canonical))
        else {
            return Decision::refused(format!(
                "host `{canonical}` matches no entry of `network.allowlist`"
            ));
        };
        let rule = format!("`network.allowlist[{index}]` (`{}`)", entry.pattern);
        if let Some(credential) = &entry.credential {
            return Decision::refused(format!(
                "host `{canonical}` matches {rule}, which needs credential `{credential}`; \
                 credentials cannot be resolved yet, so the request is refused rather than sent \
                 without its secret"
            ));
        }
        Decision {
            allowed: true,
            inject: entry.transform.clone(),
            reason: format!("host `{canonical}` matches {rule}"),
        }
    }
}

impl Decision {
    fn refused(reason: String) -> Self {
        Self {
            allowed: false,
            inject: Vec::new(),
            reason,
        }
    }
}

/// Header names of `pairs`, for `Debug` output that must not show secret values.
fn names(pairs: &[(String, String)]) -> Vec<&str> {
    pairs.iter().map(|(name, _)| name.as_str()).collect()
}

impl fmt::Debug for EgressPolicy {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mode {
            Mode::Public => formatter.write_str("EgressPolicy::Public"),
            Mode::Disabled => formatter.write_str("EgressPolicy::Disabled"),
            Mode::Allowlist(entries) => formatter
                .debug_tuple("EgressPolicy::Allowlist")
                .field(entries)
                .finish(),
        }
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Entry")
            .field("domain", &self.pattern.to_string())
            .field("transform_headers", &names(&self.transform))
            .field("credential", &self.credential)
            .finish()
    }
}

impl fmt::Debug for Decision {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Decision")
            .field("allowed", &self.allowed)
            .field("inject_headers", &names(&self.inject))
            .field("reason", &self.reason)
            .finish()
    }
}
