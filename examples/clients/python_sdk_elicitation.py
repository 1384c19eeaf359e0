"""A tool call through the gateway whose elicitation is answered in code (MCP Python SDK 2.x).

    python -m venv .venv && .venv/bin/pip install "mcp>=2.3"
    .venv/bin/python examples/clients/python_sdk_elicitation.py http://127.0.0.1:8080/mcp [TOKEN]

`mcp` 2.x takes an `httpx2.AsyncClient` (headers, timeouts); 1.x took an `httpx.AsyncClient`.
"""

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult


async def on_elicitation(context, params):
    print(f"Elicitation: {params.message}")
    return ElicitResult(action="accept", content={"confirm": True})


async def main(url: str, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Elicitations wait on people: allow a long read on the call's stream.
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(read_stream, write_stream, elicitation_callback=on_elicitation) as session:
                await session.initialize()
                result = await session.call_tool("demo___use_aws", {"command": "aws s3 rm s3://my-bucket/important-file"})
                print(f"Result: {result.content[0].text}")


asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
