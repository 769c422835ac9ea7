"""Warm starts on the real SmolLM2: a fresh session loads the saved head (the system
prompt and tools) instead of evaluating it, and answers exactly as a cold one does."""

from __future__ import annotations

import io
import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.history import Message, System, User
from agent.loop.turn import Query, Reply, call_model
from agent.protocol.profile import ModelProfile, profile_for
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from drivers.base import Request
from drivers.prefix_cache import cache_dir, entries, read_state

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.model

MODEL = "smollm2-135m"


@pytest.fixture(scope="module")
def profile() -> ModelProfile:
    return profile_for(MODEL)


def first_turn(profile: ModelProfile, workspace: Path, task: str = "Say hello.") -> Reply:
    """A new session's first model call, the way the agent makes it, on a new driver."""
    from drivers.llama_cpp import open_llama

    history: list[Message] = [System(system_prompt(str(workspace))), User(task)]
    driver = open_llama(MODEL)
    try:
        return call_model(
            driver, profile, Query(history, default_registry().specs(), [].append, 16)
        )
    finally:
        driver.close()


def head_tokens(profile: ModelProfile, workspace: Path, changes: tuple[str, ...] = ()) -> int:
    """The system turn alone, in tokens: what every session here begins with (`changes`:
    to the default tools, as a session assembled for the model makes them)."""
    from drivers.llama_cpp import open_llama

    alone = profile.render(
        [System(system_prompt(str(workspace)))],
        default_registry(changes=changes).specs(),
        add_generation_prompt=False,
    )
    driver = open_llama(MODEL, prefix_cache=False)
    try:
        return len(driver.tokenize(alone))
    finally:
        driver.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bosun data folder for the module: it holds the key every saved state is
    signed with, so a state the cold session saved is this user's in every test."""
    return tmp_path_factory.mktemp("warm-home")


