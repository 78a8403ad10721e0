//! The egress policy of one environment (its `network` member): which hosts requests may go to,
//! and which headers are injected on the way.
//!
//! The policy is decided on the canonical host name before any DNS lookup; the address rules
//! (see [`ClientOptions`](crate::ClientOptions)) then apply to whatever the name resolves to.

mod lists;
mod parse;
mod pattern;

use std::fmt;

use serde_json::Value;

use crate::credentials::{Credential, CredentialSource};
use crate::{headers, host};
pub use lists::{DomainError, DomainList};
pub(crate) use pattern::Pattern;

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
    Lists(lists::Lists),
}

/// One `network.allowlist[]` entry.
#[derive(Clone, PartialEq, Eq)]
struct Entry {
    pattern: Pattern,
    transform: Vec<(String, String)>,
    credential: Option<CredentialRef>,
}

/// An entry's `credential`: the id it names and, once resolved, the credential itself.
#[derive(Clone, PartialEq, Eq)]
struct CredentialRef {
    id: String,
    resolved: Option<Credential>,
}

/// Why a credential could not be resolved (never holding its value).
enum Unresolved {
    /// No source was given to resolve it.
    NoSource,
    /// The source has no credential of that id.
    Unknown,
    /// The source failed to read it, or its header is not valid.
    Failed(String),
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
pub struct EgressDecision {
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

    /// A policy of domain lists (SDK sessions: hookbox.toml's `[sdk]` and the settings'
    /// `sandbox.network`): a host is admitted when an entry of **every** list of `allow`
    /// matches it and no entry of any list of `deny` does (denied wins). With no allow list,
    /// or an empty one, nothing is admitted: the policy is [`DISABLED`](Self::DISABLED).
    /// Nothing is injected; the address rules still apply.
    pub fn from_domain_lists(allow: Vec<DomainList>, deny: Vec<DomainList>) -> Self {
        if allow.is_empty() || allow.iter().any(DomainList::is_empty) {
            return Self::DISABLED;
        }
        Self {
            mode: Mode::Lists(lists::Lists { allow, deny }),
        }
    }

    /// Parses `network` like [`from_network`](Self::from_network), then resolves every
    /// allowlist entry's `credential` through `credentials`, so requests the entry admits carry
    /// it. A credential that `credentials` does not have, cannot read, whose header is not a
    /// valid HTTP header, or whose domains do not cover the entry's `domain` (every host the
    /// entry matches must be one the credential may be sent to) is an error naming
    /// `network.allowlist[i].credential` (never the value).
    pub fn from_network_with_credentials(
        network: Option<&Value>,
        credentials: &dyn CredentialSource,
    ) -> Result<Self, PolicyError> {
        parse::network(network)?.resolve_credentials(credentials)
    }

    /// This policy with every allowlist entry's `credential` resolved through `credentials`
    /// (entries resolved before are looked up again); errors as in
    /// [`from_network_with_credentials`](Self::from_network_with_credentials).
    pub fn resolve_credentials(
        mut self,
        credentials: &dyn CredentialSource,
    ) -> Result<Self, PolicyError> {
        if let Mode::Allowlist(entries) = &mut self.mode {
            for (index, entry) in entries.iter_mut().enumerate() {
                let Some(credential) = &mut entry.credential else {
                    continue;
                };
                let path = format!("network.allowlist[{index}].credential");
                credential.resolved = match lookup(&credential.id, credentials) {
                    Ok(resolved) => {
                        check_domains(&resolved, &entry.pattern, &credential.id)
                            .map_err(|reason| PolicyError { path, reason })?;
                        Some(resolved)
                    }
                    Err(Unresolved::Unknown | Unresolved::NoSource) => {
                        return Err(PolicyError {
                            path,
                            reason: format!(
                                "names credential `{}`, which this server does not have (add it \
                                 with `hookbox credentials add {} --domain HOST`)",
                                credential.id, credential.id
                            ),
                        });
                    }
                    Err(Unresolved::Failed(reason)) => {
                        return Err(PolicyError {
                            path,
                            reason: format!("credential `{}`: {reason}", credential.id),
                        });
                    }
                };
            }
        }
        Ok(self)
    }

    /// Decides whether `host` (as written in a URL: a domain name or an IP literal) may be
    /// contacted, before any DNS lookup. The host is canonicalized first (lowercase, one
    /// trailing dot removed, IDNA to ASCII); a host without a canonical form is refused.
    ///
    /// Allowlist entries are tried in the order they are listed and the **first** matching entry
    /// decides alone: its `transform` is injected, then its `credential` (replacing a
    /// `transform` header of the same name), and later entries are ignored, so put specific
    /// entries (with their transforms) before broad ones such as `*`. An entry whose
    /// `credential` was not resolved (the policy was parsed with
    /// [`from_network`](Self::from_network)) refuses the request rather than send it without
    /// its secret; see [`decide_with_credentials`](Self::decide_with_credentials).
    pub fn decide(&self, host: &str) -> EgressDecision {
        self.decide_inner(host, None)
    }

    /// Whether this policy has an entry for the host of `url`: public egress does, `"disabled"`
    /// does not, an allowlist does when one of its entries matches the host (whether that
    /// entry's credential can be resolved is decided when a request is made). A URL without a
    /// host, or one that does not parse, matches nothing.
    pub fn matches_url(&self, url: &str) -> bool {
        let Some(host) = reqwest::Url::parse(url)
            .ok()
            .and_then(|url| url.host_str().and_then(|host| host::canonical(host).ok()))
        else {
            return false;
        };
        match &self.mode {
            Mode::Public => true,
            Mode::Disabled => false,
            Mode::Allowlist(entries) => entries.iter().any(|entry| entry.pattern.matches(&host)),
            Mode::Lists(lists) => lists.decide(&host).is_ok(),
        }
    }

