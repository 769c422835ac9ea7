"""Settings for a session: config.toml, then the workspace's .bosun.toml, then flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.run.config import Config, load_config, resolve, user_config_path
from drivers.base import UsageError


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_defaults_without_files(workspace: Path) -> None:
    assert load_config(workspace) == Config()


def test_user_file_then_workspace_file_then_flags(workspace: Path) -> None:
    write(user_config_path(), 'model = "a.gguf"\nconstrain = "never"\ncontext_size = 4096\n')
    write(workspace / ".bosun.toml", 'model = "openai:http://127.0.0.1:8080/v1#b"\n')
    server = "openai:http://127.0.0.1:8080/v1#b"
    # the workspace chose the server: it is marked so (it gets no API key)
    assert load_config(workspace) == Config(
        model=server, constrain="never", context_size=4096, workspace_model=server
    )
    flags = resolve(workspace, model="c.gguf", constrain="always", context_size=2048)
    picked = (flags.model, flags.approve, flags.constrain, flags.context_size)
    assert picked == ("c.gguf", "ask", "always", 2048)
    assert flags.workspace_model is None and flags.workspace == workspace
    assert resolve(workspace, approve=None).model.endswith("#b")  # None means "not given"


def test_a_workspace_file_cannot_loosen_approval(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workspace / ".bosun.toml", 'approve = "auto"\n')
    assert load_config(workspace).approve == "ask"
    assert "may not loosen approval" in capsys.readouterr().err
    write(workspace / ".bosun.toml", 'approve = "read-only"\n')
    assert load_config(workspace).approve == "read-only"  # stricter is fine
    write(user_config_path(), 'approve = "auto"\n')
    write(workspace / ".bosun.toml", 'approve = "auto-edit"\n')
    assert load_config(workspace).approve == "auto-edit"
    assert resolve(workspace, approve="auto").approve == "auto"  # the user's own flag


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('modle = "x"', "unknown setting 'modle'"),
        ('approve = "yolo"', "approve must be one of"),
        ('constrain = "sometimes"', "constrain must be one of"),
        ('speculate = "always"', "speculate must be one of auto, on, off"),
        ("speculate = false", "speculate must be one of"),
        ("context_size = 12", "context_size must be"),
        ("context_size = true", "context_size must be"),
        ('model = ""', "model must be"),
        ("model = [", "not valid TOML"),
    ],
)
def test_bad_settings_name_the_file_and_key(workspace: Path, text: str, message: str) -> None:
    write(workspace / ".bosun.toml", text + "\n")
    with pytest.raises(UsageError, match=message) as info:
        load_config(workspace)
    assert ".bosun.toml" in str(info.value)


def test_speculate_comes_from_the_files_and_the_flag_wins(workspace: Path) -> None:
    assert load_config(workspace).speculate == "auto"
    write(workspace / ".bosun.toml", 'speculate = "off"\n')
    assert load_config(workspace).speculate == "off"
    assert resolve(workspace, speculate="auto").speculate == "auto"
    assert resolve(workspace, speculate=None).speculate == "off"


@pytest.mark.parametrize(
    ("spec", "passed"),
    [
        ("smollm2-135m", True),
        ("/models/m.gguf", True),
        ("scripted:demo.jsonl", False),
        ("openai:http://127.0.0.1:8080/v1#m", False),
    ],
)
def test_speculate_reaches_the_in_process_driver_only(
    monkeypatch: pytest.MonkeyPatch, spec: str, passed: bool
) -> None:
    """A server speculates by its own settings (README); the scripted driver has none."""
    import agent.run.models as models

    seen: dict[str, object] = {}
    monkeypatch.setattr(models, "profile_of", lambda _spec: None)
    monkeypatch.setattr(models, "open_driver", lambda _s, api=None, **o: seen.update(o))
    models.open_model(spec, speculate="off")
    assert ("speculate" in seen) is passed
    if passed:
        assert seen["speculate"] == "off"
