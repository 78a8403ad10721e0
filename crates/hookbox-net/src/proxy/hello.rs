//! The first bytes of a blind tunnel: a TLS ClientHello, read whole (over as many TCP segments
//! and TLS records as the client splits it into) and parsed by rustls, so the proxy can check
//! that its SNI names the `CONNECT` host before a single byte goes upstream.

use std::time::Duration;

use rustls::server::Acceptor;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::host;

/// The most bytes read while waiting for a complete ClientHello. Real ones are well under
/// 4 KiB (post-quantum key shares included); more is refused as not a ClientHello.
pub(super) const MAX_HELLO_BYTES: usize = 32 * 1024;

/// A complete ClientHello: the bytes read (to be sent upstream unchanged) and its SNI.
pub(super) struct Hello {
    /// Everything read from the client so far, in order.
    pub(super) bytes: Vec<u8>,
    /// The server name the ClientHello asks for, canonicalized like a request host (`None`
    /// when it sends none).
    pub(super) sni: Option<String>,
}

/// Reads from `client` until it has sent a complete ClientHello, for at most `timeout` and
/// [`MAX_HELLO_BYTES`]. The error says why no ClientHello was found (never quoting the bytes).
pub(super) async fn read<S: AsyncRead + Unpin>(
    client: &mut S,
    timeout: Duration,
) -> Result<Hello, String> {
    match tokio::time::timeout(timeout, read_whole(client)).await {
        Ok(result) => result,
        Err(_elapsed) => Err(format!(
            "the client sent no complete TLS ClientHello within {timeout:?}"
        )),
    }
}

pub(super) async fn read_whole<S: AsyncRead + Unpin>(client: &mut S) -> Result<Hello, String> {
    let mut acceptor = Acceptor::default();
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        let read = client
            .read(&mut buffer)
            .await
            .map_err(|error| format!("reading the ClientHello failed: {error}"))?;
        if read == 0 {
            return Err(if bytes.is_empty() {
                "the client closed the tunnel without sending a TLS ClientHello".to_owned()
            } else {
                "the client closed the tunnel before its TLS ClientHello was complete".to_owned()
            });
        }
        if bytes.len() + read > MAX_HELLO_BYTES {
            return Err(format!(
                "the tunnel's first {MAX_HELLO_BYTES} bytes hold no complete TLS ClientHello"
            ));
        }
        bytes.extend_from_slice(&buffer[..read]);
        let mut fresh = &buffer[..read];
        while !fresh.is_empty() {
            acceptor
                .read_tls(&mut fresh)
                .map_err(|error| format!("not a TLS ClientHello ({error})"))?;
        }
        match acceptor.accept() {
            Ok(None) => {}
            Ok(Some(accepted)) => {
                let sni = accepted
                    .client_hello()
                    .server_name()
                    .map(|name| host::canonical(name).unwrap_or_else(|_| name.to_owned()));
                return Ok(Hello { bytes, sni });
            }
            Err((error, _alert)) => return Err(format!("not a TLS ClientHello ({error})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rustls::pki_types::ServerName;
    use rustls::{ClientConfig, ClientConnection, RootCertStore};

    use super::{MAX_HELLO_BYTES, read};

    /// The ClientHello rustls sends for `name` (with or without SNI), as TLS records.
    fn client_hello(name: &str, sni: bool) -> Vec<u8> {
        let mut config =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(RootCertStore::empty())
                .with_no_client_auth();
        config.enable_sni = sni;
        let name = ServerName::try_from(name.to_owned()).unwrap();
        let mut connection = ClientConnection::new(Arc::new(config), name).unwrap();
        let mut bytes = Vec::new();
        connection.write_tls(&mut bytes).unwrap();
        bytes
    }

    /// `records` (one handshake record) re-framed as one record per `size` bytes of payload.
    fn fragmented(records: &[u8], size: usize) -> Vec<u8> {
        let payload = &records[5..];
        assert_eq!(
            payload.len(),
            usize::from(u16::from_be_bytes([records[3], records[4]]))
        );
        let mut out = Vec::new();
        for piece in payload.chunks(size) {
            out.extend_from_slice(&records[..3]);
            out.extend_from_slice(&u16::try_from(piece.len()).unwrap().to_be_bytes());
            out.extend_from_slice(piece);
        }
        out
    }

    async fn parse(bytes: &[u8]) -> Result<Option<String>, String> {
        let mut reader = bytes;
        read(&mut reader, Duration::from_secs(5))
            .await
            .map(|hello| {
                assert_eq!(hello.bytes, bytes);
                hello.sni
            })
    }

    #[tokio::test]
    async fn the_sni_is_found_whole_or_fragmented_and_canonicalized() {
        let hello = client_hello("Allowed.Example", true);
        assert_eq!(
            parse(&hello).await.unwrap().as_deref(),
            Some("allowed.example")
        );
        let split = fragmented(&hello, 7);
        assert!(split.len() > hello.len());
        assert_eq!(
            parse(&split).await.unwrap().as_deref(),
            Some("allowed.example")
        );
        assert_eq!(
            parse(&client_hello("a.example", false)).await.unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn segments_arriving_apart_are_joined() {
        let hello = client_hello("allowed.example", true);
        let (mut client, mut proxy) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for piece in hello.chunks(3) {
                client.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
            client
        });
        let parsed = read(&mut proxy, Duration::from_secs(5)).await.unwrap();
        assert_eq!(parsed.sni.as_deref(), Some("allowed.example"));
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn other_bytes_are_not_a_client_hello() {
        let error = parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap_err();
        assert!(error.contains("not a TLS ClientHello"), "{error}");
        let error = parse(&[]).await.unwrap_err();
        assert!(error.contains("without sending"), "{error}");
        let hello = client_hello("allowed.example", true);
        let error = parse(&hello[..hello.len() - 1]).await.unwrap_err();
        assert!(
            error.contains("before its TLS ClientHello was complete"),
            "{error}"
        );
        // A ClientHello announcing 16 MiB, then more filler than the limit: refused either way.
        let mut huge = vec![22, 3, 1, 0x40, 0x00, 1, 0xff, 0xff, 0xff];
        huge.resize(MAX_HELLO_BYTES + 10, 0);
        assert!(parse(&huge).await.is_err());
    }

    #[tokio::test]
    async fn a_silent_client_times_out() {
        let (_client, mut proxy) = tokio::io::duplex(64);
        let error = read(&mut proxy, Duration::from_millis(50))
            .await
            .err()
            .unwrap();
        assert!(error.contains("within"), "{error}");
    }
}
