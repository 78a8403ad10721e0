//! `gs://` sources: listing and downloading Cloud Storage objects with the JSON API
//! (`https://storage.googleapis.com/storage/v1/…`), every request through hookbox-net's
//! guarded client (HTTPS, address rules after resolution, no redirects).

use std::fmt::Write as _;
use std::io::Write;
use std::time::Duration;

use hookbox_net::{Credential, EgressPolicy, GetRequest, GuardedClient, NetError};
use serde_json::Value;

/// Most objects one `gs://` source may copy.
pub(crate) const MAX_OBJECTS: usize = 10_000;

/// Most bytes (all objects together) one `gs://` source may copy: 1 GiB.
pub(crate) const MAX_BYTES: u64 = 1 << 30;

/// The host of the Cloud Storage JSON API, which a source's `credential` must list.
pub(crate) const HOST: &str = "storage.googleapis.com";

/// The Cloud Storage JSON API. Tests point this name at a fake server with the guarded
/// client's `connect_to` option, never by changing the URL.
const API: &str = "https://storage.googleapis.com/storage/v1";

/// Most bytes of one listing page.
const PAGE_LIMIT: usize = 16 << 20;

/// Deadline of one listing request.
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Most bytes of an error reply that are read for its message.
const ERROR_LIMIT: usize = 64 << 10;

/// One object to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Object {
    /// The full object name.
    pub(crate) name: String,
    /// The name below the prefix: the relative path it is written to.
    pub(crate) relative: String,
    /// Its size as listed.
    pub(crate) size: u64,
}

/// What a download wrote.
pub(crate) struct Downloaded {
    /// Whether the object starts with `#!` (so it is made executable, like inline sources).
    pub(crate) script: bool,
}

/// One bucket prefix, read through `client` with the `auth` headers.
pub(crate) struct Bucket<'a> {
    /// The client every request goes through.
    pub(crate) client: &'a GuardedClient,
    /// The bucket name (already validated: no characters that need encoding).
    pub(crate) bucket: &'a str,
    /// The prefix, empty or ending in `/`.
    pub(crate) prefix: &'a str,
    /// Headers authenticating the requests (a hookbox credential's), or none.
    pub(crate) auth: Vec<(String, String)>,
    /// The credential's name, for error messages.
    pub(crate) credential: Option<&'a str>,
    /// The sandbox directory the objects go to, for error messages.
    pub(crate) target: String,
}

