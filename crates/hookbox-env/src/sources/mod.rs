//! The `sources` of an environment spec: what to put where in the sandbox, and how they get
//! there: repository clones (`git`), Cloud Storage copies (`gcs`), and writing them all into a
//! staged root (`materialise`).

pub(crate) mod gcs;
pub(crate) mod git;
pub(crate) mod materialise;
mod repository_url;

use std::path::PathBuf;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use serde_json::{Map, Value};

use crate::json::{self, SpecError, member};
use crate::sandbox_path::SandboxPath;
use crate::target::Target;
use repository_url::RepositoryUrl;

/// The source types hookbox understands, for error messages.
const SOURCE_TYPES: &str = "inline, repository, gcs, local";

/// One validated source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `{"type":"inline","target","content","encoding"?}`: one file with the given bytes.
    Inline {
        /// Where the file goes.
        target: Target,
        /// The file's bytes (base64 already decoded).
        content: Vec<u8>,
    },
    /// `{"type":"repository","source","target"?,"ref"?}`: a shallow `git clone`.
    Repository {
        /// A git URL or a local repository path.
        url: String,
        /// Branch or tag to check out (`git clone --branch`); the default branch when absent.
        git_ref: Option<String>,
        /// Directory the working tree goes to; `workspace/<repo-name>` by default.
        target: Target,
    },
    /// `{"type":"gcs","source":"gs://BUCKET/PREFIX","target"?,"credential"?}`: a copy of every
    /// Cloud Storage object under `PREFIX` (names below it become paths below the target),
    /// fetched through hookbox-net's guarded client.
    CloudStorage {
        /// The bucket name.
        bucket: String,
        /// The object-name prefix, empty or ending in `/` (a directory of the bucket).
        prefix: String,
        /// The hookbox credential whose header authenticates the requests; none for a public
        /// bucket.
        credential: Option<String>,
        /// Directory the objects go to; `workspace` by default.
        target: Target,
    },
    /// `{"type":"gcs"|"local","source","target"?}`: a copy of a local directory tree.
    ///
    /// `gcs` with `file:///dir` or a plain absolute path; `local` is a hookbox extension taking
    /// an absolute path.
    Directory {
        /// The source type as written (`gcs` or `local`), for the metadata.
        kind: DirectoryKind,
        /// The host directory to copy.
        dir: PathBuf,
        /// Directory the tree's contents are merged into; `workspace` by default.
        target: Target,
    },
}

/// Which spelling introduced a [`Source::Directory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectoryKind {
    /// `"type":"gcs"` with a `file://` URL or a local path.
    Gcs,
    /// `"type":"local"` (hookbox extension).
    Local,
}

impl Source {
    /// Where this source writes in the sandbox.
    pub fn target(&self) -> &Target {
        match self {
            Self::Inline { target, .. }
            | Self::Repository { target, .. }
            | Self::CloudStorage { target, .. }
            | Self::Directory { target, .. } => target,
        }
    }

    /// Whether this source copies files of the machine hookbox runs on: a local directory, a
    /// `file://` tree, or a repository given as a local path. An API open to other people should
    /// refuse these.
    pub fn reads_host(&self) -> bool {
        match self {
            Self::Directory { .. } => true,
            Self::Repository { url, .. } => RepositoryUrl::of(url) == RepositoryUrl::Local,
            Self::Inline { .. } | Self::CloudStorage { .. } => false,
        }
    }

    /// Parses the source at JSON path `path`.
    pub(crate) fn parse(value: &Value, path: &str) -> Result<Self, SpecError> {
        let map = json::object(value, path, "a source object")?;
        let kind = json::required(map, path, "type", SOURCE_TYPES)?;
        let kind_path = member(path, "type");
        match json::string(kind, &kind_path, "a source type string")? {
            "inline" => parse_inline(map, path),
            "repository" => parse_repository(map, path),
            "gcs" => parse_directory(map, path, DirectoryKind::Gcs),
            "local" => parse_directory(map, path, DirectoryKind::Local),
            other => Err(SpecError::new(
                kind_path,
                format!(
                    "source type `{other}` is not supported by hookbox; use one of: {SOURCE_TYPES}"
                ),
            )),
        }
    }
}

/// `inline`: target and content are required; `encoding` may only be `base64`.
fn parse_inline(map: &Map<String, Value>, path: &str) -> Result<Source, SpecError> {
    json::known_keys(map, path, &["type", "target", "content", "encoding"])?;
    let target = required_target(map, path, "the file's path in the sandbox")?;
    let content_path = member(path, "content");
    let content = json::required(map, path, "content", "the file's text")?;
    let content = json::string(content, &content_path, "the file's content as a string")?;
    let content = match map.get("encoding") {
        None => content.as_bytes().to_vec(),
        Some(encoding) => {
            let encoding_path = member(path, "encoding");
            match json::string(encoding, &encoding_path, "an encoding string")? {
                "base64" => BASE64_STANDARD.decode(content).map_err(|err| {
                    SpecError::new(
                        &content_path,
                        format!(
                            "is not valid base64 ({err}); encode the bytes with standard padded \
                             base64, or drop `encoding` to pass plain text"
                        ),
                    )
                })?,
                other => {
                    return Err(SpecError::new(
                        encoding_path,
                        format!(
                            "unknown encoding `{other}`; the only encoding is `base64` (omit it \
                             for plain text)"
                        ),
                    ));
                }
            }
        }
    };
    Ok(Source::Inline { target, content })
}

