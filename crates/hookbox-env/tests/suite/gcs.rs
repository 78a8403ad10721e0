use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use hookbox_env::{CredentialStore, EnvironmentSpec, Environments, Progress, StoreError};
use hookbox_net::{ClientOptions, GuardedClient};
use hookbox_test_support::{RecordedRequest, Reply, TestCertificates, TestHttpServer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::support::snapshot;

/// The real API host: the fake answers for it through `connect_to`.
const HOST: &str = "storage.googleapis.com";

/// The token the fake's private bucket accepts.
const TOKEN: &str = "Bearer ya29.test-token";

/// A fake Cloud Storage JSON API: buckets of objects, listed `page_size` at a time.
#[derive(Default)]
struct FakeStorage {
    /// bucket → object name → contents.
    buckets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    /// Buckets that need `Authorization: TOKEN`.
    private: BTreeSet<String>,
    /// Sizes the listing claims instead of the real ones.
    listed_sizes: BTreeMap<String, u64>,
    page_size: usize,
}

impl FakeStorage {
    fn new(page_size: usize) -> Self {
        Self {
            page_size,
            ..Self::default()
        }
    }

    fn object(mut self, bucket: &str, name: &str, content: &[u8]) -> Self {
        self.buckets
            .entry(bucket.to_owned())
            .or_default()
            .insert(name.to_owned(), content.to_vec());
        self
    }

    fn answer(&self, request: &RecordedRequest) -> Reply {
        assert_eq!(request.method, "GET", "{request:?}");
        let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
        let query: BTreeMap<String, String> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(key), decode(value))
            })
            .collect();
        let Some(rest) = path.strip_prefix("/storage/v1/b/") else {
            return error(404, "Not Found");
        };
        let (bucket, object) = match rest.split_once("/o") {
            Some((bucket, "")) => (bucket, None),
            Some((bucket, named)) => (bucket, Some(decode(named.trim_start_matches('/')))),
            None => return error(404, "Not Found"),
        };
        let Some(objects) = self.buckets.get(bucket) else {
            return error(404, "The specified bucket does not exist.");
        };
        if self.private.contains(bucket) {
            match request.header("authorization") {
                None => {
                    return error(
                        401,
                        "Anonymous caller does not have storage.objects.list access to the \
                         Google Cloud Storage bucket.",
                    );
                }
                Some(TOKEN) => {}
                Some(_) => {
                    return error(
                        403,
                        "reader@example.iam.gserviceaccount.com does not have \
                         storage.objects.list access to the Google Cloud Storage bucket.",
                    );
                }
            }
        }
        match object {
            Some(name) => {
                assert_eq!(query.get("alt").map(String::as_str), Some("media"));
                match objects.get(&name) {
                    Some(content) => Reply {
                        status: 200,
                        headers: vec![(
                            "content-type".to_owned(),
                            "application/octet-stream".to_owned(),
                        )],
                        body: content.clone(),
                        delay: std::time::Duration::ZERO,
                    },
                    None => error(404, "No such object"),
                }
            }
            None => {
                let prefix = query.get("prefix").cloned().unwrap_or_default();
                let start: usize = query.get("pageToken").map_or(0, |token| {
                    token.trim_start_matches("page-").parse().unwrap()
                });
                let matching: Vec<_> = objects
                    .iter()
                    .filter(|(name, _)| name.starts_with(&prefix))
                    .collect();
                let items: Vec<Value> = matching
                    .iter()
                    .skip(start)
                    .take(self.page_size)
                    .map(|(name, content)| {
                        let size = self
                            .listed_sizes
                            .get(*name)
                            .copied()
                            .unwrap_or(content.len() as u64);
                        json!({"kind": "storage#object", "bucket": bucket, "name": name,
                               "size": size.to_string(), "contentType": "text/plain"})
                    })
                    .collect();
                let mut page = json!({"kind": "storage#objects"});
                if !items.is_empty() {
                    page["items"] = Value::Array(items);
                }
                if start + self.page_size < matching.len() {
                    page["nextPageToken"] = json!(format!("page-{}", start + self.page_size));
                }
                Reply::json(200, &page)
            }
        }
    }
}

