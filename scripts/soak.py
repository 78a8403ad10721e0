#!/usr/bin/env python3
"""Soak `hookbox serve`: thousands of tool calls with misbehaving hooks from concurrent clients.

Not part of the default test run (it takes minutes). Run it as root (the sandbox and its cgroups
need root), with a built `hookbox`:

    python3 scripts/soak.py --hookbox target/debug/hookbox

It starts `hookbox serve` on a fresh home with a scripted agent whose every interaction makes
eight `code_execution` calls, one per hook behaviour, under an environment whose
`pre_tool_execution` gate misbehaves according to the call:

    crash    the hook dies of SIGSEGV (a real fault)       -> fails open: allowed, traced `signaled`
    hang     sleeps past its 1 s timeout                  -> fails open: allowed, traced `timeout`
    late     answers deny, then sleeps past its timeout   -> denied (a completed deny), traced
                                                             `timeout`
    setsid   leaves a `setsid` grandchild holding stdout   -> denies at once (the reply is read
             and answers deny                                when the hook exits)
    flood    prints 5 MB                                   -> fails closed: denied, `output_truncated`
    garbage  prints text that is not JSON                  -> fails open: allowed, traced `not_json`
    deny     answers {"decision": "deny"}                  -> denied
    allow    answers {"decision": "allow"}                 -> allowed

Every call the gate lets run also pollutes its warm sandbox before it answers: a SysV shared
memory segment of 64 MiB left attached and filled, a file in `/dev/shm`, a `setsid` background
process, a lowered `ulimit -n` and `umask`; so the gated calls after it (and their gates, which
run in the same warm sandbox) show that a call starts clean: with residue shared, a later gate
short of its memory would fail open and a denied call would run.

Clients (`--clients`, 4 to 8) each work in their own environment. The calls run in rounds of
about `--sample-every` calls; between rounds, with nothing running, it records serve's RSS, open
fds and threads, the processes left (serve's descendants and any grandchild the hooks started),
hookbox's cgroups, the host's mounts, and the files in serve's `$TMPDIR` and `<home>/run`.

It fails (exit 1) when any call's outcome (ran or blocked, and the failure kind in its hook
trace) differs from the table above, or when a measure grows past its bound over the first
round's: RSS by `--rss-bound-mb`, fds by 8, threads by 32 (idle blocking threads come and go),
cgroups by 4 (a per-process pool); leftover processes, mounts and temp files not at all.
Prints one line per round and a JSON summary (`--json FILE` writes it too).
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

# Behaviour -> (hook command branch, whether the call runs, failure kind in the trace or None).
CASES = {
    # The hook is pid 1 of its pid namespace, which ignores signals it sends itself: a real fault.
    "crash": ("exec python3 -c 'import ctypes; ctypes.string_at(0)'", True, "signaled"),
    "hang": ("sleep 5", True, "timeout"),
    "late": ("echo '{{\"decision\":\"deny\",\"reason\":\"late\"}}'; sleep 5", False, "timeout"),
    "setsid": (
        "setsid sleep 100.{tag} & echo '{{\"decision\":\"deny\",\"reason\":\"setsid\"}}'",
        False,
        None,
    ),
    "flood": ("head -c 5000000 /dev/zero | tr '\\0' a", False, "output_truncated"),
    "garbage": ("echo 'this is not json'", True, "not_json"),
    "deny": ("echo '{{\"decision\":\"deny\",\"reason\":\"soak deny\"}}'", False, None),
    "allow": ("echo '{{\"decision\":\"allow\"}}'", True, None),
}

# Growth allowed over the first round's measure.
BOUNDS = {"fds": 8, "threads": 32, "cgroups": 4, "processes": 0, "mounts": 0, "temp_files": 0}


def gate(tag):
    """The hook command: reads the call's input and behaves as its `soak-case-NAME` says."""
    branches = " ".join(
        f"*soak-case-{name}*) {command.format(tag=tag)} ;;" for name, (command, _, _) in CASES.items()
    )
    return f'input=$(cat); case "$input" in {branches} esac'


def environment(tag):
    """The environment object every client's first interaction creates."""
    hooks = {
        "soak": {
            "pre_tool_execution": [
                {
                    "matcher": "code_execution",
                    "hooks": [{"type": "command", "command": gate(tag), "timeout": 1}],
                }
            ]
        }
    }
    return {
        "type": "remote",
        "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": json.dumps(hooks)}],
    }


