//! Response redaction on intercepted connections (N12): the values the proxy injected (the
//! `transform` headers and the resolved `credential`) never travel back to the sandbox in an
//! upstream's answer.
//!
//! - **What is scanned for**: each injected header value of at least [`MIN_SECRET_LEN`] bytes,
//!   in each of its common encodings (see `forms.rs`): as it is or with any of its bytes
//!   escaped (`%XX`, JSON `\uXXXX`, `\"`, `\/`, `+` for a space), as hex digits (either
//!   case), and as base64 (standard or URL-safe, padded or not, at each of the three byte
//!   alignments the value can have inside a longer encoded string: the characters that encode
//!   the value alone are matched, so the one or two characters shared with neighbouring bytes
//!   stay). Shorter values (a `transform` such as `X-Flag: 1`) are not scanned: replacing every
//!   `1` would corrupt bodies, and so short a value is no secret.
//! - **Not caught** (the residual limit): part of a value (the token without its `Bearer `
//!   prefix), other or layered encodings (base64 of hex, base32, MIME base64 broken into
//!   lines, `\u` escapes of non-ASCII bytes, HTML entities, a reversed or encrypted value…),
//!   and a value the sandbox recombines from pieces fetched separately. An upstream that wants
//!   to leak an injected secret can always do so; redaction stops echoes and careless
//!   reflections, while the allowlist and the credentials' domains decide who is trusted with
//!   a secret in the first place.
//! - **Where**: every response header value (and the trailers), the reason phrase, and the body.
//!   Each occurrence becomes [`MARKER`]; among forms starting at the same byte the longest
//!   match wins, and the scan goes on after the replacement.
//! - **Bodies** are rewritten as they stream: a chunk is scanned together with the bytes kept
//!   back from the previous one, and fewer bytes than the longest possible match are kept back
//!   (a value that may still be completed by the next chunk), so a value split across chunks is
//!   still found and the result does not depend on how the body was chunked. The length
//!   changes, so `Content-Length` is dropped and the body reaches the client chunked (HTTP/1.1).
//! - **Compression** cannot be scanned: requests carrying scanned values go upstream with
//!   `Accept-Encoding: identity`, and a response whose body still has a `Content-Encoding`
//!   other than `identity` is withheld (502), failing closed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderMap, HeaderValue};

use super::{DecisionLog, ProxyDecision};

mod forms;

use forms::Form;

/// The shortest injected value that is scanned for; shorter ones are left alone.
pub(super) const MIN_SECRET_LEN: usize = 8;

/// What replaces every occurrence of an injected value.
pub(super) const MARKER: &[u8] = b"[REDACTED]";

/// The injected values a response is scanned for (never shown by `Debug`, which has none).
pub(super) struct Secrets {
    /// Every form of the distinct values of at least [`MIN_SECRET_LEN`] bytes.
    forms: Vec<Form>,
    /// Which bytes may start some form, to skip the rest quickly.
    first: [bool; 256],
    /// The most bytes a match can span (0 when there is nothing to scan for).
    longest: usize,
}

impl Secrets {
    /// The values of `inject` worth scanning for.
    pub(super) fn new(inject: &[(String, String)]) -> Self {
        let mut values: Vec<Vec<u8>> = inject
            .iter()
            .map(|(_, value)| value.as_bytes().to_vec())
            .filter(|value| value.len() >= MIN_SECRET_LEN)
            .collect();
        values.sort_unstable();
        values.dedup();
        let forms: Vec<Form> = values.iter().flat_map(|value| forms::of(value)).collect();
        let mut first = [false; 256];
        for (byte, starts) in (0..=u8::MAX).zip(first.iter_mut()) {
            *starts = forms.iter().any(|form| form.may_start(byte));
        }
        let longest = forms.iter().map(Form::longest).max().unwrap_or(0);
        Self {
            forms,
            first,
            longest,
        }
    }

