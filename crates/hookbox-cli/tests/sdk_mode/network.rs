//! The network of SDK sessions' sandboxed `Bash`, driven by the published Python SDK: the fake
//! model asks `Bash` to `curl` test hosts served in a network namespace of their own (reached
//! through hookbox.toml's `[network]`: the test subnet admitted, the names resolved to it), so
//! only the egress proxy can reach them. hookbox.toml's `[sdk] allowed_domains` is the ceiling;
//! the settings' `sandbox.network` lists narrow it. Needs root (for the namespace), the sandbox,
//! curl and `HOOKBOX_PYTHON`; skipped with a printed reason otherwise.

use hookbox_test_support::{Reply, TestCertificates, TestHttpServer, TestNetns};
use serde_json::{Value, json};

use super::python::{assert_finished, exception, python, run, run_options};
use super::{World, call};
use hookbox_test_support::FakeTurn;

/// Every name the test hosts answer for (all resolved to the one address inside the
/// namespace; the policy tells them apart).
const NAMES: [&str; 4] = [
    "api.allowed.test",
    "www.allowed.test",
    "blocked.allowed.test",
    "other.test",
];
/// Allowed names that resolve to addresses the proxy never dials (loopback, a private range
/// not admitted by `[network] allow_private_cidrs`).
const UNDIALABLE: [(&str, &str); 2] = [
    ("loopback.allowed.test", "127.0.0.1"),
    ("private.allowed.test", "192.168.77.1"),
];
/// What the test hosts answer.
const GREETING: &str = "hello from the test host";

/// Test hosts on ports 80 (HTTP) and 443 (HTTPS, a certificate for [`NAMES`] from a CA whose
/// certificate the session's directory holds as `ca.pem`).
struct Hosts {
    netns: TestNetns,
    http: TestHttpServer,
    https: TestHttpServer,
}

