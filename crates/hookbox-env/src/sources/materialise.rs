//! Writing validated sources into a private staging root (plain paths: nobody else writes
//! there), detecting files that two sources both write.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use hookbox_net::{ClientOptions, CredentialSource, GuardedClient};

use crate::credentials::CredentialStore;
use crate::progress::Progress;
use crate::sources::Source;
use crate::sources::gcs;
use crate::sources::git;
use crate::tree::MAX_WALK_DEPTH;

/// Most files one environment's sources may produce.
const MAX_FILES: usize = 100_000;

/// A source that could not be written: which one (index into the spec's `sources`) and why.
#[derive(Debug)]
pub(crate) struct SourceFailure {
    /// Index of the source in the spec.
    pub(crate) index: usize,
    /// What went wrong and what to do.
    pub(crate) problem: String,
}

/// What remote sources need: the client their requests go through, the hookbox home whose
/// credential store authenticates them, and the rules repository clones follow.
pub(crate) struct Remote<'a> {
    /// The client for `gs://` sources; `None` builds one with the strict default options.
    pub(crate) client: Option<&'a GuardedClient>,
    /// The hookbox home (`<home>/credentials`).
    pub(crate) home: &'a Path,
    /// What `git clone` may reach.
    pub(crate) clones: git::CloneRules<'a>,
    /// Where clones and bucket copies report their progress, if anywhere.
    pub(crate) progress: Option<&'a (dyn Fn(&Progress) + Send + Sync)>,
}

impl Remote<'_> {
    /// Reports `progress` if anyone listens.
    fn report(&self, progress: Progress) {
        if let Some(report) = self.progress {
            report(&progress);
        }
    }
}

/// Writes `sources`, in order, below `root`, using `scratch` (an empty private directory) for
/// clones.
pub(crate) async fn materialise(
    sources: &[Source],
    root: &Path,
    scratch: &Path,
    remote: &Remote<'_>,
) -> Result<(), SourceFailure> {
    let mut writer = Writer {
        root,
        owners: HashMap::new(),
        index: 0,
    };
    for (index, source) in sources.iter().enumerate() {
        writer.index = index;
        let fail = |problem| SourceFailure { index, problem };
        let dest = root.join(source.target().path().relative());
        match source {
            Source::Inline { content, .. } => writer.file(&dest, content).map_err(fail)?,
            Source::Directory { dir, .. } => writer.tree(dir, &dest).map_err(fail)?,
            Source::Repository { url, git_ref, .. } => {
                let clone = scratch.join(format!("clone-{index}"));
                remote.report(Progress::CloneStarted {
                    index,
                    url: url.clone(),
                });
                git::clone(url, git_ref.as_deref(), &clone, remote.clones)
                    .await
                    .map_err(fail)?;
                remote.report(Progress::CloneFinished { index });
                writer.tree(&clone, &dest).map_err(fail)?;
            }
            Source::CloudStorage {
                bucket,
                prefix,
                credential,
                target,
            } => {
                let built;
                let client = match remote.client {
                    Some(client) => client,
                    None => {
                        built = GuardedClient::new(&ClientOptions::default()).map_err(|err| {
                            fail(format!("cannot build the Cloud Storage client: {err}"))
                        })?;
                        &built
                    }
                };
                let auth = match credential {
                    Some(name) => credential_header(remote.home, name).map_err(fail)?,
                    None => Vec::new(),
                };
                let bucket_name = bucket;
                let bucket = gcs::Bucket {
                    client,
                    bucket,
                    prefix,
                    auth,
                    credential: credential.as_deref(),
                    target: target.to_string(),
                };
                let objects = bucket.list().await.map_err(fail)?;
                writer.directory(&dest).map_err(fail)?;
                remote.report(Progress::CopyStarted {
                    index,
                    source: format!("gs://{bucket_name}/{prefix}"),
                    objects: objects.len(),
                    bytes: objects.iter().map(|object| object.size).sum(),
                });
                let mut bytes = 0;
                for (copied, object) in objects.iter().enumerate() {
                    let path = dest.join(&object.relative);
                    let mut file = writer.create(&path).map_err(fail)?;
                    let downloaded = bucket.download(object, &mut file).await.map_err(fail)?;
                    if downloaded.script {
                        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                            .map_err(|err| fail(writer.describe("make executable", &path, &err)))?;
                    }
                    bytes += object.size;
                    remote.report(Progress::Copied {
                        index,
                        copied: copied + 1,
                        bytes,
                    });
                }
                remote.report(Progress::CopyFinished { index });
            }
        }
    }
    Ok(())
}

/// The `(header, value)` of the hookbox credential `name`, for Cloud Storage requests; refused
/// unless the credential may be sent to Cloud Storage's host.
fn credential_header(home: &Path, name: &str) -> Result<Vec<(String, String)>, String> {
    let store = CredentialStore::open(home)
        .map_err(|err| format!("cannot read the credential store: {err}"))?;
    match store.credential(name) {
        Ok(Some(found)) => {
            gcs::check_credential_domain(name, &found, gcs::HOST)?;
            Ok(vec![(found.header().to_owned(), found.value().to_owned())])
        }
        Ok(None) => Err(format!(
            "this server has no credential named `{name}`; add it with `hookbox credentials \
             add {name} --domain {}` (the value is read from stdin)",
            gcs::HOST
        )),
        Err(err) => Err(format!("cannot read credential `{name}`: {err}")),
    }
}

