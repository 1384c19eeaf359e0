"""Tool calls of one 2025-11-25 session whose form elicitations the user answers after some think time
(MCP Python SDK 2.x), as its docs write a client: `ClientSession.initialize()` (the 2025 handshake), a long
read timeout, nothing gateway-specific. A call's stream the server ends before its result is reconnected by
the SDK itself (GET + Last-Event-ID after the server's `retry`).

    python python_calls_think.py URL CLIENT_NAME THINK_SECONDS[,THINK_SECONDS...] [TOOL ARGUMENTS_JSON]

Calls TOOL (default `use_aws` with `{"command": "call N"}`) once per think time, in order, and prints
each result's first text on its own line. The user's think time is a duration, not a stand-in for an
event: it is what the gateway measures (stream release, the function's deadline).
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult


async def main(url: str, name: str, thinks: list[float], tool: str | None, arguments: dict | None) -> None:
    pending = list(thinks)

    async def on_elicitation(context, params):
        await asyncio.sleep(pending.pop(0))
        return ElicitResult(action="accept", content={"confirm": True})

    timeout = httpx2.Timeout(30, read=300)
    info = types.Implementation(name=name, version="1.0.0")
    async with httpx2.AsyncClient(timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(
                read_stream, write_stream, elicitation_callback=on_elicitation, client_info=info
            ) as session:
                await session.initialize()
                for i in range(len(thinks)):
                    if tool is None:
                        result = await session.call_tool("use_aws", {"command": f"call {i + 1}"})
                    else:
                        result = await session.call_tool(tool, arguments)
                    print(result.content[0].text, flush=True)


asyncio.run(
    main(
        sys.argv[1],
        sys.argv[2],
        [float(t) for t in sys.argv[3].split(",")],
        sys.argv[4] if len(sys.argv) > 4 else None,
        json.loads(sys.argv[5]) if len(sys.argv) > 5 else None,
    )
)
