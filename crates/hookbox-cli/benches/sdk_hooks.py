"""What a PreToolUse hook adds to each tool call when the Python agent SDK drives hookbox.

A whole-process comparison, everything measured in the same run: cortex-code-agent-sdk's
`query()` starts `hookbox` (SDK mode) with a scripted model that makes CALLS `Glob` calls, and
each query is timed from the call to its `ResultMessage`, in three configurations:

* baseline: no hooks;
* callback: a Python `PreToolUse` callback (`HookMatcher(matcher="Glob")`, returns `{}`),
  so each call makes one `hook_callback` round trip over the stream-json protocol;
* command: the same logic as a Claude-style command hook (`python3 hook.py` in
  `.claude/settings.json`), which hookbox runs as a process per call.

Per-call overhead = (median of a configuration - median of the baseline) / CALLS. Rounds
interleave the configurations so drift hits them alike.

Usage: python crates/hookbox-cli/benches/sdk_hooks.py HOOKBOX_BINARY [CALLS] [ROUNDS]
(`cargo build --release -p hookbox-cli` first; any Python with cortex-code-agent-sdk).
"""

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cortex_code_agent_sdk import CortexCodeAgentOptions, HookMatcher, ResultMessage, query

HOOKBOX = os.path.abspath(sys.argv[1])
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 7


async def noop(input, tool_use_id, context):
    return {}


async def timed(options):
    start = time.perf_counter()
    result = None
    async for message in query(prompt="find the text files", options=options):
        if isinstance(message, ResultMessage):
            result = message
    elapsed = time.perf_counter() - start
    if result is None or result.is_error or result.num_turns != CALLS + 1:
        raise SystemExit(f"the query did not run as scripted: {result}")
    return elapsed


def project(root, name, settings=None):
    cwd = root / name
    cwd.mkdir()
    (cwd / "a.txt").write_text("a")
    if settings is not None:
        (cwd / ".claude").mkdir()
        (cwd / ".claude" / "settings.json").write_text(json.dumps(settings))
    return str(cwd)


async def main():
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        turns = [{"tool_calls": [{"name": "Glob", "args": {"pattern": "*.txt"}}]}] * CALLS
        turns.append({"text": "done"})
        (root / "script.json").write_text(json.dumps({"turns": turns}))
        home = root / "home"
        home.mkdir()
        (home / "hookbox.toml").write_text(
            f'[agents."bench"]\nprovider = "scripted"\nmodel = "bench"\nscript = "{root / "script.json"}"\n'
        )
        hook = root / "hook.py"
        hook.write_text("import json, sys\nevent = json.load(sys.stdin)\nprint(json.dumps({}))\n")
        env = {"HOOKBOX_HOME": str(home), "HOME": str(home)}
        common = dict(cli_path=HOOKBOX, model="bench", allowed_tools=["Glob"], env=env)
        configs = {
            "baseline": CortexCodeAgentOptions(cwd=project(root, "baseline"), **common),
            "callback": CortexCodeAgentOptions(
                cwd=project(root, "callback"),
                hooks={"PreToolUse": [HookMatcher(matcher="Glob", hooks=[noop])]},
                **common,
            ),
            "command": CortexCodeAgentOptions(
                cwd=project(
                    root,
                    "command",
                    {"hooks": {"PreToolUse": [{"matcher": "Glob", "hooks": [
                        {"type": "command", "command": f"python3 {hook}"}]}]}},
                ),
                **common,
            ),
        }
        times = {name: [] for name in configs}
        await timed(configs["baseline"])  # warm-up
        for _ in range(ROUNDS):
            for name, options in configs.items():
                times[name].append(await timed(options))
        base = statistics.median(times["baseline"])
        print(f"{CALLS} Glob calls per query, {ROUNDS} rounds, medians:")
        for name, samples in times.items():
            median = statistics.median(samples)
            per_call = (median - base) / CALLS * 1000
            print(f"  {name:9} {median * 1000:9.1f} ms per query   {per_call:8.2f} ms per call over baseline")


asyncio.run(main())
