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
/// A plain HTTP host in the namespace (port 80), resolved by the proxy's `resolve`.
const PLAIN: &str = "plain.example";
/// A name the proxy's `resolve` maps to 127.0.0.1: DNS rebinding (N4).
const REBIND: &str = "rebind.example";
const TRANSFORM_SECRET: &str = "xform-secret-7f3a";
const CREDENTIAL_SECRET: &str = "Bearer cred-secret-9b1c";

/// Everything a test needs: the namespace (deleted last), the HTTPS host inside it, a plain
/// HTTP host inside it, a server on the host's loopback (which the sandbox must never reach),
/// the proxy.
struct Fixture {
    server: TestHttpServer,
    /// `http://plain.example/` (port 80 in the namespace): `/redirect` answers
    /// `302 Location: http://127.0.0.1:LOOPBACK_PORT/stolen`, anything else 200.
    plain: TestHttpServer,
    /// `http://127.0.0.1:PORT/` on the host, outside the namespace.
    loopback: TestHttpServer,
    /// The PEM of the CA that signed the HTTPS host's certificate.
    ca_pem: String,
    proxy: EgressProxy,
    netns: TestNetns,
    _home: tempfile::TempDir,
    store: Environments,
}

/// The fixture, or `None` (with a printed reason) where it cannot be built.
async fn fixture(test: &str) -> Option<Fixture> {
    if let Err(error) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(test, format_args!("the sandbox is unavailable: {error}"));
        return None;
    }
    let netns = match TestNetns::create() {
        Ok(netns) => netns,
        Err(reason) => {
            hookbox_test_support::skip(
                test,
                format_args!("cannot create a test network namespace: {reason}"),
            );
            return None;
        }
    };
    let certificates = TestCertificates::for_names(&[HOST]).unwrap();
    let listener = netns.bind_inside(443).unwrap();
    let server = TestHttpServer::start_https_on(listener, &certificates, |_| {
        Reply::text(200, "hello from telemetry\n")
    })
    .unwrap();
    let loopback = TestHttpServer::start(|_| Reply::text(200, "loopback service\n"))
        .await
        .unwrap();
    let stolen = format!("http://127.0.0.1:{}/stolen", loopback.addr().port());
    let plain = TestHttpServer::start_on(netns.bind_inside(80).unwrap(), move |request| {
        if request.path == "/redirect" {
            Reply::redirect(302, &stolen)
        } else {
            Reply::text(200, "hello from plain\n")
        }
    })
    .unwrap();
    let proxy = EgressProxy::new(ProxyOptions {
        allow_private_cidrs: vec![netns.cidr().parse().unwrap()],
        resolve: vec![
            (HOST.to_owned(), netns.inside_address().into()),
            (PLAIN.to_owned(), netns.inside_address().into()),
            (REBIND.to_owned(), std::net::Ipv4Addr::LOCALHOST.into()),
        ],
        extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
        ..ProxyOptions::default()
    })
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    // Environments may only name credentials the server has.
    hookbox_env::CredentialStore::open(home.path())
        .unwrap()
        .add(
            "telemetry",
            Some("Authorization"),
            CREDENTIAL_SECRET,
            &[HOST],
        )
        .unwrap();
    let store = crate::small_store(home.path());
    Some(Fixture {
        server,
        plain,
        loopback,
        ca_pem: certificates.ca_pem().to_owned(),
        proxy,
        netns,
        _home: home,
        store,
    })
}

impl Fixture {
    /// The sandboxed tools of a new environment with `network`, reaching out through the proxy.
    async fn tools(&self, network: Value) -> SandboxTools {
        self.tools_for(json!({"sources": [], "network": network}))
            .await
    }

