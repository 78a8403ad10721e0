"""Runs the seed's Python hook examples (security gate; two-step privacy gate) against
`hookbox serve` with the official google-genai SDK, as written in the seed except for
`http_options={"base_url": ...}` and the agent names (scripted agents in hookbox.toml), then
checks what came back.

Usage: interactions.py BASE_URL   (HOOKBOX_API_KEY: a key from `hookbox api-keys create`)
"""

import os
import sys

BASE_URL = sys.argv[1]
SECURITY_AGENT = "scripted-security-gate"
PRIVACY_AGENT = "scripted-privacy-gate"

# ---- The seed's security-gate example --------------------------------------------------------
import json
from google import genai

# A real key, from `hookbox api-keys create NAME`.
client = genai.Client(api_key=os.environ["HOOKBOX_API_KEY"], http_options={"base_url": BASE_URL})

hooks_config = {
    "security-gate": {
        "pre_tool_execution": [
            {
                "matcher": "code_execution",
                "hooks": [
                    {
                        "type": "command",
                        "command": "python3 /.agents/hooks-scripts/gate.py",
                        "timeout": 10,
                    }
                ],
            }
        ]
    }
}

gate_script = """#!/usr/bin/env python3
import sys, json
data = json.load(sys.stdin)
cmd = str(data.get("tool_call", {}).get("args", {}))
if "rm -rf" in cmd:
    print(json.dumps({"decision": "deny", "reason": "Destructive command blocked by security gate."}))
else:
    print(json.dumps({"decision": "allow"}))
"""

interaction = client.interactions.create(
    agent=SECURITY_AGENT,
    input="Run `rm -rf /tmp/forbidden` using code_execution.",
    tools=[{"type": "code_execution"}],
    environment={
        "type": "remote",
        "sources": [
            {
                "type": "inline",
                "target": ".agents/hooks.json",
                "content": json.dumps(hooks_config, indent=2),
            },
            {
                "type": "inline",
                "target": ".agents/hooks-scripts/gate.py",
                "content": gate_script,
            },
        ],
    },
)
print(interaction.output_text)

# ---- Checks ------------------------------------------------------------------------------------
assert interaction.status == "completed", interaction
assert [s.type for s in interaction.steps] == [
    "user_input", "code_execution_call", "code_execution_result", "model_output",
], interaction.steps
assert interaction.steps[1].arguments.code == "rm -rf /tmp/forbidden", interaction.steps[1]
assert interaction.steps[2].is_error is True, interaction.steps[2]
assert "Destructive command blocked by security gate." in str(interaction.steps[2].result)
assert "security gate blocks destructive commands" in interaction.output_text, interaction.output_text
assert interaction.environment_id.startswith("env_"), interaction.environment_id
got = client.interactions.get(interaction.id)
assert [s.type for s in got.steps] == [s.type for s in interaction.steps], got
assert got.output_text == interaction.output_text
# Cancelling a finished interaction returns it unchanged.
assert client.interactions.cancel(interaction.id).status == "completed"

# ---- The seed's two-step privacy-gate example -----------------------------------------------
hooks_config = {
    "privacy-gate": {
        "pre_tool_execution": [
            {
                "matcher": "read_file",
                "hooks": [
                    {
                        "type": "command",
                        "command": "python3 /.agents/hooks-scripts/check_privacy.py",
                        "timeout": 5,
                    }
                ],
            }
        ]
    }
}

check_privacy_script = """#!/usr/bin/env python3
import sys, json
data = json.load(sys.stdin)
path = str(data.get("tool_call", {}).get("args", {}).get("path", ""))

if "/private/" in path:
    resp = {
        "decision": "deny",
        "reason": "Access to confidential `/private/` records is blocked by PII compliance policy. Query approved `/public/` summary tables instead."
    }
else:
    resp = {"decision": "allow"}

print(json.dumps(resp))
"""

# Step 1: Agent attempts to read confidential PII records and is intercepted
int_1 = client.interactions.create(
    agent=PRIVACY_AGENT,
    input="Use your filesystem tool to read `/workspace/private/employees.json` and summarize the employee details.",
    environment={
        "type": "remote",
        "sources": [
            {
                "type": "inline",
                "target": ".agents/hooks.json",
                "content": json.dumps(hooks_config, indent=2),
            },
            {
                "type": "inline",
                "target": ".agents/hooks-scripts/check_privacy.py",
                "content": check_privacy_script,
            },
            {
                "type": "inline",
                "target": "workspace/private/employees.json",
                "content": '{"employees": [{"id": 1, "salary": 150000, "ssn": "000-00-0000"}]}',
            },
            {
                "type": "inline",
                "target": "workspace/public/summary.json",
                "content": '{"department": "Engineering", "team_size": 42, "status": "active"}',
            },
        ],
    },
)
print(int_1.output_text)

