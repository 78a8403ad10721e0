//! `hookbox serve` runs an environment's code and command hooks in one warm sandbox, which it
//! stops when idle, when the environment is deleted and on SIGTERM, and rebuilds after its
//! supervisor is killed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::http;
use super::{Served, api_key, serve};

/// The supervisor pids of every "warm sandbox started" line of `log`, in order.
pub(super) fn started_pids(log: &str) -> Vec<u32> {
    log.lines()
        .filter(|line| line.contains("warm sandbox started"))
        .map(|line| {
            let pid = line
                .split("pid=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("no pid in {line}"));
            pid.trim_start_matches("Some(")
                .trim_end_matches(')')
                .parse()
                .unwrap_or_else(|_| panic!("bad pid in {line}"))
        })
        .collect()
}

/// Waits (at most a minute) until `served`'s log satisfies `done`; returns the log.
pub(super) fn wait_for_log(served: &Served, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = served.stderr.lock().unwrap().clone();
        if done(&log) {
            return log;
        }
        assert!(Instant::now() < deadline, "never logged {what}: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (at most a minute) until process `pid` is gone.
pub(super) fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "supervisor {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/proc/<pid>/cmdline` names hookbox's hidden supervisor argument.
fn is_supervisor(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|&byte| byte == 0)
            .any(|arg| arg == hookbox_exec::SUPERVISOR_ARG.as_bytes())
    })
}

#[test]
fn an_environments_code_and_hooks_share_one_warm_sandbox_until_stopped() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("warm.script.json");
    // Shell concatenation keeps the words looked for out of the code the reply echoes.
    let first = "echo secret > /tmp/scratch; echo kept > /workspace/kept";
    let second = "[ -e /tmp/scratch ] && echo L''EAKED || echo F''RESH; \
                  echo K''EPT=$(cat /workspace/kept) H''OOKS=$(wc -l < /workspace/hooks.log)";
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "code_execution", "args": {"code": first}}]},
            {"tool_calls": [{"name": "code_execution", "args": {"code": second}}]},
            {"text": "done"}]})
        .to_string(),
    )
    .unwrap();
    let peek = home.path().join("peek.script.json");
    std::fs::write(
        &peek,
        json!({"turns": [
            {"tool_calls": [{"name": "code_execution", "args": {"code": "cat /extra/new.txt"}}]},
            {"text": "done"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[sandbox]\nidle_timeout_secs = 1\n\n[agents.tool]\nprovider = \"scripted\"\nscript = \"{}\"\n\n\
             [agents.peek]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display(),
            peek.display()
        ),
    )
    .unwrap();
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    // The trivial hook, also leaving a line where the code can count it.
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command",
                   "command": "cat > /dev/null; echo hook >> /workspace/hooks.log; echo '{}'"}]}]}});
    let created = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "tool", "input": "run", "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "network": "disabled", "sources": [
                {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}]}}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    // Each call got a fresh /tmp; files and both hooks' lines persisted.
    assert!(
        created.body.contains("FRESH") && !created.body.contains("LEAKED"),
        "{created:?}"
    );
    assert!(created.body.contains("KEPT=kept HOOKS=2"), "{created:?}");
    let environment = created.json()["environment_id"]
        .as_str()
        .expect("environment_id")
        .to_owned();
    // Two calls and two hooks: one sandbox, supervised by `hookbox-sandbox-supervisor`.
    let log = served.stderr.lock().unwrap().clone();
    let pids = started_pids(&log);
    assert_eq!(pids.len(), 1, "{log}");

    // Idle for the timeout: stopped; the next call builds a new one transparently.
    wait_for_log(&served, "the idle stop", |log| {
        log.contains("warm sandbox stopped: idle")
    });
    wait_gone(pids[0]);
    let run = |input: &str| {
        http::json(
            url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": "tool", "input": input, "tools": [{"type": "code_execution"}],
                "environment": environment}),
        )
    };
    let again = run("again");
    assert_eq!(again.status, 200, "{again:?}");
    assert!(again.body.contains("KEPT=kept HOOKS=4"), "{again:?}");
    let log = served.stderr.lock().unwrap().clone();
    let pids = started_pids(&log);
    assert_eq!(pids.len(), 2, "{log}");
    let supervisor = pids[1];
    assert!(
        is_supervisor(supervisor),
        "{supervisor} is not a supervisor"
    );

    // A supervisor killed from outside: the next call rebuilds it and succeeds.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(supervisor.try_into().unwrap()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    wait_gone(supervisor);
    let rebuilt = run("after a kill");
    assert_eq!(rebuilt.status, 200, "{rebuilt:?}");
    assert!(rebuilt.body.contains("KEPT=kept HOOKS=6"), "{rebuilt:?}");
    let log = served.stderr.lock().unwrap().clone();
    let rebuilt_pid = *started_pids(&log).last().unwrap();
    assert_ne!(rebuilt_pid, supervisor, "{log}");
    assert!(
        log.contains("warm sandbox replaced: its supervisor died"),
        "{log}"
    );
    assert!(is_supervisor(rebuilt_pid), "{log}");

    // An update adding a top-level entry: the next call's sandbox mounts it.
    let updated = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "peek", "input": "peek", "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "environment_id": environment,
                "network": "disabled", "sources": [
                {"type": "inline", "target": "extra/new.txt", "content": "a new entry"}]}}),
    );
    assert_eq!(updated.status, 200, "{updated:?}");
    assert!(updated.body.contains("a new entry"), "{updated:?}");
    let log = served.stderr.lock().unwrap().clone();
    assert!(
        log.contains("warm sandbox replaced: the environment's top-level entries changed"),
        "{log}"
    );
    let rebuilt_pid = *started_pids(&log).last().unwrap();

    // Deleting the environment stops its sandbox first.
    let deleted = http::json(
        url,
        &key,
        "DELETE",
        &format!("/v1/environments/{environment}"),
        &serde_json::Value::Null,
    );
    assert_eq!(deleted.status, 200, "{deleted:?}");
    wait_gone(rebuilt_pid);
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// `hookbox env list --json`'s `sandbox` member of each environment, by id.
fn listed_sandboxes(home: &std::path::Path) -> Vec<(String, serde_json::Value)> {
    let listed = super::super::hookbox_in(home, &["env", "list", "--json"], b"");
    assert_eq!(super::super::code(&listed), 0, "{listed:?}");
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|environment| {
            (
                environment["id"].as_str().unwrap().to_owned(),
                environment["sandbox"].clone(),
            )
        })
        .collect()
}