    /// Like [`tools`](Self::tools), for an environment made from `spec`.
    async fn tools_for(&self, spec: Value) -> SandboxTools {
        let spec = EnvironmentSpec::from_json(&spec).unwrap();
        let environment = self.store.create(&spec).await.unwrap();
        let http = hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default()).unwrap();
        let mut credentials = BTreeMap::new();
        credentials.insert(
            "telemetry".to_owned(),
            Credential::new("Authorization", CREDENTIAL_SECRET, [HOST]),
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
    // Every field of the report, as any interface could write it.
    let serialized = format!("{report:?}");
    assert!(!serialized.contains(TRANSFORM_SECRET), "{serialized}");
    assert!(!serialized.contains("cred-secret"), "{serialized}");

    // A program that ignores the CA variables trusts the proxy too: the environment's CA is in
    // the system trust store inside.
    let script = format!(
        "unset SSL_CERT_FILE CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT\n{}",
        fetch(&format!("https://{HOST}/v1/system-store"))
    );
    let (_, stdout, stderr) = bash(&tools, &script).await;
    assert_eq!(stdout, "hello from telemetry\n", "{stderr}");
    assert_eq!(fixture.server.requests().len(), 2);
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
         (exec 3<>/dev/tcp/{host}/443) 2>&1; echo \"host exit $?\"\n\
         for target in 8.8.8.8 {inside}; do python3 -c 'import socket, sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (sys.argv[1], 53))' $target 2>&1 | tail -1; done\n\
         getent hosts example.com; echo \"dns exit $?\"",
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
    // UDP (DNS included) has no way out either.
    assert_eq!(
        stdout
            .matches("OSError: [Errno 101] Network is unreachable")
            .count(),
        2,
        "{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("dns exit 0"), "{stdout}");
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

/// A bash function `probe LABEL CURL_ARGS…` printing one line per request:
/// `LABEL => BODY [HTTP_CODE CONNECT_CODE] exit=CURL_EXIT`, newlines flattened. The proxy
/// variables are set in the sandbox; `--noproxy ''` overrides its `NO_PROXY` (which names
/// 127.0.0.1) so such requests go to the proxy too. `raw LABEL REQUEST_LINE [HEADER…]` sends
/// one request as written, with no `Host` unless given, straight to the proxy's port.
const PROBE: &str = r#"probe() {
  label=$1; shift
  out=$(curl -sS --max-time 20 "$@" -w '\n[%{http_code} %{http_connect}]' 2>&1; echo " exit=$?")
  printf '%s => %s\n' "$label" "$(printf '%s' "$out" | tr '\r\n' '  ')"
}
raw() {
  label=$1; line=$2; shift 2
  exec 3<>/dev/tcp/127.0.0.1/3128 || { echo "$label => no proxy"; return; }
  { printf '%s\r\n' "$line"; for header in "$@"; do printf '%s\r\n' "$header"; done
    printf 'Connection: close\r\n\r\n'; } >&3
  printf '%s => %s\n' "$label" "$(timeout 20 head -c 600 <&3 | tr '\r\n' '  ')"
  exec 3<&-
}
"#;

/// Says that a case of a test was skipped, and why.
#[expect(clippy::print_stdout, reason = "a skipped case says why")]
fn skipped(case: &str, reason: &str) {
    println!("SKIPPED {case}: {reason}");
}

/// The `LABEL => …` lines of `stdout`, by label.
fn probes(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|line| line.split_once(" => "))
        .map(|(label, rest)| (label.to_owned(), rest.to_owned()))
        .collect()
}

/// The line of probe `label` (panics, showing everything, when it is missing).
fn probe<'a>(lines: &'a BTreeMap<String, String>, label: &str, stdout: &str) -> &'a str {
    lines
        .get(label)
        .map_or_else(|| panic!("no probe {label}: {stdout}"), String::as_str)
}

/// The seed's allowlist shape: the test host with a `transform` header, then `*`.
fn seed_like_allowlist() -> Value {
    json!({"allowlist": [
        {"domain": HOST, "transform": {"X-Api-Key": TRANSFORM_SECRET}},
        {"domain": "*"},
    ]})
}

