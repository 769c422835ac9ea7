"""The format records, third part: formats added after `catalog_2` was full.

`agent.parsing.formats` joins the three catalogues in order; a new format's record goes
at the end of this one (a format listed later changes no older order).
"""

from __future__ import annotations

from agent.parsing import decoders_python as p
from agent.parsing.native import Region
from agent.parsing.record import IM_END, Format, Shape

_OLMO_CALLS = "<function_calls>", "</function_calls>"

RECORDS: tuple[Format, ...] = (
    Format(
        # Olmo 3 (Instruct and Think): Python calls, one per line, inside
        # <function_calls>; its template prints JSON's true/false/null for values.
        "olmo3",
        signature=((_OLMO_CALLS[0],),),
        regions=(Region(*_OLMO_CALLS, p.python_lines),),
        strip=(IM_END,),
        shape=Shape(
            "{name}(",
            "python",
            ")",
            "{key}=",
            "",
            ", ",
            (f"{_OLMO_CALLS[0]}\n", f"\n{_OLMO_CALLS[1]}"),
            "\n",
        ),
    ),
)
