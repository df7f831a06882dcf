"""Headless Chromium for the tests that look at a page: the DevTools protocol on a pipe, stdlib only.

Debian's ``chromium`` package (CI installs it: .ci/run); tests skip with the reason where there is
none. WebGL runs on SwiftShader, Chromium's software renderer, so no GPU is needed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--remote-debugging-pipe")


def chromium() -> str | None:
    """The Chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """One headless Chromium with one page, driven over ``--remote-debugging-pipe`` (fds 3 and 4:
    NUL-separated JSON messages). ``requests`` collects the URL of every request the page makes."""

    def __init__(self, width: int = 960, height: int = 640, timeout: float = 60.0):
        exe = chromium()
        if exe is None:
            raise FileNotFoundError("no chromium executable")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="freeflyer-chromium-")
        commands_r, self._commands_w = os.pipe()
        self._replies_r, replies_w = os.pipe()

        def pipe_fds():  # in the child: the protocol's fds 3 (commands in) and 4 (replies out)
            a, b = os.dup(commands_r), os.dup(replies_w)  # first out of the way of 3 and 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=pipe_fds, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_r)
        os.close(replies_w)
        self._buffer = b""
        self._id = 0
        self.events: list[dict] = []
        self.requests: list[str] = []
        try:
            targets = self.call("Target.getTargets")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Network"):
                self.call(f"{domain}.enable", session=True)
            self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def _message(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._replies_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the protocol pipe")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(text)
        if message.get("method") == "Network.requestWillBeSent":
            self.requests.append(message["params"]["request"]["url"])
        return message

    def call(self, method: str, session: bool = False, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._commands_w, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def _wait_event(self, name: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == name:
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {name} within {self.timeout} s")
            self.events.append(self._message())

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self._wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        reply = self.call("Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
                          returnByValue=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(reply["exceptionDetails"].get("exception", {}).get("description", str(reply)))
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} still false after {timeout or self.timeout} s")
            time.sleep(0.05)

    def errors(self) -> list[str]:
        """The page's uncaught exceptions so far."""
        return [e["params"]["exceptionDetails"].get("exception", {}).get("description", "")
                for e in self.events if e.get("method") == "Runtime.exceptionThrown"]

    def screenshot(self) -> bytes:
        """The page as PNG bytes."""
        return base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._replies_r, self._commands_w):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
