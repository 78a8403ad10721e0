#!/usr/bin/env python3
"""Per-call cost of `hookbox hook AGENT` as an agent's command hook runs it (`sh -c STRING`,
the event JSON on stdin), next to the trivial native hook `cat > /dev/null; echo '{}'`, in
one interleaved run: answered by a warm daemon, by no daemon (`HOOKBOX_DAEMON=off`: the
in-process path on every call), and cold (the daemon stopped before each such call, untimed:
the call starts one and answers itself; in a home of its own, so the warm daemon keeps its
warm interpreters). The same through the thin client `hookbox-hook AGENT` next to the binary
(what `hookbox install` writes), warm and cold.

Usage: python3 crates/hookbox-cli/benches/agent_hook.py target/release/hookbox [ROUNDS]
"""
import json, os, statistics, subprocess, sys, tempfile, time

HOOKBOX = os.path.abspath(sys.argv[1])
THIN = os.path.join(os.path.dirname(HOOKBOX), "hookbox-hook")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 60
SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../fixtures/seeds")
GEMINI = json.dumps({
    "session_id": "g", "transcript_path": "/t", "cwd": "/tmp", "hook_event_name": "BeforeTool",
    "timestamp": "2026-12-02T00:00:00Z", "tool_name": "run_shell_command",
    "tool_input": {"command": "true 1"},
}).encode()
CLAUDE = json.dumps({
    "session_id": "c", "transcript_path": "/t", "cwd": "/tmp", "permission_mode": "default",
    "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "true 1"},
    "tool_use_id": "toolu_1",
}).encode()

with tempfile.TemporaryDirectory() as tmp:
    def policy(name, value):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(value if isinstance(value, str) else json.dumps(value))
        return path
    empty = policy("empty.json", {})
    trivial = policy("trivial.json", {"trivial": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": "cat > /dev/null; echo '{}'"}]}]}})
    with open(os.path.join(SEEDS, "security-gate.hooks.json")) as f:
        gate = policy("gate.json", f.read().replace("/.agents/hooks-scripts/", SEEDS + "/"))
    # Decisions are logged in this scratch home's journal (the default).
    home = os.path.join(tmp, "home")
    os.environ["HOOKBOX_HOME"] = home
    # The cold calls have a home of their own: stopping their daemon leaves the warm one (and
    # its warm interpreters) running, as a user's daemon keeps running between calls.
    cold_home = os.path.join(tmp, "cold-home")
    def daemon(command, home=home):
        subprocess.run([HOOKBOX, "daemon", command], check=True, capture_output=True,
                       env=dict(os.environ, HOOKBOX_HOME=home))
    hook = lambda agent, p, mode: "%sHOOKBOX_DAEMON=%s %s %s --policy %s" % (
        "HOOKBOX_HOME=%s " % cold_home if mode.endswith("cold") else "",
        "off" if mode == "off" else "on",
        THIN if mode.startswith("thin") else HOOKBOX + " hook", agent, p)
    # name: (hook string, stdin, daemon before the call: "warm" started, "cold" stopped)
    configs = {"native: cat > /dev/null; echo '{}'": ("cat > /dev/null; echo '{}'", CLAUDE, None)}
    for agent, event, cases in [
        ("claude-code", CLAUDE, [("no handler matches", empty)]),
        ("gemini-cli", GEMINI, [("no handler matches", empty), ("that sh hook as handler", trivial),
                                ("the seeds' gate.py", gate)]),
    ]:
        for case, p in cases:
            modes = ["warm", "thin-warm", "off"] + (
                ["cold", "thin-cold"] if agent == "claude-code" else [])
            for mode in modes:
                label = {"warm": "daemon warm", "off": "no daemon", "cold": "cold (no daemon yet)",
                         "thin-warm": "hookbox-hook, daemon warm",
                         "thin-cold": "hookbox-hook, cold (no daemon yet)"}[mode]
                configs["%s, %s, %s" % (agent, case, label)] = (
                    hook(agent, p, mode), event, mode.replace("thin-", ""))
    times = {name: [] for name in configs}
    daemon("start")
    for _ in range(ROUNDS):
        for name, (command, event, mode) in configs.items():
            if mode == "warm":
                daemon("start")
            elif mode == "cold":
                daemon("stop", cold_home)
            start = time.perf_counter()
            done = subprocess.run(["/bin/sh", "-c", command], input=event, capture_output=True)
            times[name].append((time.perf_counter() - start) * 1000)
            assert done.returncode == 0, (name, done.stderr)
            assert b"without the daemon" not in done.stderr, (name, done.stderr)
    daemon("stop")
    daemon("stop", cold_home)
    print("load average after the run: %.2f %.2f %.2f" % os.getloadavg())
    native = statistics.median(times["native: cat > /dev/null; echo '{}'"])
    for name, values in times.items():
        values.sort()
        median = statistics.median(values)
        print("%-72s min %6.2f  median %6.2f (%4.2fx)  p90 %6.2f ms" % (
            name, values[0], median, median / native, values[int(len(values) * 0.9)]))