/// A JSON API error reply.
fn error(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"code": status, "message": message,
                          "errors": [{"domain": "global", "reason": "x", "message": message}]}}),
    )
}

/// Percent-decoding of a query value or a path segment.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(&text[index + 1..index + 3], 16).unwrap());
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A hookbox home whose environments fetch `gs://` through the fake.
struct Fixture {
    home: TempDir,
    envs: Environments,
    server: TestHttpServer,
}

impl Fixture {
    fn start(storage: FakeStorage) -> Self {
        let storage = Arc::new(storage);
        let certificates = TestCertificates::for_names(&[HOST]).unwrap();
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let server = TestHttpServer::start_https_on(listener, &certificates, move |request| {
            storage.answer(request)
        })
        .unwrap();
        let client = GuardedClient::new(&ClientOptions {
            permit_loopback: true,
            extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
            connect_to: vec![(HOST.to_owned(), server.addr())],
            ..ClientOptions::default()
        })
        .unwrap();
        let home = tempfile::tempdir().unwrap();
        let envs = Environments::open(home.path())
            .unwrap()
            .with_http_client(client);
        Self { home, envs, server }
    }

    async fn create(&self, source: Value) -> Result<hookbox_env::Environment, StoreError> {
        let spec = EnvironmentSpec::from_json(&json!({"sources": [source]})).unwrap();
        self.envs.create(&spec).await
    }

    /// The paths (and queries) the fake was asked for.
    fn paths(&self) -> Vec<String> {
        self.server
            .requests()
            .into_iter()
            .map(|request| request.path)
            .collect()
    }

    /// Asserts that no environment (and no staging leftover) exists.
    fn assert_nothing_written(&self) {
        assert!(self.envs.list().unwrap().is_empty());
        let left: Vec<_> = std::fs::read_dir(self.home.path().join("environments"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

async fn refusal(fixture: &Fixture, source: Value) -> String {
    match fixture.create(source).await {
        Ok(env) => panic!("created {}", env.id()),
        Err(StoreError::Source { index: 0, problem }) => problem,
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[tokio::test]
async fn a_bucket_copy_reports_its_progress_to_the_callers_callback() {
    let fixture = Fixture::start(
        FakeStorage::new(1)
            .object("bkt", "data/a.txt", b"alpha")
            .object("bkt", "data/b.txt", b"beta"),
    );
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let envs = fixture
        .envs
        .clone()
        .with_progress(Arc::new(move |progress: &Progress| {
            sink.lock().unwrap().push(progress.clone());
        }));
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "gcs", "source": "gs://bkt/data", "target": "workspace/data"},
    ]}))
    .unwrap();
    envs.create(&spec).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            Progress::CopyStarted {
                index: 0,
                source: "gs://bkt/data/".to_owned(),
                objects: 2,
                bytes: 9
            },
            Progress::Copied {
                index: 0,
                copied: 1,
                bytes: 5
            },
            Progress::Copied {
                index: 0,
                copied: 2,
                bytes: 9
            },
            Progress::CopyFinished { index: 0 },
        ]
    );
}

