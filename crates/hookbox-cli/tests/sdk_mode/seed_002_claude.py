"""Seed 002's "block dangerous tools" example, as written, with claude-agent-sdk's `query()`
driving the hookbox binary.

Usage: python seed_002_claude.py PROMPT. The options only gain `cli_path`, `cwd` and `model`
(from HOOKBOX_SDK_CLI, HOOKBOX_SDK_CWD, HOOKBOX_SDK_MODEL); every message is printed as one
JSON line.
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, query

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]
MODEL = os.environ["HOOKBOX_SDK_MODEL"]


async def block_dangerous(input, tool_use_id, context):
    command = input.get("tool_input", {}).get("command", "")
    if "rm -rf" in command or "DROP TABLE" in command:
        return {
            "decision": "block",
            "reason": "Destructive commands are not allowed",
        }
    return {}


async def main():
    options = ClaudeAgentOptions(
        hooks={
            "PreToolUse": [
                HookMatcher(matcher="Bash", hooks=[block_dangerous]),
            ],
        },
        cli_path=CLI, cwd=CWD, model=MODEL,
    )
    async for msg in query(prompt=sys.argv[1], options=options):
        entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
        entry["message_class"] = type(msg).__name__
        print(json.dumps(entry, default=str), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
