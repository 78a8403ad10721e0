#!/usr/bin/env python3
"""Where the wall time of a back-to-back warm call goes, step by step, next to a bare spawn:
the medians of each step of the call's path, read from kernel trace events (`perf record` of
scheduler and system-call tracepoints, 1 s in the middle of each row of the `spawn` bench).

On a shared machine the criterion rows of the same build swing by 2x from one minute to the
next (mostly the cost of `cpuid` traps in every process start); the steps outside the
program's own run (request to `execve`, `execve`, end to the next request) move much less,
and they are what hookbox adds.

Warm row, per call: the parent's request (its wake-up of the spare) -> the spare has the
request (its last `recvmsg` returns) -> it calls `execve` -> the program runs (`sh`, from
`execve` done to `exit`) -> the parent's next request. Bare row: `fork` -> `execve` done ->
`exit` -> the next `fork`. Also: the share of spares that were still setting up when their
request came (request to `recvmsg` over 0.15 ms).

Usage (as root, from the repository's root, nothing else running):
    cargo bench -p hookbox-exec --bench spawn --no-run
    python3 crates/hookbox-exec/benches/warm_path.py [RUNS]
"""
import glob, os, re, statistics, subprocess, sys, tempfile, time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
EVENT = re.compile(r"\s*(\S+)\s+(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+(\S+):(.*)")
WOKEN = re.compile(r" pid=(\d+)")
CHILD = re.compile(r"child_pid=(\d+)")


def bench_binary():
    found = [path for path in glob.glob("target/release/deps/spawn-*") if not path.endswith(".d")]
    if not found:
        sys.exit("no spawn bench binary: run `cargo bench -p hookbox-exec --bench spawn --no-run`")
    return max(found, key=os.path.getmtime)


def trace(row, data):
    """The trace events of 1 s of `row`, each (time, comm, pid, event, rest)."""
    bench = subprocess.Popen(
        [bench_binary(), "--bench", "--profile-time", "5", f"warm sandbox/{row}$"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        events = ["sched:sched_process_exec", "sched:sched_process_exit",
                  "sched:sched_process_fork", "sched:sched_waking", "syscalls:sys_exit_recvmsg",
                  "syscalls:sys_enter_execve"]
        subprocess.run(["perf", "record", "-a", "-o", data]
                       + [arg for event in events for arg in ("-e", event)]
                       + ["--", "sleep", "1"], check=True, capture_output=True)
    finally:
        bench.wait()
    script = subprocess.run(["perf", "script", "-i", data], check=True, capture_output=True,
                            text=True).stdout
    return [(float(m[3]), m[1], m[2], m[4], m[5]) for m in map(EVENT.match, script.splitlines()) if m]


def median_ms(values):
    return statistics.median(values) * 1e3 if values else float("nan")


def warm(events):
    request, received, execve, started, ended = {}, {}, {}, {}, {}
    for ts, comm, pid, kind, rest in events:
        if kind == "sched:sched_waking" and comm.startswith("spawn"):
            request[WOKEN.search(rest)[1]] = ts
        elif kind == "syscalls:sys_exit_recvmsg" and comm.startswith("hookbox"):
            received[pid] = ts
        elif kind == "syscalls:sys_enter_execve" and comm.startswith("hookbox"):
            execve[pid] = ts
        elif kind == "sched:sched_process_exec" and "/bin/sh" in rest:
            started[pid] = ts
        elif kind == "sched:sched_process_exit" and "comm=sh" in rest:
            ended[pid] = ts
    calls = sorted((started[p], p) for p in started
                   if all(p in step for step in (request, received, execve, ended)))
    steps = {name: [] for name in ("request -> has it", "-> execve", "execve", "sh runs",
                                   "end -> next request", "per call")}
    for (start, pid), (next_start, following) in zip(calls, calls[1:]):
        steps["request -> has it"].append(received[pid] - request[pid])
        steps["-> execve"].append(execve[pid] - received[pid])
        steps["execve"].append(start - execve[pid])
        steps["sh runs"].append(ended[pid] - start)
        steps["end -> next request"].append(request[following] - ended[pid])
        steps["per call"].append(next_start - start)
    late = sum(1 for wait in steps["request -> has it"] if wait > 0.15e-3)
    return steps, late / max(1, len(steps["per call"]))


def bare(events):
    forked, started, ended = {}, {}, {}
    for ts, comm, pid, kind, rest in events:
        if kind == "sched:sched_process_fork" and comm.startswith("spawn"):
            forked[CHILD.search(rest)[1]] = ts
        elif kind == "sched:sched_process_exec" and "/bin/sh" in rest:
            started[pid] = ts
        elif kind == "sched:sched_process_exit" and "comm=sh" in rest:
            ended[pid] = ts
    calls = sorted((started[p], p) for p in started if p in forked and p in ended)
    steps = {name: [] for name in ("fork -> execve done", "sh runs", "end -> next fork", "per call")}
    for (start, pid), (next_start, following) in zip(calls, calls[1:]):
        steps["fork -> execve done"].append(start - forked[pid])
        steps["sh runs"].append(ended[pid] - start)
        steps["end -> next fork"].append(forked[following] - ended[pid])
        steps["per call"].append(next_start - start)
    return steps


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "perf.data")
    for run in range(1, RUNS + 1):
        steps = bare(trace("bare sh -c true", data))
        print(f"run {run} bare ({len(steps['per call'])} calls): "
              + ", ".join(f"{name} {median_ms(values):.3f}" for name, values in steps.items()))
        steps, late = warm(trace("warm sandbox sh -c true", data))
        print(f"run {run} warm ({len(steps['per call'])} calls): "
              + ", ".join(f"{name} {median_ms(values):.3f}" for name, values in steps.items())
              + f"; spares still setting up {late * 100:.0f}%")
