"""One tool call whose form elicitation the user answers after THINK seconds (MCP Python SDK 2.x).

    python python_think.py URL TOOL THINK_SECONDS

Prints the result's first text. The client as written in the SDK's docs: a long read timeout on the
call's stream, nothing gateway-specific; a stream the server ends before the result is reconnected
by the SDK itself (GET + Last-Event-ID, after the server's `retry`).
"""

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult


async def main(url: str, tool: str, think: float) -> None:
    async def on_elicitation(context, params):
        await asyncio.sleep(think)
        return ElicitResult(action="accept", content={"confirm": True})

    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(read_stream, write_stream, elicitation_callback=on_elicitation) as session:
                await session.initialize()
                result = await session.call_tool(tool, {"env": "prod"})
                print(result.content[0].text)


asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