@pytest.fixture(autouse=True)
def _one_user(bosun_home: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOSUN_HOME", str(home))


@pytest.fixture(scope="module")
def cold(
    profile: ModelProfile, tmp_path_factory: pytest.TempPathFactory, home: Path
) -> Iterator[tuple[Path, Reply, Path]]:
    """One cold session, once for the module: (its workspace, its reply, the state file
    it saved). Each test copies the file into its own cache folder."""
    workspace = tmp_path_factory.mktemp("ws")
    folder = tmp_path_factory.mktemp("saved")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BOSUN_PREFIX_CACHE", str(folder))
        mp.setenv("BOSUN_HOME", str(home))
        reply = first_turn(profile, workspace)
    [state] = list(folder.glob("*.kv"))
    yield workspace, reply, state


def install(state: Path) -> Path:
    """Copy a saved state into this test's cache folder."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(state, cache_dir() / state.name))


def test_a_cold_session_evaluates_the_head_and_saves_it(cold, profile) -> None:
    workspace, reply, state = cold
    assert reply.usage.cached_tokens == 0
    tokens, _ = read_state(state, _key_of(state))
    assert len(tokens) == head_tokens(profile, workspace) > 1000


def _key_of(state: Path) -> dict[str, object]:
    [entry] = [e for e in entries(state.parent) if e.path == state]
    assert entry.header is not None
    return entry.header.key


def test_a_fresh_session_reports_the_head_as_cached_and_answers_the_same(cold, profile) -> None:
    workspace, cold_reply, state = cold
    install(state)
    warm = first_turn(profile, workspace)
    assert warm.usage.cached_tokens == head_tokens(profile, workspace)
    assert warm.usage.prompt_tokens == cold_reply.usage.prompt_tokens
    assert (warm.prose, warm.calls) == (cold_reply.prose, cold_reply.calls)
    assert warm.usage.completion_tokens == cold_reply.usage.completion_tokens
    assert [e.path.name for e in entries()] == [state.name]  # loaded, not saved again


def test_a_session_elsewhere_does_not_load_another_workspaces_head(
    cold, profile, tmp_path: Path
) -> None:
    """The workspace path is in the system text, before the tools: a different one is a
    different head (only the 70-odd tokens before it are shared, not worth a file)."""
    _, _, state = cold
    install(state)
    other = tmp_path / "other"
    other.mkdir()
    reply = first_turn(profile, other)
    assert reply.usage.cached_tokens == 0
    assert len(entries()) == 2  # this workspace's head, saved beside the first


def _flip_state_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))


def _refused_by_llama(path: Path) -> None:
    """Checksums and signature that match, over a state llama.cpp cannot read (cut in
    half): what a state of the user's own that llama.cpp no longer accepts looks like
    (a planted one is refused before, tests/hostile/test_prefix_cache_trust.py)."""
    import hashlib
    import hmac

    from drivers.cache_trust import load_secret

    data = path.read_bytes()
    length = struct.unpack("<I", data[12:16])[0]
    meta = json.loads(data[16 : 16 + length])
    start = 16 + length + 4 * meta["tokens"]
    state = data[start : start + meta["state_bytes"] // 2]
    meta.update(state_bytes=len(state), state_sha256=hashlib.sha256(state).hexdigest())
    header = json.dumps(meta).encode()
    body = data[:12] + struct.pack("<I", len(header)) + header + data[16 + length : start] + state
    path.write_bytes(body + hmac.new(load_secret(), body, hashlib.sha256).digest())


@pytest.mark.parametrize("damage", [_flip_state_byte, _refused_by_llama])
def test_a_damaged_state_is_never_loaded_and_is_replaced(cold, profile, damage) -> None:
    workspace, cold_reply, state = cold
    mine = install(state)
    damage(mine)
    reply = first_turn(profile, workspace)
    assert reply.usage.cached_tokens == 0  # evaluated, not loaded
    assert (reply.prose, reply.calls) == (cold_reply.prose, cold_reply.calls)
    tokens, _ = read_state(mine, _key_of(mine))  # a whole, valid file again
    assert len(tokens) == head_tokens(profile, workspace)


def test_a_state_in_a_folder_others_can_write_is_never_loaded(cold, profile) -> None:
    """The user's own state, but in a folder anyone could have planted it in: a cold
    start that answers as the cold session did, and one line in llama.cpp's log."""
    from drivers import llama_log

    workspace, cold_reply, state = cold
    install(state)
    cache_dir().chmod(0o777)
    log = cache_dir().parent / f"{cache_dir().name}.llama.log"
    llama_log.send_to(log)
    try:
        reply = first_turn(profile, workspace)
    finally:
        llama_log.send_to(None)
    assert reply.usage.cached_tokens == 0
    assert (reply.prose, reply.calls) == (cold_reply.prose, cold_reply.calls)
    assert "writable by group or others" in log.read_text()
    assert [e.path.name for e in entries()] == [state.name]  # nothing written into it


def test_other_context_settings_never_see_the_state(cold) -> None:
    from drivers.llama_cpp import open_llama

    _, _, state = cold
    install(state)
    driver = open_llama(MODEL, n_ctx=4096)
    try:
        assert driver.prefix_cache is not None
        tokens, _ = read_state(state, _key_of(state))
        assert driver.prefix_cache.key["n_ctx"] == 4096
        assert driver.prefix_cache.find([*tokens, 1]) is None
    finally:
        driver.close()
    assert len(entries()) == 1  # not deleted either: it is another key's, and intact


def test_a_batch_evaluates_the_head_once(tmp_path: Path) -> None:
    from agent.run.batch import run_tasks
    from agent.run.settings import Settings

    workspace = tmp_path / "ws"
    workspace.mkdir()
    tasks = tmp_path / "tasks.jsonl"
    prompts = ["Say hello.", "Name a fruit.", "Say goodbye."]
    tasks.write_text(
        "".join(json.dumps({"id": f"t{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )
    settings = Settings(
        model=MODEL, workspace=workspace, max_turns=1, max_tokens=8, constrain="never"
    )

    def first_turns() -> dict[str, dict[str, int]]:
        out = io.StringIO()
        run_tasks(settings, tasks, out=out, err=io.StringIO())
        turns: dict[str, dict[str, int]] = {}
        for line in out.getvalue().splitlines():
            event = json.loads(line)
            if event["type"] == "turn":
                turns.setdefault(event["task"], event)
        return turns

    profile = profile_for(MODEL)  # a batch offers the model its own tool set
    head = head_tokens(profile, workspace, profile.tool_changes)
    turns = first_turns()
    assert turns["t0"]["cached_tokens"] == 0
    assert all(turns[t]["cached_tokens"] >= head for t in ("t1", "t2"))
    assert len(entries()) == 1
    again = first_turns()  # a new process would do the same: a new driver, the saved head
    assert all(again[t]["cached_tokens"] >= head for t in ("t0", "t1", "t2"))


@pytest.mark.parametrize("abort", [True, False], ids=["abort-callback", "slices"])
def test_a_stop_while_the_head_is_first_evaluated_returns_early_and_saves_nothing(
    abort: bool, tmp_path: Path
) -> None:
    """A new workspace's first message evaluates the head on its own before the rest;
    a Ctrl-C then used to wait for the whole head (seconds: ~1,000 tokens on 2 cores).
    The stop ends the call, no half-evaluated state is saved, and the next call goes on
    from what was evaluated and saves the head then."""
    import threading

    from drivers.llama_cpp import open_llama

    head = " ".join(f"word{i}" for i in range(300))  # ~1,150 tokens; 512 take ~1-2 s here
    prompt = head + " and then the question"
    driver = open_llama(MODEL, n_ctx=2048)
    try:
        driver._abort = driver._abort and abort
        stop = threading.Event()
        timer = threading.Timer(1.2, stop.set)
        timer.start()
        try:
            chunks = list(
                driver.stream(Request(prompt, max_tokens=4, head=len(head)), halt=stop.is_set)
            )
        finally:
            timer.cancel()
        last = chunks[-1]
        assert last.finish_reason == "interrupted" and last.usage is not None
        held = driver.llm.n_tokens
        assert held < len(driver.tokenize(head)) - 1  # stopped inside the head
        assert entries() == []  # nothing saved of a head not wholly evaluated
        chunks = list(driver.stream(Request(prompt, max_tokens=1, head=len(head))))
        usage = chunks[-1].usage
        assert usage is not None and usage.cached_tokens == held  # nothing evaluated twice
        assert len(entries()) == 1
    finally:
        driver.close()
