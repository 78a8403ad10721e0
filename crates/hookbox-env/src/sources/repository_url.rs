//! What a `repository` source's URL asks git to do: clone over HTTP(S) from a host (through
//! the network rules), copy a repository of this machine (only with `allow_host_sources`), or
//! something hookbox refuses (ssh, `git://`, `ext::`, `fd::`, any other transport), since those
//! would connect or run outside the network rules.

/// One classified repository URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RepositoryUrl {
    /// `https://HOST[:PORT]/…` or `http://…`.
    Http {
        /// `https` or `http`, the one protocol git may use.
        scheme: &'static str,
        /// The host as written (an IP literal keeps its brackets).
        host: String,
        /// The explicit port, else 443 or 80.
        port: u16,
    },
    /// `file://…` or a path on this machine.
    Local,
    /// Any other transport, named for the error message.
    Unsupported(String),
}

impl RepositoryUrl {
    /// Classifies `url` as git would read it.
    pub(crate) fn of(url: &str) -> Self {
        if let Some(index) = url.find("::") {
            let before = &url[..index];
            if !before.is_empty() && !before.contains(['/', ':']) {
                return Self::Unsupported(format!("{before}::"));
            }
        }
        if let Some((scheme, rest)) = url.split_once("://") {
            return match scheme.to_ascii_lowercase().as_str() {
                "https" => http("https", rest, 443),
                "http" => http("http", rest, 80),
                "file" => Self::Local,
                other => Self::Unsupported(format!("{other}://")),
            };
        }
        // scp-like `[user@]host:path`: a colon before any slash.
        match (url.find(':'), url.find('/')) {
            (Some(colon), Some(slash)) if colon > 0 && colon < slash => {
                Self::Unsupported("ssh (`host:path`)".to_owned())
            }
            (Some(colon), None) if colon > 0 => Self::Unsupported("ssh (`host:path`)".to_owned()),
            _ => Self::Local,
        }
    }
}

/// `HOST[:PORT]/…` after `scheme://`: the host (user info dropped) and port.
fn http(scheme: &'static str, rest: &str, default_port: u16) -> RepositoryUrl {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => match port.parse::<u16>() {
            Ok(port) if port > 0 => (host, port),
            _ => return RepositoryUrl::Unsupported(format!("a URL with port `{port}`")),
        },
        _ => (authority, default_port),
    };
    if host.is_empty() {
        return RepositoryUrl::Unsupported("a URL without a host".to_owned());
    }
    RepositoryUrl::Http {
        scheme,
        host: host.to_owned(),
        port,
    }
}

#[cfg(test)]
mod tests {
    use super::RepositoryUrl;

    fn http(scheme: &'static str, host: &str, port: u16) -> RepositoryUrl {
        RepositoryUrl::Http {
            scheme,
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn urls_are_told_apart_as_git_reads_them() {
        for (url, expected) in [
            (
                "https://github.com/a/b.git",
                http("https", "github.com", 443),
            ),
            (
                "HTTP://u:p@Example.com:8080/r?x#y",
                http("http", "Example.com", 8080),
            ),
            ("https://[::1]:9/r", http("https", "[::1]", 9)),
            ("http://[::1]/r", http("http", "[::1]", 80)),
            ("file:///srv/repo", RepositoryUrl::Local),
            ("/srv/repo", RepositoryUrl::Local),
            ("./repo", RepositoryUrl::Local),
            ("repo", RepositoryUrl::Local),
        ] {
            assert_eq!(RepositoryUrl::of(url), expected, "{url}");
        }
        for url in [
            "ext::sh -c touch% /tmp/pwned",
            "fd::17",
            "git@github.com:a/b.git",
            "host:path",
            "ssh://git@github.com/a/b.git",
            "git://github.com/a/b.git",
            "https:///nohost",
            "https://h:0/r",
            "https://h:x/r",
        ] {
            assert!(
                matches!(RepositoryUrl::of(url), RepositoryUrl::Unsupported(_)),
                "{url}"
            );
        }
    }
}