/// A home whose agent `tool` makes one `code_execution` call of `code`, then answers.
fn one_call_home(code: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("one.script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "code_execution", "args": {"code": code}}]},
            {"text": "done"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[agents.tool]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .unwrap();
    home
}

#[test]
fn env_list_shows_the_warm_sandboxes_and_sigterm_stops_them() {
    let home = one_call_home("echo ran");
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let mut pids = Vec::new();
    for _ in 0..2 {
        let created = http::json(
            &served.base_url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": "tool", "input": "run", "tools": [{"type": "code_execution"}],
                "environment": {"type": "remote", "network": "disabled", "sources": []}}),
        );
        assert_eq!(created.status, 200, "{created:?}");
        assert!(created.body.contains("ran"), "{created:?}");
    }
    let log = served.stderr.lock().unwrap().clone();
    pids.extend(started_pids(&log));
    assert_eq!(pids.len(), 2, "{log}");

    // Another process sees what the server published: warm, its supervisor, age and memory.
    let listed = listed_sandboxes(home.path());
    assert_eq!(listed.len(), 2, "{listed:?}");
    for (_, sandbox) in &listed {
        assert_eq!(sandbox["warm"], true, "{sandbox}");
        let pid = u32::try_from(sandbox["supervisor_pid"].as_u64().unwrap()).unwrap();
        assert!(pids.contains(&pid), "{sandbox} {pids:?}");
        assert!(sandbox["age_secs"].is_u64(), "{sandbox}");
        // Tests run as root, who may read the sandbox's memory. Counted whole: the
        // supervisor's parent (the sandbox's first process) is the small supervisor program,
        // no copy of serve, and its memory is in the count.
        let memory = sandbox["memory_bytes"].as_u64().unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let parent: u32 = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let exe = std::fs::read_link(format!("/proc/{parent}/exe")).unwrap();
        assert!(exe.ends_with(hookbox_exec::SUPERVISOR_PROGRAM), "{exe:?}");
        let rollup = std::fs::read_to_string(format!("/proc/{parent}/smaps_rollup")).unwrap();
        let parent_kib: u64 = rollup
            .lines()
            .find_map(|line| line.strip_prefix("Pss:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        assert!(
            memory > parent_kib * 1024,
            "{sandbox}: the parent alone has {parent_kib} KiB"
        );
    }
    let text = super::super::hookbox_in(home.path(), &["env", "list"], b"");
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.matches("sandbox warm ").count(), 2, "{text}");
    assert!(text.contains(" MiB"), "{text}");

    // `env rm` in another process cannot stop the server's sandbox: it refuses, and says
    // how to delete it; nothing is deleted.
    let (id, _) = &listed[0];
    let removed = super::super::hookbox_in(home.path(), &["env", "rm", id], b"");
    assert_eq!(super::super::code(&removed), 1, "{removed:?}");
    let said = String::from_utf8_lossy(&removed.stderr);
    assert!(
        said.contains("warm sandbox in a running `hookbox serve`")
            && said.contains(&format!("DELETE /v1/environments/{id}")),
        "{said}"
    );
    assert_eq!(listed_sandboxes(home.path()).len(), 2);

    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
    assert_eq!(log.matches("warm sandbox stopped").count(), 2, "{log}");
    for pid in pids {
        wait_gone(pid);
    }
    let listed = listed_sandboxes(home.path());
    assert!(
        listed
            .iter()
            .all(|(_, sandbox)| *sandbox == serde_json::json!({"warm": false})),
        "{listed:?}"
    );
    // With the server gone, `env rm` deletes it.
    let removed = super::super::hookbox_in(home.path(), &["env", "rm", &listed[0].0], b"");
    assert_eq!(super::super::code(&removed), 0, "{removed:?}");
    assert_eq!(listed_sandboxes(home.path()).len(), 1);
}

