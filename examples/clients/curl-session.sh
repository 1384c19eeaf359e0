#!/usr/bin/env bash
# A 2025-11-25 session with curl: initialize, then a tool call in the session.
#   bash examples/clients/curl-session.sh http://127.0.0.1:8080/mcp
set -euo pipefail
URL=${1:-http://127.0.0.1:8080/mcp}
SID=$(curl -si "$URL" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"curl","version":"1"}}}' \
  | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' | tr -d '\r')
curl -s "$URL" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H "mcp-session-id: $SID" -H 'mcp-protocol-version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo___echo","arguments":{"text":"hi"}}}'
echo
