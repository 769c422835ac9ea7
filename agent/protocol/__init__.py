"""How bosun speaks to one model, resolved once: its profile (template, tool-call format,
reasoning, stops, adaptations), routing, template facts, the dialect of history it is
shown, rendering, grammars, and the GGUF metadata they are read from.
"""
