#!/usr/bin/env python3
"""Measure what idle warm environments of `hookbox serve` keep in memory, counted whole.

Not part of the default test run. Run it as root (the sandbox, its cgroups and reading other
processes' memory need it), with a built `hookbox`:

    python3 scripts/warm_memory.py --hookbox target/debug/hookbox

It starts `hookbox serve` on a fresh home (small disk images, warm sandboxes kept for an
hour), makes `--environments` environments through the REST API, each by one interaction with a
scripted agent that makes one `code_execution` call (so each has its warm sandbox), from
`--clients` concurrent clients, then, with nothing running, counts every process each warm
sandbox keeps alive: the supervisor, its parent (the sandbox's first process) and every process
below it (the spare waiting for the next call), and sums their PSS from
`/proc/<pid>/smaps_rollup`, each address space once (a spare shares the supervisor's: `kcmp`).
It prints that total next to what `hookbox env list --json` reports and serve's own PSS, and
fails (exit 1) when the total is over `--bound-mib`.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import Server  # noqa: E402

SYS_KCMP, KCMP_VM = 312, 1
libc = ctypes.CDLL(None, use_errno=True)


def pss_kib(pid):
    """The `Pss` of process `pid` in KiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def parents():
    """The parent of every process, by pid."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                found[int(name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return found


def sandbox_processes(supervisor, parent_of):
    """The supervisor's parent, the supervisor and every process below it."""
    pids = [parent_of[supervisor], supervisor]
    index = 1
    while index < len(pids):
        pids.extend(child for child, parent in parent_of.items() if parent == pids[index])
        index += 1
    return pids


def same_memory(a, b):
    return libc.syscall(SYS_KCMP, a, b, KCMP_VM, 0, 0) == 0


def footprint(supervisor, parent_of):
    """(pids, PSS in KiB of their distinct address spaces, the parent's own PSS in KiB)."""
    pids = sandbox_processes(supervisor, parent_of)
    counted, total = [], 0
    for pid in pids:
        if any(same_memory(pid, other) for other in counted):
            continue
        kib = pss_kib(pid)
        if kib is not None:
            counted.append(pid)
            total += kib
    return pids, total, pss_kib(pids[0]) or 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hookbox", required=True, help="the hookbox binary")
    parser.add_argument("--environments", type=int, default=100, help="warm environments (default 100)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--bound-mib", type=float, default=100, help="total allowed (default 100)")
    parser.add_argument("--json", help="also write the summary to this file")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the sandbox, its cgroups and reading other processes' memory need it")

    work = tempfile.mkdtemp(prefix="hookbox-warm-memory-")
    home, tmpdir = os.path.join(work, "home"), os.path.join(work, "tmp")
    os.makedirs(home)
    os.makedirs(tmpdir)
    script = {
        "turns": [
            {"tool_calls": [{"name": "code_execution", "args": {"code": "true", "language": "bash"}}]},
            {"text": "done"},
        ]
    }
    with open(os.path.join(home, "agent.json"), "w") as out:
        json.dump(script, out)
    with open(os.path.join(home, "hookbox.toml"), "w") as config:
        config.write(
            f'[agents.one]\nprovider = "scripted"\nscript = "{home}/agent.json"\n\n'
            "[sandbox]\ndisk_bytes = 16777216\nidle_timeout_secs = 3600\n"
        )
    server = Server(args.hookbox, home, tmpdir)
    created = []

    def one_environment(number):
        body = {
            "agent": "one",
            "input": f"environment {number}",
            "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "sources": []},
        }
        interaction = server.request("POST", "/v1/interactions", body)
        created.append(interaction["environment_id"])
        if interaction.get("status") != "completed":
            raise RuntimeError(f"interaction {number}: {interaction.get('status')}")

    try:
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(one_environment, range(args.environments)))
        env = dict(os.environ, HOOKBOX_HOME=home, TMPDIR=tmpdir)
        listed = json.loads(
            subprocess.run(
                [args.hookbox, "env", "list", "--json"], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        entries = listed["environments"] if isinstance(listed, dict) else listed
        warm = [entry["sandbox"] for entry in entries if entry["sandbox"]["warm"]]
        parent_of = parents()
        per_sandbox = [footprint(sandbox["supervisor_pid"], parent_of) for sandbox in warm]
        total_kib = sum(total for _, total, _ in per_sandbox)
        summary = {
            "environments": len(created),
            "warm": len(warm),
            "processes": sum(len(pids) for pids, _, _ in per_sandbox),
            "total_pss_mib": round(total_kib / 1024, 1),
            "parents_pss_mib": round(sum(parent for _, _, parent in per_sandbox) / 1024, 1),
            "env_list_mib": round(sum(s["memory_bytes"] or 0 for s in warm) / 2**20, 1),
            "serve_pss_mib": round((pss_kib(server.process.pid) or 0) / 1024, 1),
            "bound_mib": args.bound_mib,
        }
    finally:
        for chosen in created:
            server.request("DELETE", f"/v1/environments/{chosen}")
        server.stop()
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=2)
    subprocess.run(["rm", "-rf", work], check=False)
    if summary["warm"] < args.environments or summary["total_pss_mib"] > args.bound_mib:
        sys.exit(f"{summary['warm']} warm environments keep {summary['total_pss_mib']} MiB (bound {args.bound_mib})")


if __name__ == "__main__":
    main()
