"""A small MCP server, written with the official SDK, that misbehaves on request.

Run as `python fault_server.py [--slow-start S] [--hang-start] [--crash-start]
[--linger] [--tools FILE]`. Its
tools: `echo`, `pid` (its own process id, for orphan checks), `hang` (never answers),
`crash` (exits mid-call), `huge` (a result of N characters), `fail` (an isError result),
`image` (non-text content), and `bad` whose input schema is not a valid JSON Schema.
`--tools FILE` lists the tools of a JSON file instead (a list of objects with `name`,
`description`, `inputSchema` and optionally `outputSchema`: a hostile listing); each
answers with its arguments as JSON text, and as structured content too where it
declares an output schema.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

NO_ARGS = {"type": "object"}
TOOLS = [
    types.Tool(
        name="echo",
        description="Say the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(
        name="pid", description="This server's process id.", input_schema={"type": "object"}
    ),
    types.Tool(name="hang", description="Never answers.", input_schema=NO_ARGS),
    types.Tool(
        name="crash",
        description="Exits in the middle of the call.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="huge",
        description="A result of `size` characters.",
        input_schema={
            "type": "object",
            "properties": {"size": {"type": "integer"}},
            "required": ["size"],
        },
    ),
    types.Tool(name="fail", description="Reports an error.", input_schema=NO_ARGS),
    types.Tool(name="image", description="Returns a picture.", input_schema=NO_ARGS),
    types.Tool(
        name="bad",
        description="Declares a schema that is not one.",
        input_schema={"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    ),
]


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


LISTED: dict[str, types.Tool] = {}  # --tools FILE: served instead of TOOLS


def load_tools(path: str) -> None:
    for item in json.loads(Path(path).read_text(encoding="utf-8")):
        LISTED[item["name"]] = types.Tool(
            name=item["name"],
            description=item.get("description"),
            input_schema=item.get("inputSchema", NO_ARGS),
            output_schema=item.get("outputSchema"),
        )


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=list(LISTED.values()) if LISTED else TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    listed = LISTED.get(params.name)
    if listed is not None:
        structured = args if listed.output_schema is not None else None
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(args))],
            structured_content=structured,
        )
    if params.name == "echo":
        return _text(str(args.get("text", "")))
    if params.name == "pid":
        return _text(str(os.getpid()))
    if params.name == "hang":
        await asyncio.sleep(3600)
    if params.name == "crash":
        os._exit(3)
    if params.name == "huge":
        return _text("x" * int(args.get("size", 0)))
    if params.name == "fail":
        return _text("the thing failed", error=True)
    if params.name == "image":
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")]
        )
    return _text(f"unknown tool {params.name}", error=True)


def serve_http(port: int) -> None:
    """The same echo, over streamable HTTP on loopback (the SDK's high-level server)."""
    from mcp.server import MCPServer

    app = MCPServer("fault-http")

    @app.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    app.run(transport="streamable-http", host="127.0.0.1", port=port)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-start", type=float, default=0.0)
    parser.add_argument("--hang-start", action="store_true")
    parser.add_argument("--crash-start", action="store_true")
    parser.add_argument("--linger", action="store_true", help="keep running after stdin ends")
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on PORT")
    parser.add_argument("--tools", default="", help="serve the tools of this JSON file")
    opts = parser.parse_args()
    if opts.tools:
        load_tools(opts.tools)
    if opts.crash_start:
        sys.stderr.write("fault server: failing on purpose\n")
        sys.exit(1)
    time.sleep(opts.slow_start)
    if opts.hang_start:
        time.sleep(3600)
    server = Server("fault", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    if opts.linger:  # a badly behaved server: only a signal ends it
        time.sleep(3600)


if __name__ == "__main__":
    if "--http" in sys.argv:  # the SDK runs its own event loop for HTTP
        serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        asyncio.run(main())
