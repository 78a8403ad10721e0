//! `kill -9` of `hookbox serve` while a background interaction is in a hook, then a restart on
//! the same home: nothing of the dead server survives and the store says what happened.
//!
//! Serve runs only sandboxed hooks (an environment's hooks run in its sandbox), so the hook that
//! `setsid`s a grandchild runs there too; the host-side keeper is covered by hookbox-exec's and
//! hookbox-hooks' own tests.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http;
use super::{Served, api_key, serve};

/// Rounds of start, kill and restart on one home.
const ROUNDS: usize = 5;

/// What the test needs to check about a server it killed.
struct Killed {
    pid: u32,
    start: u64,
    interaction: String,
}

#[test]
fn a_killed_server_leaves_nothing_running_and_its_restart_recovers_the_store() {
    if !hookbox_test_support::require_root(
        "a_killed_server_leaves_nothing_running_and_its_restart_recovers_the_store",
    ) {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_agents(home);
    let key = api_key(home, "crash");
    let tag = std::process::id().to_string();
    let markers = [format!("sleep 1000.{tag}"), format!("sleep 30.{tag}")];
    // Every round runs in the environment the first one creates.
    let mut environment = environment(&tag);
    let mut killed: Option<Killed> = None;
    for round in 0..ROUNDS {
        let served = serve(home, &[]);
        let pid = served.child.id();
        let created = http::json(
            &served.base_url,
            &key,
            "POST",
            "/v1/interactions",
            // A distinct body: the same one within a minute is a retry of the last round's.
            &json!({"agent": "slow", "input": format!("round {round}"), "background": true,
                "tools": [{"type": "code_execution"}], "environment": environment}),
        );
        assert_eq!(created.status, 200, "{created:?}");
        let created = created.json();
        environment = created["environment_id"].clone();
        let path = format!("/v1/interactions/{}", created["id"].as_str().expect("id"));
        // The `sleep` processes themselves (the gate's own `sh -c` line, which runs for every
        // call, names them too).
        wait_until("the second call's hook", || {
            let tree = descendants(pid);
            markers
                .iter()
                .all(|marker| tree.keys().any(|&child| cmdline(child).starts_with(marker)))
        });
        // The model made the second call, so it saw the first call's result: that result,
        // and the trace of the hook that allowed it, are in the store already.
        let shown = http::json(&served.base_url, &key, "GET", &path, &Value::Null);
        assert!(shown.body.contains("onedone"), "{shown:?}");
        let traces = http::json(
            &served.base_url,
            &key,
            "GET",
            &format!("{path}/hook_traces"),
            &Value::Null,
        )
        .json();
        let entries = traces["hook_traces"].as_array().expect("hook_traces");
        assert!(
            entries
                .iter()
                .any(|entry| entry["tool"] == "code_execution"),
            "the first call's hook trace: {traces}"
        );
        assert!(
            !cgroups_named(&format!("hookbox-{pid}-")).is_empty(),
            "the running hook's cgroups are where the test looks for leftovers"
        );
        // The first call's hook ran in this server, so it swept what the last one left.
        if let Some(dead) = killed.take() {
            assert_recovered(home, &served.base_url, &key, &dead, pid);
        }
        let interaction = created["id"].as_str().expect("id").to_owned();
        killed = Some(kill_outright(served, interaction, &markers));
    }
    let served = serve(home, &[]);
    let url = &served.base_url;
    let quick = http::json(
        url,
        &key,
        "POST",
        "/v1/interactions",
        &json!({"agent": "quick", "input": "go", "tools": [{"type": "code_execution"}],
            "environment": environment}),
    );
    assert_eq!(quick.json()["status"], "completed", "{quick:?}");
    let dead = killed.expect("a killed server");
    assert_recovered(home, url, &key, &dead, served.child.id());
    let path = format!("/v1/environments/{}", environment.as_str().expect("id"));
    let deleted = http::json(url, &key, "DELETE", &path, &Value::Null);
    assert_eq!(deleted.status, 200, "{deleted:?}");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// Agents `slow` (three calls; the hook of the second one hangs) and `quick` (one call).
fn write_agents(home: &Path) {
    let call = |code: &str| {
        json!({"tool_calls": [{"name": "code_execution",
        "args": {"code": code, "language": "bash"}}]})
    };
    let slow = json!({"turns": [call("printf 'one%s' done"), call("echo slowcall"),
        call("echo third"), {"text": "done"}]});
    let quick = json!({"turns": [call("echo quick"), {"text": "done"}]});
    for (name, script) in [("slow", slow), ("quick", quick)] {
        std::fs::write(home.join(format!("{name}.json")), script.to_string()).unwrap();
    }
    std::fs::write(
        home.join("hookbox.toml"),
        format!(
            "[agents.slow]\nprovider = \"scripted\"\nscript = \"{0}/slow.json\"\n\n\
             [agents.quick]\nprovider = \"scripted\"\nscript = \"{0}/quick.json\"\n",
            home.display()
        ),
    )
    .unwrap();
}

/// An environment whose gate allows every call at once, except one whose input says
/// `slowcall`: there it leaves a `setsid` grandchild (`sleep 1000.TAG`) and sleeps (`sleep
/// 30.TAG`), well within its timeout; `TAG` tells this test's processes from others.
fn environment(tag: &str) -> Value {
    let gate = format!(
        "grep -q slowcall || {{ echo '{{\"decision\":\"allow\"}}'; exit 0; }}; \
         setsid sleep 1000.{tag} </dev/null >/dev/null 2>&1 & sleep 30.{tag}; \
         echo '{{\"decision\":\"allow\"}}'"
    );
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": gate, "timeout": 120}]}]}});
    json!({"type": "remote", "sources": [
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}]})
}

/// Kills `served` with SIGKILL and waits until every process it had (its descendants at the
/// kill, and anything showing one of `markers`) is gone.
fn kill_outright(mut served: Served, interaction: String, markers: &[String]) -> Killed {
    let pid = served.child.id();
    let start = start_time(pid).expect("serve's start time");
    let tree = descendants(pid);
    assert!(!tree.is_empty(), "the hook's processes were not seen");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&served.child),
        rustix::process::Signal::KILL,
    )
    .expect("SIGKILL");
    served.child.wait().expect("reap serve");
    wait_until("every process of the killed server to die", || {
        let left: Vec<u32> = tree
            .iter()
            .filter(|&(&child, &started)| start_time(child) == Some(started))
            .map(|(&child, _)| child)
            .collect();
        let marked = all_pids()
            .into_iter()
            .any(|other| markers.iter().any(|marker| cmdline(other).contains(marker)));
        left.is_empty() && !marked
    });
    Killed {
        pid,
        start,
        interaction,
    }
}