/// `repository`: a git URL or local path, an optional ref and target.
fn parse_repository(map: &Map<String, Value>, path: &str) -> Result<Source, SpecError> {
    json::known_keys(map, path, &["type", "source", "target", "ref"])?;
    let url_path = member(path, "source");
    let url = json::required(map, path, "source", "a git URL or a local repository path")?;
    let url = argument(url, &url_path, "a git URL or local repository path")?;
    if let RepositoryUrl::Unsupported(transport) = RepositoryUrl::of(&url) {
        return Err(SpecError::new(
            url_path,
            format!(
                "`{url}` uses {transport}, which hookbox does not clone: write an https:// (or \
                 http://) URL; paths on this machine are cloned only when the operator sets \
                 `allow_host_sources`"
            ),
        ));
    }
    let git_ref = match map.get("ref") {
        Some(value) => Some(argument(
            value,
            &member(path, "ref"),
            "a branch or tag name",
        )?),
        None => None,
    };
    let target = match optional_target(map, path)? {
        Some(target) => target,
        None => Target::from_path(default_repository_target(&url, &url_path)?),
    };
    Ok(Source::Repository {
        url,
        git_ref,
        target,
    })
}

/// `gcs` and `local`: a directory tree on this host, or (`gcs` with `gs://`) a bucket prefix.
fn parse_directory(
    map: &Map<String, Value>,
    path: &str,
    kind: DirectoryKind,
) -> Result<Source, SpecError> {
    let dir_path = member(path, "source");
    let source = json::required(map, path, "source", "the directory to copy")?;
    let source = json::string(source, &dir_path, "a directory path string")?;
    json::no_nul(source, &dir_path)?;
    if kind == DirectoryKind::Gcs && source.starts_with("gs://") {
        return parse_cloud_storage(map, path, source);
    }
    json::known_keys(map, path, &["type", "source", "target"])?;
    let dir = match kind {
        DirectoryKind::Gcs => gcs_directory(source, &dir_path)?,
        DirectoryKind::Local => absolute_dir(source, &dir_path)?,
    };
    let target = match optional_target(map, path)? {
        Some(target) => target,
        None => Target::from_path(SandboxPath::workspace()),
    };
    Ok(Source::Directory { kind, dir, target })
}

/// `gcs` with `gs://BUCKET/PREFIX`: the bucket, the prefix as a directory, the credential.
fn parse_cloud_storage(
    map: &Map<String, Value>,
    path: &str,
    source: &str,
) -> Result<Source, SpecError> {
    json::known_keys(map, path, &["type", "source", "target", "credential"])?;
    let url_path = member(path, "source");
    let rest = source.strip_prefix("gs://").unwrap_or(source);
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if let Err(problem) = check_bucket(bucket) {
        return Err(SpecError::new(
            url_path,
            format!(
                "`{source}` does not name a Cloud Storage bucket: {problem}; write it as \
                     `gs://BUCKET/PREFIX`"
            ),
        ));
    }
    let mut prefix = prefix.to_owned();
    if !prefix.is_empty() && !prefix.ends_with('/') {
        prefix.push('/');
    }
    let credential = match map.get("credential") {
        Some(value) => Some(argument(
            value,
            &member(path, "credential"),
            "the name of a hookbox credential",
        )?),
        None => None,
    };
    let target = match optional_target(map, path)? {
        Some(target) => target,
        None => Target::from_path(SandboxPath::workspace()),
    };
    Ok(Source::CloudStorage {
        bucket: bucket.to_owned(),
        prefix,
        credential,
        target,
    })
}

/// Cloud Storage's bucket naming rules: 3 to 222 characters of `a-z 0-9 - _ .`, starting and
/// ending with a letter or digit.
fn check_bucket(bucket: &str) -> Result<(), &'static str> {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=222).contains(&bucket.len()) {
        return Err("bucket names are 3 to 222 characters long");
    }
    if !bucket
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
    {
        return Err("bucket names use only lowercase letters, digits, `-`, `_` and `.`");
    }
    if !edge(bucket.chars().next()) || !edge(bucket.chars().last()) {
        return Err("bucket names start and end with a letter or digit");
    }
    Ok(())
}

/// The host directory behind a `gcs` source: `file:///dir` or `/dir`.
fn gcs_directory(source: &str, path: &str) -> Result<PathBuf, SpecError> {
    absolute_dir(source.strip_prefix("file://").unwrap_or(source), path)
}

/// `text` as an absolute host directory path.
fn absolute_dir(text: &str, path: &str) -> Result<PathBuf, SpecError> {
    if !text.starts_with('/') {
        return Err(SpecError::new(
            path,
            format!("`{text}` is not an absolute directory path; write it as `/path/to/dir`"),
        ));
    }
    Ok(PathBuf::from(text))
}