/// Omitted `network` is public egress: a host in `allow_private_cidrs` is reached (by name,
/// by IP literal, plain HTTP and a blind CONNECT tunnel), while the host's loopback and private
/// ranges not listed are refused by the proxy with a 403 naming the address class.
#[tokio::test]
async fn an_omitted_network_reaches_listed_private_hosts_but_not_loopback_or_other_ranges() {
    let Some(fixture) = fixture("an_omitted_network_reaches_listed_private_hosts_…").await else {
        return;
    };
    let tools = fixture.tools_for(json!({"sources": []})).await;
    let port = fixture.loopback.addr().port();
    let script = format!(
        "{PROBE}\ncat > /tmp/test-ca.pem <<'PEM'\n{ca}PEM\n\
         probe plain http://{PLAIN}/by-name\n\
         probe literal http://{inside}/by-literal\n\
         probe tunnel --cacert /tmp/test-ca.pem https://{HOST}/tunnel\n\
         probe loopback --noproxy '' http://127.0.0.1:{port}/\n\
         probe private10 --noproxy '' http://10.99.0.1/\n\
         probe private192 --noproxy '' http://192.168.255.1/\n\
         probe private-tls https://10.99.0.1/\n\
         probe bypass http://127.0.0.1:{port}/\n",
        ca = fixture.ca_pem,
        inside = fixture.netns.inside_address(),
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    let lines = probes(&stdout);
    let line = |label: &str| probe(&lines, label, &format!("{stdout}\n{stderr}"));
    for (label, body) in [
        ("plain", "hello from plain"),
        ("literal", "hello from plain"),
        ("tunnel", "hello from telemetry"),
    ] {
        assert!(
            line(label).starts_with(body)
                && line(label).contains("[200 ")
                && line(label).ends_with("exit=0"),
            "{label}: {}",
            line(label)
        );
    }
    for (label, class) in [
        ("loopback", "127.0.0.1 is loopback (127.0.0.0/8)"),
        ("private10", "10.99.0.1 is private (10.0.0.0/8)"),
        ("private192", "192.168.255.1 is private (192.168.0.0/16)"),
    ] {
        assert!(
            line(label).contains("[403 000]") && line(label).contains(class),
            "{label}: {}",
            line(label)
        );
    }
    // A refused CONNECT: curl shows the status, the decision names the class.
    assert!(
        line("private-tls").contains(" 403]"),
        "{}",
        line("private-tls")
    );
    let refused = report
        .network
        .iter()
        .find(|decision| decision.method == "CONNECT" && decision.host == "10.99.0.1")
        .unwrap_or_else(|| panic!("{:?}", report.network));
    assert!(
        !refused.allowed && refused.reason.contains("private"),
        "{refused:?}"
    );
    // NO_PROXY names 127.0.0.1, so without `--noproxy ''` curl dials the sandbox's own
    // loopback, where nothing listens on that port: the host's service stays out of reach.
    assert!(
        !line("bypass").contains("loopback service"),
        "{}",
        line("bypass")
    );
    assert!(!line("bypass").ends_with("exit=0"), "{}", line("bypass"));

    assert!(fixture.loopback.requests().is_empty());
    let paths: Vec<String> = fixture
        .plain
        .requests()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, ["/by-name", "/by-literal"]);
    let paths: Vec<String> = fixture
        .server
        .requests()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, ["/tunnel"]);
}

