"""`bosun acp` driven the way an editor drives it: the SDK's client side, a real
subprocess over stdio, a scripted model (one real-model smoke test at the end)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.helpers import resource_link_block, text_block

from tests.helpers import tool_call
from tests.run.acp.client import Recorder, drive

EDIT = tool_call("edit_file", path="notes.txt", old="hello", new="goodbye")


def _script(path: Path, *steps: str | dict[str, Any]) -> Path:
    lines = [json.dumps(s if isinstance(s, dict) else {"completion": s}) for s in steps]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _one_prompt(ws: Path, text: str = "fix the notes"):
    async def body(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(ws), mcp_servers=[])
        return new, await conn.prompt(session_id=new.session_id, prompt=[text_block(text)])

    return body


def test_streamed_chunks_and_an_allowed_edit_with_its_diff(workspace: Path, tmp_path: Path) -> None:
    script = _script(tmp_path / "s.jsonl", {"chunks": ["Let me ", "fix ", "it.\n", EDIT]}, "Done.")
    client = Recorder(answer="allow")
    new, reply = drive(
        client, _one_prompt(workspace), "--model", f"scripted:{script}", stderr=tmp_path / "err"
    )
    assert reply.stop_reason == "end_turn"
    assert new.modes.current_mode_id == "ask"
    chunks = client.of("agent_message_chunk")
    assert len(chunks) >= 3  # streamed, not one message at the end
    assert client.text().startswith("Let me fix it.") and client.text().endswith("Done.")
    (start,) = client.of("tool_call")
    path = str(workspace.resolve() / "notes.txt")
    assert (start.kind, start.status, start.title) == ("edit", "pending", "edit_file notes.txt")
    assert [loc.path for loc in start.locations] == [path]
    (diff,) = start.content
    assert (diff.type, diff.path) == ("diff", path)
    assert (diff.old_text, diff.new_text) == ("hello from bosun\n", "goodbye from bosun\n")
    (asked,) = client.asked  # mode ask: the edit asked first, with the same diff
    assert asked.tool_call_id == start.tool_call_id and asked.content[0].new_text == diff.new_text
    done = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert [u.status for u in done] == ["completed"]
    assert (workspace / "notes.txt").read_text() == "goodbye from bosun\n"
    kinds = client.kinds()
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    assert "Traceback" not in (tmp_path / "err").read_text()


def test_a_rejected_edit_leaves_the_file_and_ends_the_turn(workspace: Path, tmp_path: Path) -> None:
    script = _script(tmp_path / "s.jsonl", {"chunks": ["Editing.\n", EDIT]})
    client = Recorder(answer="reject")
    _, reply = drive(
        client, _one_prompt(workspace), "--model", f"scripted:{script}", stderr=tmp_path / "err"
    )
    assert reply.stop_reason == "end_turn"
    assert len(client.asked) == 1
    (done,) = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert done.status == "failed" and "declined" in done.content[-1].content.text
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"


def test_allow_always_asks_once_for_two_edits(workspace: Path, tmp_path: Path) -> None:
    second = tool_call("edit_file", path="notes.txt", old="bosun", new="the editor")
    script = _script(tmp_path / "s.jsonl", EDIT, second, "Both done.")
    client = Recorder(answer="always")
    _, reply = drive(
        client, _one_prompt(workspace), "--model", f"scripted:{script}", stderr=tmp_path / "err"
    )
    assert reply.stop_reason == "end_turn"
    assert len(client.asked) == 1
    assert (workspace / "notes.txt").read_text() == "goodbye from the editor\n"


def test_cancel_mid_turn_stops_the_stream(workspace: Path, tmp_path: Path) -> None:
    words = [f"word{i} " for i in range(200)]
    script = _script(tmp_path / "s.jsonl", {"chunks": words, "delay_ms": 50})
    client = Recorder()

    async def body(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        turn = asyncio.create_task(
            conn.prompt(session_id=new.session_id, prompt=[text_block("talk")])
        )
        await asyncio.wait_for(client.first_text.wait(), 30)
        await conn.cancel(session_id=new.session_id)
        loop = asyncio.get_running_loop()
        start = loop.time()
        reply = await asyncio.wait_for(turn, 10)
        return reply, loop.time() - start

    reply, waited = drive(client, body, "--model", f"scripted:{script}", stderr=tmp_path / "err")
    assert reply.stop_reason == "cancelled"
    assert waited < 5  # the rest of the stream would take 10 s
    assert "word199" not in client.text()


def test_cancel_while_the_editor_is_asked(workspace: Path, tmp_path: Path) -> None:
    """The editor answers a pending permission with "cancelled" after session/cancel:
    the call does not run and the turn ends cancelled."""
    script = _script(tmp_path / "s.jsonl", EDIT)
    client = Recorder(answer="cancelled")
    _, reply = drive(
        client, _one_prompt(workspace), "--model", f"scripted:{script}", stderr=tmp_path / "err"
    )
    assert reply.stop_reason == "cancelled"
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"


def test_a_loaded_session_replays_and_continues(workspace: Path, tmp_path: Path) -> None:
    first = _script(tmp_path / "a.jsonl", "I will remember the walrus.")
    client = Recorder()
    new, reply = drive(
        client,
        _one_prompt(workspace, "remember the walrus"),
        "--model",
        f"scripted:{first}",
        stderr=tmp_path / "err",
    )
    assert reply.stop_reason == "end_turn"
    # A new process: the only answer it has needs the first turn in the prompt.
    second = _script(
        tmp_path / "b.jsonl",
        {"match": "I will remember the walrus.", "completion": "You said walrus."},
    )
    again = Recorder()

    async def body(conn: Any) -> Any:
        await conn.load_session(cwd=str(workspace), session_id=new.session_id, mcp_servers=[])
        return await conn.prompt(session_id=new.session_id, prompt=[text_block("what word?")])

    reply = drive(again, body, "--model", f"scripted:{second}", stderr=tmp_path / "err")
    # the SDK hands notifications to tasks, so the replay is seen in order, not by the
    # time the load's answer is: it comes first
    assert [(u.session_update, u.content.text) for u in again.updates[:2]] == [
        ("user_message_chunk", "remember the walrus"),
        ("agent_message_chunk", "I will remember the walrus."),
    ]
    assert reply.stop_reason == "end_turn"
    assert again.text().endswith("You said walrus.")


def test_editor_buffers_win_over_the_disk_and_writes_go_through_the_editor(
    workspace: Path, tmp_path: Path
) -> None:
    notes = str(workspace.resolve() / "notes.txt")
    plan = tool_call(
        "update_plan",
        plan=[
            {"step": "read the notes", "status": "completed"},
            {"step": "write the answer", "status": "in_progress"},
        ],
    )
    script = _script(
        tmp_path / "s.jsonl",
        tool_call("read_file", path="notes.txt"),
        plan,
        tool_call("write_file", path="answer.txt", content="seen\n"),
        "Done.",
    )
    client = Recorder(buffers={notes: "unsaved words\n"})
    _, reply = drive(
        client,
        _one_prompt(workspace, "read it"),
        "--model",
        f"scripted:{script}",
        "--approve",
        "auto",
        stderr=tmp_path / "err",
    )
    assert reply.stop_reason == "end_turn"
    read = [u for u in client.of("tool_call_update") if u.tool_call_id == "call_1"][-1]
    assert "unsaved words" in read.content[-1].content.text
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"  # disk untouched
    (plan_update,) = client.of("plan")
    assert [(e.content, e.status) for e in plan_update.entries] == [
        ("read the notes", "completed"),
        ("write the answer", "in_progress"),
    ]
    answer = str(workspace.resolve() / "answer.txt")
    assert client.written == {answer: "seen\n"}
    (write,) = [u for u in client.of("tool_call") if u.tool_call_id == "call_3"]
    assert write.content[0].old_text is None and write.content[0].new_text == "seen\n"


def test_a_mode_switch_lets_edits_run_unasked(workspace: Path, tmp_path: Path) -> None:
    script = _script(tmp_path / "s.jsonl", EDIT, "Done.")
    client = Recorder(answer="reject")

    async def body(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=new.session_id, mode_id="auto-edit")
        return await conn.prompt(session_id=new.session_id, prompt=[text_block("edit")])

    reply = drive(client, body, "--model", f"scripted:{script}", stderr=tmp_path / "err")
    assert reply.stop_reason == "end_turn" and client.asked == []
    assert (workspace / "notes.txt").read_text() == "goodbye from bosun\n"


def test_paths_outside_the_workspace_are_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n", encoding="utf-8")
    script = _script(
        tmp_path / "s.jsonl", tool_call("read_file", path=str(outside)), "Could not read it."
    )
    client = Recorder(buffers={})

    async def body(conn: Any) -> Any:
        errors = []
        for bad in ("relative/dir", str(tmp_path / "missing")):
            with pytest.raises(RequestError) as caught:
                await conn.new_session(cwd=bad, mcp_servers=[])
            errors.append(caught.value.code)
        with pytest.raises(RequestError) as caught:
            await conn.load_session(cwd=str(workspace), session_id="../../etc/passwd")
        errors.append(caught.value.code)
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        link = resource_link_block("secret", f"file://{outside}")
        with pytest.raises(RequestError) as caught:
            await conn.prompt(session_id=new.session_id, prompt=[text_block("x"), link])
        errors.append(caught.value.code)
        reply = await conn.prompt(session_id=new.session_id, prompt=[text_block("read it")])
        return errors, reply

    errors, reply = drive(
        client, body, "--model", f"scripted:{script}", "--approve", "auto", stderr=tmp_path / "err"
    )
    assert errors == [-32602] * 4
    assert reply.stop_reason == "end_turn"
    (result,) = [u for u in client.of("tool_call_update") if u.status == "failed"]
    assert "outside the workspace" in result.content[-1].content.text
    assert client.reads == []  # the editor was never asked for it
    assert "secret" not in client.text()
    assert "Traceback" not in (tmp_path / "err").read_text()


@pytest.mark.model
def test_smollm2_answers_a_prompt_over_acp(workspace: Path, tmp_path: Path) -> None:
    client = Recorder()
    _, reply = drive(
        client,
        _one_prompt(workspace, "Say hello in one short sentence."),
        "--model",
        "smollm2-135m",
        "--approve",
        "read-only",
        "--max-turns",
        "2",
        stderr=tmp_path / "err",
        timeout=300,
    )
    assert reply.stop_reason in ("end_turn", "max_turn_requests")
    assert client.of("agent_message_chunk") or client.of("tool_call")
    assert "Traceback" not in (tmp_path / "err").read_text()


def test_the_editors_mcp_server_is_started_as_bosuns_own(workspace: Path, tmp_path: Path) -> None:
    from acp import schema as s

    from tests.mcp.helpers import pypi_server

    script = _script(
        tmp_path / "s.jsonl", tool_call("clock__get_current_time", timezone="UTC"), "It is now."
    )
    client = Recorder(answer="allow")
    server = s.McpServerStdio(name="clock", command=pypi_server("mcp-server-time"), args=[], env=[])

    async def body(conn: Any) -> Any:
        new = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        return await conn.prompt(session_id=new.session_id, prompt=[text_block("time?")])

    reply = drive(client, body, "--model", f"scripted:{script}", stderr=tmp_path / "err")
    assert reply.stop_reason == "end_turn"
    (start,) = client.of("tool_call")
    assert (start.title, start.kind) == ("clock__get_current_time", "other")
    assert len(client.asked) == 1  # an MCP tool asks unless its server is trusted
    (done,) = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    assert done.status == "completed" and '"timezone": "UTC"' in done.content[-1].content.text
