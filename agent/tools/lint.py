"""Linting the files an edit wrote: the configured `lint_cmd` for each file's extension,
and for Python files without one, Python's own `compile()` in process.

The built-in check needs no linter installed and starts no process, so it is fast
enough for every edit and safe on any file: `compile()` parses and compiles, it never
executes. It finds what a small model most often breaks (an unclosed bracket, a lost
indent, `return` outside a function), which costs a whole turn when found by a test.
"""

from __future__ import annotations

import os
import stat
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.errors import ToolError
from agent.tools.checks import ALL, CheckCmd, bounded, command_line, refused, run_check
from agent.tools.confine import open_in_workspace

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

LINT_TIMEOUT = 60.0
MAX_COMPILE_BYTES = 2 << 20
PYTHON = ("py", "pyi")


def extension(path: str) -> str:
    return Path(path).suffix.lower().lstrip(".")


def python_check(workspace: Path, path: str) -> str | None:
    """Python's own verdict on the file: None when it compiles, else the error as
    `path:line:col: SyntaxError: …` with the line and a caret, as Python prints it."""
    try:
        fd = open_in_workspace(workspace, path, os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):  # gone, or a link out: the edit's own result says so
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_COMPILE_BYTES:
            return None
        source = os.read(fd, MAX_COMPILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        with warnings.catch_warnings():  # SyntaxWarning (a "\d"): not the point here
            warnings.simplefilter("ignore")
            compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        where = f"{path}:{exc.lineno or 1}:{exc.offset or 1}"
        text = f"{where}: {type(exc).__name__}: {exc.msg}"
        if exc.text and exc.text.strip():
            line = exc.text.rstrip("\n")
            caret = " " * max(0, (exc.offset or 1) - 1) + "^"
            text += f"\n    {line}\n    {caret}"
        return text
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return f"{path}: does not compile: {type(exc).__name__}: {exc}"
    return None


@dataclass
class LintReport:
    """What linting some files found: the problems (for the model), and what went
    wrong with the linters themselves (for the user: the model cannot fix a config)."""

    files: list[str]  # those a linter looked at
    problems: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    ms: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self) -> str:
        return bounded("\n".join(self.problems))


def lint_files(
    files: Iterable[str],
    rules: Iterable[CheckCmd],
    workspace: Path,
    *,
    approve: str,
    sandbox: SandboxPolicy | None,
    timeout: float = LINT_TIMEOUT,
    builtin: bool = True,
) -> LintReport:
    """Each file under the command for its extension (else the one for every file),
    one run per command with all its files; Python files with no command that could
    run get the built-in check (`builtin`)."""
    start = time.perf_counter()
    table = {rule.ext: rule for rule in rules}
    report = LintReport([])
    groups: dict[CheckCmd, list[str]] = {}
    compiled: list[str] = []
    for path in sorted(set(files)):
        rule = table.get(extension(path), table.get(ALL))
        if rule is not None and (why := refused(rule, approve, sandbox)) is not None:
            report.notices.append(f"lint_cmd {why}")
            rule = None
        if rule is not None:
            groups.setdefault(rule, []).append(path)
        elif builtin and extension(path) in PYTHON:
            compiled.append(path)
    for rule, paths in groups.items():
        ran = run_check(command_line(rule.command, paths), workspace, timeout, sandbox)
        if ran.ok:
            continue
        if ran.status is None or ran.missing:
            report.notices.append(f"lint_cmd {ran.command!r} {ran.said(timeout)}; not linted")
            if builtin:
                compiled += [p for p in paths if extension(p) in PYTHON]
            continue
        report.problems.append(ran.output or f"{ran.command!r} failed (exit {ran.status})")
    for path in compiled:
        problem = python_check(workspace, path)
        if problem is not None:
            report.problems.append(problem)
    report.files = sorted({*compiled, *(p for paths in groups.values() for p in paths)})
    report.ms = round((time.perf_counter() - start) * 1000)
    return report
