"""bosun: an agentic coding harness for local models."""

__version__ = "0.1.0"
