"""Which calls count as repeating one whose result the model already has."""

from __future__ import annotations

from agent.history import AssistantToolUse, Message, System, ToolCall, ToolResult, User
from agent.loop.constraint import constraint_for, repeats_unchanged_call
from agent.tools import default_registry
from drivers.base import DriverInfo

KINDS = {n: t.kind for n in default_registry().names if (t := default_registry().get(n))}


def turn(*calls: tuple[str, dict[str, object]], user: str = "do it") -> list[Message]:
    history: list[Message] = [System("s"), User(user)]
    for n, (name, args) in enumerate(calls):
        history += [AssistantToolUse(ToolCall(f"c{n}", name, args)), ToolResult(f"c{n}", "r")]
    return history


READ = ("read_file", {"path": "a.txt"})


def test_the_kinds_are_the_registry_s() -> None:
    assert KINDS["read_file"] == "read" and KINDS["write_file"] == "write"
    assert KINDS["bash"] == "shell"


def test_a_read_repeated_with_only_reads_between_is_a_repeat() -> None:
    assert repeats_unchanged_call(turn(READ, READ), KINDS)
    assert repeats_unchanged_call(turn(READ, ("list_dir", {}), ("grep", {"p": 1}), READ), KINDS)


def test_a_first_call_or_a_different_one_is_not() -> None:
    assert not repeats_unchanged_call(turn(READ), KINDS)
    assert not repeats_unchanged_call(turn(READ, ("read_file", {"path": "b.txt"})), KINDS)
    assert not repeats_unchanged_call(turn(), KINDS)


def test_a_repeat_after_a_change_is_not() -> None:
    write = ("write_file", {"path": "a.txt", "content": "x"})
    assert not repeats_unchanged_call(turn(READ, write, READ), KINDS)
    test = ("bash", {"command": "pytest"})
    edit = ("edit_file", {"path": "a.py", "old": "1", "new": "2"})
    assert not repeats_unchanged_call(turn(test, edit, test), KINDS)
    assert repeats_unchanged_call(turn(test, test), KINDS)  # nothing changed in between


def test_only_calls_since_the_latest_request_count() -> None:
    history = [*turn(READ), User("and again?"), *turn(READ)[2:]]
    assert not repeats_unchanged_call(history, KINDS)


def test_argument_order_does_not_hide_a_repeat() -> None:
    one = ("read_file", {"path": "a.txt", "offset": 2})
    other = ("read_file", {"offset": 2, "path": "a.txt"})
    assert repeats_unchanged_call(turn(one, other), KINDS)


class _SmallGrammarBackend:
    """Only what `constraint_for` reads of a driver: a small model that takes grammars."""

    model = "smollm2-135m"
    info = DriverInfo(grammar=True, n_params=135_000_000)


def test_a_fresh_request_starts_with_a_call_unless_it_brings_its_material() -> None:
    from agent.protocol.profile import profile_for

    registry = default_registry()
    pick = constraint_for("auto", _SmallGrammarBackend(), registry, profile_for("smollm2-135m"))  # type: ignore[arg-type]
    assert pick is not None
    forced = pick([System("s"), User("Summarise calc.py")])
    free = pick([System("s"), User("Summarise this\n\nPiped input:\ndef f(): pass", attached=True)])
    later = pick(turn(READ))  # after a call: a call or an answer
    assert forced is not None and forced != later
    assert free == later
    assert User("x", attached=True) == User("x")  # not part of what the message is
