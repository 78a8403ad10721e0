//! Durable audit delivery through `hookbox serve`: the seeds' audit example with
//! `"delivery": "at_least_once"`, its HTTPS receiver for `telemetry.example.com` in a network
//! namespace of its own (as in the `network` tests). Needs root and the sandbox; skipped with a
//! printed reason otherwise.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookbox_runtime::WebhookSigner;
use hookbox_test_support::{RecordedRequest, Reply, TestCertificates, TestHttpServer, TestNetns};
use serde_json::{Value, json};

use super::{api_key, http, serve};

const HOST: &str = "telemetry.example.com";
/// The Standard Webhooks specification's example secret.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Events larger than this are refused (413) while the receiver is strict: the 200 KB
/// `write_file` is, the 64 KiB a `read_file` result is cut to is not.
const STRICT_LIMIT: usize = 128 * 1024;

/// The receiver: answers 503 (with `Retry-After: 1`) while down, 413 to an event larger than
/// [`STRICT_LIMIT`] while strict, 200 (after `delay`) otherwise, and keeps what it took.
struct Receiver {
    up: Arc<AtomicBool>,
    strict: Arc<AtomicBool>,
    taken: Arc<Mutex<Vec<RecordedRequest>>>,
    _server: TestHttpServer,
    netns: TestNetns,
    /// Runs the server's task; dropped last.
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    /// Starts it inside a fresh network namespace, or says why it cannot (the test is skipped).
    fn start(certificates: &TestCertificates, up: bool, delay: Duration) -> Result<Self, String> {
        let netns = TestNetns::create()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let up = Arc::new(AtomicBool::new(up));
        let strict = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(Mutex::new(Vec::new()));
        let listener = netns.bind_inside(443).expect("bind inside");
        let (is_up, is_strict, keep) = (Arc::clone(&up), Arc::clone(&strict), Arc::clone(&taken));
        let server = runtime
            .block_on(async {
                TestHttpServer::start_https_on(listener, certificates, move |request| {
                    if !is_up.load(Ordering::SeqCst) {
                        let mut reply = Reply::text(503, "down for maintenance");
                        reply
                            .headers
                            .push(("retry-after".to_owned(), "1".to_owned()));
                        return reply;
                    }
                    if is_strict.load(Ordering::SeqCst) && request.body.len() > STRICT_LIMIT {
                        return Reply::text(413, "payload too large");
                    }
                    keep.lock().unwrap().push(request.clone());
                    Reply::json(200, &json!({})).after(delay)
                })
            })
            .expect("receiver");
        Ok(Self {
            up,
            strict,
            taken,
            _server: server,
            netns,
            _runtime: runtime,
        })
    }

    /// The events it took (answered 200).
    fn taken(&self) -> Vec<RecordedRequest> {
        self.taken.lock().unwrap().clone()
    }
}

/// The seed's audit environment with its one http handler made `at_least_once`, and, when
/// `slow`, a pre hook that makes each file call take a tenth of a second.
fn durable_audit_spec(slow: bool) -> Value {
    let mut hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(super::super::seeds().join("audit-logging.hooks.json"))
            .expect("seed hooks"),
    )
    .expect("json");
    hooks["audit-logging"]["post_tool_execution"][0]["hooks"][0]["delivery"] =
        json!("at_least_once");
    if slow {
        hooks["slow"] = json!({"pre_tool_execution": [{"matcher": "read_file|write_file",
            "hooks": [{"type": "command", "command": "sleep 0.1"}]}]});
    }
    json!({
        "type": "remote",
        "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}],
        "network": {"allowlist": [
            {"domain": HOST, "transform": {"Authorization": "Bearer telemetry_secret_token_123"}},
            {"domain": "*"}
        ]}
    })
}

/// A scripted model's script: one turn writing then reading back `/workspace/e{n}.log` for
/// each `n` of `numbers`, then a final answer.
fn script(numbers: std::ops::Range<u32>) -> String {
    let calls: Vec<Value> = numbers
        .flat_map(|n| {
            let path = format!("/workspace/e{n}.log");
            [
                json!({"name": "write_file", "args": {"path": path, "content": format!("event {n}")}}),
                json!({"name": "read_file", "args": {"path": path}}),
            ]
        })
        .collect();
    json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string()
}

