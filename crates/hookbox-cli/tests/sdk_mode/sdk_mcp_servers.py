"""An SDK-hosted MCP server (`create_sdk_mcp_server`) driven through the hookbox binary by
either SDK's client.

Usage: python sdk_mcp_servers.py SDK PROMPT SPEC, SDK `claude` or `cortex`, SPEC a JSON object:
  "options": keyword arguments of the SDK's options (besides cli_path, cwd, model, mcp_servers);
  "hooks":   {EVENT: [MATCHER, ...]}, one recording callback per matcher (it changes nothing);
  "servers": the servers to host, by name, each a list of tool names of TOOLS below
             (default: {"test": ["add", "fail", "huge", "garbage", "note", "Bash"]}).
Prints every message as one JSON line (``message_class`` names its Python class), each call a
tool handler got as ``{"tool_called": NAME, "args": ...}``, each hook input as
``{"hook": MATCHER, "input": ...}``, each line the CLI writes to stderr as ``{"stderr": LINE}``,
and at the end ``{"mcp_status": ...}``.
"""

import asyncio
import dataclasses
import json
import os
import sys

CLI = os.environ["HOOKBOX_SDK_CLI"]
CWD = os.environ["HOOKBOX_SDK_CWD"]
MODEL = os.environ["HOOKBOX_SDK_MODEL"]
SDK, PROMPT, SPEC = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

if SDK == "claude":
    from claude_agent_sdk import ClaudeAgentOptions as Options
    from claude_agent_sdk import ClaudeSDKClient as Client
    from claude_agent_sdk import HookMatcher, create_sdk_mcp_server, tool
else:
    from cortex_code_agent_sdk import CortexCodeAgentOptions as Options
    from cortex_code_agent_sdk import CortexCodeSDKClient as Client
    from cortex_code_agent_sdk import HookMatcher, McpSdkServerConfig, tool

    class CortexServer:
        """What cortex's ``create_sdk_mcp_server`` builds, without the ``mcp.server.Server``:
        cortex-code-agent-sdk 1.0.7 decorates one with mcp 1.x's ``list_tools()``, which the mcp
        2.x that claude-agent-sdk 0.2.189 needs no longer has. Its query only reads ``name``,
        ``version`` and the tool definitions (sent as ``sdkMcpToolDefinitions``; calls come back
        as ``mcp_tool_call``)."""

        def __init__(self, name, tools):
            self.name, self.version = name, "1.0.0"
            self._sdk_tool_definitions = tools
            self.request_handlers = {}

    def create_sdk_mcp_server(name, tools):
        return McpSdkServerConfig(type="sdk", name=name, instance=CortexServer(name, tools))
from mcp.types import ToolAnnotations


def show(entry):
    print(json.dumps(entry, default=str), flush=True)


def text(value):
    return {"content": [{"type": "text", "text": value}]}


@tool("add", "Add two numbers", {"a": float, "b": float}, annotations=ToolAnnotations(readOnlyHint=True))
async def add(args):
    show({"tool_called": "add", "args": args})
    return text(f"sum: {args['a'] + args['b']}")


@tool("fail", "Always fails", {"why": str})
async def fail(args):
    show({"tool_called": "fail", "args": args})
    return {"content": [{"type": "text", "text": f"it broke: {args['why']}"}], "is_error": True}


@tool("huge", "A very long answer", {})
async def huge(args):
    show({"tool_called": "huge", "args": args})
    return text("x" * (3 * 1024 * 1024))


@tool("garbage", "Answers something that is not a tool result", {})
async def garbage(args):
    show({"tool_called": "garbage", "args": args})
    return {"surprise": [1, 2, 3]}


@tool("note", "Writes a note (changes things)", {"text": str})
async def note(args):
    show({"tool_called": "note", "args": args})
    return text(f"noted: {args['text']}")


@tool("Bash", "A tool named like a built-in", {"command": str})
async def bash(args):
    show({"tool_called": "Bash", "args": args})
    return text(f"the MCP Bash got {args['command']}")


@tool("b__c", "A name with a double underscore", {})
async def b_c(args):
    show({"tool_called": "b__c", "args": args})
    return text("b__c ran")


@tool("c", "A plain name", {})
async def c(args):
    show({"tool_called": "c", "args": args})
    return text("c ran")


@tool("do it!", "A name with odd characters", {})
async def do_it(args):
    show({"tool_called": "do it!", "args": args})
    return text("did it")


TOOLS = {t.name: t for t in [add, fail, huge, garbage, note, bash, b_c, c, do_it]}


def recorder(matcher):
    async def record(input, tool_use_id, context):
        show({"hook": matcher, "input": input})
        return {}

    return record


async def main():
    servers = SPEC.get("servers", {"test": ["add", "fail", "huge", "garbage", "note", "Bash"]})
    mcp_servers = {
        name: create_sdk_mcp_server(name=name, tools=[TOOLS[t] for t in tools])
        for name, tools in servers.items()
    }
    options = Options(
        cli_path=CLI, cwd=CWD, model=MODEL, mcp_servers=mcp_servers,
        stderr=lambda line: show({"stderr": line}), **SPEC.get("options", {}),
    )
    hooks = SPEC.get("hooks", {})
    if hooks:
        options.hooks = {
            event: [HookMatcher(matcher=m, hooks=[recorder(m)]) for m in matchers]
            for event, matchers in hooks.items()
        }
    async with Client(options) as client:
        await client.query(PROMPT)
        async for msg in client.receive_response():
            entry = dataclasses.asdict(msg) if dataclasses.is_dataclass(msg) else {"value": repr(msg)}
            entry["message_class"] = type(msg).__name__
            show(entry)
        show({"mcp_status": await client.get_mcp_status()})


if __name__ == "__main__":
    asyncio.run(main())
