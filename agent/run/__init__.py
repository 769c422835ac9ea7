"""How a request comes in: one assembly for every face (headless `run`, `--tasks`
batches, the chat controller), the settings they share, and the system prompt.

No face imports another: what they share lives in `assemble` and `settings`.
"""
