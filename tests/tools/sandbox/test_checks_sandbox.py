"""The lint/test loop's commands run under bash's sandbox policy (real bubblewrap)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from agent import events as ev
from agent.loop.checks import Checks
from agent.tools.checks import CheckCmd
from agent.tools.orchestrator import Gate
from agent.tools.sandbox import SandboxPolicy
from tests.helpers import make_agent, tool_call


def test_a_workspace_test_cmd_runs_sandboxed_in_auto_edit(
    workspace: Path, policy: SandboxPolicy
) -> None:
    outside = Path(tempfile.mkdtemp(prefix="bosun-out-", dir="/var/tmp")) / "escaped"
    command = f"touch ran && touch {outside} && echo done"
    agent, driver, events = make_agent(
        [tool_call("write_file", path="x.txt", content="1"), "Done.", "Ok."], workspace
    )
    agent.gate = Gate("auto-edit", None, policy)
    agent.checks = Checks(test_cmd=CheckCmd(command, "workspace"), auto_test=True, test_rounds=1)
    agent.run("go")
    driver.assert_complete()  # the failure went back once; no edit after it, no rerun
    assert (workspace / "ran").exists()  # the workspace is writable in the sandbox
    assert not outside.exists()  # the rest is not
    (test,) = [e for e in events if isinstance(e, ev.TestRun)]
    assert not test.ok and "Read-only file system" in test.output
