"""One tool call through a fastmcp 4 client in its 2025 mode (`mode="legacy"`: the initialize handshake)
that records what the server sends besides the result, like python_notifications.py does for the MCP
Python SDK: log messages, progress.

    python fastmcp_notifications.py URL TOOL ARGUMENTS_JSON

Prints one JSON line: the result's text, the log messages (level and data) in arrival order, how many
arrived before the result, and the progress values. It waits for log messages up to a second after the
result (they may ride the server's GET stream).
"""

import asyncio
import json
import sys

from fastmcp import Client


async def main(url: str, tool: str, arguments: dict) -> None:
    logs: list[dict] = []
    progress: list[float] = []

    async def on_log(message) -> None:
        logs.append({"level": message.level, "data": message.data})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(url, mode="legacy", log_handler=on_log, progress_handler=on_progress, timeout=60) as client:
        result = await client.call_tool(tool, arguments)
        before_result = len(logs)
        for _ in range(20):
            if logs:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        print(
            json.dumps(
                {
                    "text": result.content[0].text,
                    "logs": logs,
                    "logsBeforeResult": before_result,
                    "progress": progress,
                }
            ),
            flush=True,
        )


asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
