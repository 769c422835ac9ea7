"""The ranking: PageRank over who-uses-what, personalised, and a map that fits its budget."""

from __future__ import annotations

from pathlib import Path

from agent.tools.repomap import repo_map
from agent.tools.repomap.rank import pagerank
from agent.tools.repomap.render import approx_tokens


def test_pagerank_on_a_small_graph() -> None:
    edges = {"a": {"c": 1.0}, "b": {"c": 1.0}, "c": {"a": 1.0}}
    rank = pagerank(["a", "b", "c"], edges, {})
    assert abs(sum(rank.values()) - 1) < 1e-6
    assert rank["c"] > rank["a"] > rank["b"]
    personal = pagerank(["a", "b", "c"], edges, {"b": 1.0})
    assert personal["b"] > rank["b"]


def _project(ws: Path) -> None:
    ws.mkdir(exist_ok=True)
    (ws / "core.py").write_text("def parse_config(text):\n    return text\n")
    (ws / "other.py").write_text("def render_page(page):\n    return page\n")
    for k in range(4):
        (ws / f"user{k}.py").write_text(
            f"from core import parse_config\n\ndef job_{k}():\n    return parse_config('x')\n"
        )
    (ws / "view.py").write_text("from other import render_page\n\nrender_page(1)\n")


def test_what_the_code_uses_most_comes_first(tmp_path: Path) -> None:
    _project(tmp_path / "ws")
    ranked = repo_map(tmp_path / "ws").ranked
    assert ranked[0].name == "parse_config"
    assert ranked.index(next(r for r in ranked if r.name == "render_page")) == 1


def test_the_sessions_files_and_mentions_move_their_definitions_up(tmp_path: Path) -> None:
    _project(tmp_path / "ws")
    plain = [r.name for r in repo_map(tmp_path / "ws").ranked]
    touched = [r.name for r in repo_map(tmp_path / "ws", personal={"user2.py": 1.0}).ranked]
    assert plain.index("job_2") > touched.index("job_2")
    assert touched.index("job_2") < touched.index("render_page")
    said = [r.name for r in repo_map(tmp_path / "ws", mentioned={"render_page"}).ranked]
    assert said[0] == "render_page"


def test_the_map_fits_its_budget_and_fills_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(60):
        (ws / f"mod{k}.py").write_text(
            "".join(f"def function_{k}_{j}(a, b):\n    return a\n\n" for j in range(10))
        )
    found = repo_map(ws)
    for budget in (50, 200, 1000):
        text = found.text(budget)
        assert 0 < approx_tokens(text) <= budget
        # one more definition would not have fitted
        assert approx_tokens(text) > budget - 40, (budget, approx_tokens(text))
    assert found.text(0) == ""
    assert "(60 of 60 files shown)" not in found.text(200)


def test_a_cached_file_is_parsed_again_once_it_changes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def first():\n    pass\n")
    assert repo_map(ws).scan.parsed == 1
    again = repo_map(ws)
    assert again.scan.parsed == 0 and {r.name for r in again.ranked} == {"first"}
    (ws / "a.py").write_text("def second_one():\n    pass\n")
    changed = repo_map(ws)
    assert changed.scan.parsed == 1 and {r.name for r in changed.ranked} == {"second_one"}
