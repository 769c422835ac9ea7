"""Success: settings.json has debug true and the other keys as before."""

from checklib import fail, load_json, workspace

ws = workspace()

got = load_json(ws, "settings.json")
if got != {"debug": True, "level": "info", "retries": 3}:
    fail(f"settings.json is {got!r}")
