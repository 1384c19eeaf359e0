"""One tools/call with the official Python MCP SDK (`pip install mcp`), for measure-client-polling.ts.

Usage: python python_client.py <url> <timeout seconds>
Prints one JSON line: {"ok": true, "text": ...} or {"ok": false, "error": ...}; and the SDK version.
"""

import json
import sys
from importlib.metadata import version

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, timeout: float) -> dict:
    try:
        with anyio.fail_after(timeout):
            async with streamable_http_client(url) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("probe", {})
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    return {"ok": not result.is_error if hasattr(result, "is_error") else True, "text": text}
    except BaseException as error:  # noqa: BLE001 - the measurement reports whatever ended the call
        return {"ok": False, "error": f"{type(error).__name__}: {error}"[:300]}


if __name__ == "__main__":
    outcome = anyio.run(main, sys.argv[1], float(sys.argv[2]))
    outcome["version"] = version("mcp")
    print(json.dumps(outcome))