#[test]
fn a_warm_call_cannot_see_or_signal_a_supervisor_of_its_own_or_another_environment() {
    // Signal everything it may (`kill -1`), then look for any supervisor in its /proc, without
    // ever writing the supervisor's argument whole (its own command lines would match); the
    // concatenated marker keeps the word looked for out of the code the reply echoes.
    let code = "kill -KILL -1; kill -KILL 1 2>/dev/null; \
                p=--hookbox-sandbox; p=\"$p-supervisor\"; n=0; \
                for f in /proc/[0-9]*/cmdline; do \
                  c=$(tr '\\0' ' ' < $f 2>/dev/null); \
                  case \"$c\" in *\"$p\"*) n=$((n+1));; esac; \
                done; echo S''EEN=$n";
    let home = one_call_home(code);
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let run = |environment: serde_json::Value| {
        let created = http::json(
            &served.base_url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": "tool", "input": "attack", "tools": [{"type": "code_execution"}],
                "environment": environment}),
        );
        assert_eq!(created.status, 200, "{created:?}");
        assert!(created.body.contains("SEEN=0"), "{created:?}");
        created.json()["environment_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let fresh = json!({"type": "remote", "network": "disabled", "sources": []});
    let first = run(fresh.clone());
    let second = run(fresh);
    let log = served.stderr.lock().unwrap().clone();
    let pids = started_pids(&log);
    assert_eq!(pids.len(), 2, "{log}");
    // Both supervisors survived both attacks, and each sandbox serves its next call as is.
    for environment in [&first, &second] {
        run(json!(environment));
    }
    for pid in &pids {
        assert!(is_supervisor(*pid), "supervisor {pid} died");
    }
    let log = served.stderr.lock().unwrap().clone();
    assert_eq!(started_pids(&log), pids, "{log}");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// The networks an environment may have: its warm sandbox is one whatever it is. A new kind
/// is one line.
const NETWORKS: &[(&str, Option<&str>)] = &[
    ("none", Some(r#""disabled""#)),
    ("public (omitted)", None),
    (
        "an allowlist",
        Some(r#"{"allowlist": [{"domain": "example.com"}]}"#),
    ),
];

#[test]
fn concurrent_interactions_of_an_environment_share_one_sandbox_whatever_its_network() {
    let home = one_call_home("echo r''an");
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    for (name, network) in NETWORKS {
        let mut body = json!({"sources": []});
        if let Some(network) = network {
            body["network"] = serde_json::from_str(network).unwrap();
        }
        let created = http::json(&served.base_url, &key, "POST", "/v1/environments", &body);
        assert_eq!(created.status, 200, "{name}: {created:?}");
        let environment = json!(created.json()["id"].as_str().unwrap());
        // Concurrent first calls, then one more interaction once they are done.
        std::thread::scope(|scope| {
            for n in 0..4 {
                let (served, key, environment) = (&served, &key, &environment);
                scope.spawn(move || {
                    let reply = interaction(served, key, &format!("run {n}"), environment);
                    assert_eq!(reply.status, 200, "{name}: {reply:?}");
                    assert!(reply.body.contains("ran"), "{name}: {reply:?}");
                });
            }
        });
        let reply = interaction(&served, &key, "once more", &environment);
        assert!(reply.body.contains("ran"), "{name}: {reply:?}");
        let log = served.stderr.lock().unwrap().clone();
        let own: String = log
            .lines()
            .filter(|line| line.contains(environment.as_str().unwrap()))
            .map(|line| format!("{line}\n"))
            .collect();
        assert_eq!(started_pids(&own).len(), 1, "{name}: {log}");
    }
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// An environment with network: its calls share one warm sandbox whose listener the proxy
/// serves, each call's record holds only its own requests, and the allowlist still decides.
/// Needs root (a test network namespace) and the sandbox; skipped with a printed reason
/// otherwise.
#[test]
fn an_environment_with_network_runs_warm_through_the_proxy() {
    const TEST: &str = "serve::warm::an_environment_with_network_runs_warm_through_the_proxy";
    let Some(netns) = super::super::sandbox_and_netns(TEST) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = netns.bind_inside(80).unwrap();
    let _receiver = runtime
        .block_on(async {
            hookbox_test_support::TestHttpServer::start_on(listener, |request| {
                hookbox_test_support::Reply::text(200, &format!("served {}", request.path))
            })
        })
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let curl = |path: &str, host: &str| format!("curl -s --max-time 20 http://{host}{path}");
    let script = home.path().join("net.script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "code_execution",
                "args": {"code": curl("/one", "data.example.com")}}]},
            {"tool_calls": [{"name": "code_execution",
                "args": {"code": curl("/two", "other.example.com")}}]},
            {"tool_calls": [{"name": "code_execution",
                "args": {"code": curl("/three", "data.example.com")}}]},
            {"text": "done"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[network]\nallow_private_cidrs = [\"{}\"]\n\
             resolve = {{ \"data.example.com\" = \"{}\", \"other.example.com\" = \"{}\" }}\n\
             [agents.net]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            netns.cidr(),
            netns.inside_address(),
            netns.inside_address(),
            script.display()
        ),
    )
    .unwrap();
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    let created = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "net", "input": "fetch", "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "sources": [],
                "network": {"allowlist": [{"domain": "data.example.com"}]}}}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    assert!(
        created.body.contains("served /one") && created.body.contains("served /three"),
        "{created:?}"
    );
    assert!(!created.body.contains("served /two"), "{created:?}");
    // Three calls, one sandbox.
    let log = served.stderr.lock().unwrap().clone();
    assert_eq!(started_pids(&log).len(), 1, "{log}");
    // Each step's record holds its own request and only that.
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let traces = http::json(
        url,
        &key,
        "GET",
        &format!("/v1/interactions/{id}/hook_traces"),
        &serde_json::Value::Null,
    )
    .json();
    let network: Vec<(u64, String, bool)> = traces["hook_traces"]
        .as_array()
        .expect("hook_traces")
        .iter()
        .filter_map(|entry| {
            let decision = entry.get("network")?;
            Some((
                entry["step_index"].as_u64().expect("step_index"),
                decision["host"].as_str().expect("host").to_owned(),
                decision["allowed"].as_bool().expect("allowed"),
            ))
        })
        .collect();
    let hosts: Vec<(&str, bool)> = network
        .iter()
        .map(|(_, host, allowed)| (host.as_str(), *allowed))
        .collect();
    assert_eq!(
        hosts,
        [
            ("data.example.com", true),
            ("other.example.com", false),
            ("data.example.com", true)
        ],
        "{traces}"
    );
    let steps: Vec<u64> = network.iter().map(|(step, _, _)| *step).collect();
    assert!(steps[0] < steps[1] && steps[1] < steps[2], "{traces}");
}

/// `POST /v1/interactions` of agent `tool` (one `code_execution`) in `environment`, with
/// `input` (the same request made twice at once is one interaction).
fn interaction(
    served: &Served,
    key: &str,
    input: &str,
    environment: &serde_json::Value,
) -> http::Reply {
    http::json(
        &served.base_url,
        key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "tool", "input": input, "tools": [{"type": "code_execution"}],
            "environment": environment}),
    )
}

