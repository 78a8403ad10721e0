//! `HOOKBOX_HOME` on a small file system of its own (an image this test makes, loop-mounts and
//! removes again), filled: every environment's budget is backed, so no environment's writes
//! can damage another's file system; what the home cannot hold is refused with 507 and leaves
//! nothing behind; and once space returns everything works again, without a restart.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hookbox_exec::disk::{self, DiskBudget};
use hookbox_llm::{ModelConfig, ProviderKind};
use serde_json::json;

use super::support::Api;

/// The scripted agent of these tests.
const AGENT: &str = "scripted";

/// A file system of its own, mounted in a temporary directory; when dropped (whether the test
/// passed or not) the environment images on it are unmounted, then it is, and its loop
/// device detaches itself.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    /// A file system of `bytes`; `None` (after saying why) when this process cannot mount.
    async fn new(bytes: u64) -> Option<Self> {
        if !disk::can_mount() {
            hookbox_test_support::skip(module_path!(), "it needs root and /dev/loop-control");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("home.img");
        let budget = DiskBudget {
            bytes,
            inodes: 4096,
        };
        disk::make_image(&image, &budget, 0).await.unwrap();
        let fs = Self { dir };
        std::fs::create_dir(fs.path()).unwrap();
        disk::mount_image(&image, &fs.path()).unwrap();
        Some(fs)
    }

    /// Where it is mounted.
    fn path(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// Its free bytes.
    fn free(&self) -> u64 {
        let stat = rustix::fs::statvfs(self.path()).unwrap();
        stat.f_bavail * stat.f_frsize
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let ours = self.path();
        let ours = ours.to_str().unwrap();
        // Only the images on this file system: other tests' mounts are theirs.
        for entry in std::fs::read_dir("/run/hookbox/disks")
            .into_iter()
            .flatten()
            .flatten()
        {
            let backing = disk::backing_file(&entry.path()).ok().flatten();
            if backing.is_some_and(|file| file.starts_with(ours)) {
                let _ = disk::unmount(&entry.path());
                let _ = std::fs::remove_dir(entry.path());
            }
        }
        let _ = disk::unmount(&self.path());
    }
}

/// Writes `bytes` (or until the file system says no) to `path`, each MiB synced, so that a
/// failure of the host under it shows here and not later.
fn write(path: &Path, bytes: u64) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    let chunk = vec![0x5a_u8; 1 << 20];
    for _ in 0..bytes.div_ceil(1 << 20) {
        file.write_all(&chunk)?;
        file.sync_data()?;
    }
    Ok(())
}

/// Writes 4 MiB to `name` in environment `id`'s workspace, syncs, and reads it back.
fn write_and_read_back(api: &Api, id: &str, name: &str) {
    let path = api.root(id).join("workspace").join(name);
    write(&path, 4 << 20).unwrap_or_else(|err| panic!("{id}: writing {name}: {err}"));
    let mut back = Vec::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back.len(), 4 << 20, "{id}");
    assert!(
        back.iter().all(|&byte| byte == 0x5a),
        "{id}: {name} reads back wrong"
    );
}

/// The ids the server lists.
async fn listed(api: &Api) -> Vec<String> {
    let reply = api.get("/v1/environments").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let mut ids: Vec<String> = reply.json()["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|env| env["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// The entries of the home's `environments/` directory.
fn directories(api: &Api) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(api.home().join("environments"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_full_home_damages_no_environment_refuses_with_507_and_recovers_without_a_restart() {
    let Some(fs) = SmallFs::new(256 << 20).await else {
        return;
    };
    let script = fs.dir.path().join("agent.script.json");
    std::fs::write(&script, json!([{"text": "hi"}]).to_string()).unwrap();
    let api = Api::start_in(&fs.path(), |config| {
        config.sandbox.disk_bytes = Some(64 << 20);
        config.sandbox.disk_reserve_bytes = Some(64 << 20);
        let mut model = ModelConfig::new(ProviderKind::Scripted, "");
        model.script = Some(script);
        config.agents.insert(AGENT.to_owned(), model);
    })
    .await;
    let a = api.create(&json!({})).await;
    let b = api.create(&json!({})).await;
    let mut both = vec![a.clone(), b.clone()];
    both.sort();

    // Two 64 MiB budgets are backed; a third and the 64 MiB kept for the store are not.
    let free = fs.free();
    assert!(free < (64 + 64) << 20, "{free} bytes free");
    let refused = api.post_json("/v1/environments", &json!({})).await;
    assert_eq!(refused.status, 507, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "insufficient_storage");
    let message = refused.message();
    for needle in ["67108864", "bytes free", "disk_bytes", "disk_reserve_bytes"] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message}"
        );
    }
    assert_eq!(listed(&api).await, both);
    assert_eq!(directories(&api), both, "a refused create leaves nothing");

    // One environment writes past its budget: ENOSPC inside it, nothing outside.
    let free = fs.free();
    let err = write(&api.root(&a).join("workspace/big"), 80 << 20).unwrap_err();
    assert_eq!(
        err.raw_os_error(),
        Some(rustix::io::Errno::NOSPC.raw_os_error()),
        "{err}"
    );
    assert!(
        fs.free() + (1 << 20) >= free,
        "the home lost space to a budgeted write"
    );
    std::fs::remove_file(api.root(&a).join("workspace/big")).unwrap();

    // Something else (the store's growth, another program) fills the home's file system.
    let filler = fs.path().join("filler");
    let err = write(&filler, u64::MAX).unwrap_err();
    assert_eq!(
        err.raw_os_error(),
        Some(rustix::io::Errno::NOSPC.raw_os_error()),
        "{err}"
    );

    // Every environment still writes its whole budget's worth: its blocks were reserved.
    for id in [&a, &b] {
        write_and_read_back(&api, id, "while-full");
    }
    // What the home cannot hold is refused, clearly, and leaves nothing behind.
    let refused = api.post_json("/v1/environments", &json!({})).await;
    assert_eq!(refused.status, 507, "{:?}", refused.body);
    assert!(
        refused.message().contains("bytes free"),
        "{:?}",
        refused.body
    );
    assert_eq!(directories(&api), both, "a refused create leaves nothing");
    // A few writes may still fit in blocks the store already holds; then the next is refused.
    let mut replies = Vec::new();
    for _ in 0..1000 {
        let reply = api
            .post_json(
                "/v1/interactions",
                &json!({"agent": AGENT, "input": "hello"}),
            )
            .await;
        let accepted = reply.status == 200;
        replies.push(reply);
        if !accepted {
            break;
        }
    }
    let refused = replies.pop().unwrap();
    assert_eq!(refused.status, 507, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "insufficient_storage");
    assert!(refused.message().contains("full"), "{:?}", refused.body);
    // Reads still work.
    assert_eq!(listed(&api).await, both);

    // Space returns: everything works again, no restart.
    std::fs::remove_file(&filler).unwrap();
    let deleted = api
        .send("DELETE", &format!("/v1/environments/{a}"), &[], "")
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    let c = api.create(&json!({})).await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hello"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    for id in [&b, &c] {
        write_and_read_back(&api, id, "after");
    }
    let mut all = vec![b, c];
    all.sort();
    assert_eq!(listed(&api).await, all);
}
