"""An MCP client nobody on this project wrote: the official Python SDK (`mcp` from PyPI).

The Rust tests run it against the platform's /mcp endpoint or against `servio mcp` over
stdio, and read one JSON line per step from its standard output.

    client.py http URL TOKEN STEPS_JSON      (the classic session: the initialize handshake)
    client.py modern URL TOKEN STEPS_JSON    (the SDK's default, `Client(mode="auto")`: it
                                              discovers the server and speaks 2026-07-28,
                                              stateless, hearing changes on a listen stream)
    client.py stdio STEPS_JSON -- COMMAND ARG...         (the classic session over stdio)
    client.py stdio-modern STEPS_JSON -- COMMAND ARG...  (the SDK's default over stdio)

STEPS_JSON is a list of steps: {"list": true}, {"call": NAME, "args": {...}}, or
{"await_change": SECONDS} (prints {"waiting": true}, then waits for
notifications/tools/list_changed and prints whether it came). Each step prints one line.
"""

import asyncio
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(value):
    print(json.dumps(value), flush=True)


def wire(model):
    """A result as it was on the wire (camelCase names), whatever the SDK calls its fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def tool_json(tool):
    listed = wire(tool)
    return {"name": listed["name"], "description": listed.get("description"), "inputSchema": listed["inputSchema"]}


def result_json(result):
    sent = wire(result)
    texts = [c["text"] for c in sent.get("content", []) if c.get("type") == "text"]
    return {"isError": bool(sent.get("isError")), "structured": sent.get("structuredContent"), "texts": texts}


async def list_or_call(step, list_tools, call_tool):
    """Runs a `list` or `call` step and prints its line; False for any other step."""
    if "list" in step:
        listed = await list_tools()
        emit({"tools": [tool_json(t) for t in listed.tools]})
    elif "call" in step:
        try:
            result = await call_tool(step["call"], step.get("args", {}))
            emit({"result": result_json(result)})
        except Exception as error:  # a protocol error (unknown tool)
            emit({"protocol_error": str(error)})
    else:
        return False
    return True


async def run(streams, steps):
    read, write = streams[0], streams[1]
    changed = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    async with ClientSession(read, write, message_handler=on_message) as session:
        init = await session.initialize()
        sent = wire(init)
        tools = sent.get("capabilities", {}).get("tools", {})
        emit({"server": sent["serverInfo"]["name"], "listChanged": bool(tools.get("listChanged"))})
        for step in steps:
            if await list_or_call(step, session.list_tools, session.call_tool):
                continue
            if "await_change" in step:
                emit({"waiting": True})
                with anyio.move_on_after(step["await_change"]):
                    await changed.wait()
                emit({"changed": changed.is_set()})
                changed = anyio.Event()


async def run_modern(transport, steps):
    async with Client(transport, mode="auto") as client:
        session = client.session
        tools = wire(session.server_capabilities).get("tools", {}) if session.server_capabilities else {}
        emit({"server": session.server_info.name, "listChanged": bool(tools.get("listChanged")),
              "protocol": session.protocol_version})
        for step in steps:
            if await list_or_call(step, lambda: client.list_tools(cache_mode="refresh"), client.call_tool):
                continue
            if "await_change" in step:
                changed = False
                async with client.listen(tools_list_changed=True) as subscription:
                    emit({"waiting": True})
                    with anyio.move_on_after(step["await_change"]):
                        async for _event in subscription:
                            changed = True
                            break
                emit({"changed": changed})


async def main():
    mode = sys.argv[1]
    if mode == "http":
        url, token, steps = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as streams:
            await run(streams, steps)
    elif mode == "modern":
        url, token, steps = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            await run_modern(streamable_http_client(url, http_client=client), steps)
    elif mode in ("stdio", "stdio-modern"):
        steps = json.loads(sys.argv[2])
        command = sys.argv[sys.argv.index("--") + 1 :]
        # The SDK gives a server a minimal environment by default; servio mcp reads SERVIO_TOKEN.
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        if mode == "stdio-modern":
            await run_modern(stdio_client(params), steps)
        else:
            async with stdio_client(params) as streams:
                await run(streams, steps)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    asyncio.run(main())
