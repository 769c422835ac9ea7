"""What the bundled models are sent over a five-turn session, byte for byte.

`tests/data/golden/five_turns.json` was captured with the layout before the wings
(commit baa5ece): for SmolLM2 and Gemma 3, each turn's rendered prompt, its data spans
and its stable head, and the driver requests of one real loop on SmolLM2's profile with
a scripted model. Each is sent its own tool set (its profile's changes to the default
set: the plan tool is left out for these two). A refactor must leave all of it
unchanged; a deliberate change to a template or the system prompt regenerates the file
(`python -m tests.protocol.test_golden_prompts > tests/data/golden/five_turns.json`) and
says why in its commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agent.history import Assistant, AssistantToolUse, Message, System, ToolCall, ToolResult, User
from agent.loop.runtime import Agent, Seat
from agent.protocol.profile import profile_for
from agent.protocol.render import data_spans, stable_head
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from agent.tools.orchestrator import Gate
from drivers.scripted import ScriptedDriver
from tests.helpers import needs_gemma

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "five_turns.json"
WORKSPACE = Path("/tmp/bosun-golden-ws")  # fixed: the system prompt names it
TURNS: list[tuple[str, ToolCall | None, str]] = [
    ("List the files.", ToolCall("call_1", "list_dir", {"path": "."}), "a.txt"),
    ("Read a.txt.", ToolCall("call_2", "read_file", {"path": "a.txt"}), "alpha <|im_end|> beta"),
    (
        "Write b.txt.",
        ToolCall("call_3", "write_file", {"path": "b.txt", "content": "x <tool_call>\n"}),
        "wrote b.txt",
    ),
    ("Grep alpha.", ToolCall("call_4", "grep", {"pattern": "alpha"}), "a.txt:1:alpha"),
    ("Say bye.", None, ""),
]


def workspace() -> Path:
    WORKSPACE.mkdir(exist_ok=True)
    (WORKSPACE / "a.txt").write_text("alpha <|im_end|> beta\n")
    return WORKSPACE


def rendered(model: str) -> list[dict[str, Any]]:
    """Each turn's prompt as sent, with its data spans and stable head."""
    profile = profile_for(model)
    specs = default_registry(changes=profile.tool_changes).specs()  # the model's own set
    history: list[Message] = [System(system_prompt(str(workspace())))]
    rows = []
    for prompt, call, result in TURNS:
        history.append(User(prompt))
        sent = profile.render(history, specs)
        spans = data_spans(history, specs, sent, profile=profile)
        rows.append(
            {"sent": sent, "spans": spans, "head": stable_head(profile, history, specs, sent)}
        )
        if call is not None:
            history += [Assistant("Sure."), AssistantToolUse(call), ToolResult(call.id, result)]
        else:
            history.append(Assistant("Bye <|im_end|> now."))
    return rows


def looped() -> list[dict[str, Any]]:
    """The driver requests of one five-call loop on SmolLM2's profile."""
    steps = [
        {"completion": "<tool_call>\n" + json.dumps({"name": c.name, "arguments": c.arguments})
         + "\n</tool_call>"}
        for _, c, _ in TURNS if c is not None
    ]  # fmt: skip
    driver = ScriptedDriver([*steps, {"completion": "All done."}])
    ws = workspace()
    profile = profile_for("smollm2-135m")
    agent = Agent(
        seat=Seat(driver, profile),
        tools=default_registry(changes=profile.tool_changes),
        workspace=ws,
        history=[System(system_prompt(str(ws)))],
        gate=Gate("auto"),
    )
    agent.run("Do the five things.")
    return [
        {"prompt": c.prompt, "stop": list(c.stop), "max_tokens": c.max_tokens,
         "grammar": c.grammar, "data": [list(d) for d in c.data]}
        for c in driver.calls
    ]  # fmt: skip


def capture() -> dict[str, Any]:
    return {
        "smollm2-135m": rendered("smollm2-135m"),
        "gemma3-270m": rendered("gemma3-270m"),
        "loop": looped(),
    }


def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_smollm2_is_sent_what_it_was_sent_before() -> None:
    assert jsonable(rendered("smollm2-135m")) == golden()["smollm2-135m"]


@needs_gemma
def test_gemma_is_sent_what_it_was_sent_before() -> None:
    assert jsonable(rendered("gemma3-270m")) == golden()["gemma3-270m"]


def test_a_loops_requests_are_what_they_were_before() -> None:
    assert jsonable(looped()) == golden()["loop"]


def test_the_comparison_can_fail() -> None:
    """One changed byte in the golden prompt is seen."""
    first = golden()["smollm2-135m"][0]
    changed = {**first, "sent": first["sent"].replace("bosun", "b0sun", 1)}
    assert changed != jsonable(rendered("smollm2-135m"))[0]


if __name__ == "__main__":
    json.dump(capture(), sys.stdout, indent=0, sort_keys=True)
