"""The manual (docs/, mkdocs.yml) and the README that points into it.

What is pinned here: the generated reference pages are what the generator writes from
the code today (so they cannot drift from `Settings`, the bundled models, the family
rules and the format records); every page is in the nav and every README link lands on
a page; the README stays short; the Python the docs show runs. The commands of the docs'
```sh blocks are run by tests/test_readme.py, and the site itself is built with
`mkdocs build --strict` by CI (.ci/run).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import yaml

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
REGENERATE = ".venv/bin/python docs/gen_reference.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_is_current() -> None:
    pages = generator().pages()
    assert {p.relative_to(DOCS).as_posix() for p in pages} == {
        "reference/config.md",
        "reference/models.md",
    }
    for path, text in pages.items():
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        assert committed == text, (
            f"{path.relative_to(REPO)} is not what the code says now: run `{REGENERATE}`"
            " and commit the result"
        )


def test_the_reference_covers_every_key_model_and_format() -> None:
    from agent.parsing import FORMATS
    from agent.run.settings import config_keys
    from drivers.bundled import BUNDLED

    config = (DOCS / "reference" / "config.md").read_text(encoding="utf-8")
    models = (DOCS / "reference" / "models.md").read_text(encoding="utf-8")
    for key in config_keys():
        assert f"| `{key}` |" in config, key
    for name in (*BUNDLED, *FORMATS):
        assert f"| `{name}`" in models, name


def nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in nav_pages(item)]
    return []


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = nav_pages(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages, set(nav) ^ set(pages)
    assert len(nav) == len(set(nav))


def test_the_readme_is_short_and_links_into_the_manual() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert len(set(links)) >= 15, links
    for link in links:
        assert (REPO / link).is_file(), link
    linked = {link.removeprefix("docs/") for link in links}
    assert linked >= {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}


def slug(heading: str) -> str:
    """The anchor MkDocs (and GitHub) give a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def test_the_readme_links_to_headings_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    for page, anchor in re.findall(r"\]\((docs/[^)#]+)#([^)]*)\)", text):
        headings = re.findall(r"^#+ (.+)$", (REPO / page).read_text(encoding="utf-8"), re.M)
        assert anchor in {slug(h) for h in headings}, f"{page}#{anchor}"


def test_the_readme_begins_with_the_two_commands() -> None:
    """The first lines, which CI (.ci/run) and tests/test_readme.py take as they are."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == ["# bosun", "", "```sh"]
    assert lines[3].startswith("./install.sh && .venv/bin/bosun run ")
    assert lines[4] == "./install.sh --dev && .venv/bin/python -m pytest -q"
    assert lines[5] == "```"


def test_the_public_names_the_docs_list_import() -> None:
    """The development page's import block runs as shown."""
    page = (DOCS / "development.md").read_text(encoding="utf-8")
    section = page.split("## Public names and where they live", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert code.count("import") >= 10
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
