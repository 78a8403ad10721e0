//! The server's credential store: secrets that `network.allowlist` entries name with
//! `"credential": "NAME"`, injected by hookbox as a header and never shown to the sandbox.
//!
//! Each credential is one file, `$HOOKBOX_HOME/credentials/NAME.json` (the directory mode 0700,
//! the file mode 0600), holding `{name, header, value, domains, created}`. `domains` lists the
//! hosts it may be sent to (exact hosts and `*.example.com`, matched like allowlist domains; at
//! least one). Files written before credentials had domains still load, but are refused wherever
//! they are named until they are re-added with `--domain`. Files are written to a
//! temporary file in the same directory and renamed into place, so a reader sees the old
//! credential or the new one, never part of either. Values never appear in `Debug` output,
//! listings or error messages.

mod name;
mod source;

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use hookbox_store::Timestamp;
use serde::{Deserialize, Serialize};

use name::validate_name;

/// The header a credential is sent as unless its `add` says otherwise.
pub const DEFAULT_HEADER: &str = "Authorization";

/// Temporary files get a distinct suffix per write within this process.
static WRITES: AtomicU64 = AtomicU64::new(0);

/// The credentials under one hookbox home.
#[derive(Debug, Clone)]
pub struct CredentialStore {
    dir: PathBuf,
}

/// One stored credential. `Debug` output redacts the value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredCredential {
    /// The credential's name, as allowlist entries refer to it.
    pub name: String,
    /// The header it is sent as, e.g. `Authorization`.
    pub header: String,
    value: String,
    /// The hosts it may be sent to, canonical (empty in files written before domains were
    /// required: such a credential is refused wherever it is named).
    #[serde(default)]
    pub domains: Vec<String>,
    /// When it was added, `YYYY-MM-DDThh:mm:ssZ`.
    pub created: String,
}

/// What listings show of a credential: everything but the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialInfo {
    /// The credential's name.
    pub name: String,
    /// The header it is sent as.
    pub header: String,
    /// The hosts it may be sent to (empty: it must be re-added before it can be used).
    pub domains: Vec<String>,
    /// When it was added, `YYYY-MM-DDThh:mm:ssZ`.
    pub created: String,
}

/// Why a credential operation failed. Messages never contain a credential's value.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The name is not 1 to 64 of `A-Z a-z 0-9 _ . -`.
    #[error("invalid credential name `{name}`: {reason}")]
    InvalidName {
        /// The name given (shown escaped when it has control characters).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The header name is not a valid HTTP header name.
    #[error("invalid header name `{header}` for credential `{name}`: {reason}")]
    InvalidHeader {
        /// The credential.
        name: String,
        /// The header name given.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No domain, or one that is not a host or `*.example.com`.
    #[error("invalid domains for credential `{name}`: {reason}")]
    InvalidDomain {
        /// The credential.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The value is empty or cannot be sent in a header.
    #[error("invalid value for credential `{name}`: {reason}")]
    InvalidValue {
        /// The credential.
        name: String,
        /// What is wrong with it (never quoting the value).
        reason: String,
    },
    /// There is no credential of that name.
    #[error("no credential named `{name}` (`hookbox credentials list` shows them)")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// A credential file is not what hookbox writes.
    #[error("the credential file {} is not valid: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (never quoting its contents).
        reason: String,
    },
    /// The filesystem refused.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What hookbox was doing.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
}

impl StoredCredential {
    /// The secret header value; never print or log it.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The credential without its value, for listings.
    pub fn info(&self) -> CredentialInfo {
        CredentialInfo {
            name: self.name.clone(),
            header: self.header.clone(),
            domains: self.domains.clone(),
            created: self.created.clone(),
        }
    }
}

impl fmt::Debug for StoredCredential {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("StoredCredential")
            .field("name", &self.name)
            .field("header", &self.header)
            .field("value", &"<redacted>")
            .field("domains", &self.domains)
            .field("created", &self.created)
            .finish()
    }
}

impl CredentialStore {
    /// Opens the store in hookbox home `home`: `home/credentials`, created when missing and set
    /// to mode 0700.
    pub fn open(home: &Path) -> Result<Self, CredentialError> {
        let dir = home.join("credentials");
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
            .map_err(io_error("restrict the permissions of", &dir))?;
        Ok(Self { dir })
    }

