"""Repository map benchmark: files, cold and warm time, cache size, map tokens.

    .venv/bin/python bench/map_bench.py [--files 2000] [--repeat 3]

Two repositories: a generated one (`--files` source files in eight languages, each
file defining a class and a few functions and calling into two others) and bosun's own
tree. Cold: an empty cache (every file parsed, in worker processes where there are many);
warm: the cache filled and no file changed (what a new request costs). The time is the
whole `repo_map()`: listing, cache, parsing, ranking; the text at each budget is then
rendered and its tokens counted (about 3 characters a token). Targets (issue 37): 2,000
files cold under 5 s and warm under 0.5 s on 2 cores. The machine's load average is
printed with the numbers: timings on a shared machine are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.tools.repomap import cache, repo_map
from agent.tools.repomap.render import approx_tokens

BUDGETS = (512, 1024, 4096)
REPO = Path(__file__).resolve().parent.parent


def _python(k: int, a: int, b: int) -> str:
    return (
        f"from m{a} import helper_{a}\nfrom m{b} import Service{b}\n\nLIMIT_{k} = {k}\n\n\n"
        f"class Service{k}:\n    def run(self, x):\n        return helper_{a}(x) + {k}\n\n"
        f"    def stop(self):\n        return Service{b}()\n\n\n"
        f"def helper_{k}(x):\n    return x * {k}\n\n\ndef other_{k}(y):\n    return y\n"
    )


def _js(k: int, a: int, b: int) -> str:
    return (
        f"import {{ helper_{a} }} from './m{a}.js';\nexport const LIMIT_{k} = {k};\n"
        f"export class Service{k} {{\n  run(x) {{ return helper_{a}(x) + {k}; }}\n"
        f"  stop() {{ return new Service{b}(); }}\n}}\n"
        f"export function helper_{k}(x) {{ return x * {k}; }}\n"
        f"export const other_{k} = (y) => y;\n"
    )


def _ts(k: int, a: int, b: int) -> str:
    return (
        f"export interface Shape{k} {{ size(): number; }}\nexport type Id{k} = string;\n"
        f"export class Service{k} implements Shape{k} {{\n  size(): number {{ return helper_{a}"
        f"({k}); }}\n}}\nexport function helper_{k}(x: number): number {{ return x; }}\n"
        f"const s{b}: Shape{b} | null = null;\n"
    )


def _go(k: int, a: int, b: int) -> str:
    return (
        f"package m\n\nconst Limit{k} = {k}\n\ntype Service{k} struct {{ N int }}\n\n"
        f"func (s Service{k}) Run(x int) int {{ return Helper{a}(x) + s.N }}\n\n"
        f"func Helper{k}(x int) int {{ return x * {k} }}\n\nvar _ = Service{b}{{}}\n"
    )


def _rust(k: int, a: int, b: int) -> str:
    return (
        f"pub const LIMIT_{k}: u32 = {k};\npub struct Service{k} {{ n: u32 }}\n"
        f"impl Service{k} {{\n    pub fn run(&self, x: u32) -> u32 {{ helper_{a}(x) }}\n}}\n"
        f"pub fn helper_{k}(x: u32) -> u32 {{ x * {k} }}\npub fn other_{k}(s: Service{b}) {{}}\n"
    )


def _java(k: int, a: int, b: int) -> str:
    return (
        f"package m;\n\npublic class Service{k} {{\n    static final int LIMIT = {k};\n"
        f"    public int run(int x) {{ return Service{a}.helper(x) + LIMIT; }}\n"
        f"    public static int helper(int x) {{ return x * {k}; }}\n"
        f"    Service{b} other() {{ return null; }}\n}}\n"
    )


def _c(k: int, a: int, b: int) -> str:
    return (
        f"#include <stdio.h>\n#define LIMIT_{k} {k}\n\nstruct service_{k} {{ int n; }};\n\n"
        f"int helper_{a}(int x);\n\nint helper_{k}(int x) {{\n    return helper_{a}(x) * {k};\n}}\n"
        f"\nstatic int other_{k}(struct service_{b} *s) {{ return s->n; }}\n"
    )


def _ruby(k: int, a: int, b: int) -> str:
    return (
        f"LIMIT_{k} = {k}\n\nmodule M{k}\n  class Service{k}\n    def run(x)\n"
        f"      helper_{a}(x) + LIMIT_{k}\n    end\n  end\nend\n\n"
        f"def helper_{k}(x)\n  Service{b}.new\n  x * {k}\nend\n"
    )


KINDS = [(".py", _python), (".js", _js), (".ts", _ts), (".go", _go), (".rs", _rust),
         (".java", _java), (".c", _c), (".rb", _ruby)]  # fmt: skip


def generate(root: Path, files: int) -> None:
    for k in range(files):
        ext, make = KINDS[k % len(KINDS)]
        folder = root / f"pkg{k // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        a, b = (k * 7 + 3) % files, (k * 13 + 5) % files
        name = f"Service{k}.java" if ext == ".java" else f"m{k}{ext}"
        (folder / name).write_text(make(k, a, b), encoding="utf-8")


def measure(label: str, root: Path, repeat: int) -> dict[str, object]:
    colds, warms = [], []
    found = None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as home:
            os.environ["BOSUN_HOME"] = home
            start = time.perf_counter()
            found = repo_map(root)
            colds.append(time.perf_counter() - start)
            for _ in range(3):
                start = time.perf_counter()
                found = repo_map(root, personal={"x": 1.0})
                warms.append(time.perf_counter() - start)
            size = cache.cache_size(root.resolve())
    assert found is not None
    tokens = [approx_tokens(found.text(b)) for b in BUDGETS]
    return {
        "repository": label,
        "files": len(found.scan.files),
        "definitions": len(found.ranked),
        "cold s": min(colds),
        "warm s": min(warms),
        "cache kB": size // 1024,
        **{f"tokens@{b}": t for b, t in zip(BUDGETS, tokens, strict=True)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3, help="best of N (cold and warm)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        generated = Path(tmp) / "repo"
        generate(generated, args.files)
        rows.append(measure(f"generated ({args.files} files, 8 languages)", generated, args.repeat))
    rows.append(measure("bosun's own tree", REPO, args.repeat))
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for row in rows:
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()]
        print("| " + " | ".join(cells) + " |")
    load = os.getloadavg()
    print(f"\n{os.cpu_count()} CPU cores; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