/// A string that is passed to `git` as an argument: non-empty, no NUL, not an option.
fn argument(value: &Value, path: &str, what: &str) -> Result<String, SpecError> {
    let text = json::string(value, path, what)?;
    json::no_nul(text, path)?;
    if text.is_empty() || text.starts_with('-') {
        return Err(SpecError::new(
            path,
            format!("`{text}` is not {what}: it must be non-empty and not start with `-`"),
        ));
    }
    Ok(text.to_owned())
}

/// The required `target` of `map`.
fn required_target(map: &Map<String, Value>, path: &str, what: &str) -> Result<Target, SpecError> {
    target(json::required(map, path, "target", what)?, path)
}

/// The optional `target` of `map`, validated.
fn optional_target(map: &Map<String, Value>, path: &str) -> Result<Option<Target>, SpecError> {
    map.get("target")
        .map(|value| target(value, path))
        .transpose()
}

/// `value`, the `target` member of the source at `path`, validated.
fn target(value: &Value, path: &str) -> Result<Target, SpecError> {
    let target_path = member(path, "target");
    let text = json::string(value, &target_path, "a sandbox path string")?;
    Target::parse(text, &target_path)
}

/// `/workspace/<repo-name>` for a repository URL or path such as `https://host/org/repo.git`.
fn default_repository_target(url: &str, path: &str) -> Result<SandboxPath, SpecError> {
    let name = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or_default();
    let name = name.strip_suffix(".git").unwrap_or(name);
    if matches!(name, "" | "." | "..") {
        return Err(SpecError::new(
            path,
            format!("cannot tell the repository name from `{url}`; set `target` explicitly"),
        ));
    }
    Ok(SandboxPath::workspace().join(name))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(value: Value) -> Result<Source, SpecError> {
        Source::parse(&value, "$.sources[0]")
    }

    #[test]
    fn inline_decodes_base64() {
        let source =
            parse(json!({"type":"inline","target":"a.txt","content":"aGk=","encoding":"base64"}));
        let Source::Inline { target, content } = source.unwrap() else {
            panic!("not inline");
        };
        assert_eq!(
            (target.to_string(), content),
            ("/a.txt".to_owned(), b"hi".to_vec())
        );
    }

    #[test]
    fn repositories_default_to_their_name_under_the_workspace() {
        for (url, expected) in [
            ("https://example.com/org/tools.git", "/workspace/tools"),
            ("https://example.com/org/tools.git/", "/workspace/tools"),
            ("/srv/repos/proj", "/workspace/proj"),
        ] {
            let source = parse(json!({"type":"repository","source":url})).unwrap();
            assert_eq!(source.target().to_string(), expected);
        }
        let err = parse(json!({"type":"repository","source":"--upload-pack=x"})).unwrap_err();
        assert_eq!(err.path, "$.sources[0].source");
        for url in [
            "ext::sh -c id",
            "fd::3",
            "git@example.com:org/tools.git",
            "git://h/r",
        ] {
            let err = parse(json!({"type":"repository","source":url})).unwrap_err();
            assert_eq!(err.path, "$.sources[0].source", "{url}");
            assert!(err.problem.contains("does not clone"), "{err}");
        }
    }

    #[test]
    fn gcs_accepts_file_urls() {
        let source = parse(json!({"type":"gcs","source":"file:///data/x"})).unwrap();
        assert_eq!(source.target().to_string(), "/workspace");
        let err = parse(json!({"type":"gcs","source":"file:///d","credential":"c"})).unwrap_err();
        assert_eq!(err.path, "$.sources[0].credential");
        let err = parse(json!({"type":"local","source":"rel/dir"})).unwrap_err();
        assert_eq!(err.path, "$.sources[0].source");
    }

    #[test]
    fn gs_urls_name_a_bucket_and_a_directory_prefix() {
        let source = parse(json!({"type":"gcs","source":"gs://my-bucket/data/2024",
                                  "target":"workspace/data","credential":"gcs-reader"}))
        .unwrap();
        assert_eq!(
            source,
            Source::CloudStorage {
                bucket: "my-bucket".to_owned(),
                prefix: "data/2024/".to_owned(),
                credential: Some("gcs-reader".to_owned()),
                target: Target::parse("workspace/data", "$").unwrap(),
            }
        );
        assert!(!source.reads_host());
        for (url, prefix) in [("gs://bkt", ""), ("gs://bkt/", ""), ("gs://bkt/a/", "a/")] {
            let Source::CloudStorage { prefix: got, .. } =
                parse(json!({"type":"gcs","source":url})).unwrap()
            else {
                panic!("not cloud storage");
            };
            assert_eq!(got, prefix, "{url}");
        }
        for bad in [
            "gs://",
            "gs://UPPER/x",
            "gs://a/x",
            "gs://-bkt/x",
            "gs://b%20k/x",
        ] {
            let err = parse(json!({"type":"gcs","source":bad})).unwrap_err();
            assert_eq!(err.path, "$.sources[0].source", "{bad}");
            assert!(
                err.problem.contains("does not name a Cloud Storage bucket"),
                "{err}"
            );
        }
    }
}