# What a call that runs leaves behind in its warm sandbox (see the module's doc).
POLLUTE = (
    "python3 -c 'import ctypes as c; l = c.CDLL(None); l.shmat.restype = c.c_void_p; "
    "i = l.shmget(0, 64 << 20, 0o1600); a = l.shmat(i, None, 0); c.memset(a, 1, 64 << 20)' "
    "2>/dev/null; head -c 1048576 /dev/zero > /dev/shm/residue-$$ 2>/dev/null; "
    "(setsid sleep 30 &); ulimit -n 64; umask 077"
)


def agent_script():
    """One call per case, in order, then a text turn."""
    turns = [
        {
            "tool_calls": [
                {
                    "name": "code_execution",
                    "args": {
                        "code": f"echo soak-case-{name}; {POLLUTE}; echo ran-$((6*7))",
                        "language": "bash",
                    },
                }
            ]
        }
        for name in CASES
    ]
    return {"turns": turns + [{"text": "done"}]}


class Server:
    """A `hookbox serve` on a fresh home, its log in the home."""

    def __init__(self, hookbox, home, tmpdir):
        self.home = home
        env = dict(os.environ, HOOKBOX_HOME=home, TMPDIR=tmpdir)
        key = subprocess.run(
            [hookbox, "api-keys", "create", "soak"], env=env, check=True, capture_output=True, text=True
        )
        self.key = key.stdout.strip().splitlines()[-1]
        self.log_path = os.path.join(home, "serve.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [hookbox, "serve", "--listen", "127.0.0.1:0"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.address = self._wait_for_address()

    def _wait_for_address(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(self.log_path) as log:
                match = re.search(r"hookbox serving on http://(\S+)", log.read())
            if match:
                return match.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        sys.exit(f"hookbox serve did not start; its log:\n{open(self.log_path).read()}")

    def request(self, method, path, body=None):
        host, port = self.address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=600)
        try:
            payload = None if body is None else json.dumps(body)
            headers = {"x-goog-api-key": self.key, "content-type": "application/json"}
            connection.request(method, path, body=payload, headers=headers)
            reply = connection.getresponse()
            text = reply.read().decode()
            if reply.status != 200:
                raise RuntimeError(f"{method} {path}: {reply.status} {text[:500]}")
            return json.loads(text)
        finally:
            connection.close()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)
        self.log.close()


def check_interaction(server, interaction):
    """Every way the interaction's calls went against the table; returns the mismatches."""
    problems = []
    steps = interaction.get("steps", [])
    results = {s["call_id"]: s for s in steps if s.get("type") == "code_execution_result"}
    calls = [s for s in steps if s.get("type") == "code_execution_call"]
    if interaction.get("status") != "completed" or len(calls) != len(CASES):
        return [f"{interaction.get('id')}: status {interaction.get('status')}, {len(calls)} calls"]
    traces = server.request("GET", f"/v1/interactions/{interaction['id']}/hook_traces")
    entries = [e for e in traces.get("hook_traces", []) if "tool" in e]
    if len(entries) != len(CASES):
        problems.append(f"{interaction['id']}: {len(entries)} hook traces for {len(CASES)} calls")
    for index, (call, (name, (_, runs, failure))) in enumerate(zip(calls, CASES.items())):
        result = results.get(call["id"], {})
        ran = "ran-42" in str(result.get("result")) and not result.get("is_error")
        if ran != runs:
            problems.append(f"{interaction['id']} {name}: ran={ran}, expected {runs}: {result}")
        if index < len(entries):
            kind = (entries[index].get("failure") or {}).get("kind")
            if kind != failure:
                problems.append(f"{interaction['id']} {name}: trace failure {kind}, expected {failure}")
    return problems


def descendants(root):
    """Pids of every descendant of `root`."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def marked_processes(marker):
    """Pids whose command line contains `marker`."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def cgroups_of(pid):
    """Directories under /sys/fs/cgroup named `hookbox-PID-*`."""
    prefix, count = f"hookbox-{pid}-", 0
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        count += sum(1 for d in dirs if d.startswith(prefix))
        dirs[:] = [d for d in dirs if not d.startswith(prefix)]
    return count


def mounts_of(work):
    """The host's mounts inside `work` or of a disk image stored there."""
    count = 0
    for line in open("/proc/self/mountinfo").read().splitlines():
        fields = line.split(" ")
        source = line.split(" - ", 1)[1].split(" ")[1]
        backing = ""
        if source.startswith("/dev/loop"):
            try:
                backing = open(f"/sys/block/{source[5:]}/loop/backing_file").read()
            except OSError:
                pass
        if fields[4].startswith(work) or backing.startswith(work):
            count += 1
    return count


