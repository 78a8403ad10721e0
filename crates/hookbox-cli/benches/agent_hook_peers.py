#!/usr/bin/env python3
"""Per gated call inside the real agents: Claude Code and Gemini CLI (from npm), each run
non-interactively against the peer harness's fake model server (`/work/shared/bench/peers`:
its servers, setups, `run_once`, loop span and agent-side time), 20 shell calls per run, with

  a  no hook
  b  the native trivial hook `cat > /dev/null; echo '{}'`
  w  `hookbox hook AGENT --policy P`, P a trivial allow policy (`{}`: nothing to object),
     answered by a warm daemon (started, untimed, before the run)
  c  the same, cold: the daemon stopped before the run (the first call starts it)
  n  the same with `HOOKBOX_DAEMON=off`: every call answered in-process
  t  `hookbox-hook AGENT --policy P` (the thin client installed next to HOOKBOX, which
     `hookbox install` writes), answered by the warm daemon

interleaved per round (a b w c n t of Claude Code, then of Gemini CLI). Per-call cost of a
configuration = (its loop span - the same round's (a)) / calls; the ratio to (b)'s is the
issue's target (<= 1.2x for Claude Code, w and t).

Usage: python3 agent_hook_peers.py HOOKBOX CLAUDE GEMINI [RUNS] [PEERS_DIR]
"""
import json, os, shutil, signal, statistics, subprocess, sys, tempfile

HOOKBOX, CLAUDE, GEMINI = (os.path.abspath(p) for p in sys.argv[1:4])
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
sys.path.insert(0, sys.argv[5] if len(sys.argv) > 5 else "/work/shared/bench/peers")
import bench  # noqa: E402  (the peer harness)

CALLS, TIMEOUT, WARMUP = 20, 300, 1
root = tempfile.mkdtemp(prefix="agent-hook-peers-")
home = os.path.join(root, "hookbox-home")
policy = os.path.join(root, "allow.json")
with open(policy, "w") as f:
    json.dump({}, f)


def daemon(command):
    subprocess.run([HOOKBOX, "daemon", command], env=dict(os.environ, HOOKBOX_HOME=home),
                   check=True, capture_output=True)


def hook(agent, on, program="hookbox hook"):
    binary = os.path.join(os.path.dirname(HOOKBOX), program.split()[0])
    return "HOOKBOX_HOME=%s HOOKBOX_DAEMON=%s %s %s --policy %s" % (
        home, "on" if on else "off", " ".join([binary] + program.split()[1:]), agent, policy)


peers = []
try:
    for peer, binp, agent in [(bench.Claude(), CLAUDE, "claude-code"),
                              (bench.Gemini(), GEMINI, "gemini-cli")]:
        x = {"peer": peer, "bin": binp, "root": os.path.join(root, peer.name)}
        os.makedirs(x["root"])
        x["log"] = os.path.join(x["root"], "server.log")
        x["srv"], x["port"] = bench.start_server(peer, CALLS, x["log"])
        peers.append(x)
        x["version"] = peer.version(binp)
        bench.verify(peer, binp, x["root"], x["port"], CALLS, TIMEOUT)
        configs = {"a": None, "b": bench.HOOK_B, "w": hook(agent, True), "c": hook(agent, True),
                   "n": hook(agent, False), "t": hook(agent, True, "hookbox-hook")}
        x["setups"] = {k: peer.setup(os.path.join(x["root"], k), x["port"], h)
                       for k, h in configs.items()}
        x["loop"] = {k: [] for k in configs}
        x["agent"] = {k: [] for k in configs}
    loads = [os.getloadavg()]
    for i in range(WARMUP + RUNS):
        for x in peers:
            for k, (env, cwd) in x["setups"].items():
                if k in ("w", "t"):
                    daemon("start")
                elif k == "c":
                    daemon("stop")
                off = bench.log_size(x["log"])
                dt, ok, r, _ = bench.run_once(x["peer"], x["bin"], CALLS, env, cwd, TIMEOUT)
                if not ok:
                    raise SystemExit("run failed: %s %s\n%s\n%s" % (
                        x["peer"].name, k, r.stdout[-2000:], r.stderr[-2000:]))
                span = bench.loop_span(x["log"], off, CALLS)
                side = bench.agent_time(x["log"], off, CALLS)
                print("%s %s %s loop %.3fs agent/call %s" % (
                    "warmup" if i < WARMUP else "run%d" % (i - WARMUP + 1), x["peer"].name, k,
                    span, "%.2fms" % (side * 1e3) if side is not None else "-"), flush=True)
                if i >= WARMUP:
                    x["loop"][k].append(span)
                    x["agent"][k].append(side)
        loads.append(os.getloadavg())
    daemon("stop")
    print("load average (1, 5, 15 min) per round:", " ".join("%.1f/%.1f/%.1f" % l for l in loads))
    for x in peers:
        print("%s %s, %d runs of %d calls; per-call cost over (a), paired per round:" % (
            x["peer"].name, x["version"], RUNS, CALLS))
        per_call = {k: [(v - a) / CALLS * 1e3 for v, a in zip(vs, x["loop"]["a"])]
                    for k, vs in x["loop"].items() if k != "a"}
        native = statistics.median(per_call["b"])
        for k, vs in per_call.items():
            med = statistics.median(vs)
            sides = [s * 1e3 for s in x["agent"][k] if s is not None]
            print("  %s loop-span cost/call min %6.2f median %6.2f max %6.2f ms (%.2fx b); "
                  "agent side/call median %.2f ms" % (k, min(vs), med, max(vs), med / native,
                                                     statistics.median(sides) if sides else -1))
finally:
    for x in peers:
        x["srv"].send_signal(signal.SIGTERM)
        x["srv"].wait()
    shutil.rmtree(root, ignore_errors=True)
