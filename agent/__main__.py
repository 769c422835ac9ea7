"""`python -m agent` is `bosun` (handy when the console script is not on PATH)."""

from agent.cli.main import app

app()
