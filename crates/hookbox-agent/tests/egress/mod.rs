//! The sandbox's network through the egress proxy, end to end: a test HTTPS host in a network
//! namespace of its own (reachable from the host through a veth pair, never from the sandbox),
//! `code_execution` with curl (or python3) inside, the proxy on 127.0.0.1:3128 there.
//! Needs root (for the namespace); skipped with a message otherwise.

use std::collections::BTreeMap;
use std::sync::Arc;

use hookbox_agent::{SandboxTools, ToolCallReport};
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use hookbox_net::{Credential, CredentialSource, EgressProxy, ProxyOptions};
use hookbox_test_support::{Reply, TestCertificates, TestHttpServer, TestNetns};
use serde_json::{Value, json};

const HOST: &str = "telemetry.example.com";
const TRANSFORM_SECRET: &str = "xform-secret-7f3a";
const CREDENTIAL_SECRET: &str = "Bearer cred-secret-9b1c";

/// Everything a test needs: the namespace (deleted last), the HTTPS host inside it, the proxy.
struct Fixture {
    server: TestHttpServer,
    proxy: EgressProxy,
    netns: TestNetns,
    _home: tempfile::TempDir,
    store: Environments,
}

/// The fixture, or `None` (with a printed reason) where it cannot be built.
#[expect(clippy::print_stdout, reason = "a skipped test says why")]
async fn fixture(test: &str) -> Option<Fixture> {
    if let Err(error) = hookbox_exec::check_isolation() {
        println!("SKIPPED {test}: the sandbox is unavailable: {error}");
        return None;
    }
    let netns = match TestNetns::create() {
        Ok(netns) => netns,
        Err(reason) => {
            println!("SKIPPED {test}: cannot create a test network namespace: {reason}");
            return None;
        }
    };
    let certificates = TestCertificates::for_names(&[HOST]).unwrap();
    let listener = netns.bind_inside(443).unwrap();
    let server = TestHttpServer::start_https_on(listener, &certificates, |_| {
        Reply::text(200, "hello from telemetry\n")
    })
    .unwrap();
    let proxy = EgressProxy::new(ProxyOptions {
        allow_private_cidrs: vec![netns.cidr().parse().unwrap()],
        resolve: vec![(HOST.to_owned(), netns.inside_address().into())],
        extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
        ..ProxyOptions::default()
    })
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    // Environments may only name credentials the server has.
    hookbox_env::CredentialStore::open(home.path())
        .unwrap()
        .add("telemetry", Some("Authorization"), CREDENTIAL_SECRET)
        .unwrap();
    let store = Environments::open(home.path()).unwrap();
    Some(Fixture {
        server,
        proxy,
        netns,
        _home: home,
        store,
    })
}

impl Fixture {
    /// The sandboxed tools of a new environment with `network`, reaching out through the proxy.
    async fn tools(&self, network: Value) -> SandboxTools {
        let spec = EnvironmentSpec::from_json(&json!({"sources": [], "network": network})).unwrap();
        let environment = self.store.create(&spec).await.unwrap();
        let http = hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default()).unwrap();
        let mut credentials = BTreeMap::new();
        credentials.insert(
            "telemetry".to_owned(),
            Credential::new("Authorization", CREDENTIAL_SECRET),
        );
        let credentials: &dyn CredentialSource = &credentials;
        SandboxTools::new(environment, Isolation::Sandboxed, http)
            .unwrap()
            .with_egress(self.proxy.clone(), Some(credentials))
            .unwrap()
    }
}

/// The allowlist: the test host, with a `transform` header and a credential.
fn allowlist() -> Value {
    json!({"allowlist": [{
        "domain": HOST,
        "transform": {"X-Api-Key": TRANSFORM_SECRET},
        "credential": "telemetry",
    }]})
}

/// Runs `script` with bash through `tools`; returns the report and `(stdout, stderr)`.
async fn bash(tools: &SandboxTools, script: &str) -> (ToolCallReport, String, String) {
    let report = tools
        .call(
            "code_execution",
            json!({"code": script, "language": "bash"}),
            None,
        )
        .await
        .unwrap();
    let result = report.result.clone().unwrap_or_default();
    let stdout = result["stdout"].as_str().unwrap_or_default().to_owned();
    let stderr = result["stderr"].as_str().unwrap_or_default().to_owned();
    (report, stdout, stderr)
}

/// A request for `url` through the proxy variables, with curl when the host has it, else
/// python3's urllib; prints the body, or `ERROR …` with the reason.
fn fetch(url: &str) -> String {
    format!(
        r#"if command -v curl >/dev/null; then curl -sS --max-time 20 {url} 2>&1 || echo "ERROR curl exit $?"; else python3 -c 'import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode(), end="")
except Exception as error:
    print("ERROR", error)' {url}; fi"#
    )
}

