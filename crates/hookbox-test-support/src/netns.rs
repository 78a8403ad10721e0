//! A network namespace with a veth pair to the host, for tests of hosts the sandbox must not
//! reach directly while hookbox's egress proxy, on the host, can. Needs root and `ip`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU32, Ordering};

/// Distinct names and subnets for each namespace made by this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A network namespace `hbx-test-PID-N` linked to the host by a veth pair: `10.77.S.1/24` on the
/// host side, `10.77.S.2/24` inside (S differs per namespace). Deleted (with the pair) on drop,
/// panics included.
#[derive(Debug)]
pub struct TestNetns {
    name: String,
    host_link: String,
    subnet: u8,
}

impl TestNetns {
    /// Creates the namespace and the pair; `Err` holds why it cannot be done here (not root,
    /// no `ip`, …), for the test to print as the reason it is skipped.
    pub fn create() -> Result<Self, String> {
        if !is_root() {
            return Err("not running as root".to_owned());
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let subnet = u8::try_from(((pid % 64) * 4 + n) % 250).unwrap_or(0);
        let namespace = Self {
            name: format!("hbx-test-{pid}-{n}"),
            host_link: format!("hbxh{}n{n}", pid % 100_000),
            subnet,
        };
        ip(&["netns", "add", &namespace.name])?;
        let peer = format!("hbxp{}n{n}", pid % 100_000);
        let host_address = format!("{}/24", namespace.host_address());
        let inside_address = format!("{}/24", namespace.inside_address());
        let name = namespace.name.as_str();
        let host_link = namespace.host_link.as_str();
        ip(&[
            "link", "add", host_link, "type", "veth", "peer", "name", &peer,
        ])?;
        ip(&["link", "set", &peer, "netns", name])?;
        ip(&["addr", "add", &host_address, "dev", host_link])?;
        ip(&["link", "set", host_link, "up"])?;
        ip(&["-n", name, "addr", "add", &inside_address, "dev", &peer])?;
        ip(&["-n", name, "link", "set", &peer, "up"])?;
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        Ok(namespace)
    }

    /// The host side's address, `10.77.S.1`.
    pub fn host_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.subnet, 1)
    }

    /// The address inside the namespace, `10.77.S.2`.
    pub fn inside_address(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.subnet, 2)
    }

    /// The pair's subnet, `10.77.S.0/24`.
    pub fn cidr(&self) -> String {
        format!("10.77.{}.0/24", self.subnet)
    }

    /// A listener bound to `inside_address():port` inside the namespace (bound from a thread
    /// that joined it; the socket stays in the namespace wherever it is used).
    pub fn bind_inside(&self, port: u16) -> io::Result<std::net::TcpListener> {
        let path = format!("/run/netns/{}", self.name);
        let address = SocketAddr::from((self.inside_address(), port));
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let namespace = std::fs::File::open(&path)?;
                    rustix::thread::move_into_link_name_space(
                        namespace.as_fd(),
                        Some(rustix::thread::LinkNameSpaceType::Network),
                    )?;
                    std::net::TcpListener::bind(address)
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the binding thread panicked")))
        })
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
        // Gone with the namespace normally; left over if the peer never moved into it.
        let _ = ip(&["link", "del", &self.host_link]);
    }
}

/// Whether this process runs as root (effective uid 0).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// Runs `ip ARGS…`; `Err` with its stderr when it fails.
#[expect(
    clippy::disallowed_methods,
    reason = "test fixture setup outside any sandbox; hookbox itself never runs `ip`"
)]
fn ip(args: &[&str]) -> Result<(), String> {
    let output = std::process::Command::new("ip")
        .args(args)
        .output()
        .map_err(|error| format!("cannot run `ip`: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
