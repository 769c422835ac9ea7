"""MCP servers as tools: which servers (servers.py), their tools (tools.py), the running
servers behind a synchronous face (hub.py), and a session's servers (session.py).

The `mcp` SDK is imported only where a server is started, so `bosun --help` and runs
without servers never load it.
"""
