//! Policies made of domain lists, as Claude Code's `sandbox.network.allowedDomains` /
//! `deniedDomains` and hookbox.toml's `[sdk] allowed_domains` / `denied_domains` write them: a
//! host goes out when every allow list admits it and no deny list names it.

use std::fmt;

use super::pattern::Pattern;

/// One list of domain patterns (`*`, `*.example.com` for strict subdomains, or an exact host,
/// canonicalized like request hosts), possibly gathered from several files: each entry
/// remembers the file it came from, so a refusal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainList {
    /// What the list is, for reasons: `` `[sdk] allowed_domains` ``.
    name: String,
    entries: Vec<ListEntry>,
}

/// One pattern and the file that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ListEntry {
    pattern: Pattern,
    file: String,
}

/// An entry of a domain list that is not a domain pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {index} ({entry:?}) is not a domain pattern: {problem}; {hint}", hint = Self::HINT)]
pub struct DomainError {
    /// Its index in the list as written.
    pub index: usize,
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub problem: String,
}

impl DomainError {
    /// What to write instead.
    pub const HINT: &'static str = "write a host such as \"api.example.com\", \"*.example.com\" \
                                    (its subdomains) or \"*\" (no scheme, port or path)";
}

impl DomainList {
    /// An empty list called `name` in reasons (`` `[sdk] allowed_domains` ``).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            entries: Vec::new(),
        }
    }

    /// Adds `domains`, written in `file`; the first entry that is not a pattern is an error
    /// and nothing of `domains` is added.
    pub fn add<S: AsRef<str>>(&mut self, file: &str, domains: &[S]) -> Result<(), DomainError> {
        let mut added = Vec::with_capacity(domains.len());
        for (index, domain) in domains.iter().enumerate() {
            let entry = domain.as_ref();
            let pattern = Pattern::parse(entry.trim()).map_err(|problem| DomainError {
                index,
                entry: entry.to_owned(),
                problem,
            })?;
            added.push(ListEntry {
                pattern,
                file: file.to_owned(),
            });
        }
        self.entries.extend(added);
        Ok(())
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The first entry matching the canonical `host`.
    fn matching(&self, host: &str) -> Option<&ListEntry> {
        self.entries
            .iter()
            .find(|entry| entry.pattern.matches(host))
    }
}

/// The lists of one policy: allow lists that must all admit a host, and deny lists any of which
/// refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lists {
    pub(super) allow: Vec<DomainList>,
    pub(super) deny: Vec<DomainList>,
}

impl Lists {
    /// `Ok(reason)` when the canonical `host` is admitted, `Err(reason)` when it is refused.
    pub(super) fn decide(&self, host: &str) -> Result<String, String> {
        for list in &self.deny {
            if let Some(entry) = list.matching(host) {
                return Err(format!(
                    "host `{host}` is denied by `{}` of {} in {} (denied domains win over \
                     allowed ones)",
                    entry.pattern, list.name, entry.file
                ));
            }
        }
        let mut admitted = Vec::with_capacity(self.allow.len());
        for list in &self.allow {
            match list.matching(host) {
                Some(entry) => admitted.push(format!(
                    "`{}` of {} in {}",
                    entry.pattern, list.name, entry.file
                )),
                None => {
                    return Err(format!(
                        "host `{host}` is not allowed: it matches no entry of {} ({})",
                        list.name, list
                    ));
                }
            }
        }
        Ok(format!("host `{host}` matches {}", admitted.join(" and ")))
    }
}

impl fmt::Display for DomainList {
    /// The patterns, comma-separated (`it is empty` for an empty list).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return formatter.write_str("it is empty");
        }
        let patterns: Vec<String> = self
            .entries
            .iter()
            .map(|entry| format!("`{}`", entry.pattern))
            .collect();
        formatter.write_str(&patterns.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EgressPolicy;

    fn list(name: &str, file: &str, domains: &[&str]) -> DomainList {
        let mut list = DomainList::new(name);
        list.add(file, domains).unwrap();
        list
    }

    #[test]
    fn every_allow_list_must_admit_and_any_deny_list_refuses() {
        let ceiling = list(
            "`[sdk] allowed_domains`",
            "hookbox.toml",
            &["*.example.com"],
        );
        let settings = list(
            "`sandbox.network.allowedDomains`",
            "settings.json",
            &["api.example.com", "other.test"],
        );
        let denied = list(
            "`sandbox.network.deniedDomains`",
            "settings.json",
            &["*.api.example.com"],
        );
        let policy = EgressPolicy::from_domain_lists(vec![ceiling, settings], vec![denied]);
        let api = policy.decide("API.example.com.");
        assert!(api.allowed, "{api:?}");
        assert!(api.inject.is_empty());
        assert!(
            api.reason
                .contains("`*.example.com` of `[sdk] allowed_domains` in hookbox.toml")
                && api
                    .reason
                    .contains("`api.example.com` of `sandbox.network.allowedDomains`"),
            "{api:?}"
        );
        // In the settings' list, but above the ceiling.
        let other = policy.decide("other.test");
        assert!(!other.allowed, "{other:?}");
        assert!(
            other.reason.contains("`[sdk] allowed_domains`")
                && other.reason.contains("`*.example.com`"),
            "{other:?}"
        );
        // Under the ceiling, but not in the settings' narrower list.
        let www = policy.decide("www.example.com");
        assert!(!www.allowed, "{www:?}");
        assert!(
            www.reason.contains("sandbox.network.allowedDomains"),
            "{www:?}"
        );
        // Denied wins, and says where.
        let deep = policy.decide("v1.api.example.com");
        assert!(!deep.allowed, "{deep:?}");
        assert!(
            deep.reason.contains("denied by `*.api.example.com`")
                && deep.reason.contains("settings.json"),
            "{deep:?}"
        );
        // The apex is not a subdomain.
        assert!(!policy.decide("example.com").allowed);
    }

    #[test]
    fn no_list_or_an_empty_list_admits_nothing() {
        assert_eq!(
            EgressPolicy::from_domain_lists(Vec::new(), Vec::new()),
            EgressPolicy::DISABLED
        );
        let any = list("a", "f", &["*"]);
        let empty = DomainList::new("b");
        assert_eq!(
            EgressPolicy::from_domain_lists(vec![any.clone(), empty], Vec::new()),
            EgressPolicy::DISABLED
        );
        let open = EgressPolicy::from_domain_lists(vec![any], Vec::new());
        assert!(open.decide("anything.test").allowed);
    }

    #[test]
    fn bad_entries_name_their_index_and_add_nothing() {
        let mut domains = DomainList::new("x");
        for bad in [
            "https://example.com",
            "example.com:443",
            "a.*.com",
            "",
            "*.10.0.0.1",
        ] {
            let error = domains.add("f", &["ok.test", bad]).unwrap_err();
            assert_eq!(error.index, 1, "{bad}");
            assert_eq!(error.entry, bad);
            assert!(error.to_string().contains("\"*.example.com\""), "{error}");
        }
        assert!(domains.is_empty());
    }
}
