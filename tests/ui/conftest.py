from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.tmux import Terminal


@pytest.fixture
def terminal(bosun_home: Path) -> Iterator[Terminal]:
    term = Terminal(bosun_home)
    try:
        yield term
    finally:
        term.close()
