//! Disk images: formatted, loop-mounted with autoclear, full at their size, gone on unmount.

use std::io::Write;
use std::path::{Path, PathBuf};

use hookbox_exec::disk::{self, DiskBudget};

use super::support::shared;

/// A mount point that is unmounted when the test ends, passed or not.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = disk::unmount(&self.0);
    }
}

/// `/sys/…/loop/backing_file` of the device mounted at `mount`.
fn loop_status(mount: &Path) -> PathBuf {
    let stat = rustix::fs::statx(
        rustix::fs::CWD,
        mount,
        rustix::fs::AtFlags::empty(),
        rustix::fs::StatxFlags::BASIC_STATS,
    )
    .unwrap();
    PathBuf::from(format!(
        "/sys/dev/block/{}:{}/loop/backing_file",
        stat.stx_dev_major, stat.stx_dev_minor
    ))
}

#[tokio::test]
async fn an_image_holds_its_size_and_inodes_and_detaches_when_unmounted() {
    if !disk::can_mount() {
        hookbox_test_support::skip(
            "an_image_holds_its_size_and_inodes_and_detaches_when_unmounted",
            "mounting needs root and /dev/loop-control",
        );
        return;
    }
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    let budget = DiskBudget {
        bytes: 8 << 20,
        inodes: 200,
    };
    disk::make_image(&image, &budget, 0).await.unwrap();
    // Backed: the host holds every block of the image, whatever fills it later.
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&image).unwrap();
    assert_eq!(meta.len(), 8 << 20);
    assert!(
        meta.blocks() * 512 >= 8 << 20,
        "{} bytes held",
        meta.blocks() * 512
    );

    let mount = dir.path().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    assert!(!disk::is_mounted(&mount).unwrap());
    disk::mount_image(&image, &mount).unwrap();
    let guard = Mounted(mount.clone());
    assert!(disk::is_mounted(&mount).unwrap());
    let status = loop_status(&mount);
    let backing = disk::backing_file(&mount).unwrap().unwrap();
    assert_eq!(backing, image.to_str().unwrap());

    // Bytes: past the size, ENOSPC.
    let mut file = std::fs::File::create(mount.join("big")).unwrap();
    let chunk = vec![7_u8; 1 << 20];
    let err = (0..16)
        .try_for_each(|_| file.write_all(&chunk).and_then(|()| file.sync_all()))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    drop(file);
    std::fs::remove_file(mount.join("big")).unwrap();
    // Inodes: past the count, ENOSPC.
    let err = (0..1000)
        .try_for_each(|i| std::fs::File::create(mount.join(format!("f{i}"))).map(drop))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");

    drop(guard);
    assert!(!disk::is_mounted(&mount).unwrap());
    // Autoclear: the loop device lets go of the image (the kernel does it asynchronously).
    assert_detached(&status).await;
    // Unmounting what is not mounted is fine.
    disk::unmount(&mount).unwrap();
}

#[tokio::test]
async fn a_file_that_is_not_an_image_is_refused_and_leaves_no_device() {
    if !disk::can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("zeros.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let mount = dir.path().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    let err = disk::mount_image(&image, &mount).unwrap_err();
    assert!(err.to_string().contains("mount the disk image"), "{err}");
    assert!(!disk::is_mounted(&mount).unwrap());
    // The device is detached at once (LOOP_CLR_FD), but the kernel lets go of it
    // asynchronously once the last descriptor closes: wait for that, as for autoclear.
    let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while loops_backed_by(&image) > 0 {
        assert!(
            tokio::time::Instant::now() < give_up,
            "a loop device still holds {}",
            image.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Waits (up to 10 s) until the loop device whose `backing_file` is `status` has detached.
async fn assert_detached(status: &Path) {
    let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(status).is_ok() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "{} is still attached",
            status.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// How many loop devices have `image` as their backing file.
fn loops_backed_by(image: &Path) -> usize {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .filter_map(|entry| {
            std::fs::read_to_string(entry.unwrap().path().join("loop/backing_file")).ok()
        })
        .filter(|file| file.trim_end() == image.to_str().unwrap())
        .count()
}

#[test]
fn budgets_below_the_minimum_are_refused() {
    assert!(DiskBudget::DEFAULT.validate().is_ok());
    let small = DiskBudget {
        bytes: 1 << 20,
        inodes: 1000,
    };
    assert!(small.validate().unwrap_err().contains("disk_bytes"));
    let few = DiskBudget {
        bytes: 8 << 20,
        inodes: 1,
    };
    assert!(few.validate().unwrap_err().contains("disk_inodes"));
}

#[tokio::test]
async fn a_sparse_image_of_an_older_hookbox_is_backed_when_mounted() {
    if !disk::can_mount() {
        hookbox_test_support::skip(
            "a_sparse_image_of_an_older_hookbox_is_backed_when_mounted",
            "it needs root and /dev/loop-control",
        );
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("old.img");
    // What older hookboxes made: a sparse file formatted in place.
    std::fs::File::create(&image)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let spec = hookbox_exec::ProcessSpec {
        program: "/usr/sbin/mke2fs".into(),
        args: ["-q", "-F", "-t", "ext4", "-m", "0"]
            .into_iter()
            .map(Into::into)
            .chain([image.clone().into()])
            .collect(),
        ..hookbox_exec::ProcessSpec::shell("", std::time::Duration::from_secs(60))
    };
    let formatted = hookbox_exec::run(&spec).await.unwrap();
    assert_eq!(formatted.exit, hookbox_exec::ExitKind::Exited(0));
    assert!(std::fs::metadata(&image).unwrap().blocks() * 512 < 8 << 20);
    let mount = dir.path().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    disk::mount_image(&image, &mount).unwrap();
    let _mounted = Mounted(mount.clone());
    let held = std::fs::metadata(&image).unwrap().blocks() * 512;
    assert!(held >= 8 << 20, "{held} bytes held");
    std::fs::write(mount.join("still-there"), b"yes").unwrap();
}