/// Writes hookbox.toml: the receiver reachable (as in the `network` tests), a scripted agent
/// per `(name, script)`, and `[audit]` signing with retries at most a second apart and an
/// event refused twice given up on.
fn configure(
    home: &Path,
    receiver: &Receiver,
    certificates: &TestCertificates,
    agents: &[(&str, String)],
) {
    std::fs::write(home.join("telemetry-ca.pem"), certificates.ca_pem()).expect("ca");
    let mut config = format!(
        "[network]\nallow_private_cidrs = [\"{}\"]\n\
         extra_ca_certs = [\"telemetry-ca.pem\"]\nresolve = {{ \"{HOST}\" = \"{}\" }}\n\
         [sandbox]\ndisk_bytes = 16777216\n\
         [audit]\nsigning_secret = \"{SECRET}\"\nmax_backoff = 1\n\
         dead_letter_after_attempts = 2\n",
        receiver.netns.cidr(),
        receiver.netns.inside_address()
    );
    for (name, script) in agents {
        std::fs::write(home.join(format!("{name}.json")), script).expect("script");
        config.push_str(&format!(
            "[agents.{name}]\nprovider = \"scripted\"\nscript = \"{name}.json\"\n"
        ));
    }
    std::fs::write(home.join("hookbox.toml"), config).expect("config");
}

/// `(tool, path)` of each audited call, in call order.
fn expected_calls() -> Vec<(String, String)> {
    (0..20)
        .flat_map(|n| {
            let path = format!("/workspace/e{n}.log");
            [
                ("write_file".to_owned(), path.clone()),
                ("read_file".to_owned(), path),
            ]
        })
        .collect()
}

/// Waits until `done` says so (or 90 s passed).
fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the receiver took `count` events (or 90 s passed), and returns them.
fn wait_for(receiver: &Receiver, count: usize) -> Vec<RecordedRequest> {
    wait_until(|| receiver.taken().len() >= count);
    receiver.taken()
}

/// The sandbox checked and a receiver started (see [`Receiver::start`]), or `None` when
/// `test` is skipped (the reason printed).
fn receiver_for(test: &str, up: bool, delay: Duration) -> Option<(Receiver, TestCertificates)> {
    if let Err(error) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(test, format_args!("the sandbox is unavailable: {error}"));
        return None;
    }
    let certificates = TestCertificates::for_names(&[HOST]).expect("certificates");
    match Receiver::start(&certificates, up, delay) {
        Ok(receiver) => Some((receiver, certificates)),
        Err(reason) => {
            hookbox_test_support::skip(
                test,
                format_args!("cannot create a test network namespace: {reason}"),
            );
            None
        }
    }
}

/// `hookbox audit status --json` in `home`.
fn status(home: &Path) -> Value {
    let output = super::super::hookbox_in(home, &["audit", "status", "--json"], b"");
    assert_eq!(super::super::code(&output), 0, "{output:?}");
    super::super::stdout_json(&output)
}