/// N4–N6 through the proxy: IP literals in their many spellings, cloud metadata addresses and
/// an allowlisted name the resolver maps to 127.0.0.1 are all refused with a 403 naming the
/// address class, under an allowlist that admits every name (`*`), so it is the address rules
/// that refuse; nothing reaches the service on the host's loopback.
#[tokio::test]
async fn loopback_metadata_and_rebinding_forms_are_refused_by_the_proxy() {
    let Some(fixture) = fixture("loopback_metadata_and_rebinding_forms_are_refused_…").await
    else {
        return;
    };
    let tools = fixture
        .tools(json!({"allowlist": [
            {"domain": HOST, "transform": {"X-Api-Key": TRANSFORM_SECRET}},
            {"domain": REBIND},
            {"domain": "*"},
        ]}))
        .await;
    let port = fixture.loopback.addr().port();
    let curl_cases = [
        ("lit-127", format!("http://127.0.0.1:{port}/"), "loopback"),
        ("decimal", format!("http://2130706433:{port}/"), "loopback"),
        ("hex", format!("http://0x7f.1:{port}/"), "loopback"),
        ("v6-loopback", format!("http://[::1]:{port}/"), "loopback"),
        (
            "v4-mapped",
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "loopback",
        ),
        (
            "unspecified",
            format!("http://0.0.0.0:{port}/"),
            "unspecified",
        ),
        (
            "metadata",
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "cloud metadata",
        ),
        (
            "alibaba",
            "http://100.100.100.200/latest/meta-data/".to_owned(),
            "cloud metadata",
        ),
        ("rebind", format!("http://{REBIND}:{port}/"), "loopback"),
    ];
    let raw_cases = [
        (
            "raw-decimal",
            format!("GET http://2130706433:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-octal",
            format!("GET http://0177.0.0.1:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-hex",
            format!("GET http://0x7f.1:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-short",
            format!("GET http://127.1:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-v6-long",
            format!("GET http://[0:0:0:0:0:0:0:1]:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-v6-mapped-hex",
            format!("GET http://[::ffff:7f00:1]:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-localhost",
            format!("GET http://localhost:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-rebind",
            format!("GET http://{REBIND}:{port}/ HTTP/1.1"),
            "loopback",
        ),
        (
            "raw-metadata-v6",
            "GET http://[fd00:ec2::254]/ HTTP/1.1".to_owned(),
            "cloud metadata",
        ),
    ];
    let mut script = PROBE.to_owned();
    for (label, url, _) in &curl_cases {
        script.push_str(&format!("probe {label} --noproxy '' {url}\n"));
    }
    for (label, line, _) in &raw_cases {
        script.push_str(&format!("raw {label} '{line}'\n"));
    }
    // The same rebinding over CONNECT (https://), refused before any tunnel opens.
    script.push_str(&format!("probe rebind-tls https://{REBIND}/\n"));
    let (report, stdout, stderr) = bash(&tools, &script).await;
    let lines = probes(&stdout);
    let all = format!("{stdout}\n{stderr}");
    for (label, _, class) in &curl_cases {
        let line = probe(&lines, label, &all);
        assert!(
            line.contains("[403 000]") && line.contains(class),
            "{label}: {line}"
        );
    }
    for (label, _, class) in &raw_cases {
        let line = probe(&lines, label, &all);
        assert!(
            line.starts_with("HTTP/1.1 403 ") && line.contains(class),
            "{label}: {line}"
        );
    }
    assert!(
        probe(&lines, "rebind-tls", &all).contains("000 403]"),
        "{all}"
    );
    let rebind = report
        .network
        .iter()
        .find(|decision| decision.method == "CONNECT" && decision.host == REBIND)
        .unwrap_or_else(|| panic!("{:?}", report.network));
    assert!(
        !rebind.allowed && rebind.reason.contains("127.0.0.1 is loopback"),
        "{rebind:?}"
    );
    assert!(
        report.network.iter().all(|decision| !decision.allowed),
        "{:?}",
        report.network
    );
    assert!(fixture.loopback.requests().is_empty());
    assert!(fixture.server.requests().is_empty());
}

/// N8: the proxy follows nothing. An allowed host's `302 Location: http://127.0.0.1:PORT/`
/// reaches curl as it is; followed (`-L`), the second request is checked again and refused.
#[tokio::test]
async fn a_redirect_to_loopback_is_passed_back_and_its_target_refused() {
    let Some(fixture) = fixture("a_redirect_to_loopback_is_passed_back_…").await else {
        return;
    };
    let tools = fixture.tools(seed_like_allowlist()).await;
    let port = fixture.loopback.addr().port();
    let script = format!(
        "{PROBE}\
         echo \"location => $(curl -sS --max-time 20 -o /dev/null -w '%{{http_code}} %{{redirect_url}}' http://{PLAIN}/redirect)\"\n\
         probe unfollowed --noproxy '' http://{PLAIN}/redirect\n\
         probe followed --noproxy '' -L http://{PLAIN}/redirect\n\
         probe followed-default -L http://{PLAIN}/redirect\n",
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    let lines = probes(&stdout);
    let all = format!("{stdout}\n{stderr}");
    assert_eq!(
        probe(&lines, "location", &all),
        format!("302 http://127.0.0.1:{port}/stolen")
    );
    let unfollowed = probe(&lines, "unfollowed", &all);
    assert!(unfollowed.contains("[302 000] exit=0"), "{unfollowed}");
    let followed = probe(&lines, "followed", &all);
    assert!(
        followed.contains("[403 000]") && followed.contains("127.0.0.1 is loopback"),
        "{followed}"
    );
    // Without `--noproxy ''` the second request goes to the sandbox's own loopback, not the host's.
    let default = probe(&lines, "followed-default", &all);
    assert!(
        !default.contains("loopback service") && !default.ends_with("exit=0"),
        "{default}"
    );

    assert!(fixture.loopback.requests().is_empty());
    assert_eq!(fixture.plain.requests().len(), 4);
    let refused = report
        .network
        .iter()
        .filter(|decision| decision.host == "127.0.0.1")
        .collect::<Vec<_>>();
    assert_eq!(refused.len(), 1, "{:?}", report.network);
    assert!(
        !refused[0].allowed && refused[0].port == port,
        "{refused:?}"
    );
}

/// N9–N11 from inside the sandbox: after `CONNECT allowed:443`, TLS naming another host (SNI)
/// gets the connection closed and a request whose `Host` names another host a 421 (domain
/// fronting); on plain HTTP, a `Host` that differs from the target, or two `Host` headers, are
/// a 400. None of them reaches the allowed hosts; the well-formed request does.
#[tokio::test]
async fn domain_fronting_and_host_mismatches_are_refused() {
    let Some(fixture) = fixture("domain_fronting_and_host_mismatches_are_refused").await else {
        return;
    };
    let tools = fixture.tools(seed_like_allowlist()).await;
    let script = format!(
        "{PROBE}\
         probe control https://{HOST}/control\n\
         probe sni-curl --connect-to evil.example:443:{HOST}:443 https://evil.example/fronted\n\
         if command -v openssl >/dev/null; then\n\
           echo \"sni-openssl => $(echo | timeout 20 openssl s_client -proxy 127.0.0.1:3128 \
             -connect {HOST}:443 -servername evil.example 2>&1 | grep -c 'BEGIN CERTIFICATE')\"\n\
         else echo 'sni-openssl => unavailable'; fi\n\
         probe inner-host -H 'Host: evil.example' https://{HOST}/inner\n\
         probe plain-host -H 'Host: evil.example' http://{PLAIN}/mismatch\n\
         raw duplicate-host 'GET http://{PLAIN}/duplicate HTTP/1.1' 'Host: {PLAIN}' 'Host: evil.example'\n\
         raw connect-host 'GET http://{PLAIN}/port HTTP/1.1' 'Host: {PLAIN}:8080'\n",
    );
    let (report, stdout, stderr) = bash(&tools, &script).await;
    let lines = probes(&stdout);
    let all = format!("{stdout}\n{stderr}");
    let control = probe(&lines, "control", &all);
    assert!(
        control.starts_with("hello from telemetry") && control.contains("[200 200]"),
        "{control}"
    );

    // curl sends `CONNECT telemetry.example.com:443`, then a ClientHello for evil.example.
    let sni = probe(&lines, "sni-curl", &all);
    assert!(
        sni.contains("000 200]") && !sni.ends_with("exit=0"),
        "{sni}"
    );
    let sni_refusals = report
        .network
        .iter()
        .filter(|decision| {
            decision.host == HOST
                && !decision.allowed
                && decision.reason.contains("SNI (`evil.example`)")
        })
        .count();
    match probe(&lines, "sni-openssl", &all) {
        "unavailable" => {
            skipped(
                "domain_fronting_…: the openssl s_client case",
                "no openssl in the sandbox",
            );
            assert_eq!(sni_refusals, 1, "{:?}", report.network);
        }
        certificates => {
            // The connection is closed before any certificate is sent.
            assert_eq!(certificates, "0", "{all}");
            assert_eq!(sni_refusals, 2, "{:?}", report.network);
        }
    }
    let inner = probe(&lines, "inner-host", &all);
    assert!(inner.contains("[421 200]"), "{inner}");
    for label in ["plain-host", "duplicate-host", "connect-host"] {
        let line = probe(&lines, label, &all);
        assert!(
            line.contains("[400 000]") || line.starts_with("HTTP/1.1 400 "),
            "{label}: {line}"
        );
    }
    assert!(
        probe(&lines, "plain-host", &all).contains("Host header"),
        "{all}"
    );
    assert!(
        probe(&lines, "duplicate-host", &all).contains("duplicate Host"),
        "{all}"
    );

    let paths: Vec<String> = fixture
        .server
        .requests()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, ["/control"]);
    assert_eq!(
        fixture.server.requests()[0].header("x-api-key"),
        Some(TRANSFORM_SECRET)
    );
    assert!(fixture.plain.requests().is_empty());
    assert!(fixture.loopback.requests().is_empty());
}

#[tokio::test]
async fn the_agent_loop_keeps_the_proxy_decisions_in_the_traces_without_secrets() {
    let Some(fixture) =
        fixture("the_agent_loop_keeps_the_proxy_decisions_in_the_traces_without_secrets").await
    else {
        return;
    };
    let tools = fixture.tools(allowlist()).await;
    let model = hookbox_test_support::FakeModelServer::openai(
        "gpt-test",
        None,
        vec![
            hookbox_test_support::FakeTurn::tool_call(
                "",
                "c1",
                "code_execution",
                json!({"code": format!("curl -sS https://{HOST}/ || python3 -c 'import urllib.request; print(urllib.request.urlopen(\"https://{HOST}/\").read())'")}),
            ),
            hookbox_test_support::FakeTurn::text("done"),
        ],
    )
    .await
    .unwrap();
    let config = hookbox_llm::ModelConfig {
        base_url: Some(model.base_url()),
        max_attempts: Some(1),
        ..hookbox_llm::ModelConfig::new(hookbox_llm::ProviderKind::Openai, "gpt-test")
    };
    let client = hookbox_net::GuardedClient::new(&hookbox_llm::client_options()).unwrap();
    let agent = hookbox_agent::interaction::Agent {
        model: hookbox_llm::build_with_env(&config, client, |_| None).unwrap(),
        tools: Some(Arc::new(tools)),
        functions: Vec::new(),
        system: None,
        max_turns: 4,
        max_tokens: None,
    };
    let outcome = agent
        .run(
            &[],
            vec![hookbox_agent::interaction::Step::user_text("fetch it")],
            None,
            &mut |_| {},
        )
        .await;
    assert!(
        outcome
            .records
            .iter()
            .flat_map(|(_, record)| &record.network)
            .any(|decision| decision.host == HOST && decision.allowed),
        "{:?}",
        outcome.records
    );
    // Every field of the records, as any interface could store them.
    let all = format!("{:?}", outcome.records);
    assert!(!all.contains(TRANSFORM_SECRET) && !all.contains("cred-secret-9b1c"));
    assert_eq!(fixture.server.requests().len(), 1);
}

#[tokio::test]
async fn a_command_hooks_own_requests_are_decided_and_reported_with_the_call() {
    let Some(fixture) =
        fixture("a_command_hooks_own_requests_are_decided_and_reported_with_the_call").await
    else {
        return;
    };
    let hooks = json!({"notify": {"pre_tool_execution": [{"matcher": "list_files", "hooks": [
        {"type": "command", "command": format!("curl -sS --max-time 10 https://{HOST}/from-hook >/dev/null 2>&1 || python3 -c 'import urllib.request; urllib.request.urlopen(\"https://{HOST}/from-hook\", timeout=10)'; echo '{{}}'")}
    ]}]}});
    let tools = fixture
        .tools_for(json!({
            "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}],
            "network": allowlist(),
        }))
        .await;
    let report = tools.call("list_files", json!({}), None).await.unwrap();
    assert!(report.error.is_none(), "{report:?}");
    let requests = fixture.server.requests();
    assert!(
        requests.iter().any(|request| request.path == "/from-hook"),
        "{requests:?}"
    );
    assert!(
        report
            .network
            .iter()
            .any(|decision| decision.host == HOST && decision.allowed),
        "{:?}",
        report.network
    );
    // Every field of the report, as any interface could write it.
    let serialized = format!("{report:?}");
    assert!(!serialized.contains(TRANSFORM_SECRET), "{serialized}");
}
