"""Where each native format writes its calls: the regions the stream parser looks for.

A view of the format records (`agent.parsing.formats.REGISTRY`): one entry per format
that `NativeStreamParser` reads, built from the record's regions and strip tokens.
Hermes keeps its own parser (fences and salvage) and harmony has its own, so neither is
here. The regions themselves are written in the records (`agent.parsing.catalog_1`,
`catalog_2`, `catalog_3`).
"""

from __future__ import annotations

from agent.parsing.formats import REGISTRY
from agent.parsing.native import NativeFormat

NATIVE: dict[str, NativeFormat] = {
    name: native for name, f in REGISTRY.items() if (native := f.native) is not None
}
