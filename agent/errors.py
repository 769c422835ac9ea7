"""bosun's errors, in one place.

Two kinds, kept apart on purpose: a ToolError is the model's mistake and goes back to
the model as an error result; a HarnessError is the harness's (or the user's) and ends
the run. HarnessError, DriverError and UsageError are defined beside the driver
protocol, because drivers raise them and may not import `agent` beyond its history; they
are re-exported here so that `agent` modules name every error from one module.

    Exception
    ├── ToolError              the model asked for something that cannot be done
    └── HarnessError           the run ends: status "error" inside the loop
        ├── DriverError        a backend failed: exit 1
        ├── UsageError         the user's input (flags, files, config): exit 2
        └── SessionWriteError  the session or trace file cannot be written: exit 1
"""

from drivers.base import DriverError, HarnessError, UsageError

__all__ = ["DriverError", "HarnessError", "SessionWriteError", "ToolError", "UsageError"]


class ToolError(Exception):
    """Something the model asked a tool to do cannot be done; the message goes back to it."""


class SessionWriteError(HarnessError):
    """The session file cannot be written (a full disk, a folder gone): the run stops
    with status "error" (a harness-side failure, like a backend's), since a session
    that cannot be recorded may lose work."""