    /// Like [`decide`](Self::decide), but a matching entry's `credential` that was not resolved
    /// when the policy was built is looked up in `credentials` now; when it is unknown or
    /// unreadable the request is refused with a reason naming the credential (never its value).
    pub fn decide_with_credentials(
        &self,
        host: &str,
        credentials: &dyn CredentialSource,
    ) -> EgressDecision {
        self.decide_inner(host, Some(credentials))
    }

    fn decide_inner(
        &self,
        host: &str,
        credentials: Option<&dyn CredentialSource>,
    ) -> EgressDecision {
        if self.mode == Mode::Disabled {
            return EgressDecision::refused(
                "the egress policy is \"disabled\": no egress".to_owned(),
            );
        }
        let canonical = match host::canonical(host) {
            Ok(canonical) => canonical,
            Err(error) => return EgressDecision::refused(error.to_string()),
        };
        let entries = match &self.mode {
            Mode::Allowlist(entries) => entries,
            Mode::Lists(lists) => {
                return match lists.decide(&canonical) {
                    Ok(reason) => EgressDecision {
                        allowed: true,
                        inject: Vec::new(),
                        reason,
                    },
                    Err(reason) => EgressDecision::refused(reason),
                };
            }
            Mode::Public | Mode::Disabled => {
                return EgressDecision {
                    allowed: true,
                    inject: Vec::new(),
                    reason: "no `network` policy: public egress".to_owned(),
                };
            }
        };
        let Some((index, entry)) = entries
            .iter()
            .enumerate()
            .find(|(_, entry)| entry.pattern.matches(&canonical))
        else {
            return EgressDecision::refused(format!(
                "host `{canonical}` matches no entry of `network.allowlist`"
            ));
        };
        let rule = format!("`network.allowlist[{index}]` (`{}`)", entry.pattern);
        let Some(credential) = &entry.credential else {
            return EgressDecision {
                allowed: true,
                inject: entry.transform.clone(),
                reason: format!("host `{canonical}` matches {rule}"),
            };
        };
        let id = &credential.id;
        let resolved = match (&credential.resolved, credentials) {
            (Some(resolved), _) => Ok(resolved.clone()),
            (None, Some(source)) => lookup(id, source),
            (None, None) => Err(Unresolved::NoSource),
        };
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(unresolved) => {
                let why = match unresolved {
                    Unresolved::NoSource => {
                        "no credential store was given to resolve it".to_owned()
                    }
                    Unresolved::Unknown => format!(
                        "which this server does not have (add it with `hookbox credentials add \
                         {id} --domain HOST`)"
                    ),
                    Unresolved::Failed(reason) => format!("which cannot be used: {reason}"),
                };
                return EgressDecision::refused(format!(
                    "host `{canonical}` matches {rule}, which needs credential `{id}`, {why}; \
                     the request is refused rather than sent without its secret"
                ));
            }
        };
        if !resolved.may_go_to(&canonical) {
            return EgressDecision::refused(format!(
                "host `{canonical}` matches {rule}, whose credential `{id}` may not be sent there \
                 (it may only go to {}); the request is refused rather than sent without it",
                quoted(resolved.domains())
            ));
        }
        let mut inject: Vec<(String, String)> = entry
            .transform
            .iter()
            .filter(|(name, _)| !name.eq_ignore_ascii_case(resolved.header()))
            .cloned()
            .collect();
        let header = resolved.header().to_owned();
        inject.push((header.clone(), resolved.value().to_owned()));
        EgressDecision {
            allowed: true,
            inject,
            reason: format!(
                "host `{canonical}` matches {rule}; credential `{id}` injected as `{header}`"
            ),
        }
    }
}

/// Checks that `credential` (named `id`) may be sent to every host `pattern` matches.
fn check_domains(credential: &Credential, pattern: &Pattern, id: &str) -> Result<(), String> {
    let patterns = credential
        .patterns()
        .map_err(|reason| format!("credential `{id}` cannot be used: {reason}"))?;
    if patterns.iter().any(|allowed| allowed.covers(pattern)) {
        return Ok(());
    }
    Err(format!(
        "binds credential `{id}` to `{pattern}`, but that credential may only be sent to {}; \
         name a domain it lists, or re-add it with that domain too (`hookbox credentials add \
         {id} --domain …`)",
        quoted(credential.domains())
    ))
}

/// `a`, `b` as backquoted, comma-separated text.
fn quoted(domains: &[String]) -> String {
    domains
        .iter()
        .map(|domain| format!("`{domain}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks credential `id` up in `source` and checks that it makes a valid header.
fn lookup(id: &str, source: &dyn CredentialSource) -> Result<Credential, Unresolved> {
    let credential = source
        .credential(id)
        .map_err(Unresolved::Failed)?
        .ok_or(Unresolved::Unknown)?;
    headers::validate(credential.header(), credential.value()).map_err(|reason| {
        Unresolved::Failed(format!(
            "its header `{}` is not valid: {reason}",
            credential.header()
        ))
    })?;
    Ok(credential)
}

impl EgressDecision {
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
            Mode::Lists(lists) => formatter
                .debug_tuple("EgressPolicy::Lists")
                .field(lists)
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
            .field(
                "credential",
                &self.credential.as_ref().map(|credential| &credential.id),
            )
            .finish()
    }
}

impl fmt::Debug for EgressDecision {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("EgressDecision")
            .field("allowed", &self.allowed)
            .field("inject_headers", &names(&self.inject))
            .field("reason", &self.reason)
            .finish()
    }
}