    /// The directory holding the credential files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Adds credential `name`, or replaces it: sent as `header` (default
    /// [`DEFAULT_HEADER`]) with value `value`, only to hosts `domains` match (at least one;
    /// exact hosts or `*.example.com`, stored canonical). The file is written atomically with
    /// mode 0600.
    pub fn add(
        &self,
        name: &str,
        header: Option<&str>,
        value: &str,
        domains: &[&str],
    ) -> Result<CredentialInfo, CredentialError> {
        validate_name(name)?;
        let header = header.unwrap_or(DEFAULT_HEADER);
        name::validate_header(name, header)?;
        name::validate_value(name, value)?;
        let domains = name::validate_domains(name, domains)?;
        let credential = StoredCredential {
            name: name.to_owned(),
            header: header.to_owned(),
            value: value.to_owned(),
            domains,
            created: Timestamp::now().to_string(),
        };
        let path = self.path(name);
        let mut text =
            serde_json::to_vec_pretty(&credential).map_err(|_| CredentialError::Corrupt {
                path: path.clone(),
                reason: "the credential cannot be serialized".to_owned(),
            })?;
        text.push(b'\n');
        self.write_atomically(&path, &text)?;
        Ok(credential.info())
    }

    /// Credential `name` with its value, `None` when there is none.
    pub fn get(&self, name: &str) -> Result<Option<StoredCredential>, CredentialError> {
        validate_name(name)?;
        let path = self.path(name);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("read", &path)(error)),
        };
        let credential: StoredCredential =
            serde_json::from_slice(&bytes).map_err(|error| CredentialError::Corrupt {
                path: path.clone(),
                reason: format!(
                    "not a credential object (line {}, column {})",
                    error.line(),
                    error.column()
                ),
            })?;
        if credential.name != name {
            return Err(CredentialError::Corrupt {
                path,
                reason: format!("it holds credential `{}`", credential.name),
            });
        }
        Ok(Some(credential))
    }

    /// Every credential's name, header and creation time (never values), sorted by name.
    /// Temporary files of writes in progress are skipped.
    pub fn list(&self) -> Result<Vec<CredentialInfo>, CredentialError> {
        let entries = fs::read_dir(&self.dir).map_err(io_error("list", &self.dir))?;
        let mut infos = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_error("list", &self.dir))?;
            let file_name = entry.file_name();
            let Some(name) = file_name
                .to_str()
                .and_then(|file_name| file_name.strip_suffix(".json"))
            else {
                continue;
            };
            if validate_name(name).is_err() {
                continue;
            }
            if let Some(credential) = self.get(name)? {
                infos.push(credential.info());
            }
        }
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(infos)
    }

    /// Removes credential `name`; [`CredentialError::NotFound`] when there is none.
    pub fn remove(&self, name: &str) -> Result<(), CredentialError> {
        validate_name(name)?;
        let path = self.path(name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(CredentialError::NotFound {
                    name: name.to_owned(),
                })
            }
            Err(error) => Err(io_error("remove", &path)(error)),
        }
    }

    /// The file of credential `name` (already validated).
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// Writes `bytes` to a new mode-0600 temporary file beside `path`, syncs it and renames it
    /// over `path`; the temporary file is removed when anything fails.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), CredentialError> {
        let temp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            path.file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("credential"),
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        let renamed = written.and_then(|()| fs::rename(&temp, path));
        if let Err(error) = renamed {
            let _ = fs::remove_file(&temp);
            return Err(io_error("write", path)(error));
        }
        // Make the rename durable; a failure here leaves a complete file either way.
        if let Ok(dir) = fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

