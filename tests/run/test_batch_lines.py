"""`bosun run --tasks`: a tasks file's bad lines fail alone (or, --strict, refuse the
file), and every one is named by file and line before any model is loaded."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.run.batch import load_tasks, run_tasks
from agent.run.models import open_model
from drivers.base import UsageError
from tests.run.batch_helpers import SCRIPT, FakeDriver, by_task, options, run, write_tasks


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "no tasks in {path}"),
        (['{"id": "a", "prompt": "p"}', "{not json"], "{path}:2: not valid JSON"),
        (["[1, 2]"], "{path}:1: expected a JSON object"),
        (['{"prompt": "p"}'], '{path}:1: every task needs an "id"'),
        (['{"id": "", "prompt": "p"}'], '{path}:1: every task needs an "id"'),
        (['{"id": "a"}'], "{path}:1: task 'a' needs a \"prompt\""),
        (['{"id": "a", "prompt": "  "}'], "{path}:1: task 'a' needs a \"prompt\""),
        (
            ['{"id": "a", "prompt": "p"}', "", '{"id": "a", "prompt": "q"}'],
            "{path}:3: duplicate task id 'a' (first on line 1)",
        ),
        (
            ['{"id": "a", "prompt": "p", "workspace": "nowhere"}'],
            "{path}:1: task 'a': workspace does not exist: ",
        ),
        (['{"id": "a", "prompt": "p", "max_turn": 3}'], "{path}:1: unknown key(s) max_turn"),
        (
            ['{"id": "a", "prompt": "p", "max_turns": 0}'],
            "{path}:1: 'max_turns' must be a positive",
        ),
        (
            ['{"id": "a", "prompt": "p", "max_turns": true}'],
            "{path}:1: 'max_turns' must be a positive",
        ),
        (
            ['{"id": "a", "prompt": "p", "approve": "yolo"}'],
            '{path}:1: "approve" must be one of ask,',
        ),
    ],
)
def test_strict_bad_tasks_file_fails_before_anything_runs(
    tmp_path: Path, bosun_home: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    # The model does not exist either: the tasks file must be what is reported.
    opts = options(path, model="scripted:/nonexistent/script.jsonl", strict=True)
    out = io.StringIO()
    with pytest.raises(UsageError) as info:
        run_tasks(*opts, out=out, err=io.StringIO())
    assert str(info.value).startswith(message.format(path=path))
    assert "\n" not in str(info.value)
    assert out.getvalue() == "" and not (bosun_home / "sessions").exists()


def test_bad_lines_fail_alone_and_the_good_ones_run(tmp_path: Path, bosun_home: Path) -> None:
    path = write_tasks(
        tmp_path / "t.jsonl",
        {"id": "a", "prompt": "p"},
        "{oops",
        {"id": "b", "prompt": "q", "max_turn": 3},
        "",
        {"id": "a", "prompt": "again"},
        {"id": "c", "prompt": "r"},
    )
    code, events = run(options(path, jobs=2), driver=FakeDriver(pieces=1))
    assert code == 1
    tasks = by_task(events)
    assert set(tasks) == {"a", "c", "line 2", "line 3", "line 5"}
    assert tasks["a"][-1]["status"] == tasks["c"][-1]["status"] == "done"
    expected = {
        "line 2": f"{path}:2: not valid JSON (Expecting property name enclosed in double quotes)",
        "line 3": f"{path}:3: unknown key(s) max_turn (known: ",
        "line 5": f"{path}:5: duplicate task id 'a' (first on line 1)",
    }
    for label, message in expected.items():
        diagnostic, result = tasks[label]
        assert diagnostic["type"] == "diagnostic" and diagnostic["message"].startswith(message)
        assert result["type"] == "result" and result["status"] == "error"
        assert result["error"] == diagnostic["message"] and "\n" not in result["error"]
    summary = events[-1]
    assert (summary["tasks"], summary["done"], summary["failed"]) == (5, 2, 3)


def test_all_lines_bad_reports_them_without_loading_the_model(
    tmp_path: Path, bosun_home: Path
) -> None:
    path = write_tasks(tmp_path / "t.jsonl", "[1]", '{"id": "x"}')
    code, events = run(options(path, model="scripted:/nonexistent/script.jsonl"))
    assert code == 1
    assert [(e["type"], e.get("task")) for e in events] == [
        ("diagnostic", "line 1"),
        ("result", "line 1"),
        ("diagnostic", "line 2"),
        ("result", "line 2"),
        ("summary", None),
    ]
    assert events[-1]["failed"] == 2 and not (bosun_home / "sessions").exists()


def test_an_empty_tasks_file_is_still_a_usage_error(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "t.jsonl", "", "  ")
    with pytest.raises(UsageError, match="no tasks in"):
        run_tasks(*options(path), out=io.StringIO(), driver=FakeDriver())


def test_missing_tasks_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"tasks file not found: .*nope\.jsonl"):
        load_tasks(*options(tmp_path / "nope.jsonl"))


def test_bad_model_is_reported_after_the_tasks_check(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"})
    with pytest.raises(UsageError, match="scripted model file not found"):
        run_tasks(*options(tasks, model="scripted:/nonexistent.jsonl"), out=io.StringIO())


def test_constrain_always_without_grammar_support_is_a_usage_error(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"})
    driver = FakeDriver()
    with pytest.raises(UsageError, match="--constrain always: the fake backend takes no grammar"):
        run_tasks(*options(tasks, constrain="always"), out=io.StringIO(), driver=driver)
    assert driver.closed


def test_wire_is_only_for_servers() -> None:
    with pytest.raises(UsageError, match="--api is for openai: models"):
        open_model(f"scripted:{SCRIPT}", api="completions")