#[tokio::test]
async fn curl_through_the_proxy_reaches_an_allowed_host_with_the_headers_injected() {
    let Some(fixture) = fixture("curl_through_the_proxy_…").await else {
        return;
    };
    let tools = fixture.tools(allowlist()).await;
    let script = format!(
        "{}\necho '---'\nenv | grep -i -e _proxy= -e SSL_CERT_FILE | sort\n\
         grep -c 'BEGIN CERTIFICATE' \"$SSL_CERT_FILE\" >/dev/null && echo bundle-ok\n\
         grep -rl -e {TRANSFORM_SECRET} -e cred-secret /workspace /tmp /proc/self/environ \
         2>/dev/null || echo no-secret-found\n\
         env | grep -c -e {TRANSFORM_SECRET} -e cred-secret || true\n\
         grep -c 'PRIVATE KEY' \"$SSL_CERT_FILE\" || true",
        fetch(&format!("https://{HOST}/v1/ping"))
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    assert!(
        stdout.starts_with("hello from telemetry\n---\n"),
        "{stdout}\n{stderr}"
    );
    for line in [
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1",
        "SSL_CERT_FILE=/tmp/.hookbox/ca-certificates.crt",
        "bundle-ok",
        "no-secret-found",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in {stdout}");
    }
    assert!(stdout.ends_with("0\n0\n"), "{stdout}");

    let requests = fixture.server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].path, "/v1/ping");
    assert_eq!(requests[0].header("x-api-key"), Some(TRANSFORM_SECRET));
    assert_eq!(requests[0].header("authorization"), Some(CREDENTIAL_SECRET));

    // The report says what the proxy did, without any secret.
    let intercepted: Vec<_> = report
        .network
        .iter()
        .filter(|decision| decision.host == HOST && decision.allowed && decision.intercepted)
        .collect();
    assert!(
        intercepted.iter().any(|decision| decision.method == "GET"),
        "{:?}",
        report.network
    );
    let serialized = serde_json::to_string(&report).unwrap();
    assert!(!serialized.contains(TRANSFORM_SECRET), "{serialized}");
    assert!(!serialized.contains("cred-secret"), "{serialized}");
}

#[tokio::test]
async fn other_hosts_are_refused_and_nothing_bypasses_the_proxy() {
    let Some(fixture) = fixture("other_hosts_are_refused_…").await else {
        return;
    };
    let inside = fixture.netns.inside_address();
    let tools = fixture.tools(allowlist()).await;
    let script = format!(
        "{}\n\
         curl -sS --max-time 10 --noproxy '*' https://{inside}/ 2>&1; echo \"direct exit $?\"\n\
         (exec 3<>/dev/tcp/{inside}/443) 2>&1; echo \"dev-tcp exit $?\"\n\
         (exec 3<>/dev/tcp/{host}/443) 2>&1; echo \"host exit $?\"",
        fetch("https://not-allowed.example.org/"),
        host = fixture.netns.host_address(),
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    assert!(stdout.contains("ERROR"), "{stdout}\n{stderr}");
    assert!(stdout.contains("403"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Network is unreachable") || stdout.contains("Couldn't connect"),
        "{stdout}"
    );
    assert!(!stdout.contains("direct exit 0"), "{stdout}");
    assert!(!stdout.contains("dev-tcp exit 0"), "{stdout}");
    assert!(!stdout.contains("host exit 0"), "{stdout}");
    assert!(fixture.server.requests().is_empty());
    // Refused on the name, by the allowlist (decided before any DNS lookup).
    let refused = report
        .network
        .iter()
        .find(|decision| decision.host == "not-allowed.example.org")
        .unwrap_or_else(|| panic!("{:?}", report.network));
    assert!(!refused.allowed);
    assert!(refused.reason.contains("matches no entry"), "{refused:?}");
}

#[tokio::test]
async fn network_disabled_gets_no_proxy_at_all() {
    let Some(fixture) = fixture("network_disabled_gets_no_proxy_at_all").await else {
        return;
    };
    let tools = fixture.tools(json!("disabled")).await;
    let script = format!(
        "env | grep -i -c -e proxy -e SSL_CERT_FILE || true\n\
         grep -c ' 0A ' /proc/net/tcp || true\n\
         ls /tmp/.hookbox 2>&1 | grep -c 'No such file'\n\
         (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && echo proxy-open\n\
         curl -sS --max-time 10 -x http://127.0.0.1:3128 https://{HOST}/ 2>/dev/null \
         && echo reached",
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    assert_eq!(stdout, "0\n0\n1\n", "{stderr}");
    assert!(report.network.is_empty());
    assert!(fixture.server.requests().is_empty());
}

#[tokio::test]
async fn each_run_has_its_own_listener_and_the_ca_lives_with_the_tools() {
    let Some(fixture) = fixture("each_run_has_its_own_listener_…").await else {
        return;
    };
    let tools = Arc::new(fixture.tools(allowlist()).await);
    let url = format!("https://{HOST}/again");
    let script = format!("{}\nsha256sum \"$SSL_CERT_FILE\" | cut -c1-16", fetch(&url));
    let (first, second) = tokio::join!(bash(&tools, &script), bash(&tools, &script));
    for (_, stdout, stderr) in [&first, &second] {
        assert!(
            stdout.starts_with("hello from telemetry\n"),
            "{stdout}\n{stderr}"
        );
    }
    // The same CA bundle for both runs of one environment's tools.
    assert_eq!(
        first.1.lines().last(),
        second.1.lines().last(),
        "{first:?} {second:?}"
    );
    assert_eq!(fixture.server.requests().len(), 2);
}
