"""Streams model text through hookbox with the official google-genai SDK: the agent's model
(a fake OpenAI-compatible server) streams its answer in pieces, and the SDK sees one text
`step.delta` per piece, then replays and resumes the same events; the model form works too.

Usage: streaming.py BASE_URL AGENT TEXT   (HOOKBOX_API_KEY: a key from `hookbox api-keys create`)
"""

import os
import sys

from google import genai

BASE_URL, AGENT, TEXT = sys.argv[1], sys.argv[2], sys.argv[3]
# A real key, from `hookbox api-keys create NAME`.
client = genai.Client(api_key=os.environ["HOOKBOX_API_KEY"], http_options={"base_url": BASE_URL})

events = list(client.interactions.create(agent=AGENT, input="hi", stream=True))
kinds = [e.event_type for e in events]
assert kinds[0] == "interaction.created", kinds
assert kinds[-2:] == ["interaction.status_update", "interaction.completed"], kinds
deltas = [e for e in events if e.event_type == "step.delta" and e.index == 1]
assert len(deltas) > 1, kinds
assert "".join(d.delta.text for d in deltas) == TEXT, deltas
first = kinds.index("step.delta", kinds.index("step.start", 2))
assert kinds[first - 1] == "step.start" and events[first - 1].step.type == "model_output", kinds
assert kinds[first + len(deltas)] == "step.stop", kinds
assert events[-1].interaction.status == "completed", events[-1]

interaction_id = events[0].interaction.id
replayed = list(client.interactions.get(interaction_id, stream=True))
assert [e.event_id for e in replayed] == [e.event_id for e in events], replayed
assert [getattr(getattr(e, "delta", None), "text", None) for e in replayed] == [
    getattr(getattr(e, "delta", None), "text", None) for e in events
]
resumed = list(client.interactions.get(interaction_id, stream=True, last_event_id=deltas[0].event_id))
assert [e.event_id for e in resumed] == [e.event_id for e in events[first + 1:]], resumed

got = client.interactions.get(interaction_id)
assert got.output_text == TEXT, got

# The model form, streamed: `model` names the agent.
events = list(client.interactions.create(
    model=AGENT, input="hi", generation_config={"temperature": 0.2}, stream=True,
))
assert events[-1].interaction.status == "completed", events[-1]
text = "".join(e.delta.text for e in events if e.event_type == "step.delta" and e.index == 1)
assert text == TEXT, text
plain = client.interactions.create(model=AGENT, input="hi")
assert plain.output_text == TEXT, plain
assert plain.model == AGENT, plain
print("ok")
