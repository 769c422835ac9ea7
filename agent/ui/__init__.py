"""The terminal REPL (`bosun chat`): prompt-toolkit for input, rich for output.

Only `agent.cli.main` imports this package; it consumes agent events and drives an
`agent.run.chat.ChatSession`, so nothing in the runtime depends on a screen.
"""
