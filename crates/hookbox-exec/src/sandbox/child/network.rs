//! The init's network: joining the namespace the intermediate creates, bringing up `lo`, and
//! the listener opened on `127.0.0.1` inside.

use super::{check, errno};

/// How the init finds the network namespace the intermediate creates after forking it.
pub(super) struct NetHandoff {
    /// Read end of a pipe: one byte once the namespace exists (0) or could not be created (1);
    /// end-of-file if the intermediate died.
    pub(super) ready: libc::c_int,
    /// The intermediate's directory in the host's procfs (`O_PATH`).
    pub(super) proc_dir: libc::c_int,
}

/// Waits for the intermediate's network namespace and enters it (closing both descriptors).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn join_network(net: NetHandoff) -> Result<(), i32> {
    // SAFETY: reads into a local byte, opens relative to a descriptor we own, setns on the
    // descriptor just opened; every descriptor is ours and closed here.
    unsafe {
        let mut verdict = 1_u8;
        let read = loop {
            let read = libc::read(net.ready, (&raw mut verdict).cast(), 1);
            if read >= 0 || errno() != libc::EINTR {
                break read;
            }
        };
        libc::close(net.ready);
        let result = if read != 1 {
            Err(libc::ECHILD)
        } else if verdict != 0 {
            // The intermediate has reported why.
            Err(libc::EPERM)
        } else {
            let fd = libc::openat(
                net.proc_dir,
                c"ns/net".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                Err(errno())
            } else {
                let joined = check(libc::setns(fd, libc::CLONE_NEWNET).into()).map(drop);
                libc::close(fd);
                joined
            }
        };
        libc::close(net.proc_dir);
        result
    }
}

/// A TCP socket bound to `127.0.0.1:port` and listening (close-on-exec).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn listen_on_loopback(port: u16) -> Result<libc::c_int, i32> {
    // SAFETY: an all-zero sockaddr_in is valid; the struct outlives the bind call and its size
    // is passed; the socket is ours (closed on failure, else returned to the caller).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_port = port.to_be();
        address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let bound = libc::bind(
            fd,
            (&raw const address).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        if bound != 0 || libc::listen(fd, 128) != 0 {
            let failed = errno();
            libc::close(fd);
            return Err(failed);
        }
        Ok(fd)
    }
}

/// `ip link set lo up`, through an ioctl on a throwaway socket.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn loopback_up() -> Result<(), i32> {
    // SAFETY: an all-zero ifreq is valid; the name fits; the socket is ours and closed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        let mut result = Ok(());
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &raw mut request) != 0 {
            result = Err(errno());
        } else {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &raw mut request) != 0 {
                result = Err(errno());
            }
        }
        libc::close(fd);
        result
    }
}
