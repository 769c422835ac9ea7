"""An ACP prompt (content blocks) as the text of one bosun request.

bosun states in `initialize` what it takes: text, resource links (every client may send
those) and embedded text resources (`embeddedContext`: a file the user attached). A
link names a file the model can read with its tools, so it is passed on as the file's
workspace path; a link or resource outside the workspace is refused, as a tool would
refuse it. Images, audio and binary resources are refused with a clear error rather
than dropped in silence: a model that never saw them would answer as if it had.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from acp import RequestError
from acp import schema as s

from agent.errors import ToolError
from agent.tools.confine import resolve_in_workspace
from agent.transcript import fence


def _inside(uri: str, workspace: Path) -> str | None:
    """A file: URI's path relative to the workspace; None for another scheme; refused
    (invalid params) for a file outside the workspace."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    try:
        real = resolve_in_workspace(workspace, unquote(parts.path))
    except ToolError as exc:
        raise RequestError.invalid_params({"details": str(exc)}) from None
    return str(real.relative_to(workspace.resolve())) or "."


def prompt_text(blocks: list[Any], workspace: Path) -> tuple[str, bool]:
    """The request's text, and whether it carries material of its own (attached)."""
    parts: list[str] = []
    attached = False
    for block in blocks:
        if isinstance(block, s.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, s.ResourceContentBlock):
            path = _inside(block.uri, workspace)
            parts.append(f"(file: {path})" if path is not None else f"(link: {block.uri})")
        elif isinstance(block, s.EmbeddedResourceContentBlock) and isinstance(
            block.resource, s.TextResourceContents
        ):
            path = _inside(block.resource.uri, workspace)
            parts.append(f"{path or block.resource.uri}:\n{fence(block.resource.text)}")
            attached = True
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise RequestError.invalid_params(
                {"details": f"bosun takes text and text resources, not {kind} content"}
            )
    text = "\n\n".join(p for p in parts if p)
    if not text.strip():
        raise RequestError.invalid_params({"details": "the prompt is empty"})
    return text, attached
