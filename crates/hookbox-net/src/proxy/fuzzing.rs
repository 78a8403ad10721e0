//! Entry points for the fuzz targets in the repository's `fuzz/` directory (feature `fuzzing`,
//! never enabled by hookbox itself): the proxy's parsers are not public API.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use hyper::Request;
use hyper::http::uri::Authority;

use super::{hello, target};

/// The canonical target of `request` as the proxy sees it (`host_header` and path), or why it
/// is refused. Panics if the canonical target does not read back as itself: canonicalising
/// must be idempotent, or the proxy and the upstream could disagree about the host.
pub fn request_target(request: &Request<()>) -> Result<(String, String), String> {
    let target = target::parse(request).map_err(|bad| bad.reason)?;
    let host_header = target.host_header();
    let again = host_header
        .parse::<Authority>()
        .map_err(|error| error.to_string())
        .and_then(|authority| target::split(&authority, Some(80)));
    assert_eq!(
        again,
        Ok((target.host.clone(), target.port)),
        "the canonical target `{host_header}` does not read back as itself"
    );
    Ok((host_header, target.path))
}

/// The SNI of the TLS ClientHello that `bytes` begin with (canonicalized like a request host),
/// or why they hold none.
pub fn client_hello_sni(mut bytes: &[u8]) -> Result<Option<String>, String> {
    let read = pin!(hello::read_whole(&mut bytes));
    match read.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(hello) => hello.map(|hello| hello.sni),
        Poll::Pending => panic!("reading from a byte slice never waits"),
    }
}

#[cfg(test)]
mod tests {
    use hyper::Request;

    use super::{client_hello_sni, request_target};

    #[test]
    fn targets_are_canonical_and_read_back() {
        let request = Request::connect("API.Example.com:443").body(()).unwrap();
        assert_eq!(
            request_target(&request),
            Ok(("api.example.com:443".to_owned(), "/".to_owned()))
        );
        let request = Request::get("http://[::1]/a?b").body(()).unwrap();
        assert_eq!(
            request_target(&request),
            Ok(("[::1]".to_owned(), "/a?b".to_owned()))
        );
        let request = Request::get("/relative").body(()).unwrap();
        assert!(request_target(&request).is_err());
    }

    #[test]
    fn bytes_that_are_not_a_client_hello_have_no_sni() {
        assert!(client_hello_sni(b"GET / HTTP/1.1\r\n\r\n").is_err());
        assert!(client_hello_sni(b"").is_err());
    }
}
