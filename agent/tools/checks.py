"""The commands of the lint/test loop (`lint_cmd`, `test_cmd`): read from config, run
under the sandbox policy, and refused where they came from the repository itself.

Both run through `agent.tools.shell.run_command`, the runner bash uses: the same
bubblewrap policy, process-group kill at the time limit, bounded output. A command
from the workspace's `.bosun.toml` is repository content, like a command a model
proposes, so it runs unasked only where the model's bash would (`permissions.decision`
for the shell: in the sandbox with auto-edit, or in auto mode); the user's own file and
flags are the user's word and always run (under the sandbox, where there is one).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.errors import UsageError
from agent.tools.permissions import decision

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

FEEDBACK_BYTES = 4096  # of a check's output, for the model: the head and the tail
NOT_FOUND = (126, 127)  # the shell's "cannot execute" and "command not found"
ALL = "*"
FILES = "{files}"
# A language name in `lint_cmd` stands for its usual file extensions.
LANGUAGES: dict[str, tuple[str, ...]] = {
    "python": ("py", "pyi"),
    "javascript": ("js", "mjs", "cjs", "jsx"),
    "typescript": ("ts", "tsx", "mts", "cts"),
    "go": ("go",),
    "rust": ("rs",),
    "ruby": ("rb",),
    "java": ("java",),
    "c": ("c", "h"),
    "cpp": ("cc", "cpp", "cxx", "hpp", "hh"),
    "shell": ("sh", "bash"),
}
_PLAIN = re.compile(r"[A-Za-z0-9_./]")  # a first character no tool reads as an option
_KEY = re.compile(r"[A-Za-z0-9_+-]{1,20}")
_FLAG = re.compile(r"\A\s*\.?([A-Za-z0-9_+-]{1,20})\s*:\s*(\S.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class CheckCmd:
    """One configured command: for lint, the files (by extension) it applies to."""

    command: str
    origin: str = "user"  # user | workspace | flag: who wrote it (see the docstring)
    ext: str = ALL  # lint only: "py", or "*" for every file


def _command(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise UsageError(f"{where} must be a command line (a non-empty string)")
    return value.strip()


def _extensions(key: str, where: str) -> tuple[str, ...]:
    name = key.strip().lower().lstrip(".")
    if name == ALL:
        return (ALL,)
    if not _KEY.fullmatch(name):
        raise UsageError(f"{where}: {key!r} is not a file extension or a language")
    return LANGUAGES.get(name, (name,))


def parse_lint_cmd(value: Any, where: str, origin: str = "user") -> tuple[CheckCmd, ...]:
    """`lint_cmd = "cmd"` (every file) or a table `[lint_cmd] py = "cmd"` keyed by file
    extension or language name (`python`, `typescript`, …)."""
    if isinstance(value, str):
        return (CheckCmd(_command(value, where), origin),)
    if not isinstance(value, dict) or not value:
        raise UsageError(f'{where} must be a command or a table such as {{ py = "ruff check" }}')
    out: list[CheckCmd] = []
    for key, command in value.items():
        line = _command(command, f"{where}.{key}")
        out += [CheckCmd(line, origin, ext) for ext in _extensions(key, where)]
    return merge_lint((), out)


def parse_test_cmd(value: Any, where: str, origin: str = "user") -> CheckCmd:
    return CheckCmd(_command(value, where), origin)


def lint_flags(values: Iterable[str]) -> tuple[CheckCmd, ...]:
    """`--lint-cmd "py: ruff check"` (repeatable) or `--lint-cmd "cmd"` for every file."""
    out: list[CheckCmd] = []
    for value in values:
        match = _FLAG.match(value)
        if match is None:
            out.append(CheckCmd(_command(value, "--lint-cmd"), "flag"))
            continue
        line = _command(match.group(2), "--lint-cmd")
        out += [CheckCmd(line, "flag", e) for e in _extensions(match.group(1), "--lint-cmd")]
    return merge_lint((), out)


def merge_lint(base: Iterable[CheckCmd], over: Iterable[CheckCmd]) -> tuple[CheckCmd, ...]:
    """`over`'s commands replace `base`'s for the same extension; the rest stay."""
    table = {c.ext: c for c in base}
    table.update({c.ext: c for c in over})
    return tuple(table.values())


def refused(cmd: CheckCmd, approve: str, sandbox: SandboxPolicy | None) -> str | None:
    """Why a configured command may not run unasked here; None when it may."""
    if cmd.origin != "workspace":
        return None
    if decision(approve, "shell", sandboxed=sandbox is not None) == "allow":
        return None
    return (
        f"not run: {cmd.command!r} comes from the workspace's .bosun.toml, and a command"
        " from the repository runs unasked only where bash would (in the sandbox with"
        " approve auto-edit, or approve auto); set it in config.toml or pass it as a flag"
    )


def command_line(template: str, files: Iterable[str]) -> str:
    """The command with the files quoted in at `{files}`, or after it where it has none.

    The file names are the model's choice, and a command reads a word that starts with
    `-` (or `+`, `@`: a response file) as an option, not a file: `node --check` given
    a file named `--require=x.js` runs it, outside the sandbox where the command is the
    user's. So a name that starts with anything but a letter, a digit, `_` or `.` goes
    in as `./name`, which no tool reads as an option (`--` would do only for tools
    that honour it); plain names stay as they are, as the linter will print them."""
    quoted = shlex.join(as_path(f) for f in files)
    if FILES in template:
        return template.replace(FILES, quoted)
    return f"{template} {quoted}".rstrip()


def as_path(name: str) -> str:
    """A workspace file name as a word that can only be a path."""
    return name if _PLAIN.match(name) else f"./{name}"


def bounded(text: str, limit: int = FEEDBACK_BYTES) -> str:
    """At most `limit` bytes of `text` (UTF-8), the head and the longer tail kept (the
    error is usually at the end), the cut said in the middle."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    head, tail = limit // 4, limit - limit // 4
    cut = len(data) - head - tail
    middle = f"\n[... {cut} bytes cut ...]\n".encode()
    return (data[:head] + middle + data[-tail:]).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Ran:
    """One run of a check command."""

    command: str
    status: int | None  # None: the time limit killed it
    output: str  # bounded to FEEDBACK_BYTES
    ms: int

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def missing(self) -> bool:
        """The shell could not find or execute it: a config mistake, not the code's."""
        return self.status in NOT_FOUND

    def said(self, timeout: float) -> str:
        """How it ended, in a few words."""
        if self.status is None:
            return f"did not finish within {timeout:g} s and was killed"
        if self.missing:
            return f"could not be run (exit {self.status}: not found or not executable)"
        return "passed" if self.ok else f"failed (exit {self.status})"


def run_check(command: str, workspace: Path, timeout: float, sandbox: SandboxPolicy | None) -> Ran:
    """`command` in the workspace under the policy (None: as the user), like bash."""
    from agent.tools.shell import run_command

    start = time.perf_counter()
    output, status = run_command(command, workspace, timeout, sandbox)
    ms = round((time.perf_counter() - start) * 1000)
    return Ran(command, status, bounded(output.rstrip("\n")), ms)