/// Maps an I/O error while doing `action` on `path`.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CredentialError {
    let path = path.to_path_buf();
    move |source| CredentialError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::{CredentialError, CredentialStore};

    fn store() -> (tempfile::TempDir, CredentialStore) {
        let home = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(home.path()).unwrap();
        (home, store)
    }

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn add_get_list_remove() {
        let (_home, store) = store();
        assert_eq!(mode(store.dir()), 0o700);
        let info = store
            .add("github", None, "Bearer s3cret", &["api.github.com"])
            .unwrap();
        assert_eq!(info.header, "Authorization");
        store
            .add("other.key_1", Some("X-Api-Key"), "k", &["*.Example.com."])
            .unwrap();

        let credential = store.get("github").unwrap().unwrap();
        assert_eq!(credential.value(), "Bearer s3cret");
        assert_eq!(credential.header, "Authorization");
        assert_eq!(mode(&store.dir().join("github.json")), 0o600);
        assert_eq!(credential.domains, ["api.github.com"]);
        assert_eq!(
            store.get("other.key_1").unwrap().unwrap().domains,
            ["*.example.com"]
        );

        let names: Vec<_> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|info| (info.name, info.header))
            .collect();
        assert_eq!(
            names,
            [
                ("github".to_owned(), "Authorization".to_owned()),
                ("other.key_1".to_owned(), "X-Api-Key".to_owned())
            ]
        );

        store
            .add("github", None, "Bearer n3w", &["api.github.com"])
            .unwrap();
        assert_eq!(store.get("github").unwrap().unwrap().value(), "Bearer n3w");

        store.remove("github").unwrap();
        assert!(store.get("github").unwrap().is_none());
        assert!(matches!(
            store.remove("github"),
            Err(CredentialError::NotFound { .. })
        ));
        // No temporary files are left behind.
        let files: Vec<_> = std::fs::read_dir(store.dir())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(files, ["other.key_1.json"]);
    }

    #[test]
    fn files_from_before_domains_still_load_without_any() {
        let (_home, store) = store();
        std::fs::write(
            store.dir().join("old.json"),
            r#"{"name":"old","header":"Authorization","value":"v","created":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let old = store.get("old").unwrap().unwrap();
        assert!(old.domains.is_empty());
        assert_eq!(store.list().unwrap()[0].domains, Vec::<String>::new());
    }

    #[test]
    fn the_directory_is_made_private_again_on_open() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("credentials");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        CredentialStore::open(home.path()).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn bad_names_headers_and_values_are_refused_without_quoting_the_value() {
        let (_home, store) = store();
        for name in ["", "a/b", "..x/y", "sp ace", "é", &"x".repeat(65)] {
            let error = store.add(name, None, "v", &["a.example"]).unwrap_err();
            assert!(
                matches!(error, CredentialError::InvalidName { .. }),
                "{name}: {error}"
            );
            assert!(store.get(name).is_err(), "{name}");
        }
        store
            .add(&"x".repeat(64), None, "v", &["a.example"])
            .unwrap();
        let error = store
            .add("ok", Some("Bad Header"), "v", &["a.example"])
            .unwrap_err();
        assert!(
            matches!(error, CredentialError::InvalidHeader { .. }),
            "{error}"
        );
        let error = store.add("ok", None, "", &["a.example"]).unwrap_err();
        assert!(
            matches!(error, CredentialError::InvalidValue { .. }),
            "{error}"
        );
        let error = store
            .add("ok", None, "s3cret\nline", &["a.example"])
            .unwrap_err();
        assert!(!error.to_string().contains("s3cret"), "{error}");
        for domains in [
            &[][..],
            &["*"][..],
            &["a.example", "bad host"][..],
            &["a.*.b"][..],
        ] {
            let error = store.add("ok", None, "v", domains).unwrap_err();
            assert!(
                matches!(error, CredentialError::InvalidDomain { .. }),
                "{domains:?}: {error}"
            );
        }
        assert!(store.get("ok").unwrap().is_none());
    }

    #[test]
    fn debug_output_and_corrupt_file_errors_never_show_the_value() {
        let (_home, store) = store();
        store
            .add("tok", None, "Bearer v4lue", &["a.example"])
            .unwrap();
        let credential = store.get("tok").unwrap().unwrap();
        let debug = format!("{credential:?} {store:?}");
        assert!(!debug.contains("v4lue"), "{debug}");

        std::fs::write(store.dir().join("tok.json"), "{\"value\": \"v4lue\", ").unwrap();
        let error = store.get("tok").unwrap_err();
        assert!(matches!(error, CredentialError::Corrupt { .. }), "{error}");
        assert!(!error.to_string().contains("v4lue"), "{error}");
    }
}
