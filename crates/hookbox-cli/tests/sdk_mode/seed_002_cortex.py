"""Seed 002's four Python hook examples, as written, driven by cortex-code-agent-sdk against
the hookbox binary.

Usage: python seed_002_cortex.py EXAMPLE PROMPT, EXAMPLE one of block_dangerous,
auto_approve_reads, add_timeout, audit_log. The options only gain `cli_path`, `cwd` and
`model` (from HOOKBOX_SDK_CLI, HOOKBOX_SDK_CWD, HOOKBOX_SDK_MODEL); every message the SDK
yields is printed as one JSON line.
"""

import asyncio
import dataclasses
import os
import sys

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]
MODEL = os.environ["HOOKBOX_SDK_MODEL"]
PROMPT = sys.argv[2]


async def drive(client):
    """The driver: send the prompt, print every message of the response as JSON."""
    await client.query(PROMPT)
    async for msg in client.receive_response():
        entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
        entry["message_class"] = type(msg).__name__
        print(json.dumps(entry, default=str), flush=True)


# ---- Bloquer les outils dangereux (verbatim) ----

from cortex_code_agent_sdk import CortexCodeSDKClient, CortexCodeAgentOptions, HookMatcher

async def block_dangerous(input, tool_use_id, context):
    command = input.get("tool_input", {}).get("command", "")
    if "rm -rf" in command or "DROP TABLE" in command:
        return {
            "decision": "block",
            "reason": "Destructive commands are not allowed",
        }
    return {}

async def example_block_dangerous():
    async with CortexCodeSDKClient(CortexCodeAgentOptions(
        hooks={
            "PreToolUse": [
                HookMatcher(matcher="Bash", hooks=[block_dangerous]),
            ],
        },
        cli_path=CLI, cwd=CWD, model=MODEL,
    )) as client:
        await drive(client)


# ---- Autoriser automatiquement les demandes d'autorisations en lecture seule (verbatim) ----

async def auto_approve_reads(input, tool_use_id, context):
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        },
    }

hooks = {
    "PermissionRequest": [
        HookMatcher(matcher="Read|Glob|Grep", hooks=[auto_approve_reads]),
    ],
}
auto_approve_hooks = hooks

async def example_auto_approve_reads():
    async with CortexCodeSDKClient(CortexCodeAgentOptions(
        hooks=auto_approve_hooks, cli_path=CLI, cwd=CWD, model=MODEL,
    )) as client:
        await drive(client)


# ---- Modifier l'entrée d'outil (verbatim) ----

async def add_timeout(input, tool_use_id, context):
    original = input.get("tool_input", {}).get("command", "")
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": f"timeout 30 {original}"},
        },
    }

hooks = {
    "PreToolUse": [
        HookMatcher(matcher="Bash", hooks=[add_timeout]),
    ],
}
add_timeout_hooks = hooks

async def example_add_timeout():
    async with CortexCodeSDKClient(CortexCodeAgentOptions(
        hooks=add_timeout_hooks, cli_path=CLI, cwd=CWD, model=MODEL,
    )) as client:
        await drive(client)


# ---- Journaliser les audits (verbatim) ----

import json
from datetime import datetime, timezone
from cortex_code_agent_sdk import CortexCodeSDKClient, CortexCodeAgentOptions, HookMatcher

async def audit_log(input, tool_use_id, context):
    entry = {
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "tool": input.get("tool_name"),
        "input": input.get("tool_input"),
        "session_id": input.get("session_id"),
    }
    with open("audit.log", "a") as f:
        f.write(json.dumps(entry) + "\n")
    return {}

async def example_audit_log():
    async with CortexCodeSDKClient(CortexCodeAgentOptions(
        hooks={
            "PostToolUse": [
                HookMatcher(hooks=[audit_log]),
            ],
        },
        cli_path=CLI, cwd=CWD, model=MODEL,
    )) as client:
        await drive(client)


if __name__ == "__main__":
    asyncio.run(globals()["example_" + sys.argv[1]]())
