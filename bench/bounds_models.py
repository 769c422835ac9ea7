"""A hostile model file, and what bosun does with it, case by case.

    .venv/bin/python bench/bounds_models.py [--quick]

Each case builds a GGUF in a temporary folder (a chat template that loops, doubles a
string or grows with the conversation; metadata that nests arrays 100,000 deep or, in
a sparse file, claims 2^62 keys) and returns what bosun does with it as a zero-argument
callable (resolving the model's profile, rendering a conversation, reading the
metadata), which answers with the one line bosun gives. bench/tool_bounds.py runs
`CASES` with the tool scenarios, each in a fresh process for its peak memory; run
alone, this prints a table. The bounds these sit under: 3 s and 8,000,000 characters
per render, 64,000,000 characters and items made in all (agent/protocol/
template_bounds.py); arrays 8 deep, 65,536 keys, 4,000,000 values walked, strings of
16 MB (agent/protocol/gguf.py).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Case = Callable[[Path, bool], Callable[[], str]]
REPO = Path(__file__).resolve().parent.parent
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN = REPO / "tests" / "data" / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"
GB = 1024**3


def outcome(tmp: Path, run: Callable[[], str]) -> str:
    """What bosun says: the result, or the one line of the error it gives."""
    try:
        said = run()
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
    return " ".join(said.replace(f"{tmp}/", "").split())


def _gguf(tmp: Path, template: str) -> Path:
    from agent.protocol.gguf import write_gguf

    path = tmp / "evil.gguf"
    write_gguf(path, {"general.architecture": "llama", "tokenizer.chat_template": template})
    return path


def _resolve(template: str) -> Case:
    """`bosun models evil.gguf`: the profile resolved, the template probed."""

    def case(tmp: Path, quick: bool) -> Callable[[], str]:
        from agent.protocol.profile import profile_for

        path = _gguf(tmp, template + CHATML)

        def run() -> str:
            return f"accepted: {profile_for(str(path)).template_origin}"

        return lambda: outcome(tmp, run)

    return case


def growing(tmp: Path, quick: bool) -> Callable[[], str]:
    """A template that doubles a string per message: probed fine, then a long history."""
    from agent.history import AssistantToolUse, System, ToolCall, ToolResult, User

    doubling = (
        "{% set ns = namespace(s='ab') %}{% for m in messages %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s[:0] }}"
    )
    path = _gguf(tmp, doubling + QWEN.read_text(encoding="utf-8"))
    history: list = [System("sys"), User("go")]
    for i in range(30 if quick else 60):
        call = ToolCall(f"c{i}", "list_dir", {"path": "."})
        history += [AssistantToolUse(call), ToolResult(call.id, "a.txt")]

    from agent.protocol.profile import profile_for

    def run() -> str:
        profile = profile_for(str(path))
        return f"rendered {len(profile.render(history, []))} characters"

    return lambda: outcome(tmp, run)


def _metadata(build: Callable[[Path], None]) -> Case:
    """`bosun models evil.gguf` on hostile metadata: the file read."""

    def case(tmp: Path, quick: bool) -> Callable[[], str]:
        from agent.protocol.gguf import read_gguf

        path = tmp / "evil.gguf"
        build(path)

        def run() -> str:
            info = read_gguf(path)
            return f"read: {len(info.metadata)} keys, bos {info.bos_token!r}"

        return lambda: outcome(tmp, run)

    return case


def _header(kv_count: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, kv_count)


def _text(s: str) -> bytes:
    return struct.pack("<Q", len(s)) + s.encode()


def _sparse(head: bytes, size: int) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        with path.open("wb") as fh:
            fh.write(head)
            fh.truncate(size)

    return build


def _nested(path: Path) -> None:
    depth = 100_000
    body = struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * depth + struct.pack("<IQ", 0, 0)
    path.write_bytes(_header(1) + _text("x.nested") + body)


def _vocabulary(path: Path) -> None:
    from agent.protocol.gguf import write_gguf

    tokens = [f"<t{i}>" for i in range(300_000)]
    meta = {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": [0.0] * len(tokens)}
    write_gguf(path, meta | {"tokenizer.ggml.bos_token_id": 299_999})


BIG = "{% set big = 'x' * 150000 %}{% set l = [] %}"
CASES: dict[str, Case] = {
    "template: nested range(100000) loops": _resolve(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "template: macro calling itself twice": _resolve(
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(90) }}"
    ),
    "template: a string doubled 80 times": _resolve(
        "{% set ns = namespace(s='x') %}{% for i in range(80) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    ),
    "template: a list extended with itself": _resolve(
        "{% set l = [0] %}{% for i in range(80) %}{% set _ = l.extend(l) %}{% endfor %}"
    ),
    "template: 'x' * 10 ** 12": _resolve("{{ 'x' * 10 ** 12 }}"),
    "template: one string printed 40,000 times": _resolve(
        "{% set l = ['x' * 100000] * 40000 %}{{ l }}"
    ),
    "template: 50,000 big strings kept": _resolve(
        BIG + "{% for i in range(50000) %}{% set _ = l.append(big ~ i) %}{% endfor %}"
    ),
    "template: doubling per message, long chat": growing,
    "gguf: arrays nested 100,000 deep": _metadata(_nested),
    "gguf: 2^62 keys, 64 GB sparse": _metadata(_sparse(_header(2**62), 64 * GB)),
    "gguf: 50M keys that fit, 1 GB sparse": _metadata(_sparse(_header(50_000_000), GB)),
    "gguf: 2^40 tokens, 64 GB sparse": _metadata(
        _sparse(
            _header(1) + _text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2**40),
            64 * GB,
        )
    ),
    "gguf: a 3 GB string, sparse": _metadata(
        _sparse(_header(1) + _text("general.name") + struct.pack("<IQ", 8, 3 * GB), 4 * GB)
    ),
    "gguf: real-sized, 300,000 tokens": _metadata(_vocabulary),
}


def main() -> None:
    from cases import run_cases  # bench/ is this script's folder, first on sys.path

    run_cases(CASES, __doc__)


if __name__ == "__main__":
    main()
