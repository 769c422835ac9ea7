"""The lint/test loop around a request: lint after each edit, test at its end.

With `auto_lint`, every write tool that succeeded (edit_file, write_file, apply_patch)
is followed by the linter on the files it wrote, and the problems are appended to that
call's result, so the model sees them in the same turn, where fixing them is cheapest.
With `auto_test`, a request whose turns edited files ends with the test command; a
failure goes back to the model as a user message and the request goes on, at most
`test_rounds` times. Each lint and test run is an event (`lint`, `test`).

What the model cannot fix (a linter that is not installed, a command the workspace's
config may not run here) is said to the user, once, and never sent to the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent import events as ev
from agent.errors import ToolError
from agent.history import ToolCall, ToolResult, User
from agent.tools.checks import CheckCmd, Ran, refused, run_check
from agent.tools.confine import resolve_in_workspace
from agent.tools.lint import LINT_TIMEOUT, LintReport, lint_files
from agent.tools.patch import routed
from agent.transcript import fence

if TYPE_CHECKING:
    from agent.history import Message
    from agent.loop.cancel import Cancel
    from agent.tools.orchestrator import Gate
    from agent.tools.registry import ToolRegistry


class Counts(Protocol):
    """What the loop keeps of a request (`RunState`)."""

    edited: set[str]
    test_runs: int
    declined: bool


class Agent(Protocol):
    """What the loop needs of the agent (`agent.loop.runtime.Agent`, which imports this
    module, so it is described here rather than named)."""

    @property
    def tools(self) -> ToolRegistry: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def gate(self) -> Gate: ...
    @property
    def cancel(self) -> Cancel: ...
    @property
    def state(self) -> Counts: ...
    def emit(self, event: ev.AgentEvent) -> None: ...
    def add(self, message: Message) -> None: ...


TEST_TIMEOUT = 300.0
TEST_ROUNDS = 2
LINT_SAID = "The linter reports problems in the files this edit wrote; fix them:"


@dataclass
class Checks:
    """A session's lint and test settings, and what it has edited so far (`/lint`)."""

    lint_cmd: tuple[CheckCmd, ...] = ()
    test_cmd: CheckCmd | None = None
    auto_lint: bool = False
    auto_test: bool = False
    test_rounds: int = TEST_ROUNDS  # failures sent back to the model in one request
    test_timeout: float = TEST_TIMEOUT
    lint_timeout: float = LINT_TIMEOUT
    touched: set[str] = field(default_factory=set)  # files edited in this session
    _said: set[str] = field(default_factory=set)

    def tell(self, emit: ev.Emit, notice: str) -> None:
        """A notice for the user, once a session: repeating it after every edit helps
        nobody."""
        if notice not in self._said:
            self._said.add(notice)
            emit(ev.Diagnostic(notice))

    # --- lint ----------------------------------------------------------------------

    def lint(self, files: Iterable[str], workspace: Path, gate: Gate, emit: ev.Emit) -> LintReport:
        """Lint `files` now (after an edit, or `/lint`), with the event said."""
        report = lint_files(
            files,
            self.lint_cmd,
            workspace,
            approve=gate.approve,
            sandbox=gate.sandbox,
            timeout=self.lint_timeout,
        )
        for notice in report.notices:
            self.tell(emit, notice)
        if report.files:  # else no linter applies to these files
            emit(ev.LintRun(report.files, report.ok, report.ms, report.text()))
        return report

    def after_call(self, agent: Agent, call: ToolCall, result: ToolResult) -> ToolResult:
        """A write tool's result, with the linter's problems appended (`auto_lint`);
        the files it wrote are counted as edited either way."""
        call = routed(call, agent.tools)  # bash running apply_patch is the patch tool
        tool = agent.tools.get(call.name)
        if tool is None or tool.kind != "write" or result.is_error:
            return result
        files = edited_files(agent.workspace, tool.written_paths(call.arguments))
        agent.state.edited.update(files)
        self.touched.update(files)
        if not (self.auto_lint and files):
            return result
        report = self.lint(files, agent.workspace, agent.gate, agent.emit)
        if report.ok:
            return result
        content = f"{result.content.rstrip()}\n\n{LINT_SAID}\n{report.text()}"
        return ToolResult(result.call_id, content, result.is_error)

    # --- test ----------------------------------------------------------------------

    def test(
        self, command: CheckCmd, workspace: Path, gate: Gate, emit: ev.Emit, round_: int = 1
    ) -> Ran | None:
        """Run the tests now, with the event said; None where they could not run (the
        reason told the user)."""
        why = refused(command, gate.approve, gate.sandbox)
        if why is not None:
            self.tell(emit, f"test_cmd {why}")
            return None
        ran = run_check(command.command, workspace, self.test_timeout, gate.sandbox)
        if ran.missing:  # a config mistake: the model cannot fix it
            emit(ev.Diagnostic(f"test_cmd {ran.command!r} {ran.said(self.test_timeout)}"))
            return None
        emit(ev.TestRun(ran.command, ran.ok, round_, ran.ms, ran.output))
        return ran

    def retest(self, agent: Agent) -> bool:
        """At the end of a request (the model is done): run the tests if its turns
        edited files; True when a failure went back to the model and the request goes
        on. The tests run again only once the model has edited again."""
        state = agent.state
        if not self.auto_test or self.test_cmd is None or not state.edited:
            return False
        if state.declined or agent.cancel.is_set():
            return False
        state.edited.clear()
        state.test_runs += 1
        ran = self.test(self.test_cmd, agent.workspace, agent.gate, agent.emit, state.test_runs)
        if ran is None or ran.ok:
            return False
        if state.test_runs > self.test_rounds:
            agent.emit(
                ev.Diagnostic(
                    f"the tests still fail after {self.test_rounds} rounds of fixes; over to you"
                )
            )
            return False
        agent.add(User(failure_message(ran, self.test_timeout)))
        return True


def failure_message(ran: Ran, timeout: float) -> str:
    """What the model is told of a failed test run."""
    output = fence(ran.output) if ran.output else "(no output)"
    return (
        f"The tests (`{ran.command}`) {ran.said(timeout)} after your changes. Their"
        f" output:\n{output}\nFix the code so that they pass."
    )


def edited_files(workspace: Path, paths: Iterable[str]) -> list[str]:
    """The written paths that are files in the workspace now, relative to it (a patch's
    deleted file is gone; a path that leads out was refused by the tool)."""
    root = workspace.resolve()
    out = []
    for path in paths:
        try:
            real = resolve_in_workspace(root, path)
        except ToolError:
            continue
        if real.is_file():
            out.append(str(real.relative_to(root)))
    return out
