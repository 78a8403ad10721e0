//! Bounded capture of one output stream.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Size of the buffer each stream is read through (the default Linux pipe capacity).
const CHUNK: usize = 64 * 1024;

/// The bytes kept from one stream, and how many were dropped past the cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The first bytes of the stream, at most the spec's `output_limit`.
    pub bytes: Vec<u8>,
    /// How many further bytes the child wrote and hookbox dropped.
    pub dropped: u64,
}

impl CapturedOutput {
    /// Whether anything was cut.
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }

    /// The kept bytes as (lossy) UTF-8, with a marker line when output was cut.
    pub fn to_text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.truncated() {
            text.push_str(&format!(
                "\n[hookbox: output truncated after {} bytes; {} more bytes dropped]",
                self.bytes.len(),
                self.dropped
            ));
        }
        text
    }

    /// Appends `chunk`, keeping at most `limit` bytes in total and counting the rest as dropped.
    pub(crate) fn keep(&mut self, chunk: &[u8], limit: usize) {
        let room = limit.saturating_sub(self.bytes.len());
        let (kept, rest) = chunk.split_at(room.min(chunk.len()));
        self.bytes.extend_from_slice(kept);
        self.dropped = self.dropped.saturating_add(rest.len() as u64);
    }
}

/// Reads `stream` to its end into `into`, keeping at most `limit` bytes and dropping the rest.
///
/// Everything read so far is already in `into`, so the caller may stop waiting (drop this
/// future) at any point without losing it. A read error ends the stream like end-of-file does:
/// a pipe only fails when the other side is gone. The buffer is not zeroed first: only the
/// pages a read fills are touched (each touched page may be a copy-on-write fault while a
/// keeper, forked from this process, is alive).
pub(crate) async fn drain(
    mut stream: impl AsyncRead + Unpin,
    into: &mut CapturedOutput,
    limit: usize,
) {
    let mut buf = Vec::with_capacity(CHUNK);
    while let Ok(read @ 1..) = stream.read_buf(&mut buf).await {
        into.keep(&buf[..read], limit);
        buf.clear();
    }
}

/// Writes `input` to a child's stdin (then closes it) while draining its stdout and stderr
/// into `into`, each capped at `limit`; ends when all three are done. A missing stream is
/// done already.
pub(crate) async fn exchange(
    input: Option<(impl AsyncWrite + Unpin, &[u8])>,
    stdout: Option<impl AsyncRead + Unpin>,
    stderr: Option<impl AsyncRead + Unpin>,
    [out, err]: [&mut CapturedOutput; 2],
    limit: usize,
) {
    tokio::join!(
        async {
            if let Some((mut stdin, bytes)) = input {
                // A child may exit or close its stdin without reading it all (EPIPE): that is
                // its business, not an error. Dropping `stdin` closes the pipe.
                let _ignored = stdin.write_all(bytes).await;
            }
        },
        async {
            if let Some(stdout) = stdout {
                drain(stdout, out, limit).await;
            }
        },
        async {
            if let Some(stderr) = stderr {
                drain(stderr, err, limit).await;
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(chunks: &[&[u8]], limit: usize) -> CapturedOutput {
        let mut out = CapturedOutput::default();
        for chunk in chunks {
            out.keep(chunk, limit);
        }
        out
    }

    #[test]
    fn keeps_everything_under_the_limit() {
        let out = kept(&[b"hello ", b"world"], 100);
        assert_eq!(out.bytes, b"hello world");
        assert_eq!(out.dropped, 0);
        assert!(!out.truncated());
        assert_eq!(out.to_text(), "hello world");
    }

    #[test]
    fn exactly_at_the_limit_is_not_truncated() {
        let out = kept(&[b"abc", b"de"], 5);
        assert_eq!(out.bytes, b"abcde");
        assert!(!out.truncated());
    }

    #[test]
    fn cuts_inside_a_chunk_and_counts_the_rest() {
        let out = kept(&[b"abc", b"defgh", b"ijk"], 5);
        assert_eq!(out.bytes, b"abcde");
        assert_eq!(out.dropped, 6);
        assert!(out.truncated());
        assert_eq!(
            out.to_text(),
            "abcde\n[hookbox: output truncated after 5 bytes; 6 more bytes dropped]"
        );
    }

    #[test]
    fn zero_limit_drops_everything() {
        let out = kept(&[b"abc", b"", b"de"], 0);
        assert!(out.bytes.is_empty());
        assert_eq!(out.dropped, 5);
        assert_eq!(
            out.to_text(),
            "\n[hookbox: output truncated after 0 bytes; 5 more bytes dropped]"
        );
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        let out = kept(&[b"ok \xff"], 10);
        assert_eq!(out.to_text(), "ok \u{fffd}");
    }

    #[tokio::test]
    async fn drain_reads_to_the_end_and_caps() {
        let data = vec![7_u8; 3 * CHUNK + 11];
        let mut out = CapturedOutput::default();
        drain(&data[..], &mut out, CHUNK + 1).await;
        assert_eq!(out.bytes.len(), CHUNK + 1);
        assert_eq!(out.dropped, (2 * CHUNK + 10) as u64);
    }

    #[tokio::test]
    async fn drain_of_an_empty_stream_keeps_nothing() {
        let mut out = CapturedOutput::default();
        drain(&b""[..], &mut out, 10).await;
        assert_eq!(out, CapturedOutput::default());
    }
}
