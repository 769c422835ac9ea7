"""Errors shared across modules that must not import each other."""

from drivers.base import DriverError


class ToolError(Exception):
    """Something the model asked a tool to do cannot be done; the message goes back to it."""


class SessionWriteError(DriverError):
    """The session file cannot be written (a full disk, a folder gone): the run stops
    with status "error" (a harness-side failure, like a backend's), since a session
    that cannot be recorded may lose work."""