    /// Whether nothing is scanned for.
    pub(super) fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Appends `input` to `out` with every form of every value replaced by [`MARKER`], and
    /// returns how many bytes of `input` were consumed and how many values were replaced.
    /// Unless `at_end`, the scan stops where the longest possible match would run past the end
    /// of `input`: the bytes from there on (fewer than that) are for the caller to keep and scan
    /// again with what follows.
    fn scan(&self, input: &[u8], at_end: bool, out: &mut Vec<u8>) -> (usize, usize) {
        let mut emitted = 0;
        let mut position = 0;
        let mut count = 0;
        while position < input.len() {
            if !at_end && position + self.longest > input.len() {
                break;
            }
            if self.first[usize::from(input[position])]
                && let Some(length) = self
                    .forms
                    .iter()
                    .filter_map(|form| form.match_at(&input[position..]))
                    .max()
            {
                out.extend_from_slice(&input[emitted..position]);
                out.extend_from_slice(MARKER);
                position += length;
                emitted = position;
                count += 1;
                continue;
            }
            position += 1;
        }
        out.extend_from_slice(&input[emitted..position]);
        (position, count)
    }

    /// `input` with every value replaced, and how many were.
    pub(super) fn redact(&self, input: &[u8]) -> (Vec<u8>, usize) {
        let mut out = Vec::with_capacity(input.len());
        let (_, count) = self.scan(input, true, &mut out);
        (out, count)
    }

    /// Replaces the values in every header of `headers` and returns how many were replaced. A
    /// value that no longer parses (it cannot: the marker is plain ASCII) becomes empty.
    pub(super) fn redact_headers(&self, headers: &mut HeaderMap) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut total = 0;
        for value in headers.values_mut() {
            let (redacted, count) = self.redact(value.as_bytes());
            if count > 0 {
                total += count;
                *value = HeaderValue::from_bytes(&redacted)
                    .unwrap_or_else(|_| HeaderValue::from_static(""));
            }
        }
        total
    }
}

/// The streaming state of one body's scan: the bytes held back and the count so far.
pub(super) struct Redactor {
    secrets: Arc<Secrets>,
    carry: Vec<u8>,
    count: usize,
}

impl Redactor {
    /// A scan of a new body.
    pub(super) fn new(secrets: Arc<Secrets>) -> Self {
        Self {
            secrets,
            carry: Vec::new(),
            count: 0,
        }
    }

    /// The redacted bytes of `chunk` that can be sent now (possibly none).
    pub(super) fn push(&mut self, chunk: &[u8]) -> Bytes {
        self.carry.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(self.carry.len());
        let (consumed, count) = self.secrets.scan(&self.carry, false, &mut out);
        self.carry.drain(..consumed);
        self.count += count;
        Bytes::from(out)
    }

    /// The redacted bytes still held back, at the end of the body.
    pub(super) fn finish(&mut self) -> Bytes {
        let mut out = Vec::with_capacity(self.carry.len());
        let (_, count) = self.secrets.scan(&self.carry, true, &mut out);
        self.carry.clear();
        self.count += count;
        Bytes::from(out)
    }

    /// Replaces the values in the trailers `headers`, counting them with the body's.
    fn trailers(&mut self, headers: &mut HeaderMap) {
        self.count += self.secrets.redact_headers(headers);
    }

    /// How many values were replaced so far.
    pub(super) fn count(&self) -> usize {
        self.count
    }
}

/// The request's decision, reported once its response body has been scanned (or dropped), with
/// the number of replacements made.
pub(super) struct Report {
    /// The decision to report; `redactions` already counts the head's replacements.
    pub(super) decision: ProxyDecision,
    /// Where it goes.
    pub(super) log: DecisionLog,
}

/// A response body with the injected values replaced as it streams.
pub(super) struct RedactedBody<B> {
    inner: B,
    redactor: Redactor,
    /// Trailers to send once the held-back bytes have gone out.
    trailers: Option<HeaderMap>,
    done: bool,
    report: Option<Report>,
}

