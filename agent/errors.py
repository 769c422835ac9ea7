"""Errors shared across modules that must not import each other."""


class ToolError(Exception):
    """Something the model asked a tool to do cannot be done; the message goes back to it."""