/// What a restart on `home` (server `pid`, at `base_url`) must have made of `dead`.
fn assert_recovered(home: &Path, base_url: &str, key: &str, dead: &Killed, pid: u32) {
    let path = format!("/v1/interactions/{}", dead.interaction);
    let interaction = http::json(base_url, key, "GET", &path, &Value::Null).json();
    assert_eq!(interaction["status"], "failed", "{interaction}");
    assert_eq!(
        interaction["errors"][0]["code"], "hookbox_restarted",
        "{interaction}"
    );
    assert!(
        interaction["steps"].to_string().contains("onedone"),
        "the first call's result is kept: {interaction}"
    );
    let traces = http::json(
        base_url,
        key,
        "GET",
        &format!("{path}/hook_traces"),
        &Value::Null,
    );
    let traces = traces.json();
    let entries = traces["hook_traces"].as_array().expect("hook_traces");
    assert!(
        !entries.is_empty()
            && entries
                .iter()
                .all(|entry| entry["tool"] == "code_execution"),
        "the first call's hook trace is kept: {traces}"
    );

    let own = format!("{pid}-{}", start_time(pid).expect("start time"));
    let run: Vec<String> = std::fs::read_dir(home.join("run"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(run, [own], "<home>/run holds only the running server's");

    let prefix = format!("hookbox-{}-", dead.pid);
    let stale = cgroups_named(&prefix);
    assert!(stale.is_empty(), "cgroups of the killed server: {stale:?}");
    assert_disks_mounted_once(home);

    let db = rusqlite::Connection::open(home.join("hookbox.db")).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert_ne!(
        start_time(dead.pid),
        Some(dead.start),
        "the killed server is alive"
    );
}

/// Directories under /sys/fs/cgroup whose name starts with `prefix`.
fn cgroups_named(prefix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with(prefix) {
                found.push(entry.path());
            } else if depth < 8 {
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// The host's mounts of this home's disk images: each image mounted once, none of a removed
/// image, and nothing mounted inside the home.
fn assert_disks_mounted_once(home: &Path) {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut images = HashSet::new();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let mount_point = fields[4];
        assert!(
            !mount_point.starts_with(&*home.to_string_lossy()),
            "mounted inside the home: {line}"
        );
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split(' ').nth(1));
        let Some(loop_device) = source.and_then(|source| source.strip_prefix("/dev/")) else {
            continue;
        };
        let backing =
            std::fs::read_to_string(format!("/sys/block/{loop_device}/loop/backing_file"))
                .unwrap_or_default();
        let backing = backing.trim_end();
        if backing.starts_with(&*home.to_string_lossy()) {
            assert!(!backing.ends_with("(deleted)"), "{line}");
            assert!(images.insert(backing.to_owned()), "mounted twice: {line}");
        }
    }
}

/// Polls `done` until it holds, failing after a generous bound.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process id in /proc.
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The fields of /proc/PID/stat after the command name (field 3 onwards).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The start time of `pid` (clock ticks since boot), if it is alive.
fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// The command line of `pid`, arguments joined by spaces (empty once it is gone).
fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}

/// The descendants of `root` with their start times.
fn descendants(root: u32) -> HashMap<u32, u64> {
    let mut children: HashMap<u32, Vec<(u32, u64)>> = HashMap::new();
    for pid in all_pids() {
        let Some(fields) = stat_fields(pid) else {
            continue;
        };
        let (Some(parent), Some(start)) = (
            fields.get(1).and_then(|field| field.parse().ok()),
            fields.get(19).and_then(|field| field.parse().ok()),
        ) else {
            continue;
        };
        children.entry(parent).or_default().push((pid, start));
    }
    let mut found = HashMap::new();
    let mut pending = vec![root];
    while let Some(parent) = pending.pop() {
        for &(child, start) in children.get(&parent).into_iter().flatten() {
            if found.insert(child, start).is_none() {
                pending.push(child);
            }
        }
    }
    found
}