/// Tokio ends a blocking thread idle for 10 s; a warm sandbox started from one (a thread that
/// blocked in place to store a step becomes one) used to die with it, and its calls with it.
#[test]
fn calls_longer_than_the_runtimes_thread_keep_alive_complete_alone_and_in_a_burst() {
    let home = one_call_home("sleep 11; echo S''LEPT");
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let fresh = json!({"type": "remote", "network": "disabled", "sources": []});
    let completed = |input: &str, environment: &serde_json::Value| {
        let reply = interaction(&served, &key, input, environment);
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.json()["status"], "completed", "{reply:?}");
        assert!(reply.body.contains("SLEPT"), "{reply:?}");
        reply.json()["environment_id"].clone()
    };
    let environment = completed("alone", &fresh);
    // A burst: calls in that sandbox, and in new ones started by whichever thread runs them.
    std::thread::scope(|scope| {
        for n in 0..8 {
            let (completed, environment, fresh) = (&completed, &environment, &fresh);
            let input = format!("burst {n}");
            scope.spawn(move || completed(&input, if n % 2 == 0 { environment } else { fresh }));
        }
    });
    // One sandbox per environment served its calls.
    let log = served.stderr.lock().unwrap().clone();
    assert_eq!(started_pids(&log).len(), 5, "{log}");
    assert!(!log.contains("warm sandbox lost"), "{log}");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

