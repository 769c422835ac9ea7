"""A hostile model: arguments nested thousands deep, bracket walls in prose, lone
surrogates, a thousand calls in one reply, writes aimed at `.git/`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.parsing import parse_tool_calls
from agent.parsing.shapes import SHAPES, write_call
from agent.untrusted import MAX_DEPTH, check_depth, json_line, loads
from tests.helpers import make_agent, tool_call
from tests.hostile.conftest import RunBosun

DEEP = 5000
MARK = "DEEPVALUEMARK"


def deep_json(depth: int = DEEP) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def deep_call_text(fmt: str, depth: int = DEEP) -> str:
    """A call in `fmt` whose one argument is nested `depth` deep, written as the format
    writes a value (quoted in JSON formats, raw in XML-like ones)."""
    text = write_call(fmt, "read_file", {"path": MARK})
    assert text is not None and MARK in text, fmt
    return text.replace(json.dumps(MARK), deep_json(depth)).replace(MARK, deep_json(depth))


# -- class 6: nesting --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_every_format_survives_arguments_nested_5000_deep(fmt: str) -> None:
    for text in (deep_call_text(fmt), "[" * DEEP + "]" * DEEP, "(" * DEEP + ")" * DEEP):
        result = parse_tool_calls(text, ["read_file"], format=fmt)  # must not raise
        for call in result.calls:
            json_line(call.arguments)  # and what it gives back can be written


def test_hermes_and_salvage_survive_deep_prose_and_bare_json() -> None:
    for text in (
        "[" * 1000 + "]" * 1000,
        "{" * 1000 + "}" * 1000,
        '{"name": "read_file", "arguments": ' + deep_json() + "}",
        "```json\n" + deep_json() + "\n```",
        tool_call("read_file", path="x").replace('"x"', deep_json()),
    ):
        result = parse_tool_calls(text, ["read_file"])
        assert not result.calls or all(c.name == "read_file" for c in result.calls)


def test_the_depth_bound_is_one_linear_pass_and_strings_do_not_count() -> None:
    check_depth('{"a": "' + "[" * 10_000 + '"}')  # brackets inside a string
    with pytest.raises(ValueError, match="deeper than"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_a_deep_call_in_a_run_is_an_error_result_for_the_model(
    bosun: RunBosun, workspace: Path
) -> None:
    deep = tool_call("read_file", path="x").replace('"x"', deep_json())
    run = bosun([deep, "[" * 1000 + "]" * 1000])
    run.assert_no_bug()
    assert run.code == 0 and run.result["status"] == "done"
    assert not any(e.get("type") == "tool_call" for e in run.events)


# -- class 7: lone surrogates --------------------------------------------------------------


def test_lone_surrogates_in_arguments_and_prose_reach_the_session_file(
    bosun: RunBosun, workspace: Path
) -> None:
    call = '<tool_call>\n{"name": "write_file", "arguments": {"path": "s\\ud800.txt", '
    call += '"content": "x\\udc00y"}}\n</tool_call>'
    steps: list[str | dict[str, object]] = [
        call,
        {"chunks": ["half a pair \ud83d", "\ude00 then a lone \udfff end"]},
    ]
    run = bosun(steps, "--approve", "auto-edit")  # run_bosun reads the session back as UTF-8
    run.assert_no_bug()
    assert run.code == 0 and run.result["status"] == "done"
    assert (workspace / "s\ufffd.txt").read_text() == "x\ufffdy"
    messages = [r for r in run.session if r.get("type") == "message"]
    assert messages and "\ufffd" in json.dumps(messages, ensure_ascii=False)


def test_json_lines_cannot_fail_on_what_they_are_given() -> None:
    assert json.loads(json_line({"a": "\ud800", "\udfff": ["\udc00"]})) == {
        "a": "\ufffd",
        "\ufffd": ["\ufffd"],
    }
    nested: list[object] = []
    for _ in range(DEEP):
        nested = [nested]
    assert "unwritable" in json.loads(json_line({"x": nested}))


# -- class 9: budgets per call -------------------------------------------------------------


def test_a_thousand_calls_in_one_reply_run_to_the_budget_and_no_further(
    bosun: RunBosun, workspace: Path
) -> None:
    reply = "".join(tool_call("write_file", path=f"f{i}.txt", content="x") for i in range(1000))
    run = bosun([reply, "done"], "--approve", "auto-edit")
    run.assert_no_bug()
    assert run.code == 3, run.result
    written = sorted(workspace.glob("f*.txt"))
    assert len(written) == 200
    results = run.results()
    assert len(results) == 1000
    assert all("budget of 200 tool calls" in r["content"] for r in results[200:])


# -- class 11: .git ------------------------------------------------------------------------

GIT_PATHS = [
    ".git/config",
    "./.git/hooks/pre-commit",
    "sub/../.git/config",
    "vendor/lib/.git/config",  # a nested repository's
    "gitdir/config",  # a symlink to .git
]


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "sub").mkdir()
    (workspace / "vendor" / "lib" / ".git").mkdir(parents=True)
    (workspace / "gitdir").symlink_to(".git")
    return workspace


@pytest.mark.parametrize("path", GIT_PATHS)
def test_auto_edit_asks_before_writing_into_git(bosun: RunBosun, repo: Path, path: str) -> None:
    evil = "[core]\n\tfsmonitor = touch /tmp/pwned\n"
    run = bosun(
        [tool_call("write_file", path=path, content=evil), "done"], "--approve", "auto-edit"
    )
    run.assert_no_bug()
    (result,) = run.results()
    assert result["is_error"] and ".git/" in result["content"], result
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_auto_writes_into_git_and_ordinary_files_need_no_asking(
    bosun: RunBosun, repo: Path
) -> None:
    steps = [tool_call("edit_file", path=".git/config", old="[core]", new="[core] # ok"), "done"]
    assert bosun(steps, "--approve", "auto").results()[0]["is_error"] is False
    steps = [tool_call("write_file", path="src/.gitkeep", content=""), "done"]
    assert bosun(steps, "--approve", "auto-edit").results()[0]["is_error"] is False


def test_always_for_edits_is_not_always_for_git(repo: Path) -> None:
    agent, _, _ = make_agent(
        [
            tool_call("write_file", path="a.txt", content="1"),
            tool_call("write_file", path=".git/config", content="x"),
            "done",
        ],
        repo,
        approve="ask",
    )
    asked: list[str] = []

    def approver(call: object, tool: object) -> str:
        asked.append(call.arguments["path"])  # type: ignore[attr-defined]
        return "always" if len(asked) == 1 else "no"

    agent.approver = approver
    agent.run("go")
    assert asked == ["a.txt", ".git/config"]
    assert (repo / ".git" / "config").read_text() == "[core]\n"


BRACED_LISTS = ["call:f{a:[1}", "call:f{a:[}]}", "call:f{a:[[}]]}", "call:f{a:[1,}"]


@pytest.mark.parametrize("body", BRACED_LISTS)
def test_a_gemma4_list_closed_by_a_brace_is_malformed_not_a_hang(body: str) -> None:
    """Found by the property tests: `[1}` left the list reader where it was, forever,
    appending empty items (a model's typo must never hang bosun or fill its memory)."""
    from agent.parsing.decoders_text import gemma4

    (item,) = gemma4(body, True)
    assert isinstance(item, str) and "malformed" in item


# -- size: one reply is bounded before anything parses it whole ----------------------


def _fifty_megabyte_call(workspace: Path, chunked: bool) -> dict[str, object]:
    call = tool_call("write_file", path="big.txt", content="x" * 50_000_000)
    step: dict[str, object] = {"completion": call}
    if chunked:  # as a server streams it: 1 MB at a time
        step["chunks"] = [call[i : i + 1_000_000] for i in range(0, len(call), 1_000_000)]
    agent, driver, _ = make_agent([step, "ok"], workspace)
    del call, step
    result = agent.run("write it")
    second = driver.calls[1].prompt if len(driver.calls) > 1 else ""
    return {
        "status": str(result.status),
        "written": (workspace / "big.txt").exists(),
        "told": "was cut off there" in second,
        "prompt_chars": len(second),
    }


@pytest.mark.parametrize("chunked", [False, True], ids=["one-piece", "streamed"])
def test_a_50_mb_argument_is_cut_off_not_parsed(workspace: Path, chunked: bool) -> None:
    from agent.loop.turn import MAX_REPLY_CHARS
    from tests.hostile.contain import contained

    # Before the bound the run took 6 GB; the input alone is about 150 MB of copies here.
    out = contained(lambda: _fifty_megabyte_call(workspace, chunked), seconds=60, memory_mb=900)
    assert not out.error and not out.timed_out and not out.died, out
    assert out.value["written"] is False and out.value["told"] is True, out
    assert out.value["prompt_chars"] < 2 * MAX_REPLY_CHARS, out
