"""Sessions through claude-agent-sdk: queries that resume, continue or fork, the session
helpers that read transcripts, and /clear in one client.

Usage: python sessions.py MODE ..., MODE being
  query PROMPT SPEC  `query()` with ClaudeAgentOptions(**SPEC) besides cli_path, cwd and model
                     (SPEC's "agents" become AgentDefinitions);
  list               list_sessions(directory=CWD), and for each session get_session_messages,
                     list_subagents and get_subagent_messages;
  client SPEC PROMPT...
                     one ClaudeSDKClient (options as for query) sending each PROMPT in turn.
SPEC's "stderr": true prints each line the CLI writes to stderr as ``{"stderr": LINE}``;
in client mode, SPEC's "server_info": true prints the initialize response first as
``{"server_info": ...}``.
SPEC's "hooks" ({EVENT: REPLY}) registers a callback on EVENT that prints its input as
``{"callback": EVENT, "input": ...}`` and returns REPLY (``{}`` when REPLY is not an object).
Every message is printed as one JSON line (``message_class`` names its Python class); an
exception the SDK raises is printed last as ``{"exception": CLASS, ...}``.
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import (
    AgentDefinition,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    ProcessError,
    ResultError,
    get_session_messages,
    get_subagent_messages,
    list_sessions,
    list_subagents,
    query,
)

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]
MODEL = os.environ["HOOKBOX_SDK_MODEL"]


def show(entry):
    print(json.dumps(entry, default=str), flush=True)


def show_message(msg):
    entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
    entry["message_class"] = type(msg).__name__
    show(entry)


def recorder(event, reply):
    async def record(input, tool_use_id, context):
        show({"callback": event, "input": input})
        return reply if isinstance(reply, dict) else {}

    return record


def options(spec):
    spec = dict(spec)
    if "hooks" in spec:
        spec["hooks"] = {
            event: [HookMatcher(matcher=None, hooks=[recorder(event, reply)])]
            for event, reply in spec["hooks"].items()
        }
    if "agents" in spec:
        spec["agents"] = {name: AgentDefinition(**agent) for name, agent in spec["agents"].items()}
    if spec.pop("stderr", False):
        spec["stderr"] = lambda line: show({"stderr": line})
    return ClaudeAgentOptions(cli_path=CLI, cwd=CWD, model=MODEL, **spec)


async def run_query(prompt, spec):
    try:
        async for msg in query(prompt=prompt, options=options(spec)):
            show_message(msg)
    except ResultError as err:
        show({"exception": "ResultError", "exit_code": err.exit_code, "errors": err.errors})
    except ProcessError as err:
        show({"exception": type(err).__name__, "exit_code": err.exit_code, "stderr": err.stderr})


def run_list():
    for info in list_sessions(directory=CWD):
        session = dataclasses.asdict(info)
        session["messages"] = [
            dataclasses.asdict(m) for m in get_session_messages(info.session_id, directory=CWD)
        ]
        session["subagents"] = {
            agent: [
                dataclasses.asdict(m)
                for m in get_subagent_messages(info.session_id, agent, directory=CWD)
            ]
            for agent in list_subagents(info.session_id, directory=CWD)
        }
        show({"session": session})


async def run_client(spec, prompts):
    spec = dict(spec)
    server_info = spec.pop("server_info", False)
    async with ClaudeSDKClient(options=options(spec)) as client:
        if server_info:
            show({"server_info": await client.get_server_info()})
        for prompt in prompts:
            await client.query(prompt)
            async for msg in client.receive_response():
                show_message(msg)


def main():
    mode = sys.argv[1]
    if mode == "query":
        asyncio.run(run_query(sys.argv[2], json.loads(sys.argv[3])))
    elif mode == "list":
        run_list()
    elif mode == "client":
        asyncio.run(run_client(json.loads(sys.argv[2]), sys.argv[3:]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