#[tokio::test]
async fn every_object_under_the_prefix_is_copied_across_listing_pages() {
    let fixture = Fixture::start(
        FakeStorage::new(2)
            .object("bkt", "data/a.txt", b"alpha")
            .object("bkt", "data/sub/", b"")
            .object("bkt", "data/sub/b.txt", b"beta")
            .object("bkt", "data/sub/deeper/c d%.bin", &[0, 1, 2, 255])
            .object("bkt", "data/run.sh", b"#!/bin/sh\necho hi\n")
            .object("bkt", "database.txt", b"not below data/")
            .object("bkt", "other/x.txt", b"elsewhere"),
    );

    let env = fixture
        .create(json!({"type": "gcs", "source": "gs://bkt/data", "target": "workspace/data"}))
        .await
        .unwrap();

    let data = env.root().join("workspace/data");
    let files = snapshot(&data);
    let expected: BTreeMap<_, _> = [
        ("a.txt", b"alpha".to_vec()),
        ("run.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ("sub", b"<dir>".to_vec()),
        ("sub/b.txt", b"beta".to_vec()),
        ("sub/deeper", b"<dir>".to_vec()),
        ("sub/deeper/c d%.bin", vec![0, 1, 2, 255]),
    ]
    .into_iter()
    .map(|(path, content)| (path.into(), content))
    .collect();
    assert_eq!(files, expected);
    let mode = |name: &str| {
        std::fs::metadata(data.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!((mode("run.sh"), mode("a.txt")), (0o755, 0o644));
    let summary = &env.sources()[0];
    assert_eq!(summary.source.as_deref(), Some("gs://bkt/data/"));
    assert_eq!(summary.target, "/workspace/data");

    let paths = fixture.paths();
    assert_eq!(
        paths[..3],
        [
            "/storage/v1/b/bkt/o?prefix=data%2F",
            "/storage/v1/b/bkt/o?prefix=data%2F&pageToken=page-2",
            "/storage/v1/b/bkt/o?prefix=data%2F&pageToken=page-4",
        ]
    );
    assert!(
        paths.contains(
            &"/storage/v1/b/bkt/o/data%2Fsub%2Fdeeper%2Fc%20d%25.bin?alt=media".to_owned()
        ),
        "{paths:?}"
    );
    assert_eq!(paths.len(), 3 + 4, "{paths:?}");
    for request in fixture.server.requests() {
        assert_eq!(request.header("authorization"), None);
    }
}

#[tokio::test]
async fn a_name_that_escapes_the_target_is_refused_before_anything_is_downloaded() {
    for (name, reason) in [
        ("data/../x", "has a `..` component"),
        ("data//etc/passwd", "is absolute"),
    ] {
        let fixture = Fixture::start(
            FakeStorage::new(10)
                .object("bkt", "data/fine.txt", b"ok")
                .object("bkt", name, b"evil"),
        );

        let problem = refusal(
            &fixture,
            json!({"type": "gcs", "source": "gs://bkt/data/", "target": "workspace/data"}),
        )
        .await;

        assert!(problem.contains(&format!("object `{name}`")), "{problem}");
        assert!(problem.contains(reason), "{problem}");
        assert!(problem.contains("outside `/workspace/data`"), "{problem}");
        fixture.assert_nothing_written();
        assert!(
            fixture
                .paths()
                .iter()
                .all(|path| !path.contains("alt=media")),
            "{:?}",
            fixture.paths()
        );
    }
}

#[tokio::test]
async fn a_missing_bucket_and_an_empty_prefix_are_explained() {
    let fixture = Fixture::start(FakeStorage::new(10).object("bkt", "a.txt", b"a"));

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://nope/data"})).await;
    assert!(problem.contains("bucket `nope` not found"), "{problem}");
    assert!(
        problem.contains("HTTP 404: The specified bucket does not exist."),
        "{problem}"
    );

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://bkt/none"})).await;
    assert!(
        problem.contains("no objects under `gs://bkt/none/`"),
        "{problem}"
    );
    fixture.assert_nothing_written();
}

#[tokio::test]
async fn a_private_bucket_needs_the_bearer_credential() {
    let mut storage = FakeStorage::new(10).object("secret", "p/k.txt", b"key");
    storage.private.insert("secret".to_owned());
    let fixture = Fixture::start(storage);
    let credentials = CredentialStore::open(fixture.home.path()).unwrap();
    credentials
        .add("gcs-reader", None, TOKEN, &["storage.googleapis.com"])
        .unwrap();
    credentials
        .add(
            "stale",
            None,
            "Bearer expired-or-unauthorised",
            &["*.googleapis.com"],
        )
        .unwrap();
    credentials
        .add("elsewhere", None, TOKEN, &["api.example.com"])
        .unwrap();

    // A credential that may not go to Cloud Storage is not sent there.
    match fixture
        .create(json!({"type": "gcs", "source": "gs://secret/p", "credential": "elsewhere"}))
        .await
    {
        Err(StoreError::Misplaced { path, problem }) => {
            assert_eq!(path, "$.sources[0].credential");
            assert!(
                problem.contains("may not be sent to `storage.googleapis.com`"),
                "{problem}"
            );
            assert!(!problem.contains(TOKEN), "{problem}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://secret/p"})).await;
    assert!(problem.contains("HTTP 401: Anonymous caller"), "{problem}");
    assert!(problem.contains("\"credential\": \"NAME\""), "{problem}");

    let problem = refusal(
        &fixture,
        json!({"type": "gcs", "source": "gs://secret/p", "credential": "stale"}),
    )
    .await;
    assert!(
        problem.contains("access denied to `gs://secret/p/`"),
        "{problem}"
    );
    assert!(problem.contains("HTTP 403"), "{problem}");
    assert!(problem.contains("credential `stale`"), "{problem}");
    assert!(!problem.contains("expired-or-unauthorised"), "{problem}");
    fixture.assert_nothing_written();

    let env = fixture
        .create(
            json!({"type": "gcs", "source": "gs://secret/p", "target": "workspace/keys",
                       "credential": "gcs-reader"}),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(env.root().join("workspace/keys/k.txt")).unwrap(),
        b"key"
    );
    let last_two: Vec<_> = fixture
        .server
        .requests()
        .into_iter()
        .rev()
        .take(2)
        .collect();
    for request in last_two {
        assert_eq!(
            request.header("authorization"),
            Some(TOKEN),
            "{}",
            request.path
        );
    }
}

#[tokio::test]
async fn an_unknown_credential_is_refused_before_any_request() {
    let fixture = Fixture::start(FakeStorage::new(10).object("bkt", "a", b"a"));
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "gcs", "source": "gs://bkt/", "credential": "missing"}]}))
    .unwrap();

    let err = fixture.envs.create(&spec).await.unwrap_err();

    let StoreError::Misplaced { path, problem } = err else {
        panic!("unexpected error: {err}");
    };
    assert_eq!(path, "$.sources[0].credential");
    assert!(
        problem.contains("no credential named `missing`"),
        "{problem}"
    );
    assert!(fixture.paths().is_empty());
    fixture.assert_nothing_written();
}