impl Bucket<'_> {
    /// `gs://BUCKET/PREFIX`, for messages.
    fn url(&self) -> String {
        format!("gs://{}/{}", self.bucket, self.prefix)
    }

    /// Every object under the prefix, checked before anything is downloaded: names that
    /// would land outside the target, more than [`MAX_OBJECTS`] objects or more than
    /// [`MAX_BYTES`] in total are refused. Folder placeholders (names ending in `/`, empty)
    /// are skipped.
    pub(crate) async fn list(&self) -> Result<Vec<Object>, String> {
        let mut objects = Vec::new();
        let mut total: u64 = 0;
        let mut token: Option<String> = None;
        for _page in 0..=MAX_OBJECTS {
            let mut url = format!("{API}/b/{}/o", self.bucket);
            let mut separator = '?';
            if !self.prefix.is_empty() {
                let _ = write!(url, "{separator}prefix={}", encode(self.prefix));
                separator = '&';
            }
            if let Some(token) = &token {
                let _ = write!(url, "{separator}pageToken={}", encode(token));
            }
            let page = self.get_json(&url).await?;
            for item in items(&page)? {
                let Some(object) = self.object(item)? else {
                    continue;
                };
                total = total.saturating_add(object.size);
                if objects.len() == MAX_OBJECTS {
                    return Err(format!(
                        "`{}` holds more than {MAX_OBJECTS} objects, the most one source may \
                         copy (limit: object count); choose a narrower prefix",
                        self.url()
                    ));
                }
                if total > MAX_BYTES {
                    return Err(format!(
                        "the objects under `{}` add up to more than {MAX_BYTES} bytes (1 GiB), \
                         the most one source may copy (limit: total size); choose a narrower \
                         prefix",
                        self.url()
                    ));
                }
                objects.push(object);
            }
            token = page
                .get("nextPageToken")
                .and_then(Value::as_str)
                .filter(|token| !token.is_empty())
                .map(str::to_owned);
            if token.is_none() {
                if objects.is_empty() {
                    return Err(format!(
                        "there are no objects under `{}`; check the bucket and the prefix",
                        self.url()
                    ));
                }
                return Ok(objects);
            }
        }
        Err(format!(
            "listing `{}` did not end after {} pages; Cloud Storage kept sending page tokens",
            self.url(),
            MAX_OBJECTS + 1
        ))
    }

    /// One listed item as an object to copy, `None` for a folder placeholder.
    fn object(&self, item: &Value) -> Result<Option<Object>, String> {
        let malformed = |what: &str| {
            format!(
                "Cloud Storage's listing of `{}` has an item without {what}; it is not the JSON \
                 API's object resource",
                self.url()
            )
        };
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("a `name` string"))?;
        let size = match item.get("size") {
            Some(Value::String(text)) => text.parse::<u64>().ok(),
            Some(Value::Number(number)) => number.as_u64(),
            _ => None,
        }
        .ok_or_else(|| malformed("a `size` (a non-negative integer)"))?;
        let Some(relative) = name.strip_prefix(self.prefix) else {
            return Err(format!(
                "Cloud Storage listed `{name}`, which is not under `{}`",
                self.url()
            ));
        };
        if relative.is_empty() || (relative.ends_with('/') && size == 0) {
            return Ok(None);
        }
        if let Err(reason) = check_relative(relative) {
            return Err(format!(
                "object `{name}` cannot be copied: its name below the prefix, `{relative}`, \
                 {reason}, so it would be written outside `{}`; nothing was written (rename the \
                 object or choose another prefix)",
                self.target
            ));
        }
        Ok(Some(Object {
            name: name.to_owned(),
            relative: relative.to_owned(),
            size,
        }))
    }

    /// Downloads `object` into `file`, checking that exactly its listed size arrives.
    pub(crate) async fn download(
        &self,
        object: &Object,
        file: &mut impl Write,
    ) -> Result<Downloaded, String> {
        let url = format!(
            "{API}/b/{}/o/{}?alt=media",
            self.bucket,
            encode(&object.name)
        );
        let limit = usize::try_from(object.size).unwrap_or(usize::MAX);
        let mut reply = self
            .client
            .get(GetRequest {
                url: &url,
                policy: &EgressPolicy::PUBLIC,
                headers: &self.auth,
                timeout: Duration::from_secs(60 + object.size / (1 << 20)),
                body_limit: limit,
            })
            .await
            .map_err(|err| self.unreachable(&err))?;
        if reply.status() != 200 {
            let status = reply.status();
            let body = reply.read_to_end().await.unwrap_or_default();
            return Err(self.refusal(status, &body, Some(&object.name)));
        }
        let changed = |got: String| {
            format!(
                "object `{}` changed while it was copied (listed with {} bytes, {got}); try again",
                object.name, object.size
            )
        };
        let mut received: u64 = 0;
        let mut script = false;
        loop {
            let chunk = match reply.next_chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(NetError::Request { reason, .. }) if reason.contains("limit") => {
                    return Err(changed("more arrived".to_owned()));
                }
                Err(err) => return Err(self.unreachable(&err)),
            };
            if received == 0 {
                script = chunk.starts_with(b"#!");
            }
            received += chunk.len() as u64;
            file.write_all(&chunk)
                .map_err(|err| format!("cannot write object `{}`: {err}", object.name))?;
        }
        if received != object.size {
            return Err(changed(format!("{received} arrived")));
        }
        Ok(Downloaded { script })
    }

    /// GETs `url` and parses the JSON reply, turning any status but 200 into an explanation.
    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let reply = self
            .client
            .get(GetRequest {
                url,
                policy: &EgressPolicy::PUBLIC,
                headers: &self.auth,
                timeout: PAGE_TIMEOUT,
                body_limit: PAGE_LIMIT,
            })
            .await
            .map_err(|err| self.unreachable(&err))?;
        let status = reply.status();
        if status != 200 {
            let body = reply.read_to_end().await.unwrap_or_default();
            return Err(self.refusal(status, &body, None));
        }
        let body = reply
            .read_to_end()
            .await
            .map_err(|err| self.unreachable(&err))?;
        serde_json::from_slice(&body).map_err(|err| {
            format!(
                "Cloud Storage's listing of `{}` is not valid JSON ({err})",
                self.url()
            )
        })
    }

    /// A transport failure, as a sentence.
    fn unreachable(&self, err: &NetError) -> String {
        format!("cannot read `{}` from Cloud Storage: {err}", self.url())
    }

    /// A non-200 reply (to the listing, or to the download of `object`), as a sentence.
    fn refusal(&self, status: u16, body: &[u8], object: Option<&str>) -> String {
        let message = error_message(body);
        let detail = if message.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {message}")
        };
        let credential_hint = match self.credential {
            Some(name) => format!(
                "check that the credential `{name}` is current and grants read access \
                 (storage.objects.list and storage.objects.get) to the bucket"
            ),
            None => "the bucket is not public: add a hookbox credential holding an OAuth \
                     token (`hookbox credentials add NAME`, value `Bearer TOKEN`) and name it \
                     with `\"credential\": \"NAME\"` on the source"
                .to_owned(),
        };
        match (status, object) {
            (404, None) => format!(
                "bucket `{}` not found ({detail}); check its name",
                self.bucket
            ),
            (404, Some(name)) => format!(
                "object `{name}` disappeared while `{}` was copied ({detail}); try again",
                self.url()
            ),
            (401, _) => format!(
                "Cloud Storage refused the credentials for `{}` ({detail}); {credential_hint}",
                self.url()
            ),
            (403, _) => format!(
                "access denied to `{}` ({detail}); {credential_hint}",
                self.url()
            ),
            _ => format!(
                "Cloud Storage answered {detail} for `{}`{}",
                self.url(),
                object
                    .map(|name| format!(" (object `{name}`)"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The listing's `items` (absent on an empty page).
fn items(page: &Value) -> Result<&[Value], String> {
    match page.get("items") {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => {
            Err("Cloud Storage's listing has an `items` member that is not a list".to_owned())
        }
    }
}

/// Why an object's name below the prefix cannot be a path below the target, if it cannot.
pub(crate) fn check_relative(relative: &str) -> Result<(), &'static str> {
    if relative.starts_with('/') {
        return Err("is absolute (starts with `/`)");
    }
    if relative.contains('\0') {
        return Err("contains a NUL character");
    }
    for component in relative.split('/') {
        match component {
            ".." => return Err("has a `..` component"),
            "." => return Err("has a `.` component"),
            "" => return Err("has an empty component (`//` or a trailing `/`)"),
            _ => {}
        }
    }
    Ok(())
}

/// The `error.message` of a Cloud Storage JSON error body, or its start as text, shortened.
fn error_message(body: &[u8]) -> String {
    let body = &body[..body.len().min(ERROR_LIMIT)];
    let text = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| {
            value
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    let mut short: String = text.chars().filter(|c| !c.is_control()).take(300).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Percent-encodes everything but RFC 3986's unreserved characters (for a path segment or a
/// query value).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Checks that credential `name` may be sent to `host` (Cloud Storage's); the problem
/// otherwise.
pub(crate) fn check_credential_domain(
    name: &str,
    credential: &Credential,
    host: &str,
) -> Result<(), String> {
    if credential.domains().is_empty() {
        return Err(format!(
            "credential `{name}` names no domains it may be sent to (it was added before \
             hookbox required them); re-add it with `hookbox credentials add {name} --domain \
             {host}`"
        ));
    }
    if credential.may_go_to(host) {
        return Ok(());
    }
    Err(format!(
        "credential `{name}` may not be sent to `{host}` (it may only go to {}); re-add it with \
         `--domain {host}` too, or name another credential",
        credential
            .domains()
            .iter()
            .map(|domain| format!("`{domain}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_target_are_refused() {
        assert!(check_relative("a/b/c.txt").is_ok());
        assert!(check_relative("..a/b..").is_ok());
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "a/.",
            "a\0b",
        ] {
            assert!(check_relative(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(encode("a/b c%é~._-"), "a%2Fb%20c%25%C3%A9~._-");
    }

    #[test]
    fn error_messages_come_from_the_json_error_or_the_text() {
        assert_eq!(
            error_message(br#"{"error":{"code":404,"message":"No such bucket"}}"#),
            "No such bucket"
        );
        assert_eq!(error_message(b" plain\n"), "plain");
        assert_eq!(error_message(&[b'x'; 400]).chars().count(), 301);
    }
}
