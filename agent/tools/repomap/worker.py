"""A parsing worker: `python -m agent.tools.repomap.worker` reads {"root", "items"} as
JSON on stdin and writes the files' entries as JSON on stdout.

A cold map of thousands of files is CPU-bound and tree-sitter holds the GIL, so it is
spread over processes. Plain child processes, not multiprocessing: its spawn and
forkserver methods run the parent's __main__ again in every worker (`python -m agent`
would start a second bosun), and fork is unsafe in a process with threads (batch runs).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    from agent.tools.repomap.scan import parse_file

    job = json.loads(sys.stdin.buffer.read())
    root = Path(job["root"])
    out = [[rel, parse_file(root, rel, lang)] for rel, lang in job["items"]]
    sys.stdout.write(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