#[tokio::test]
async fn the_size_and_count_limits_are_named_when_exceeded() {
    let mut storage = FakeStorage::new(1000)
        .object("big", "d/one.bin", b"1")
        .object("big", "d/two.bin", b"2");
    storage.listed_sizes.insert("d/two.bin".to_owned(), 1 << 30);
    for index in 0..10_001 {
        storage = storage.object("many", &format!("f/{index:05}"), b"x");
    }
    let fixture = Fixture::start(storage);

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://big/d"})).await;
    assert!(problem.contains("limit: total size"), "{problem}");
    assert!(
        problem.contains("more than 1073741824 bytes (1 GiB)"),
        "{problem}"
    );

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://many/f"})).await;
    assert!(problem.contains("more than 10000 objects"), "{problem}");
    assert!(problem.contains("limit: object count"), "{problem}");

    assert!(
        fixture
            .paths()
            .iter()
            .all(|path| !path.contains("alt=media")),
        "{:?}",
        fixture.paths()
    );
    fixture.assert_nothing_written();
}

#[tokio::test]
async fn an_object_that_changes_size_after_listing_fails_the_source() {
    let mut storage = FakeStorage::new(10)
        .object("bkt", "d/a.txt", b"fine")
        .object("bkt", "d/b.txt", b"short");
    storage.listed_sizes.insert("d/b.txt".to_owned(), 50);
    let fixture = Fixture::start(storage);

    let problem = refusal(&fixture, json!({"type": "gcs", "source": "gs://bkt/d"})).await;

    assert!(
        problem.contains(
            "object `d/b.txt` changed while it was copied (listed with 50 bytes, 5 arrived)"
        ),
        "{problem}"
    );
    fixture.assert_nothing_written();
}
