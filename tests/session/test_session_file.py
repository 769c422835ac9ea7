"""Session files: format compatibility, torn lines at every byte, `--continue` lookup."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent import events as ev
from agent.history import (
    Assistant,
    AssistantToolUse,
    System,
    ToolCall,
    ToolResult,
    User,
    message_to_dict,
)
from agent.session import (
    SessionLog,
    drop_torn_tail,
    last_call_number,
    latest_session,
    load_messages,
    load_session,
    read_records,
    unanswered_calls,
)

HISTORY = [
    System("You are bosun."),
    User("What does notes.txt say? ü"),
    AssistantToolUse(ToolCall("call_1", "read_file", {"path": "notes.txt"})),
    ToolResult("call_1", "1\thello from bosun"),
    Assistant("It says hello — in Ünïcode too."),
]


def write_session(folder: Path, session_id: str = "s1", workspace: str = "/w") -> Path:
    log = SessionLog(session_id, folder)
    log.event(ev.SessionStarted(session_id, "scripted", workspace))
    for message in HISTORY:
        log.message(message)
        log.event(ev.TextDelta("not stored"))
    log.event(ev.RunFinished("done", 1, 1, 10, 5, 3, 7, "It says hello"))
    log.close()
    return log.path


def test_format_is_the_documented_one(tmp_path: Path) -> None:
    path = write_session(tmp_path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0] == {"type": "session", "id": "s1", "model": "scripted", "workspace": "/w"}
    assert records[1] == {"type": "message", "message": message_to_dict(HISTORY[0])}
    assert all(r["type"] != "text" for r in records)
    assert records[-1]["type"] == "result"


def test_a_torn_file_loads_a_prefix_at_every_cut(tmp_path: Path) -> None:
    """Truncating the file at any byte (a kill mid-write) never raises and never loses
    a message whose line was complete."""
    data = write_session(tmp_path).read_bytes()
    torn = tmp_path / "torn.jsonl"
    complete = 0
    for cut in range(len(data) + 1):
        torn.write_bytes(data[:cut])
        loaded = load_messages(torn)
        whole_lines = data[:cut].count(b"\n")
        complete = sum(
            1 for line in data.split(b"\n")[:whole_lines] if b'"type": "message"' in line
        )
        assert loaded == HISTORY[: len(loaded)]
        assert len(loaded) >= complete  # a torn but whole JSON object counts too
    assert complete == len(HISTORY)


def test_reopening_a_torn_file_appends_cleanly(tmp_path: Path) -> None:
    path = write_session(tmp_path)
    data = path.read_bytes()
    for cut in (len(data) - 5, len(data) - 1, data.index(b"It says") + 3):
        path.write_bytes(data[:cut])
        before = load_messages(path)
        log = SessionLog("s1", tmp_path)
        log.message(User("more"))
        log.close()
        assert load_messages(path) == [*before, User("more")]
        assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_whole_record_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "message", "message": message_to_dict(User("a"))}))
    drop_torn_tail(path)
    assert path.read_text().endswith("}\n")
    assert load_messages(path) == [User("a")]


def test_damage_in_the_middle_is_reported(tmp_path: Path) -> None:
    path = write_session(tmp_path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:10]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 3"):
        load_messages(path)


def test_load_session_reads_metadata(tmp_path: Path) -> None:
    stored = load_session(write_session(tmp_path, "abc", "/some/ws"))
    assert (stored.id, stored.model, stored.workspace) == ("abc", "scripted", "/some/ws")
    assert stored.messages == HISTORY


def test_latest_session_is_per_workspace_and_by_recency(tmp_path: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    folder = tmp_path / "sessions"
    old = write_session(folder, "20200101-000000-aaaaaa", str(ws_a))
    write_session(folder, "20200102-000000-bbbbbb", str(ws_b))
    new = write_session(folder, "20200103-000000-cccccc", str(ws_a))
    assert latest_session(ws_a, folder) == new
    later = time.time() + 10
    os.utime(old, (later, later))  # the old one was resumed and written to since
    assert latest_session(ws_a, folder) == old
    assert latest_session(tmp_path, folder) is None


def test_unanswered_calls_and_numbering() -> None:
    calls = [
        AssistantToolUse(ToolCall("call_3", "read_file", {})),
        AssistantToolUse(ToolCall("salvage-7", "list_dir", {}, salvaged=True)),
        ToolResult("call_3", "ok"),
    ]
    assert [c.id for c in unanswered_calls(calls)] == ["salvage-7"]
    assert last_call_number(calls) == 7
    assert last_call_number([]) == 0


def test_old_files_without_a_session_record_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(
        "\n".join(json.dumps({"type": "message", "message": message_to_dict(m)}) for m in HISTORY)
    )
    assert load_session(path).messages == HISTORY
    assert len(read_records(path)) == len(HISTORY)
