"""A tool-protocol client built on the official MCP Python SDK, for Dragoman's
end-to-end tests (tests/tests/e2e/mcp_sdk.rs).

Usage: DRAGOMAN_MCP_TOKEN=<bearer token> python mcp_client.py <endpoint URL>

Reads a JSON array of steps on stdin and prints one JSON line per step:

  {"op": "list_tools"}
      -> {"op": "list_tools", "tools": [<names>]}
  {"op": "call_tool", "name": <tool>, "arguments": {...}}
      -> {"op": "call_tool", "name": <tool>, "is_error": bool,
          "texts": [<text contents>],
          "resources": [{"mime_type": ..., "size": <bytes>}],
          "structured": <structured content or null>}

A step the server refuses at the protocol level prints
{"op": ..., "error": {"code": ..., "message": ...}} and the script goes on.
The first line describes the connection: {"op": "connected", "protocol_version": ...}.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from typing import Any

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types import BlobResourceContents, EmbeddedResource, TextContent


def resource_size(resource: Any) -> int:
    if isinstance(resource, BlobResourceContents):
        return len(base64.b64decode(resource.blob))
    return len(resource.text.encode("utf-8"))


def call_answer(name: str, result: Any) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    resources = [
        {"mime_type": block.resource.mime_type, "size": resource_size(block.resource)}
        for block in result.content
        if isinstance(block, EmbeddedResource)
    ]
    return {
        "op": "call_tool",
        "name": name,
        "is_error": bool(result.is_error),
        "texts": texts,
        "resources": resources,
        "structured": result.structured_content,
    }


async def list_tools(client: Client) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        names.extend(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return names


async def run_step(client: Client, step: dict[str, Any]) -> dict[str, Any]:
    op = step.get("op")
    try:
        if op == "list_tools":
            return {"op": op, "tools": await list_tools(client)}
        if op == "call_tool":
            name = step["name"]
            result = await client.call_tool(name, step.get("arguments", {}))
            return call_answer(name, result)
        return {"op": op, "error": {"code": None, "message": f"unknown step {op!r}"}}
    except MCPError as error:
        return {"op": op, "error": {"code": error.error.code, "message": error.error.message}}


async def main() -> int:
    url = sys.argv[1]
    token = os.environ["DRAGOMAN_MCP_TOKEN"]
    steps = json.load(sys.stdin)
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(60.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            print(json.dumps({"op": "connected", "protocol_version": client.protocol_version}), flush=True)
            for step in steps:
                print(json.dumps(await run_step(client, step)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
