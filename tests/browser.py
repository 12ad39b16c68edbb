"""A headless Chromium for testing the server's own pages: the sandbox's DevTools-protocol browser
(:class:`botgrpo.sandbox.chromium.Chromium`, Debian's chromium over a pipe) with scripts on, no
isolation layers (it loads our page from 127.0.0.1), navigating, evaluating and taking screenshots."""
from __future__ import annotations

import base64
import time
from typing import Any

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.chromium import Chromium, chromium_executable
from tests.helpers import require_host


class Browser(Chromium):
    def __init__(self) -> None:
        super().__init__(frozenset(), iso.IsolationConfig())
        self._call("Emulation.setScriptExecutionDisabled", {"value": False}, time.monotonic() + 10, session=True)

    def open(self, url: str, ready: str, width: int = 1000, height: int = 700, timeout_s: float = 30.0) -> None:
        """Load ``url`` in a ``width`` x ``height`` viewport and wait until the expression ``ready`` is true."""
        deadline = time.monotonic() + timeout_s
        self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, deadline, session=True)
        self.evaluate("window.__stale = true")  # gone with this document's global: the wait sees only the new one
        self._call("Page.navigate", {"url": url}, deadline, session=True)
        self.wait(f"!window.__stale && document.body !== null && ({ready})", timeout_s)

    def wait(self, expression: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.evaluate(expression):
            assert time.monotonic() < deadline, f"not true after {timeout_s} s: {expression}"
            time.sleep(0.1)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (awaited when it is a promise)."""
        reply = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                           time.monotonic() + 30, session=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def png(self) -> bytes:
        """A screenshot of the viewport."""
        shot = self._call("Page.captureScreenshot", {"format": "png"}, time.monotonic() + 30, session=True)
        return base64.b64decode(shot["data"])


def browser() -> Browser:
    """A started :class:`Browser`; skips without Chromium (fails in CI: :func:`tests.helpers.require_host`)."""
    require_host(chromium_executable() is not None, "Chromium (apt-get install chromium)")
    return Browser()