def measure(server, work, tmpdir, tag):
    """Serve's footprint now."""
    pid = server.process.pid
    status = dict(
        line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line
    )
    run = os.path.join(server.home, "run")
    run_files = sum(len(files) for _, _, files in os.walk(run))
    return {
        "rss_kb": int(status["VmRSS"].split()[0]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(status["Threads"]),
        "processes": len(descendants(pid)) + len(marked_processes(f"100.{tag}")),
        "cgroups": cgroups_of(pid),
        "mounts": mounts_of(work),
        "temp_files": len(os.listdir(tmpdir)) + run_files,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hookbox", required=True, help="the hookbox binary")
    parser.add_argument("--calls", type=int, default=2000, help="tool calls at least (default 2000)")
    parser.add_argument("--clients", type=int, default=6, help="concurrent clients, 4 to 8 (default 6)")
    parser.add_argument("--sample-every", type=int, default=250, help="calls per round (default 250)")
    parser.add_argument("--rss-bound-mb", type=int, default=16, help="RSS growth allowed (default 16)")
    parser.add_argument("--json", help="also write the summary to this file")
    args = parser.parse_args()
    if not 4 <= args.clients <= 8:
        parser.error("--clients must be 4 to 8")
    if os.geteuid() != 0:
        sys.exit("run as root: the sandbox and its cgroups need it")

    work = tempfile.mkdtemp(prefix="hookbox-soak-")
    home, tmpdir = os.path.join(work, "home"), os.path.join(work, "tmp")
    os.makedirs(home)
    os.makedirs(tmpdir)
    tag = str(os.getpid())
    with open(os.path.join(home, "soak.json"), "w") as script:
        json.dump(agent_script(), script)
    with open(os.path.join(home, "hookbox.toml"), "w") as config:
        config.write(f'[agents.soak]\nprovider = "scripted"\nscript = "{home}/soak.json"\n')
    server = Server(args.hookbox, home, tmpdir)
    environments = [environment(tag)] * args.clients
    lock = threading.Lock()
    problems, rounds, counter = [], [], [0]

    def one_interaction(client):
        with lock:
            counter[0] += 1
            number = counter[0]
        body = {
            "agent": "soak",
            "input": f"soak interaction {number}",
            "tools": [{"type": "code_execution"}],
            "environment": environments[client],
        }
        interaction = server.request("POST", "/v1/interactions", body)
        environments[client] = interaction.get("environment_id", environments[client])
        found = check_interaction(server, interaction)
        with lock:
            problems.extend(found)

    per_round = max(args.clients, -(-args.sample_every // len(CASES)))
    started = time.monotonic()
    calls = 0
    try:
        # Each client's first interaction creates its environment; later ones reuse it.
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(one_interaction, range(args.clients)))
        calls += args.clients * len(CASES)
        while calls < args.calls:
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(one_interaction, [i % args.clients for i in range(per_round)]))
            calls += per_round * len(CASES)
            sample = {"calls": calls, "seconds": round(time.monotonic() - started, 1)}
            sample.update(measure(server, work, tmpdir, tag))
            rounds.append(sample)
            print(json.dumps(sample), flush=True)
    finally:
        # Deleting the environments unmounts their disks before the home goes.
        for chosen in set(e for e in environments if isinstance(e, str)):
            server.request("DELETE", f"/v1/environments/{chosen}")
        server.stop()

    with open(server.log_path) as log:
        problems.extend(f"serve log: {line.strip()}" for line in log if "panicked" in line)
    first = rounds[0]
    growth = {"rss_kb": args.rss_bound_mb * 1024, **BOUNDS}
    exceeded = [
        f"{name} grew from {first[name]} to {sample[name]} at {sample['calls']} calls (bound +{bound})"
        for sample in rounds
        for name, bound in growth.items()
        if sample[name] > first[name] + bound
    ]
    summary = {
        "calls": calls,
        "clients": args.clients,
        "seconds": round(time.monotonic() - started, 1),
        "rounds": rounds,
        "bounds": growth,
        "wrong_outcomes": problems,
        "exceeded": exceeded,
    }
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=2)
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=2))
    if problems or exceeded:
        sys.exit(f"soak failed; serve's home and log are kept in {work}")
    subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
