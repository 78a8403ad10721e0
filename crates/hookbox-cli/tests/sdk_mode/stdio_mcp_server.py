"""A stdio MCP server written with the standard library only: JSON-RPC messages, one a line,
on stdin and stdout. The tests copy it into the session's workspace and name it in
--mcp-config; hookbox runs it in the session's sandbox.

Usage: python3 stdio_mcp_server.py [--silent]  (--silent: reads everything, answers nothing)

Tools:
  whoami {path}  what the server sees: hostname, its pid, $GREETING, whether hookbox's own
                 HOOKBOX_SDK_TEST_KEY reached it, whether `path` exists, its working directory
  fail {why}     an `isError` result
  huge {}        3 MiB of text
  write {path, text}  writes `text` to `path`; says `wrote` or why it could not
  hang {}        never answers (sleeps)
  fetch {url}    GETs `url` (through $HTTP_PROXY, as urllib does) and says what came back
  die {}         exits at once without answering (the server dies mid-session)
"""

import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request

TOOLS = [
    {"name": "whoami", "description": "Says where it runs",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "fail", "description": "Always fails",
     "inputSchema": {"type": "object", "properties": {"why": {"type": "string"}}}},
    {"name": "huge", "description": "A very long answer", "inputSchema": {"type": "object"}},
    {"name": "write", "description": "Writes a file",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                       "text": {"type": "string"}}}},
    {"name": "hang", "description": "Never answers", "inputSchema": {"type": "object"}},
    {"name": "fetch", "description": "Fetches a URL",
     "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}}},
    {"name": "die", "description": "Exits without answering", "inputSchema": {"type": "object"}},
]


def text(value, error=False):
    return {"content": [{"type": "text", "text": value}], "isError": error}


def call(name, args):
    if name == "whoami":
        path = args.get("path", "/nonexistent")
        return text(
            f"host={socket.gethostname()} pid={os.getpid()} greeting={os.environ.get('GREETING')} "
            f"key={'HOOKBOX_SDK_TEST_KEY' in os.environ} path_exists={os.path.exists(path)} "
            f"cwd={os.getcwd()}"
        )
    if name == "fail":
        return text(f"it broke: {args.get('why')}", error=True)
    if name == "write":
        try:
            os.makedirs(os.path.dirname(args["path"]) or ".", exist_ok=True)
            with open(args["path"], "w") as file:
                file.write(args["text"])
            return text("wrote")
        except OSError as error:
            return text(f"cannot write: {error}", error=True)
    if name == "huge":
        return text("y" * (3 * 1024 * 1024))
    if name == "fetch":
        try:
            with urllib.request.urlopen(args["url"], timeout=20) as reply:
                return text(f"fetched: {reply.read().decode()}")
        except urllib.error.HTTPError as error:
            return text(f"refused {error.code}: {error.read().decode()}", error=True)
        except OSError as error:
            return text(f"cannot fetch: {error}", error=True)
    if name == "hang":
        time.sleep(3600)
    if name == "die":
        sys.stderr.write("dying now\n")
        sys.stderr.flush()
        os._exit(3)
    return None


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stdlib-server", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {})
    if method == "ping":
        return {}
    return None


def main():
    silent = "--silent" in sys.argv
    sys.stderr.write("stdlib-server starting\n")
    sys.stderr.flush()
    for line in sys.stdin:
        if silent or not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        result = answer(request)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": request["id"],
                     "error": {"code": -32601, "message": f"unknown: {request.get('method')}"}}
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
