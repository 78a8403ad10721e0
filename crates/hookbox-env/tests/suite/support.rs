use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hookbox_env::{Environment, EnvironmentSpec, Environments, FileTools};
use hookbox_exec::{ExitKind, ProcessSpec};
use serde_json::Value;
use tempfile::TempDir;

/// A private hookbox home and its environments.
pub(crate) struct Home {
    pub(crate) dir: TempDir,
    pub(crate) envs: Environments,
}

impl Home {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let envs = Environments::open(dir.path())
            .unwrap()
            .with_hook_file_check(Arc::new(hookbox_agent::OwnerHookFiles));
        Self { dir, envs }
    }

    /// A home whose environments may clone repositories of this machine (`allow_host_sources`).
    pub(crate) fn with_host_sources() -> Self {
        let home = Self::new();
        Self {
            envs: home.envs.with_host_sources(true),
            dir: home.dir,
        }
    }

    /// Creates an environment from a JSON spec.
    pub(crate) async fn create(&self, spec: Value) -> Environment {
        self.envs
            .create(&EnvironmentSpec::from_json(&spec).unwrap())
            .await
            .unwrap()
    }
}

/// The file tools of `env`.
pub(crate) fn tools(env: &Environment) -> FileTools {
    FileTools::for_environment(env).unwrap()
}

/// A seed fixture from `fixtures/seeds/`.
pub(crate) fn seed(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/seeds")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Every entry below `dir`: relative path → contents (files), link target (symlinks) or
/// `<dir>`. An environment's `disk.img` is recorded as `<disk image>` (its files are compared
/// through the environment's mounted root instead of gigabytes of image).
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    // The database's files change when it is only read (its journal, its shared memory): what
    // counts is the environments' records it holds.
    out.retain(|path, _| !path.to_string_lossy().starts_with("hookbox.db"));
    let database = dir.join("hookbox.db");
    if database.exists() {
        use hookbox_store::Store;
        let store = hookbox_store::SqliteStore::open_without_recovery(&database).unwrap();
        let records = store
            .list_environments(hookbox_store::PageRequest::default())
            .unwrap();
        let text = format!("{:?}", records.items);
        out.insert(PathBuf::from("hookbox.db (records)"), text.into_bytes());
    }
    out
}

fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            out.insert(rel, b"<dir>".to_vec());
            walk(base, &path, out);
        } else if path.file_name() == Some("disk.img".as_ref()) {
            out.insert(rel, b"<disk image>".to_vec());
        } else if meta.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(rel, target.into_os_string().into_encoded_bytes());
        } else {
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// Runs `git ARGS` in `cwd` through hookbox-exec, failing the test if git fails.
pub(crate) async fn git(cwd: &Path, args: &str) {
    let mut spec = ProcessSpec::shell(
        &format!(
            "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main {args}"
        ),
        Duration::from_secs(60),
    );
    spec.cwd = Some(cwd.to_path_buf());
    let output = hookbox_exec::run(&spec).await.unwrap();
    assert_eq!(
        output.exit,
        ExitKind::Exited(0),
        "git {args}: {}",
        output.stderr.to_text()
    );
}
