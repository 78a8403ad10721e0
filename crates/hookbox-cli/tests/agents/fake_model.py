#!/usr/bin/env python3
"""A fake model API for the real agent CLIs: Anthropic Messages (Claude Code), Gemini
generateContent (Gemini CLI) or OpenAI Responses (Codex), on 127.0.0.1, in each API's wire
format.

Stateless, so the CLIs' side requests (titles, next-speaker checks, token counts...) cannot
derail it: a request that offers the scripted tool is answered with the scripted tool call
whose index is the number of tool results the request already carries, and, once every call
has its result, with the final text. Other requests get a short text (or the JSON a side
request asks for). Every POST is appended to the log as one JSON line {path, body}.

Usage: fake_model.py anthropic|gemini|responses SCRIPT LOG
  SCRIPT: {"calls": [{"name": TOOL, "args": {...}}, ...], "final": TEXT}; in the Responses
  API a call may also name the "namespace" its tool is offered in (Codex offers an MCP server's
  tools as {"type": "namespace", "name": "mcp__SERVER", "tools": [...]}), and is then made
  with that namespace.
Prints "listening PORT" once it accepts connections.
"""
import json, socket, sys, threading, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIALECT, SCRIPT, LOG = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
LOG_LOCK = threading.Lock()


def anthropic_results(body):
    return sum(1 for m in body.get("messages") or [] if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")


def gemini_results(body):
    return sum(1 for c in body.get("contents") or [] for p in c.get("parts") or []
               if isinstance(p, dict) and "functionResponse" in p)


def next_call(offered, done):
    """The scripted call to answer with, or None for the final text. `offered` holds the
    (namespace or None, name) of each tool the request offers."""
    calls = SCRIPT["calls"]
    if done < len(calls) and (calls[done].get("namespace"), calls[done]["name"]) in offered:
        return calls[done]
    return None


def sse(event, data):
    return "event: %s\ndata: %s\n\n" % (event, json.dumps(data))


def anthropic(body):
    """-> (content type, bytes) of a Messages API answer, streamed when asked."""
    offered = [(None, t.get("name")) for t in body.get("tools") or []]
    call = next_call(offered, anthropic_results(body))
    if call:
        blocks = [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24],
                   "name": call["name"], "input": call["args"]}]
        stop = "tool_use"
    else:
        blocks = [{"type": "text", "text": SCRIPT["final"] if offered else "ok"}]
        stop = "end_turn"
    model = body.get("model", "claude-sonnet-4-5")
    mid = "msg_" + uuid.uuid4().hex[:24]
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    if not body.get("stream"):
        return "application/json", json.dumps({
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}).encode()
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})]
    for i, b in enumerate(blocks):
        if b["type"] == "tool_use":
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": b["text"]}
        out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": start}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": delta}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return "text/event-stream", "".join(out).encode()


def gemini_answer(body):
    offered = [(None, d.get("name")) for t in body.get("tools") or []
               for d in t.get("functionDeclarations") or []]
    call = next_call(offered, gemini_results(body))
    if call:
        part = {"functionCall": {"name": call["name"], "args": call["args"]}}
    else:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            # side requests (next-speaker check, model routing) want JSON
            part = {"text": json.dumps({"reasoning": "done", "next_speaker": "user",
                                        "model_choice": "flash"})}
        else:
            part = {"text": SCRIPT["final"] if offered else "ok"}
    return {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-flash"}


def gemini(body, path):
    if ":countTokens" in path:
        return "application/json", json.dumps({"totalTokens": 10}).encode()
    answer = gemini_answer(body)
    if ":streamGenerateContent" in path:
        return "text/event-stream", ("data: %s\r\n\r\n" % json.dumps(answer)).encode()
    return "application/json", json.dumps(answer).encode()


def responses_results(body):
    return sum(1 for item in body.get("input") or []
               if isinstance(item, dict) and item.get("type") == "function_call_output")


def responses(body):
    """-> (content type, bytes) of a Responses API answer (SSE when asked)."""
    offered = []
    for t in body.get("tools") or []:
        if t.get("type") == "namespace":
            offered += [(t.get("name"), n.get("name")) for n in t.get("tools") or []]
        else:
            offered.append((None, t.get("name")))
    call = next_call(offered, responses_results(body))
    rid = "resp_" + uuid.uuid4().hex[:24]
    if call:
        item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24],
                "call_id": "call_" + uuid.uuid4().hex[:24], "name": call["name"],
                "arguments": json.dumps(call["args"])}
        if call.get("namespace"):
            item["namespace"] = call["namespace"]
    else:
        item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:24], "role": "assistant",
                "status": "completed", "content": [{
                    "type": "output_text", "text": SCRIPT["final"] if offered else "ok",
                    "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    response = {"id": rid, "object": "response", "status": "completed",
                "model": body.get("model"), "output": [item], "usage": usage}
    if not body.get("stream"):
        return "application/json", json.dumps(response).encode()
    events = [
        ("response.created", {"response": dict(response, status="in_progress", output=[])}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": response}),
    ]
    return "text/event-stream", "".join(
        sse(name, dict(data, type=name, sequence_number=i))
        for i, (name, data) in enumerate(events)).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # headers and body are two writes: without TCP_NODELAY each answer can stall ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def reply(self, status, ctype, data):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(404, "application/json", b'{"error": {"code": 404, "message": "not found"}}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.reply(400, "application/json", b'{"error": {"message": "not JSON"}}')
        with LOG_LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if DIALECT == "anthropic" and "/count_tokens" in self.path:
            return self.reply(200, "application/json", b'{"input_tokens": 10}')
        if DIALECT == "anthropic" and self.path.startswith("/v1/messages"):
            return self.reply(200, *anthropic(body))
        if DIALECT == "responses" and self.path.endswith("/responses"):
            return self.reply(200, *responses(body))
        if DIALECT == "gemini" and "/models/" in self.path:
            return self.reply(200, *gemini(body, self.path))
        self.reply(404, "application/json", b'{"error": {"code": 404, "message": "not found"}}')


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
