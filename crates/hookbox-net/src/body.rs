//! Reading a response body with a cap on what is kept.

use crate::NetError;

/// A response body: the first `limit` bytes, and how many more arrived and were discarded.
pub(crate) struct CappedBody {
    pub(crate) kept: Vec<u8>,
    pub(crate) dropped: u64,
}

/// Reads the whole body of `response`, keeping at most `limit` bytes. Bytes past the limit are
/// read and discarded rather than left unread, so the connection stays reusable and the caller
/// learns how much was dropped; the caller's deadline bounds how long that takes.
pub(crate) async fn read_capped(
    url: &str,
    mut response: reqwest::Response,
    limit: usize,
) -> Result<CappedBody, NetError> {
    let mut body = CappedBody {
        kept: Vec::with_capacity(initial_capacity(response.content_length(), limit)),
        dropped: 0,
    };
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| NetError::from_transport(url, &error))?
    {
        let room = limit - body.kept.len();
        let (keep, drop) = chunk.split_at(chunk.len().min(room));
        body.kept.extend_from_slice(keep);
        body.dropped += drop.len() as u64;
    }
    Ok(body)
}

/// Pre-allocates what the server announced, but never more than the limit (an announced length
/// is not trusted further than that).
fn initial_capacity(content_length: Option<u64>, limit: usize) -> usize {
    content_length
        .and_then(|length| usize::try_from(length).ok())
        .unwrap_or(0)
        .min(limit)
}