impl Hosts {
    /// The hosts, or `None` (and a SKIPPED line) where the test cannot run.
    fn start(test: &str, world: &World) -> Option<Self> {
        if let Err(error) = hookbox_exec::check_isolation() {
            hookbox_test_support::skip(test, format_args!("the sandbox is unavailable: {error}"));
            return None;
        }
        if !std::path::Path::new("/usr/bin/curl").exists() {
            hookbox_test_support::skip(test, "the sandbox's Bash needs /usr/bin/curl");
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
        let certificates = TestCertificates::for_names(&NAMES).unwrap();
        let _guard = world.runtime.enter();
        let http = TestHttpServer::start_on(netns.bind_inside(80).unwrap(), |_| {
            Reply::text(200, GREETING)
        })
        .unwrap();
        let https =
            TestHttpServer::start_https_on(netns.bind_inside(443).unwrap(), &certificates, |_| {
                Reply::text(200, GREETING)
            })
            .unwrap();
        std::fs::write(world.work().join("ca.pem"), certificates.ca_pem()).unwrap();
        Some(Self { netns, http, https })
    }

    /// Appends to the world's hookbox.toml what makes the hosts reachable by the proxy, and
    /// `sdk` (the `[sdk]` table's keys).
    fn configure(&self, world: &World, sdk: &str) {
        let path = world.home.path().join("hookbox.toml");
        let mut config = std::fs::read_to_string(&path).unwrap();
        let address = self.netns.inside_address();
        let address = address.to_string();
        let resolve: Vec<String> = NAMES
            .iter()
            .map(|name| (*name, address.as_str()))
            .chain(UNDIALABLE)
            .map(|(name, address)| format!("\"{name}\" = \"{address}\""))
            .collect();
        config.push_str(&format!(
            "\n[network]\nallow_private_cidrs = [\"{}\"]\nresolve = {{ {} }}\n\n[sdk]\n{sdk}\n",
            self.netns.cidr(),
            resolve.join(", ")
        ));
        std::fs::write(path, config).unwrap();
    }

    /// How many requests reached the hosts.
    fn requests(&self, world: &World) -> usize {
        let _guard = world.runtime.enter();
        self.http.requests().len() + self.https.requests().len()
    }
}

/// A `Bash` script that fetches each URL with curl (through the proxy variables), each
/// result after a `== URL` line, curl's exit status after the body.
fn fetch_all(urls: &[String]) -> String {
    urls.iter()
        .map(|url| {
            format!(
                "echo '== {url}'; curl -sS --max-time 20 --cacert ca.pem {url} 2>&1; \
                 echo \" [exit $?]\""
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the model saw for the one `Bash` call of a run.
fn bash_result(world: &World) -> String {
    let results = world.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    results[0].0.clone()
}

/// The part of `text` after `== URL` up to the next `== `.
fn section<'a>(text: &'a str, url: &str) -> &'a str {
    let start = text
        .find(&format!("== {url}\n"))
        .unwrap_or_else(|| panic!("no section for {url} in {text}"));
    let rest = &text[start + url.len() + 4..];
    rest.find("\n== ").map_or(rest, |end| &rest[..end])
}

/// Runs `options.py` with one `Bash` call of `script` and the SDK `options`; returns what
/// the model saw.
fn run_bash(python: &std::ffi::OsStr, world: &World, script: &str, options: Value) -> String {
    world
        .server
        .push(call("toolu_1", "Bash", json!({"command": script})));
    world.server.push(FakeTurn::text("Fetched."));
    let spec = json!({"options": options});
    let (output, messages) = run_options(python, world, "fetch the pages", &spec);
    assert_finished(&output, &messages);
    bash_result(world)
}

#[test]
fn sdk_bash_reaches_allowed_domains_and_the_proxy_refuses_the_rest_with_a_reason() {
    const TEST: &str = "sdk_mode::network::sdk_bash_reaches_allowed_domains_and_the_proxy_refuses_the_rest_with_a_reason";
    let Some(python) = python(TEST) else {
        return;
    };
    let world = World::new(Vec::new());
    let Some(hosts) = Hosts::start(TEST, &world) else {
        return;
    };
    hosts.configure(
        &world,
        "allowed_domains = [\"*.allowed.test\"]\ndenied_domains = [\"blocked.allowed.test\"]",
    );
    let inside = hosts.netns.inside_address();
    let urls = [
        "https://api.allowed.test/".to_owned(),
        "http://www.allowed.test/page".to_owned(),
        "http://blocked.allowed.test/".to_owned(),
        "http://other.test/".to_owned(),
        "https://other.test/".to_owned(),
        format!("http://{}/", UNDIALABLE[0].0),
        format!("http://{}/", UNDIALABLE[1].0),
    ];
    let script = format!(
        "{}\necho '== direct'; curl -sS --max-time 5 --noproxy '*' http://{inside}/ 2>&1; \
         echo \" [exit $?]\"\necho \"== proxy $HTTPS_PROXY\"",
        fetch_all(&urls)
    );
    let seen = run_bash(&python, &world, &script, json!({}));
    for allowed in &urls[..2] {
        let part = section(&seen, allowed);
        assert!(
            part.contains(GREETING) && part.contains("[exit 0]"),
            "{allowed}: {seen}"
        );
    }
    // Plain HTTP: the proxy's 403 body is the reason, which curl prints.
    assert!(
        section(&seen, &urls[2]).contains(
            "host `blocked.allowed.test` is denied by `blocked.allowed.test` of `[sdk] \
             denied_domains`"
        ),
        "{seen}"
    );
    assert!(
        section(&seen, &urls[3]).contains(
            "host `other.test` is not allowed: it matches no entry of `[sdk] allowed_domains` \
             (`*.allowed.test`)"
        ),
        "{seen}"
    );
    // HTTPS: curl shows only the status of the refused CONNECT; the reason follows the
    // output.
    assert!(section(&seen, &urls[4]).contains("403"), "{seen}");
    assert!(
        seen.contains(
            "Network: the sandbox's proxy refused CONNECT other.test:443: host `other.test` is \
             not allowed"
        ),
        "{seen}"
    );
    // Allowed names are still held to the address rules after resolution.
    for (url, class) in urls[5..].iter().zip(["loopback", "private"]) {
        let part = section(&seen, url);
        assert!(
            part.contains(class) && part.contains("refused") && !part.contains(GREETING),
            "{url}: {seen}"
        );
    }
    // Nothing but the proxy leads out.
    assert!(!section(&seen, "direct").contains(GREETING), "{seen}");
    // The call names itself to the warm sandbox's proxy through the URL's user.
    let proxy = seen.split("== proxy ").nth(1).unwrap_or_default();
    assert!(
        proxy.starts_with("http://call-") && proxy.contains(":x@127.0.0.1:3128"),
        "{seen}"
    );
    assert_eq!(hosts.requests(&world), 2, "{seen}");
}

#[test]
fn sdk_bash_has_no_network_when_hookbox_toml_allows_none_whatever_the_settings_say() {
    const TEST: &str = "sdk_mode::network::sdk_bash_has_no_network_when_hookbox_toml_allows_none_whatever_the_settings_say";
    let Some(python) = python(TEST) else {
        return;
    };
    let world = World::new(Vec::new());
    let Some(hosts) = Hosts::start(TEST, &world) else {
        return;
    };
    hosts.configure(&world, "");
    let url = "http://api.allowed.test/".to_owned();
    let script = format!(
        "{}\necho \"== proxy [$HTTPS_PROXY$HTTP_PROXY$ALL_PROXY]\"",
        fetch_all(std::slice::from_ref(&url))
    );
    // The SDK's own `sandbox` option cannot open what the operator did not.
    let options = json!({"sandbox": {"network": {"allowedDomains": ["*", "api.allowed.test"]}}});
    let seen = run_bash(&python, &world, &script, options);
    assert!(!section(&seen, &url).contains(GREETING), "{seen}");
    assert!(!section(&seen, &url).contains("[exit 0]"), "{seen}");
    assert!(seen.contains("== proxy []"), "{seen}");
    assert_eq!(hosts.requests(&world), 0, "{seen}");
}

#[test]
fn model_written_project_settings_cannot_widen_the_network_beyond_hookbox_toml() {
    const TEST: &str = "sdk_mode::network::model_written_project_settings_cannot_widen_the_network_beyond_hookbox_toml";
    let Some(python) = python(TEST) else {
        return;
    };
    let world = World::new(Vec::new());
    let Some(hosts) = Hosts::start(TEST, &world) else {
        return;
    };
    hosts.configure(&world, "allowed_domains = [\"api.allowed.test\"]");
    // What a model (or a cloned repository) could leave in the project: allow everything, deny
    // nothing.
    let claude = world.work().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({"sandbox": {"network": {"allowedDomains": ["*", "other.test"], "deniedDomains": []}}})
            .to_string(),
    )
    .unwrap();
    let urls = [
        "http://api.allowed.test/".to_owned(),
        "http://other.test/".to_owned(),
        "http://www.allowed.test/".to_owned(),
    ];
    let seen = run_bash(&python, &world, &fetch_all(&urls), json!({}));
    assert!(section(&seen, &urls[0]).contains(GREETING), "{seen}");
    for refused in &urls[1..] {
        assert!(
            section(&seen, refused).contains("it matches no entry of `[sdk] allowed_domains`"),
            "{refused}: {seen}"
        );
    }
    assert_eq!(hosts.requests(&world), 1, "{seen}");
}

#[test]
fn settings_narrow_the_ceiling_and_their_denied_domains_win() {
    const TEST: &str =
        "sdk_mode::network::settings_narrow_the_ceiling_and_their_denied_domains_win";
    let Some(python) = python(TEST) else {
        return;
    };
    let world = World::new(Vec::new());
    let Some(hosts) = Hosts::start(TEST, &world) else {
        return;
    };
    hosts.configure(&world, "allowed_domains = [\"*\"]");
    let urls = [
        "https://api.allowed.test/".to_owned(),
        "http://www.allowed.test/".to_owned(),
        "http://other.test/".to_owned(),
    ];
    // The SDK's `sandbox` option, as Claude Code users write it.
    let options = json!({"sandbox": {"network": {
        "allowedDomains": ["*.allowed.test"],
        "deniedDomains": ["www.allowed.test"]
    }}});
    let seen = run_bash(&python, &world, &fetch_all(&urls), options);
    assert!(section(&seen, &urls[0]).contains(GREETING), "{seen}");
    assert!(
        section(&seen, &urls[1]).contains(
            "host `www.allowed.test` is denied by `www.allowed.test` of the settings' \
             `sandbox.network.deniedDomains` in the --settings JSON"
        ),
        "{seen}"
    );
    assert!(
        section(&seen, &urls[2]).contains(
            "it matches no entry of the settings' `sandbox.network.allowedDomains` \
             (`*.allowed.test`)"
        ),
        "{seen}"
    );
    assert_eq!(hosts.requests(&world), 1, "{seen}");
}

#[test]
fn bad_domain_entries_end_the_prompt_with_an_error_naming_the_file_the_key_and_the_entry() {
    const TEST: &str = "sdk_mode::network::bad_domain_entries_end_the_prompt_with_an_error_naming_the_file_the_key_and_the_entry";
    let Some(python) = python(TEST) else {
        return;
    };
    // The error the SDK raised for one prompt.
    let error = |world: &World| {
        let (output, messages) = run(&python, world, "results.py", &["plain", "hi"]);
        let log = format!(
            "{messages:#?}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let raised = exception(&messages).unwrap_or_else(|| panic!("nothing raised: {log}"));
        assert_eq!(raised["exception"], "ResultError", "{log}");
        assert!(world.bodies().is_empty(), "the model was called: {log}");
        raised["errors"][0].as_str().unwrap_or_default().to_owned()
    };
    // hookbox.toml: the runtime does not start.
    let world = World::new(Vec::new());
    let config = world.home.path().join("hookbox.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[sdk]\nallowed_domains = [\"pypi.org\", \"https://github.com\"]\n");
    std::fs::write(&config, text).unwrap();
    let message = error(&world);
    assert!(
        message.contains(&format!(
            "{}: [sdk] allowed_domains[1]: \"https://github.com\" is not a domain pattern",
            config.display()
        )) && message.contains("write a host such as"),
        "{message}"
    );
    // A project settings file: the session does not start.
    let world = World::new(Vec::new());
    let settings = world.work().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        json!({"sandbox": {"network": {"deniedDomains": ["*.evil.*"]}}}).to_string(),
    )
    .unwrap();
    let message = error(&world);
    assert!(
        message.contains(&format!(
            "{}: `sandbox.network.deniedDomains[0]`: \"*.evil.*\" is not a domain pattern",
            settings.display()
        )),
        "{message}"
    );
}

/// A `--mcp-config` stdio server gets the session's network, as `Bash` does: an allowed host
/// through the proxy, another refused with the reason.
#[test]
fn sdk_stdio_mcp_server_gets_the_same_network_as_bash() {
    const TEST: &str = "sdk_mode::network::sdk_stdio_mcp_server_gets_the_same_network_as_bash";
    let Some(python) = python(TEST) else {
        return;
    };
    let world = World::new(vec![
        call(
            "toolu_1",
            "mcp__local__fetch",
            json!({"url": "http://api.allowed.test/"}),
        ),
        call(
            "toolu_2",
            "mcp__local__fetch",
            json!({"url": "http://other.test/"}),
        ),
        FakeTurn::text("Fetched."),
    ]);
    let Some(hosts) = Hosts::start(TEST, &world) else {
        return;
    };
    hosts.configure(&world, "allowed_domains = [\"*.allowed.test\"]");
    let script = super::mcp_config::server_script(&world);
    let config = json!({"mcpServers": {"local": super::mcp_config::python_server(&script, &[])}});
    let spec = json!({
        "servers": {},
        "options": {"allowed_tools": ["mcp__local"],
                    "extra_args": {"mcp-config": config.to_string()}},
    });
    super::mcp::drive(&python, &world, "claude", &spec);
    let results = world.tool_results();
    assert_eq!(
        results[0],
        (format!("fetched: {GREETING}"), false),
        "{results:?}"
    );
    assert!(
        results[1].1
            && results[1].0.contains("refused 403")
            && results[1].0.contains("host `other.test` is not allowed"),
        "{results:?}"
    );
    assert_eq!(hosts.requests(&world), 1);
}
