"""Results and errors seen through claude-agent-sdk's `query()` driving the hookbox binary.

Usage: python results.py MODE PROMPT [MODEL], MODE being
  plain   the prompt as a plain string;
  origin  the prompt as a message dict stamped with ``origin: {"kind": "human"}`` and a
          ``uuid`` (the SDK's documented way to match a result to its prompt).
MODEL replaces HOOKBOX_SDK_MODEL (to name an agent hookbox does not have). Every message is
printed as one JSON line (``message_class`` names its Python class); an exception the SDK
raises is printed last as ``{"exception": CLASS, ...}`` with ResultError's attributes.
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, ProcessError, ResultError, query

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]


def show(entry):
    print(json.dumps(entry, default=str), flush=True)


async def stamped(prompt):
    yield {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "origin": {"kind": "human"},
        "uuid": "5f0c3a8e-0000-4000-8000-000000000001",
    }


async def main():
    mode, prompt = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else os.environ["HOOKBOX_SDK_MODEL"]
    options = ClaudeAgentOptions(cli_path=CLI, cwd=CWD, model=model)
    source = stamped(prompt) if mode == "origin" else prompt
    try:
        async for msg in query(prompt=source, options=options):
            entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
            entry["message_class"] = type(msg).__name__
            show(entry)
    except ResultError as err:
        show({
            "exception": "ResultError",
            "exit_code": err.exit_code,
            "subtype": err.subtype,
            "result": err.result,
            "errors": err.errors,
            "terminal_reason": err.terminal_reason,
            "api_error_status": err.api_error_status,
        })
    except ProcessError as err:
        show({"exception": type(err).__name__, "exit_code": err.exit_code})


if __name__ == "__main__":
    asyncio.run(main())
