"""Runs one of the reference page's Python client samples as written, against a real gateway.

    python run_sample.py SAMPLE GATEWAY_URL THINK_SECONDS [SESSION_ID]

The sample's text is used unchanged but for what the page says to change: the gateway URL (and, for
the URL-mode sample, which assumes an existing session, that session's id). What the person does is
played here, around the sample, never inside it:
- `import sseclient` finds the stand-in beside this file's folder (../sseclient.py, the same
  dispatch rules as `sseclient-py`);
- the form sample has no prompt: the person's think time passes after it prints the question, before
  it answers (its `print` of "Form elicitation received" returns after THINK_SECONDS);
- `webbrowser.open(url)` is the person opening the consent page and clicking "allow" (a form POST from
  the page's origin, as a browser sends it); `input()` is the person pressing Enter THINK_SECONDS later.
  With SAMPLE_BROWSER=relay the page is a real browser's business: `webbrowser.open(url)` prints
  `OPEN <url>` and returns once a line arrives on stdin (the test drives Chromium meanwhile).
An exception the sample raises ends this process with its traceback (exit 1), as it would for a user.
"""

import builtins
import html
import os
import re
import sys
import time
import urllib.parse
import webbrowser

import requests

PAGE_URL = "https://mygateway-abcdefghij.gateway.bedrock-agentcore.us-west-2.amazonaws.com/mcp"
PAGE_SESSION_ID = "session-abc123def456"


def main(sample_path, gateway_url, think_seconds, session_id=None):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(sample_path, encoding="utf-8") as f:
        code = f.read().replace(PAGE_URL, gateway_url)
    if session_id is not None:
        code = code.replace(PAGE_SESSION_ID, session_id)

    real_print = builtins.print

    def think():
        # A duration, not a stand-in for an event: the person's think time is what the gateway
        # measures (stream release, the function's deadline). The one wait of this runner.
        time.sleep(think_seconds)

    def print_then_think(*args, **kwargs):
        real_print(*args, **kwargs)
        sys.stdout.flush()
        if args and str(args[0]).startswith("Form elicitation received"):
            think()

    def press_enter_later(prompt=""):
        real_print(prompt)
        sys.stdout.flush()
        think()
        return ""

    builtins.print = print_then_think
    builtins.input = press_enter_later
    webbrowser.open = relay_to_browser if os.environ.get("SAMPLE_BROWSER") == "relay" else click_allow
    exec(compile(code, sample_path, "exec"), {"__name__": "__main__"})


def relay_to_browser(url, *args, **kwargs):
    sys.__stdout__.write(f"OPEN {url}\n")
    sys.__stdout__.flush()
    sys.stdin.readline()
    return True


def click_allow(url, *args, **kwargs):
    page = requests.get(url, timeout=10)
    page.raise_for_status()
    found = re.search(r'<form method="post" action="([^"]+)">', page.text)
    if not found:
        raise RuntimeError(f"no consent form at {url}")
    action = urllib.parse.urljoin(url, html.unescape(found.group(1)))
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
    done = requests.post(action, data={"decision": "allow"}, headers={"Origin": origin}, timeout=10)
    done.raise_for_status()
    return True


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
