"""A file name the model chose is never an option of the lint command: the linter is the
user's (run unasked, outside the sandbox where there is none), and a file named
`--require=x.js` given to `node --check` would run the model's code through it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hostile.conftest import RunBosun

# A linter of the usual kind, where `--exec=FILE`, `@FILE` and `+FILE` run FILE (as
# node's --require, gcc's @file, vim's +cmd do something of their own) and `-` is stdin.
FAKE_LINTER = """\
for word in "$@"; do
  case "$word" in
    --exec=*) sh "${word#--exec=}" ;;
    @*) sh "${word#@}" ;;
    +*) sh "${word#+}" ;;
    -) echo "no such file: read stdin instead"; exit 1 ;;
    -*) ;;
    *) [ -f "$word" ] || { echo "no such file: $word"; exit 1; } ;;
  esac
done
"""


def write(path: str, content: str) -> str:
    arguments = json.dumps({"path": path, "content": content})
    return f'<tool_call>{{"name": "write_file", "arguments": {arguments}}}</tool_call>'


def lint_run(bosun: RunBosun, workspace: Path, steps: list[str], lint_cmd: str) -> list[str]:
    run = bosun(
        [*steps, "done"],
        "--approve",
        "auto-edit",
        "--sandbox",
        "off",
        "--lint-cmd",
        lint_cmd,
        "--auto-lint",
    )
    run.assert_no_bug()
    assert run.result["status"] == "done", run.stderr
    return [e["content"] for e in run.results()]


@pytest.mark.parametrize("name", ["--exec=evil.sh", "-", "@evil.sh", "+evil.sh"])
def test_a_file_name_reaches_the_linter_as_a_path(
    bosun: RunBosun, workspace: Path, name: str
) -> None:
    (workspace / "lint.sh").write_text(FAKE_LINTER)
    steps = [write("evil.sh", "echo pwned > pwned.txt\n"), write(name, "x = 1\n")]
    results = lint_run(bosun, workspace, steps, "sh lint.sh {files}")
    assert not (workspace / "pwned.txt").exists(), results
    assert (workspace / name).read_text() == "x = 1\n"
    assert not any("no such file" in r for r in results), results  # read as a path: found


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_check_does_not_require_a_module_named_by_a_file(
    bosun: RunBosun, workspace: Path
) -> None:
    steps = [
        write("node_modules/x.js", 'require("fs").writeFileSync("pwned.txt", "x")\n'),
        write("--require=x.js", "let a = 1\n"),
    ]
    lint_run(bosun, workspace, steps, "js: node --check {files}")
    assert not (workspace / "pwned.txt").exists()