#[test]
fn a_call_whose_sandbox_dies_under_it_fails_the_interaction_and_is_logged() {
    let marker = "sleep 7654397";
    let home = one_call_home(marker);
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let reply = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            interaction(
                &served,
                &key,
                "run",
                &json!({"type": "remote", "network": "disabled", "sources": []}),
            )
        });
        let log = wait_for_log(&served, "the sandbox's start", |log| {
            log.contains("warm sandbox started")
        });
        let supervisor = started_pids(&log)[0];
        let deadline = Instant::now() + Duration::from_secs(60);
        while !host_process_with(marker) {
            assert!(Instant::now() < deadline, "the call never started: {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(supervisor.try_into().unwrap()).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        running.join().unwrap()
    });
    assert_eq!(reply.status, 200, "{reply:?}");
    let interaction = reply.json();
    // Failed, never completed, though the model would have answered after the call.
    assert_eq!(interaction["status"], "failed", "{interaction}");
    assert_eq!(
        interaction["errors"][0]["code"], "sandbox_lost",
        "{interaction}"
    );
    let steps = interaction["steps"].as_array().unwrap();
    assert!(
        steps.iter().all(|step| step["type"] != "model_output"),
        "the model went on after the call: {interaction}"
    );
    let environment = interaction["environment_id"].as_str().unwrap().to_owned();
    let log = wait_for_log(&served, "the loss", |log| {
        log.lines().any(|line| {
            line.contains("WARN")
                && line.contains("warm sandbox lost during a call")
                && line.contains(&environment)
        })
    });
    assert!(!host_process_with(marker), "{log}");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// Whether a process whose command line is `command` runs on the host.
fn host_process_with(command: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
            String::from_utf8_lossy(&cmdline).replace('\0', " ").trim() == command
        })
    })
}
