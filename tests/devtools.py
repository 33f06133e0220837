"""A small client for headless Chromium's DevTools protocol, for the book site's browser test.

It starts Chromium with a fresh profile and no network services of its own, connects to its
one page over the DevTools websocket (``websocket-client``, which Jupyter Server already
installs) and sends commands one at a time; the events that arrive meanwhile are kept, so a
test can ask afterwards which console errors, exceptions and requests a page caused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-allow-origins=*", "--remote-debugging-port=0"]


def chromium_binary() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, binary: str, profile: Path, timeout: float = 60.0):
        import websocket

        self.timeout = timeout
        self.process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}",
                                         "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._devtools_port(profile / "DevToolsActivePort")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout,
                                                  suppress_origin=True)
        self.events: list[dict] = []
        self._next_id = 0

    def _devtools_port(self, port_file: Path) -> int:
        """Chromium writes the port it chose into the profile once it listens."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if port_file.exists() and port_file.read_text().strip():
                return int(port_file.read_text().split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(f"Chromium exited with code {self.process.returncode}")
            time.sleep(0.1)
        raise TimeoutError("Chromium did not open its DevTools port")

    def _receive(self) -> dict:
        message = json.loads(self.socket.recv())
        if "method" in message:
            self.events.append(message)
        return message

    def call(self, method: str, **params: Any) -> dict:
        """Send one command and return its result (events that come first are kept)."""
        self._next_id += 1
        self.socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = self._receive()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def wait_for(self, event: str, after: int) -> dict:
        """The first ``event`` among the events numbered ``after`` and later, waiting for it."""
        deadline = time.monotonic() + self.timeout
        while True:
            found = [e for e in self.events[after:] if e["method"] == event]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {self.timeout} s")
            self._receive()

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} raised {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> int:
        """Load ``url`` and wait for its load event; the events it causes are
        ``self.events[n:]`` for the ``n`` returned."""
        start = len(self.events)
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired", start)
        return start

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