impl<B> RedactedBody<B> {
    /// Scans `inner` for `secrets`, reporting `report` when it ends or is dropped.
    pub(super) fn new(inner: B, secrets: Arc<Secrets>, report: Report) -> Self {
        Self {
            inner,
            redactor: Redactor::new(secrets),
            trailers: None,
            done: false,
            report: Some(report),
        }
    }

    /// Reports the decision, once.
    fn report(&mut self) {
        if let Some(Report { mut decision, log }) = self.report.take() {
            decision.redactions += self.redactor.count();
            log(decision);
        }
    }
}

impl<B> Drop for RedactedBody<B> {
    fn drop(&mut self) {
        self.report();
    }
}

impl<B> Body for RedactedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(trailers) = this.trailers.take() {
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(context)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let mut out = this.redactor.push(&data);
                        if this.inner.is_end_stream() {
                            // The last chunk: send what is held back with it, in one frame.
                            let tail = this.redactor.finish();
                            this.done = true;
                            this.report();
                            if !tail.is_empty() {
                                out = [out, tail].concat().into();
                            }
                        }
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        // Anything but data and trailers is not relayed.
                        if let Ok(mut trailers) = frame.into_trailers() {
                            this.redactor.trailers(&mut trailers);
                            let tail = this.redactor.finish();
                            this.done = true;
                            this.report();
                            if tail.is_empty() {
                                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                            }
                            this.trailers = Some(trailers);
                            return Poll::Ready(Some(Ok(Frame::data(tail))));
                        }
                    }
                },
                Some(Err(error)) => {
                    this.done = true;
                    this.report();
                    return Poll::Ready(Some(Err(error)));
                }
                None => {
                    let tail = this.redactor.finish();
                    this.done = true;
                    this.report();
                    if !tail.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(tail))));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::convert::Infallible;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use http_body_util::BodyExt;
    use hyper::body::{Body, Frame};
    use hyper::header::{HeaderMap, HeaderValue};

    use super::{MARKER, RedactedBody, Redactor, Report, Secrets, forms};
    use crate::proxy::ProxyDecision;

    fn secrets(values: &[&str]) -> Secrets {
        let inject: Vec<(String, String)> = values
            .iter()
            .map(|value| ("X-Secret".to_owned(), (*value).to_owned()))
            .collect();
        Secrets::new(&inject)
    }

    /// `input` streamed through a redactor in the pieces `cuts` marks.
    fn streamed(secrets: &Arc<Secrets>, input: &[u8], cuts: &[usize]) -> (Vec<u8>, usize) {
        let mut redactor = Redactor::new(Arc::clone(secrets));
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain([input.len()].iter()) {
            out.extend_from_slice(&redactor.push(&input[start..cut]));
            start = cut;
        }
        out.extend_from_slice(&redactor.finish());
        (out, redactor.count())
    }

    #[test]
    fn short_values_are_not_scanned_for() {
        let secrets = secrets(&["1", "short", "Bearer s3cret-value"]);
        assert_eq!(secrets.forms, forms::of(b"Bearer s3cret-value"));
        assert_eq!(
            secrets.redact(b"1 short Bearer s3cret-value!"),
            (b"1 short [REDACTED]!".to_vec(), 1)
        );
        assert!(Secrets::new(&[("X-Flag".to_owned(), "1".to_owned())]).is_empty());
    }

    #[test]
    fn every_split_of_a_body_gives_the_one_shot_result() {
        let secrets = Arc::new(secrets(&[
            "tok-12345678",
            "Bearer tok-12345678",
            "abcabcab",
        ]));
        let input = b"a Bearer tok-12345678 b tok-12345678tok-12345678 abcabcabcabcab \
            Bearer tok-1234567 end abcabcab";
        let (expected, count) = secrets.redact(input);
        assert_eq!(count, 5);
        assert_eq!(
            String::from_utf8(expected.clone()).unwrap(),
            "a [REDACTED] b [REDACTED][REDACTED] [REDACTED]cabcab \
            Bearer tok-1234567 end [REDACTED]"
        );
        for first in 0..=input.len() {
            for second in first..=input.len().min(first + 25) {
                let (out, streamed_count) = streamed(&secrets, input, &[first, second]);
                assert_eq!(out, expected, "cuts at {first} and {second}");
                assert_eq!(streamed_count, count);
            }
        }
        // Byte by byte.
        let cuts: Vec<usize> = (1..input.len()).collect();
        assert_eq!(streamed(&secrets, input, &cuts).0, expected);
    }

    #[test]
    fn encoded_values_split_anywhere_give_the_one_shot_result() {
        let secrets = Arc::new(secrets(&["Bearer s3cret/value"]));
        let input = b"b64 QmVhcmVyIHMzY3JldC92YWx1ZQ== hex 4265617265722073336372\
            65742f76616c7565 json \\u0042earer s3cret\\/value pct Bearer%20s3cret%2Fvalue \
            url eEJlYXJlciBzM2NyZXQvdmFsdWU";
        let (expected, count) = secrets.redact(input);
        assert_eq!(count, 5, "{}", String::from_utf8_lossy(&expected));
        for cut in 0..=input.len() {
            let (out, streamed_count) = streamed(&secrets, input, &[cut]);
            assert_eq!(out, expected, "cut at {cut}");
            assert_eq!(streamed_count, count);
        }
        let cuts: Vec<usize> = (1..input.len()).collect();
        assert_eq!(streamed(&secrets, input, &cuts).0, expected);
    }

    #[test]
    fn header_values_are_redacted_and_counted() {
        let secrets = secrets(&["Bearer s3cret-value"]);
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-echo",
            HeaderValue::from_static("got Bearer s3cret-value twice: Bearer s3cret-value"),
        );
        headers.insert("x-other", HeaderValue::from_static("Bearer s3cret"));
        assert_eq!(secrets.redact_headers(&mut headers), 2);
        assert_eq!(headers["x-echo"], "got [REDACTED] twice: [REDACTED]");
        assert_eq!(headers["x-other"], "Bearer s3cret");
    }

    #[tokio::test]
    async fn a_body_split_mid_value_is_redacted_and_the_decision_counts_it() {
        let secrets = Arc::new(secrets(&["Bearer s3cret-value"]));
        let mut trailers = HeaderMap::new();
        trailers.insert("x-t", HeaderValue::from_static("Bearer s3cret-value"));
        let frames = Frames(VecDeque::from([
            Frame::data(Bytes::from_static(b"echo: Bearer s3c")),
            Frame::data(Bytes::from_static(b"ret-val")),
            Frame::data(Bytes::from_static(b"ue; Bearer s3cret-valu")),
            Frame::trailers(trailers),
        ]));
        let logged = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logged);
        let report = Report {
            decision: ProxyDecision {
                host: "example.com".to_owned(),
                port: 443,
                method: "GET".to_owned(),
                allowed: true,
                reason: String::new(),
                intercepted: true,
                redactions: 1,
                sni: None,
                caller: None,
            },
            log: Arc::new(move |decision| {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(decision);
            }),
        };
        let body = RedactedBody::new(frames, secrets, report);
        let collected = body.collect().await.unwrap();
        let trailers = collected.trailers().cloned().unwrap();
        assert_eq!(trailers["x-t"], std::str::from_utf8(MARKER).unwrap());
        assert_eq!(
            collected.to_bytes(),
            Bytes::from_static(b"echo: [REDACTED]; Bearer s3cret-valu")
        );
        let logged = logged.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(logged.len(), 1);
        assert_eq!(logged[0].redactions, 3);
    }

    /// A body yielding `frames`, each as soon as it is polled.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _context: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }
}
