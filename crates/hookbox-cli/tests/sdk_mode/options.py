"""claude-agent-sdk's `query()` driving the hookbox binary with options given as JSON.

Usage: python options.py PROMPT SPEC, SPEC being a JSON object:
  "options":      keyword arguments of ClaudeAgentOptions (besides cli_path, cwd, model);
  "hooks":        {EVENT: [CALLBACK NAME, ...]}, each a callback of CALLBACKS below, one
                  HookMatcher (matching every tool) per event;
  "can_use_tool": the name of a callback of PERMISSIONS below.
Every message is printed as one JSON line (``message_class`` names its Python class); the
calls the callbacks saw are printed as ``{"callback": NAME, "input": ...}``.
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    query,
)

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]
MODEL = os.environ["HOOKBOX_SDK_MODEL"]


def show(entry):
    print(json.dumps(entry, default=str), flush=True)


async def pre_context(input, tool_use_id, context):
    show({"callback": "pre_context", "input": input})
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "remember: the build is on Fridays",
        }
    }


async def post_replace(input, tool_use_id, context):
    show({"callback": "post_replace", "input": input})
    return {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {"stdout": "[redacted]", "stderr": "", "interrupted": False},
        }
    }


async def post_replace_badly(input, tool_use_id, context):
    show({"callback": "post_replace_badly", "input": input})
    return {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {"text": "not Bash's shape"},
        }
    }


async def deferred(input, tool_use_id, context):
    show({"callback": "deferred", "input": input})
    # An async output: the CLI must not wait for, nor act on, anything else it says (here a
    # denial, which would count in a synchronous reply).
    return {
        "async_": True,
        "asyncTimeout": 30000,
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"},
    }


async def permission_allow(input, tool_use_id, context):
    show({"callback": "permission_allow", "input": input})
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }


CALLBACKS = {
    "permission_allow": permission_allow,
    "pre_context": pre_context,
    "post_replace": post_replace,
    "post_replace_badly": post_replace_badly,
    "deferred": deferred,
}


async def allow(tool_name, input, context):
    show({"callback": "allow", "tool_name": tool_name, "input": input})
    return PermissionResultAllow()


async def deny(tool_name, input, context):
    show({"callback": "deny", "tool_name": tool_name, "input": input})
    return PermissionResultDeny(message="the user said no")


PERMISSIONS = {"allow": allow, "deny": deny}


async def prompts(prompt):
    # can_use_tool needs a streaming prompt.
    yield {"type": "user", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": None}


async def main():
    prompt, spec = sys.argv[1], json.loads(sys.argv[2])
    options = ClaudeAgentOptions(cli_path=CLI, cwd=CWD, model=MODEL, **spec.get("options", {}))
    hooks = spec.get("hooks", {})
    if hooks:
        options.hooks = {
            event: [HookMatcher(matcher=None, hooks=[CALLBACKS[name] for name in names])]
            for event, names in hooks.items()
        }
    source = prompt
    if "can_use_tool" in spec:
        options.can_use_tool = PERMISSIONS[spec["can_use_tool"]]
        source = prompts(prompt)
    async for msg in query(prompt=source, options=options):
        entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
        entry["message_class"] = type(msg).__name__
        show(entry)


if __name__ == "__main__":
    asyncio.run(main())
