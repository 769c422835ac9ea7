"""The table both hostile-input case modules print (bench/bounds_models.py,
bench/bounds_schemas.py): each case built in a fresh folder, timed, its outcome shown.
bench/tool_bounds.py runs the same cases one process each, for their memory."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

Case = Callable[[Path, bool], Callable[[], object]]


def run_cases(cases: Mapping[str, Case], doc: str | None) -> None:
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs (CI-sized)")
    args = ap.parse_args()
    width = max(map(len, cases)) + 2
    print(f"{'case':{width}} {'wall s':>7}  outcome")
    for name, case in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            run = case(Path(tmp), args.quick)
            start = time.perf_counter()
            said = str(run())
            print(f"{name:{width}} {time.perf_counter() - start:7.3f}  {said[:110]}")
