"""Hook failures seen through claude-agent-sdk's `query()` driving the hookbox binary.

Usage: python hook_failures.py MODE PROMPT, MODE being
  fail_open   a settings command hook (``--settings``) that crashes: the SDK must receive a
              ``hook_response`` system message saying so;
  on_failure  a ``HookMatcher(on_failure="block")`` callback whose reply the CLI rejects
              (``permissionDecision: "Deny"``): the call must be blocked.
Every message is printed as one JSON line (``message_class`` names its Python class).
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

CRASHING_SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "echo gate crashed >&2; exit 3"}],
            }
        ]
    }
}


async def sloppy_gate(input, tool_use_id, context):
    # "Deny" is not a permission decision the CLI accepts.
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "Deny"}}


async def main():
    mode, prompt = sys.argv[1], sys.argv[2]
    options = ClaudeAgentOptions(cli_path=CLI, cwd=CWD, model=MODEL, permission_mode="bypassPermissions")
    if mode == "fail_open":
        options.settings = json.dumps(CRASHING_SETTINGS)
    else:
        options.hooks = {
            "PreToolUse": [HookMatcher(matcher="Bash", hooks=[sloppy_gate], on_failure="block")]
        }
    async for msg in query(prompt=prompt, options=options):
        entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
        entry["message_class"] = type(msg).__name__
        print(json.dumps(entry, default=str), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