# Step 2: Continue in the same environment using previous_interaction_id; agent recovers with public tables
int_2 = client.interactions.create(
    agent=PRIVACY_AGENT,
    input="Understood. Please read the approved `/workspace/public/summary.json` file instead and provide the summary.",
    environment=int_1.environment_id,
    previous_interaction_id=int_1.id,
)
print(int_2.output_text)

# ---- Checks ------------------------------------------------------------------------------------
steps = ["user_input", "function_call", "function_result", "model_output"]
assert int_1.status == "completed", int_1
assert [s.type for s in int_1.steps] == steps, int_1.steps
assert int_1.steps[1].name == "read_file", int_1.steps[1]
assert int_1.steps[2].is_error is True, int_1.steps[2]
assert "blocked by PII compliance policy" in str(int_1.steps[2].result), int_1.steps[2]
assert "PII compliance policy" in int_1.output_text, int_1.output_text
assert int_1.environment_id.startswith("env_"), int_1.environment_id

assert int_2.status == "completed", int_2
assert int_2.environment_id == int_1.environment_id, (int_2.environment_id, int_1.environment_id)
assert int_2.previous_interaction_id == int_1.id, int_2
assert [s.type for s in int_2.steps] == steps, int_2.steps
assert int_2.steps[2].is_error is False, int_2.steps[2]
assert "team_size" in str(int_2.steps[2].result), int_2.steps[2]
assert "42 people" in int_2.output_text, int_2.output_text

# Streaming: the SDK yields the §7 events in order; get(stream=True) replays them.
events = list(client.interactions.create(
    agent=SECURITY_AGENT,
    input="Run `rm -rf /tmp/forbidden` using code_execution.",
    tools=[{"type": "code_execution"}],
    environment=interaction.environment_id,
    stream=True,
))
kinds = [e.event_type for e in events]
assert kinds == ["interaction.created"] + ["step.start", "step.delta", "step.stop"] * 4 + [
    "interaction.status_update", "interaction.completed",
], kinds
assert events[-1].interaction.status == "completed", events[-1]
streamed_id = events[0].interaction.id
replayed = list(client.interactions.get(streamed_id, stream=True, last_event_id=events[10].event_id))
assert [e.event_id for e in replayed] == [e.event_id for e in events[11:]], replayed

# Background: in_progress at once, then polled until it stops.
import time
background = client.interactions.create(
    agent=PRIVACY_AGENT,
    input="Use your filesystem tool to read `/workspace/private/employees.json`.",
    environment=int_1.environment_id,
    background=True,
)
assert background.status in ("in_progress", "completed"), background
for _ in range(100):
    background = client.interactions.get(background.id)
    if background.status != "in_progress":
        break
    time.sleep(0.1)
assert background.status == "completed", background
assert "PII compliance policy" in background.output_text, background

# Re-running a prompt on purpose: two identical creates, one after the other, are two
# interactions (only a retry while the first request is still unanswered is deduplicated).
again = [
    client.interactions.create(
        agent=SECURITY_AGENT,
        input="Run `rm -rf /tmp/forbidden` using code_execution.",
        tools=[{"type": "code_execution"}],
        environment=interaction.environment_id,
    )
    for _ in range(2)
]
assert again[0].id != again[1].id, again
assert all(run.status == "completed" for run in again), again

# Paths: a file uploaded as `workspace/notes.txt` is /workspace/notes.txt; a tool path written
# the same way (relative, so /workspace/workspace/notes.txt) fails naming the path meant.
named = client.interactions.create(
    agent="scripted-workspace-path",
    input="Read workspace/notes.txt.",
    environment={"type": "remote", "sources": [
        {"type": "inline", "target": "workspace/notes.txt", "content": "the notes"},
    ]},
)
assert named.steps[2].is_error is True, named.steps
assert "you probably meant /workspace/notes.txt" in str(named.steps[2].result), named.steps[2]

# Errors map to the SDK's exceptions.
try:
    client.interactions.create(agent="no-such-agent", input="hi")
except Exception as err:  # google.genai._interactions.BadRequestError
    assert getattr(err, "status_code", None) == 400, repr(err)
    assert SECURITY_AGENT in str(err), err
else:
    raise AssertionError("an unknown agent was accepted")

client.interactions.delete(int_2.id)
try:
    client.interactions.get(int_2.id)
except Exception as err:  # google.genai._interactions.NotFoundError
    assert getattr(err, "status_code", None) == 404, repr(err)
else:
    raise AssertionError("a deleted interaction is still there")
print("ok")
