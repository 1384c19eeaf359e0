"""One tool call of a target that acts as the user (MCP Python SDK 2.x): the URL elicitation it gets is
handled as the reference page's SDK sample does (open the URL, wait for the person, accept).

    python python_url_connect.py URL TOOL

The page's sample imports `streamablehttp_client`, a name the SDK dropped in 2.0; this is the same
client with the 2.x name. Opening the URL prints `OPEN <url>` and waits for a line on stdin (the test's
browser signs in meanwhile). Prints each elicitation's mode, then the result's first text.
"""

import asyncio
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult


async def main(url: str, tool: str) -> None:
    async def on_elicitation(context, params):
        if getattr(params, "url", None):
            print(f"OPEN {params.url}", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            return ElicitResult(action="accept")
        return ElicitResult(action="decline")

    timeout = httpx2.Timeout(30, read=120)
    async with httpx2.AsyncClient(timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(read_stream, write_stream, elicitation_callback=on_elicitation) as session:
                await session.initialize()
                result = await session.call_tool(tool, {"repo": "my-org/my-repo"})
                print(f"RESULT {result.content[0].text}", flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2]))
