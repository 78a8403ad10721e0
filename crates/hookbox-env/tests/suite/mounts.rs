//! An environment's file system is mounted only while something uses it: handles of this
//! process or another; reading metadata never mounts; what a killed process left mounted goes
//! at the next open; deletes racing readers leave no mount and no loop device behind. Every
//! check looks only at the loop devices backed by this test's own home (other tests on this
//! machine have theirs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookbox_env::{EnvironmentSpec, Environments};
use serde_json::json;

/// A fresh home, or `None` (after saying why) when this process cannot mount.
fn home(test: &str) -> Option<tempfile::TempDir> {
    if !hookbox_exec::disk::can_mount() {
        hookbox_test_support::skip(test, "it needs root and /dev/loop-control");
        return None;
    }
    Some(tempfile::tempdir().unwrap())
}

/// A spec with a small budget.
fn small() -> EnvironmentSpec {
    EnvironmentSpec::from_json(&json!({
        "sources": [{"type": "inline", "target": "workspace/hello.txt", "content": "hi"}],
        "limits": {"disk_bytes": 8 << 20, "disk_inodes": 500},
    }))
    .unwrap()
}

/// The loop devices whose backing file lies in `home` (deleted or not): every mount of one of
/// its images holds one.
fn loops_of(home: &Path) -> Vec<String> {
    let home = home.to_str().unwrap();
    std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|entry| {
            std::fs::read_to_string(entry.unwrap().path().join("loop/backing_file")).ok()
        })
        .map(|file| file.trim_end().to_owned())
        .filter(|file| file.starts_with(home))
        .collect()
}

/// Whether an image of `home` is mounted now.
fn mounted_in(home: &Path) -> bool {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    mountinfo
        .lines()
        .filter(|line| line.contains("/run/hookbox/disks/"))
        .any(|line| {
            let target = line.split(' ').nth(4).unwrap_or_default();
            hookbox_exec::disk::backing_file(Path::new(target))
                .ok()
                .flatten()
                .is_some_and(|file| file.starts_with(home.to_str().unwrap()))
        })
}

/// Asserts nothing of `home` is mounted, and that its loop devices are gone (the kernel detaches
/// them shortly after the unmount: up to 10 s are allowed).
async fn assert_released(home: &Path, when: &str) {
    assert!(
        !mounted_in(home),
        "{when}: an image of the home is still mounted"
    );
    let give_up = Instant::now() + Duration::from_secs(10);
    while !loops_of(home).is_empty() {
        assert!(
            Instant::now() < give_up,
            "{when}: loop devices still attached to {:?}",
            loops_of(home)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_image_is_mounted_only_while_a_handle_to_it_lives() {
    let Some(dir) = home(module_path!()) else {
        return;
    };
    let home = dir.path();
    let envs = Environments::open(home).unwrap();
    let env = envs.create(&small()).await.unwrap();
    let id = env.id().to_owned();
    assert!(mounted_in(home));
    drop(env);
    assert!(mounted_in(home), "the handles still use it");
    drop(envs);
    assert_released(home, "after the process's handles were dropped").await;

    // Reading metadata mounts nothing.
    let envs = Environments::open(home).unwrap();
    let described = envs.describe(&id).unwrap();
    assert_eq!(described.id(), id);
    assert_eq!(envs.list().unwrap().len(), 1);
    assert!(!mounted_in(home), "describe or list mounted the image");

    // Two users (another process's handles are another set): the last one unmounts.
    let first = envs.get(&id).unwrap();
    let other = Environments::open(home).unwrap();
    let second = other.get(&id).unwrap();
    drop(second);
    drop(other);
    let hello = first.root().join("workspace/hello.txt");
    assert_eq!(std::fs::read_to_string(&hello).unwrap(), "hi");
    drop(first);
    drop(envs);
    assert_released(home, "after both users let go").await;

    // A mount left by a killed process (no one holds it) goes at the next open.
    let image = home.join("environments").join(&id).join("disk.img");
    let meta = std::fs::metadata(&image).unwrap();
    use std::os::unix::fs::MetadataExt;
    let mount = PathBuf::from(format!(
        "/run/hookbox/disks/{:x}-{:x}",
        meta.dev(),
        meta.ino()
    ));
    std::fs::create_dir_all(&mount).unwrap();
    hookbox_exec::disk::mount_image(&image, &mount).unwrap();
    assert!(mounted_in(home));
    drop(Environments::open(home).unwrap());
    assert_released(home, "after the next open").await;
}

#[tokio::test]
async fn deletes_racing_readers_leave_no_mount_and_no_loop_device() {
    let Some(dir) = home(module_path!()) else {
        return;
    };
    let home = dir.path().to_path_buf();
    let envs = Environments::open(&home).unwrap();
    let started = Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_secs(4) {
        let id = envs.create(&small()).await.unwrap().id().to_owned();
        // Readers as the background tasks are: this process's handles, another process's
        // handles, and metadata readers (the audit deliverer), all at once with the delete.
        let readers: Vec<_> = (0..3)
            .map(|kind| {
                let envs = envs.clone();
                let home = home.clone();
                let id = id.clone();
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        match kind {
                            0 => drop(envs.get(&id).map(|env| env.root().exists())),
                            1 => {
                                let other = Environments::open(&home);
                                drop(other.map(|other| other.get(&id).map(drop)));
                            }
                            _ => drop(envs.describe(&id)),
                        }
                    }
                })
            })
            .collect();
        let deleter = {
            let envs = envs.clone();
            let id = id.clone();
            std::thread::spawn(move || envs.delete(&id))
        };
        for reader in readers {
            reader.join().unwrap();
        }
        deleter.join().unwrap().unwrap();
        rounds += 1;
    }
    drop(envs);
    assert!(rounds > 0);
    assert_released(&home, &format!("after {rounds} racing deletes")).await;
}
