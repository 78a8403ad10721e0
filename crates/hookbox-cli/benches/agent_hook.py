#!/usr/bin/env python3
"""Per-call cost of `hookbox hook AGENT` as an agent's command hook runs it (`sh -c STRING`,
the event JSON on stdin), next to the trivial native hook `cat > /dev/null; echo '{}'`, in
one interleaved run.

Usage: python3 crates/hookbox-cli/benches/agent_hook.py target/release/hookbox [ROUNDS]
"""
import json, os, statistics, subprocess, sys, tempfile, time

HOOKBOX = os.path.abspath(sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 60
SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../fixtures/seeds")
EVENT = json.dumps({
    "session_id": "g", "transcript_path": "/t", "cwd": "/tmp", "hook_event_name": "BeforeTool",
    "timestamp": "2026-12-02T00:00:00Z", "tool_name": "run_shell_command",
    "tool_input": {"command": "true 1"},
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
    # Decisions are logged in this scratch home's hookbox.db (the default), or not at all.
    os.environ["HOOKBOX_HOME"] = os.path.join(tmp, "home")
    unlogged = policy("unlogged.toml", "[policy]\nkeep_decisions = 0\n")
    hook = lambda p: "%s hook gemini-cli --policy %s" % (HOOKBOX, p)
    configs = {
        "native: cat > /dev/null; echo '{}'": "cat > /dev/null; echo '{}'",
        "hookbox hook, no handler, not logged": hook(empty) + " --config " + unlogged,
        "hookbox hook, no handler matches": hook(empty),
        "hookbox hook, that sh hook as handler": hook(trivial),
        "hookbox hook, the seeds' gate.py": hook(gate),
    }
    times = {name: [] for name in configs}
    for _ in range(ROUNDS):
        for name, command in configs.items():
            start = time.perf_counter()
            done = subprocess.run(["/bin/sh", "-c", command], input=EVENT, capture_output=True)
            times[name].append((time.perf_counter() - start) * 1000)
            assert done.returncode == 0, (name, done.stderr)
    for name, values in times.items():
        values.sort()
        print("%-40s min %6.2f  median %6.2f  p90 %6.2f ms" % (
            name, values[0], statistics.median(values), values[int(len(values) * 0.9)]))
