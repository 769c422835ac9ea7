"""Success: all four files say 9000, none says 8000, the rest is intact."""

from checklib import fail, load_json, text, workspace

ws = workspace()

for name in ("config.json", "service.env", "README.md", "compose.yml"):
    body = text(ws, name)
    if "8000" in body or "9000" not in body:
        fail(f"{name} was not updated: {body[:120]!r}")
if load_json(ws, "config.json") != {"service": "api", "port": 9000}:
    fail("config.json is not the old config with port 9000")
if "LOG_LEVEL=info" not in text(ws, "service.env"):
    fail("service.env lost LOG_LEVEL")