/// Copies the tree at `src` into `dest` (both trusted host paths), merging with what is there;
/// symlinks are copied as symlinks, never followed.
pub(crate) fn copy_tree(src: &Path, dest: &Path) -> Result<(), String> {
    Writer {
        root: dest,
        owners: HashMap::new(),
        index: 0,
    }
    .tree(src, dest)
}

/// The state of one materialisation: which source wrote which file.
struct Writer<'a> {
    root: &'a Path,
    owners: HashMap<PathBuf, usize>,
    index: usize,
}

impl Writer<'_> {
    /// Writes one file at `dest`; `#!` scripts are made executable.
    fn file(&mut self, dest: &Path, content: &[u8]) -> Result<(), String> {
        self.claim(dest)?;
        let mode = if content.starts_with(b"#!") {
            0o755
        } else {
            0o644
        };
        fs::write(dest, content)
            .and_then(|()| fs::set_permissions(dest, fs::Permissions::from_mode(mode)))
            .map_err(|err| self.describe("write", dest, &err))
    }

    /// Creates the empty file `dest` (mode 0644) for a download.
    fn create(&mut self, dest: &Path) -> Result<fs::File, String> {
        self.claim(dest)?;
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(dest)
            .map_err(|err| self.describe("create", dest, &err))
    }

    /// Copies the directory `src` into `dest`, one directory at a time (no recursion), refusing
    /// a tree more than [`MAX_WALK_DEPTH`] levels deep.
    fn tree(&mut self, src: &Path, dest: &Path) -> Result<(), String> {
        let mut pending = vec![(src.to_path_buf(), dest.to_path_buf(), 0_usize)];
        while let Some((dir, dest, depth)) = pending.pop() {
            if depth > MAX_WALK_DEPTH {
                return Err(format!(
                    "cannot copy `{}`: `{}` is more than {MAX_WALK_DEPTH} levels deep below it; \
                     make the tree shallower",
                    src.display(),
                    dir.strip_prefix(src).unwrap_or(&dir).display()
                ));
            }
            let entries = fs::read_dir(&dir).map_err(|err| {
                format!(
                    "cannot read directory `{}`: {err}; check that it exists",
                    dir.display()
                )
            })?;
            self.directory(&dest)?;
            for entry in entries {
                let entry =
                    entry.map_err(|err| format!("cannot read `{}`: {err}", dir.display()))?;
                let (from, to) = (entry.path(), dest.join(entry.file_name()));
                let kind = entry
                    .file_type()
                    .map_err(|err| format!("cannot inspect `{}`: {err}", from.display()))?;
                if kind.is_dir() {
                    pending.push((from, to, depth + 1));
                } else if kind.is_file() {
                    self.claim(&to)?;
                    fs::copy(&from, &to).map_err(|err| self.describe("copy into", &to, &err))?;
                } else if kind.is_symlink() {
                    self.claim(&to)?;
                    let link = fs::read_link(&from)
                        .map_err(|err| format!("cannot read link `{}`: {err}", from.display()))?;
                    symlink(&link, &to).map_err(|err| self.describe("create link", &to, &err))?;
                }
            }
        }
        Ok(())
    }

    /// Creates `dest` and its missing parents below the root as directories, refusing to go
    /// through a symlink or a file an earlier source put on the way (a repository's link to a
    /// host directory must not become a way out of the staging root).
    fn directory(&self, dest: &Path) -> Result<(), String> {
        let rel = dest
            .strip_prefix(self.root)
            .map_err(|_| format!("`{}` is outside the environment root", dest.display()))?;
        let mut current = self.root.to_path_buf();
        for component in rel.components() {
            current.push(component);
            match fs::symlink_metadata(&current) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(format!(
                        "`{}` is a file or symlink written by an earlier source, so nothing can \
                         be written below it",
                        self.sandbox_path(&current)
                    ));
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => fs::create_dir(&current)
                    .map_err(|err| self.describe("create directory", &current, &err))?,
                Err(err) => return Err(self.describe("inspect", &current, &err)),
            }
        }
        Ok(())
    }

    /// Records that the current source writes `dest`, refusing a file another source wrote,
    /// and makes room for it (parents created, a file copied from elsewhere replaced).
    fn claim(&mut self, dest: &Path) -> Result<(), String> {
        if self.owners.len() >= MAX_FILES {
            return Err(format!(
                "the sources hold more than {MAX_FILES} files; keep environments smaller"
            ));
        }
        if let Some(earlier) = self.owners.insert(dest.to_path_buf(), self.index) {
            return Err(format!(
                "`{}` is also written by `$.sources[{earlier}]`; give each file one source",
                self.sandbox_path(dest)
            ));
        }
        if let Some(parent) = dest.parent() {
            self.directory(parent)?;
        }
        match fs::symlink_metadata(dest) {
            Ok(meta) if meta.is_dir() => Err(format!(
                "`{}` is a directory, so a file cannot be written there",
                self.sandbox_path(dest)
            )),
            Ok(_) => fs::remove_file(dest).map_err(|err| self.describe("replace", dest, &err)),
            Err(_) => Ok(()),
        }
    }

    /// A sentence for a failed `action` on `dest`.
    fn describe(&self, action: &str, dest: &Path, err: &io::Error) -> String {
        format!("cannot {action} `{}`: {err}", self.sandbox_path(dest))
    }

    /// `dest` as the sandbox will see it.
    fn sandbox_path(&self, dest: &Path) -> String {
        format!(
            "/{}",
            dest.strip_prefix(self.root).unwrap_or(dest).display()
        )
    }
}
