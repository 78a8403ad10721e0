//! Socket families from inside the sandbox: only `AF_UNIX`, `AF_INET` and `AF_INET6` exist
//! there. vsock is not namespaced (on a Firecracker or other guest VM it reaches the
//! hypervisor), netlink, packet, alg, key, bluetooth, xdp and the rest are kernel attack
//! surface the sandbox does not need. Raw system calls through python3's ctypes.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, Sandbox, run};

use super::support::shared;

/// Prints `socket FAMILY RESULT ERRNO` and `socketpair FAMILY RESULT ERRNO` for every family
/// number from 0 to 63 (and a few larger ones), through libc with no Python checks between.
const PROBE: &str = "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for family in list(range(64)) + [255, 4096, 0x7fffffff, -1]:
    for kind in (1, 2, 3, 5):
        ctypes.set_errno(0)
        fd = libc.socket(family, kind, 0)
        if fd >= 0:
            libc.close(fd)
            break
    print('socket', family, 0 if fd >= 0 else -1, ctypes.get_errno() if fd < 0 else 0)
    pair = (ctypes.c_int * 2)()
    ctypes.set_errno(0)
    r = libc.socketpair(family, 1, 0, pair)
    print('socketpair', family, r, ctypes.get_errno() if r < 0 else 0)
";

/// A sandbox over a fresh root with an empty `workspace`.
fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    dir
}

async fn python(root: &tempfile::TempDir, code: &str) -> String {
    let spec = ProcessSpec {
        sandbox: Some(Sandbox::new(root.path())),
        ..ProcessSpec::shell(&format!("python3 -c \"{code}\""), Duration::from_secs(30))
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(
        out.exit,
        ExitKind::Exited(0),
        "{}{}",
        out.stdout.to_text(),
        out.stderr.to_text()
    );
    out.stdout.to_text()
}

#[tokio::test]
async fn only_unix_inet_and_inet6_sockets_can_be_created() {
    let _guard = shared().await;
    let root = root();
    let out = python(&root, PROBE).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2 * 68, "{out}");
    for line in lines {
        let fields: Vec<&str> = line.split(' ').collect();
        let family: i64 = fields[1].parse().unwrap();
        let (result, errno) = (fields[2], fields[3]);
        match (fields[0], family) {
            // AF_UNIX, AF_INET, AF_INET6 sockets; socketpair exists only for AF_UNIX.
            ("socket", 1 | 2 | 10) | ("socketpair", 1) => {
                assert_eq!(result, "0", "refused: {line}");
            }
            ("socketpair", 2 | 10) => assert_eq!(errno, "95", "{line}"), // EOPNOTSUPP
            // Everything else (AF_VSOCK 40, AF_NETLINK 16, AF_PACKET 17, AF_ALG 38, AF_KEY 15,
            // AF_BLUETOOTH 31, AF_XDP 44, AF_TIPC 30, AF_RDS 21, AF_CAN 29, …) is refused by the
            // filter, whatever the kernel has: EAFNOSUPPORT, as if it were not built in.
            _ => assert_eq!((result, errno), ("-1", "97"), "not refused: {line}\n{out}"),
        }
    }
}

#[tokio::test]
async fn programs_still_resolve_names_and_use_the_network_families() {
    let _guard = shared().await;
    let root = root();
    // glibc's getaddrinfo with AI_ADDRCONFIG asks netlink which address families are
    // configured; refused, it assumes both, so names still resolve. Loopback TCP over IPv4 and
    // IPv6 and a Unix socket pair still work.
    let out = python(
        &root,
        "
import socket
print('127.0.0.1' in {a[4][0] for a in socket.getaddrinfo('localhost', 80, flags=socket.AI_ADDRCONFIG)})
for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
    server = socket.socket(family)
    server.bind((host, 0))
    server.listen()
    client = socket.create_connection(server.getsockname()[:2])
    conn, _ = server.accept()
    client.sendall(b'ok')
    print(family.name, conn.recv(2).decode())
a, b = socket.socketpair()
a.sendall(b'unix')
print(b.recv(4).decode())
",
    )
    .await;
    assert_eq!(out, "True\nAF_INET ok\nAF_INET6 ok\nunix\n", "{out}");
}