#[test]
fn a_receiver_down_for_the_first_20_calls_gets_every_event_once_in_order_and_signed() {
    const TEST: &str = "serve::audit::a_receiver_down_for_the_first_20_calls_gets_every_event_once_in_order_and_signed";
    let Some((receiver, certificates)) = receiver_for(TEST, false, Duration::ZERO) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    configure(
        home.path(),
        &receiver,
        &certificates,
        &[("first", script(0..10)), ("second", script(10..20))],
    );
    let key = api_key(home.path(), "ci");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;

    // 20 audited calls while the receiver is down: the model gets every result at once.
    let first = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "first", "input": "log", "environment": durable_audit_spec(false)}),
    );
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.json()["status"], "completed", "{first:?}");
    let environment = first.json()["environment_id"]
        .as_str()
        .expect("environment_id")
        .to_owned();
    assert!(receiver.taken().is_empty());
    let backlog = status(home.path());
    assert_eq!(backlog[0]["pending"], 20, "{backlog}");
    let interaction = first.json()["id"].as_str().unwrap().to_owned();
    let traces = super::super::hookbox_in(home.path(), &["traces", &interaction], b"");
    let traces = String::from_utf8_lossy(&traces.stdout);
    assert_eq!(
        traces
            .matches("queued for delivery as webhook-id msg_")
            .count(),
        20,
        "{traces}"
    );
    // The first attempt's failure is recorded once the receiver has answered it.
    wait_until(|| status(home.path())[0]["last_error"] == "HTTP status 503");
    let backlog = status(home.path());
    assert_eq!(backlog[0]["last_error"], "HTTP status 503", "{backlog}");

    // The receiver comes back; 20 more calls in the same environment.
    receiver.up.store(true, Ordering::SeqCst);
    let second = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "second", "input": "log", "environment": environment}),
    );
    assert_eq!(second.status, 200, "{second:?}");

    let taken = wait_for(&receiver, 40);
    let ids: Vec<&str> = taken
        .iter()
        .map(|r| r.header("webhook-id").expect("webhook-id"))
        .collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        ids.len(),
        "a duplicate: {ids:?}"
    );
    let calls: Vec<(String, String)> = taken
        .iter()
        .map(|request| {
            let event = request.json();
            let call = &event["tool_call"];
            assert_eq!(event["environment_id"], environment.as_str(), "{event}");
            (
                call["name"].as_str().unwrap().to_owned(),
                call["args"]["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(calls, expected_calls(), "not every event, or not in order");
    let signer = WebhookSigner::new(SECRET).unwrap();
    for request in &taken {
        let id = request.header("webhook-id").unwrap();
        let timestamp: i64 = request
            .header("webhook-timestamp")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            request.header("webhook-signature"),
            Some(signer.sign(id, timestamp, &request.body).as_str()),
            "{request:?}"
        );
        assert_eq!(
            request.header("authorization"),
            Some("Bearer telemetry_secret_token_123")
        );
    }
    // The last delivery is recorded just after the receiver answered it.
    wait_until(|| status(home.path())[0]["delivered"] == 40);
    let backlog = status(home.path());
    assert_eq!(
        (backlog[0]["pending"].clone(), backlog[0]["dead"].clone()),
        (json!(0), json!(0)),
        "{backlog}"
    );
    assert_eq!(backlog[0]["delivered"], 40, "{backlog}");

    let (_, log) = served.terminate();
    assert!(log.contains("audit destination started failing"), "{log}");
    assert!(log.contains("audit destination delivers again"), "{log}");
}

/// How many events the outbox holds, whatever their state.
fn stored(home: &Path) -> u64 {
    let backlog = status(home);
    backlog
        .as_array()
        .unwrap()
        .iter()
        .map(|destination| {
            ["pending", "delivered", "dead"]
                .iter()
                .map(|key| destination[key].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum()
}

/// `(tool, path)` of every file call whose result an interaction's stored steps show.
fn results_seen(interaction: &Value) -> Vec<(String, String)> {
    let steps = interaction["steps"].as_array().expect("steps");
    let path_of = |call_id: &Value| {
        steps
            .iter()
            .find(|step| step["type"] == "function_call" && &step["id"] == call_id)
            .map(|call| call["arguments"]["path"].as_str().unwrap().to_owned())
            .expect("the result's call")
    };
    steps
        .iter()
        .filter(|step| step["type"] == "function_result")
        .map(|result| {
            (
                result["name"].as_str().unwrap().to_owned(),
                path_of(&result["call_id"]),
            )
        })
        .collect()
}

#[test]
fn kill_9_of_serve_mid_calls_loses_no_event_whose_result_the_model_saw() {
    const TEST: &str =
        "serve::audit::kill_9_of_serve_mid_calls_loses_no_event_whose_result_the_model_saw";
    const ROUNDS: u32 = 10;
    let Some((receiver, certificates)) = receiver_for(TEST, true, Duration::from_millis(100))
    else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let agents: Vec<(String, std::ops::Range<u32>)> = (0..ROUNDS)
        .map(|round| (format!("round{round}"), round * 10..round * 10 + 10))
        .collect();
    let named: Vec<(&str, String)> = agents
        .iter()
        .map(|(name, numbers)| (name.as_str(), script(numbers.clone())))
        .collect();
    configure(home.path(), &receiver, &certificates, &named);
    let key = api_key(home.path(), "ci");
    let mut environment = durable_audit_spec(true);
    let mut interactions = Vec::new();
    for (round, (agent, _)) in agents.iter().enumerate() {
        // Killed with the receiver down, the round's events are all pending; killed with it
        // up (and slow), one may be in flight.
        let down = round % 2 == 0;
        receiver.up.store(!down, Ordering::SeqCst);
        let mut served = serve(home.path(), &[]);
        let before = stored(home.path());
        let created = http::json(
            &served.base_url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": agent, "input": "log", "background": true, "environment": environment}),
        );
        assert_eq!(created.status, 200, "{created:?}");
        let created = created.json();
        interactions.push(created["id"].as_str().unwrap().to_owned());
        environment = created["environment_id"].clone();
        // Five of the round's 20 calls are done (each takes 0.1 s or more): kill it mid-way.
        wait_until(|| stored(home.path()) >= before + 5);
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&served.child),
            rustix::process::Signal::KILL,
        )
        .expect("SIGKILL");
        served.child.wait().expect("wait");
    }
    let left = status(home.path());
    assert!(
        left[0]["pending"].as_u64().unwrap() > 0,
        "the kills left nothing pending: {left}"
    );

    receiver.up.store(true, Ordering::SeqCst);
    let served = serve(home.path(), &[]);
    wait_until(|| status(home.path())[0]["pending"] == 0);
    let backlog = status(home.path());
    assert_eq!(
        (backlog[0]["pending"].clone(), backlog[0]["dead"].clone()),
        (json!(0), json!(0)),
        "{backlog}"
    );

    // Each event arrived under one webhook-id (a repeat is an attempt a kill cut short).
    let taken = receiver.taken();
    let mut id_of: std::collections::HashMap<(String, String), String> =
        std::collections::HashMap::new();
    for request in &taken {
        let event = request.json();
        let call = (
            event["tool_call"]["name"].as_str().unwrap().to_owned(),
            event["tool_call"]["args"]["path"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        let id = request.header("webhook-id").unwrap().to_owned();
        assert_eq!(
            id_of.entry(call.clone()).or_insert_with(|| id.clone()),
            &id,
            "{call:?}"
        );
    }
    assert_eq!(backlog[0]["delivered"], id_of.len(), "{backlog}");
    // Every call whose result the model saw has its event delivered.
    for interaction in &interactions {
        let got = http::json(
            &served.base_url,
            &key,
            "GET",
            &format!("/v1/interactions/{interaction}"),
            &Value::Null,
        );
        for seen in results_seen(&got.json()) {
            assert!(id_of.contains_key(&seen), "{seen:?} was never delivered");
        }
    }
    served.terminate();
}

/// `(tool, path)` of each event the receiver took, in the order it took them.
fn calls_taken(receiver: &Receiver) -> Vec<(String, String)> {
    receiver
        .taken()
        .iter()
        .map(|request| {
            let call = request.json()["tool_call"].clone();
            (
                call["name"].as_str().unwrap().to_owned(),
                call["args"]["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_event_the_receiver_refuses_is_dead_lettered_the_queue_moves_on_and_retry_delivers_it() {
    const TEST: &str = "serve::audit::an_event_the_receiver_refuses_is_dead_lettered_the_queue_moves_on_and_retry_delivers_it";
    let Some((receiver, certificates)) = receiver_for(TEST, true, Duration::ZERO) else {
        return;
    };
    receiver.strict.store(true, Ordering::SeqCst);
    let home = tempfile::tempdir().unwrap();
    let write = |path: &str, content: String| json!({"name": "write_file", "args": {"path": path, "content": content}});
    let calls = [
        write("/workspace/e0.log", "event 0".to_owned()),
        write("/workspace/big.log", "x".repeat(200 * 1024)),
        write("/workspace/e1.log", "event 1".to_owned()),
        json!({"name": "read_file", "args": {"path": "/workspace/e1.log"}}),
    ];
    let script = json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string();
    configure(home.path(), &receiver, &certificates, &[("big", script)]);
    let key = api_key(home.path(), "ci");
    let served = serve(home.path(), &[]);
    let created = http::json(
        &served.base_url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "big", "input": "log", "environment": durable_audit_spec(false)}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    assert_eq!(created.json()["status"], "completed", "{created:?}");

    // Refused twice (413), the 200 KB write is given up on and the events after it go.
    let call = |tool: &str, path: &str| (tool.to_owned(), path.to_owned());
    wait_until(|| status(home.path())[0]["delivered"] == 3);
    assert_eq!(
        calls_taken(&receiver),
        [
            call("write_file", "/workspace/e0.log"),
            call("write_file", "/workspace/e1.log"),
            call("read_file", "/workspace/e1.log"),
        ],
        "the events after the refused one are not delivered in order"
    );
    let backlog = status(home.path());
    assert_eq!(
        (backlog[0]["pending"].clone(), backlog[0]["dead"].clone()),
        (json!(0), json!(1)),
        "{backlog}"
    );
    let dead = &backlog[0]["dead_events"];
    assert_eq!(dead.as_array().map(Vec::len), Some(1), "{backlog}");
    assert_eq!(
        (dead[0]["attempts"].clone(), dead[0]["refusals"].clone()),
        (json!(2), json!(2)),
        "{backlog}"
    );
    let error = dead[0]["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(
            "HTTP status 413 (refused 2 times; [audit] dead_letter_after_attempts is 2"
        ),
        "{backlog}"
    );
    let dead_id = dead[0]["id"].as_str().unwrap().to_owned();
    let environment = created.json()["environment_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(dead[0]["queue"], environment.as_str(), "{backlog}");
    let text = super::super::hookbox_in(home.path(), &["audit", "status"], b"");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            "dead {dead_id} of environment {environment}, stored "
        )) && text.contains(": 2 attempts, 2 refused; HTTP status 413 (refused 2 times"),
        "{text}"
    );

    // The receiver takes large events now: `audit retry` sends the dead letter, last.
    receiver.strict.store(false, Ordering::SeqCst);
    let retried = super::super::hookbox_in(home.path(), &["audit", "retry"], b"");
    assert_eq!(super::super::code(&retried), 0, "{retried:?}");
    assert!(
        String::from_utf8_lossy(&retried.stdout).starts_with("1 dead audit event(s) pending again"),
        "{retried:?}"
    );
    let taken = wait_for(&receiver, 4);
    assert_eq!(taken.len(), 4);
    assert_eq!(taken[3].header("webhook-id"), Some(dead_id.as_str()));
    assert_eq!(
        calls_taken(&receiver)[3],
        call("write_file", "/workspace/big.log")
    );
    wait_until(|| status(home.path())[0]["delivered"] == 4);
    let backlog = status(home.path());
    assert_eq!(
        (backlog[0]["pending"].clone(), backlog[0]["dead"].clone()),
        (json!(0), json!(0)),
        "{backlog}"
    );
    assert_eq!(backlog[0]["dead_events"], json!([]), "{backlog}");
    let (_, log) = served.terminate();
    assert!(
        log.contains("audit event given up and kept as dead"),
        "{log}"
    );
}

/// An owner's audit events are the owner's traffic, not the model's: they reach the receiver
/// through the owner's client and `[network]` rules whatever the environment's `network` lets
/// the sandbox reach (no network at all, or an allowlist without the receiver).
#[test]
fn an_owners_audit_events_reach_the_receiver_whatever_the_sandboxs_network() {
    const TEST: &str =
        "serve::audit::an_owners_audit_events_reach_the_receiver_whatever_the_sandboxs_network";
    let Some((receiver, certificates)) = receiver_for(TEST, true, Duration::ZERO) else {
        return;
    };
    let networks = [
        json!("disabled"),
        json!({"allowlist": "disabled"}),
        json!({"allowlist": [{"domain": "example.org"}]}),
    ];
    let home = tempfile::tempdir().unwrap();
    configure(
        home.path(),
        &receiver,
        &certificates,
        &[("one", script(0..1))],
    );
    let key = api_key(home.path(), "ci");
    let served = serve(home.path(), &[]);
    for (index, network) in networks.iter().enumerate() {
        let mut spec = durable_audit_spec(false);
        spec["network"] = network.clone();
        let reply = http::json(
            &served.base_url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": "one", "input": "log", "environment": spec}),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        let taken = wait_for(&receiver, 2 * (index + 1));
        assert_eq!(
            taken.len(),
            2 * (index + 1),
            "network {network}: {:?}",
            status(home.path())
        );
    }
    let backlog = status(home.path());
    assert_eq!(backlog[0]["dead"], 0, "{backlog}");
    drop(served.terminate());
}
