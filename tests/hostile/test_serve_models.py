"""`bosun mcp serve`: a caller names the model of each run, and every open model holds
its weights and KV cache in memory. Naming a new one each call must not grow the
server without bound: at most MAX_MODELS are open (the server's own stays; another is
closed, least recently used, when idle), and a model past that while all are running
is refused as a tool error, never loaded on top.

The assemblies are stand-ins that count opens and closes: what is bounded is the
server's bookkeeping, whatever the model behind it costs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.loop.cancel import Cancel
from agent.run.serve_runs import MAX_MODELS, Outcome, RefusedCall, Runs
from agent.run.settings import Settings
from drivers.base import DriverInfo

SERVERS = "smollm2-135m"


@dataclass
class Model:
    name: str
    info: DriverInfo = field(default_factory=DriverInfo)


@dataclass
class Opened:
    """The stand-in assemblies: which are open now, and the most open at once."""

    now: set[str] = field(default_factory=set)
    most: int = 0
    closed: list[str] = field(default_factory=list)

    def open(self, settings: Settings) -> Any:
        name = settings.model
        assert name not in self.now, f"{name} opened twice"
        self.now.add(name)
        self.most = max(self.most, len(self.now))
        opened = self

        class Assembly:
            driver = Model(name)

            def close(self) -> None:
                opened.now.discard(name)
                opened.closed.append(name)

        return Assembly()


def serving(
    opened: Opened, ran: Callable[[str], None] = lambda _m: None
) -> tuple[Runs, Callable[[str, Path], Outcome]]:
    """A server on SERVERS whose runs call `ran(model)` instead of an agent."""

    class Served(Runs):
        def _run(self, assembly: Any, *_args: Any) -> Outcome:
            ran(assembly.driver.name)
            return Outcome("done", "ok", "s")

    runs = Served(Settings(model=SERVERS, approve="auto-edit"), opened.open)

    def call(model: str, workspace: Path) -> Outcome:
        settings = runs.settings_for(str(workspace), None, model)
        return runs.run(settings, "go", Cancel(), lambda _m: None)

    return runs, call


def test_models_a_caller_names_stay_bounded_and_the_servers_own_stays_open(
    workspace: Path,
) -> None:
    opened = Opened()
    runs, call = serving(opened)
    for model in [SERVERS, "a.gguf", "b.gguf", "c.gguf", "a.gguf", SERVERS, "d.gguf"]:
        assert call(model, workspace).status == "done"
    assert opened.most == MAX_MODELS == 2
    assert SERVERS not in opened.closed  # opened once, kept: the server's own
    assert opened.closed == ["a.gguf", "b.gguf", "c.gguf", "a.gguf"]  # the idle other
    assert opened.now == {SERVERS, "d.gguf"}
    runs.close()
    assert opened.now == set()


def test_a_model_past_the_bound_while_all_are_running_is_refused(workspace: Path) -> None:
    opened = Opened()
    started = threading.Semaphore(0)
    finish = threading.Event()

    def ran(_model: str) -> None:
        started.release()
        assert finish.wait(30)

    runs, call = serving(opened, ran)
    outcomes: list[Outcome] = []
    threads = [
        threading.Thread(target=lambda m=m: outcomes.append(call(m, workspace)))
        for m in (SERVERS, "a.gguf")
    ]
    for t in threads:
        t.start()
    assert started.acquire(timeout=30) and started.acquire(timeout=30)  # both running
    with pytest.raises(RefusedCall, match="at most 2 models open and all are running"):
        call("b.gguf", workspace)
    assert opened.now == {SERVERS, "a.gguf"}  # nothing loaded on top, nothing closed
    finish.set()
    for t in threads:
        t.join(timeout=30)
    assert [o.status for o in outcomes] == ["done", "done"]
    assert call("b.gguf", workspace).status == "done"  # idle now: a.gguf makes room
    assert opened.now == {SERVERS, "b.gguf"} and opened.closed == ["a.gguf"]
    runs.close()
