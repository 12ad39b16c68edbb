"""Screenshots of rendered components: a small pool of sandboxed headless Chromiums
(:mod:`botgrpo.sandbox.chromium`) turning server-rendered markup into PNGs.

    with ScreenshotPool(size=1) as shots:
        shot = shots.shoot(result.render.html, width=800, height=600)   # Shot(png, error, elapsed_s)

Bounded like the compile pool: markup over ``max_html_chars`` is refused, a screenshot that
takes longer than ``timeout_s`` kills its browser (the next shot gets a fresh one), a PNG over
``max_png_bytes`` is refused, and each browser is recycled after ``recycle_after`` shots so the
lifetime CPU limit stays a distant backstop. Nothing raises for bad markup: a failed shot has
``png=None`` and an ``error``. Browsers start on first use (a second or two each).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional, Sequence

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.chromium import Chromium, ChromiumError, chromium_executable

log = logging.getLogger(__name__)
MAX_SIDE = 4096


@dataclass(frozen=True)
class Shot:
    """A screenshot: ``png`` bytes, or None with the reason in ``error``."""

    png: Optional[bytes]
    error: Optional[str] = None
    elapsed_s: float = 0.0


class ScreenshotPool:
    """Thread-safe pool of ``size`` browsers; see the module docstring."""

    def __init__(self, size: int = 1, timeout_s: float = 10.0, *, isolation: Optional[iso.IsolationConfig] = None,
                 max_html_chars: int = 1 << 20, max_png_bytes: int = 4 << 20, recycle_after: int = 500,
                 executable: Optional[str] = None, start_timeout_s: float = 30.0) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = size
        self.timeout_s = timeout_s
        self.isolation = isolation or iso.IsolationConfig()
        self.max_html_chars = max_html_chars
        self.max_png_bytes = max_png_bytes
        self.recycle_after = recycle_after
        self.executable = executable
        self.start_timeout_s = start_timeout_s
        self._layers: Optional[frozenset[str]] = None
        self._idle: queue.Queue[Optional[Chromium]] = queue.Queue()
        for _ in range(size):
            self._idle.put(None)  # a slot; its browser starts on first use
        self._lock = threading.Lock()
        self._closed = False
        self._live: set[Chromium] = set()
        self.counts = {"shots": 0, "failures": 0, "timeouts": 0, "restarts": 0}

    @staticmethod
    def available() -> bool:
        """Whether this host has a Chromium to drive."""
        return chromium_executable() is not None

    def active_layers(self) -> frozenset[str]:
        if self._layers is None:
            self._layers = iso.resolve_layers(self.isolation)
        return self._layers

    def shoot(self, html: str, width: int = 800, height: int = 600) -> Shot:
        """A PNG of ``html`` (a fragment: it becomes the page's body) in a viewport of that size."""
        started = time.monotonic()
        if not isinstance(html, str) or len(html) > self.max_html_chars:
            return Shot(None, f"markup over the {self.max_html_chars}-character limit", 0.0)
        if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
            return Shot(None, f"viewport must be within {MAX_SIDE} x {MAX_SIDE} pixels", 0.0)
        if self._closed:
            return Shot(None, "screenshot pool closed", 0.0)
        browser = self._idle.get()
        try:
            browser = self._ready(browser)
            png = browser.screenshot(html, int(width), int(height), self.timeout_s)
        except ChromiumError as error:
            self._count("timeouts" if error.timed_out else "failures")
            browser = self._discard(browser)
            reason = f"screenshot timed out after {self.timeout_s:.1f}s" if error.timed_out else f"screenshot failed: {error}"
            return Shot(None, reason, time.monotonic() - started)
        except Exception as error:  # noqa: BLE001 - a shot never raises; the browser's state is unknown
            log.exception("screenshot failed")
            self._count("failures")
            browser = self._discard(browser)
            return Shot(None, f"screenshot failed: {type(error).__name__}", time.monotonic() - started)
        finally:
            if browser is not None and browser.shots >= self.recycle_after:
                browser = self._discard(browser)
            self._idle.put(browser)
        self._count("shots")
        if len(png) > self.max_png_bytes:
            return Shot(None, f"PNG over the {self.max_png_bytes}-byte limit", time.monotonic() - started)
        return Shot(png, None, time.monotonic() - started)

    def shoot_many(self, htmls: Sequence[str], width: int = 800, height: int = 600) -> list[Shot]:
        """Shots of several pages over the pool's browsers, in input order."""
        if len(htmls) <= 1 or self.size == 1:
            return [self.shoot(html, width, height) for html in htmls]
        with ThreadPoolExecutor(self.size) as executor:
            return list(executor.map(lambda html: self.shoot(html, width, height), htmls))

    def pids(self) -> list[int]:
        with self._lock:
            return [b.pid for b in self._live if b.alive()]

    def healthy(self) -> bool:
        with self._lock:
            return not self._closed and all(b.alive() for b in self._live)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            browsers = list(self._live)
            self._live.clear()
        for browser in browsers:
            browser.kill()

    def __enter__(self) -> "ScreenshotPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- browsers ------------------------------------------------------------------------

    def _ready(self, browser: Optional[Chromium]) -> Chromium:
        if browser is not None and browser.alive():
            return browser
        if browser is not None:
            self._discard(browser)
        browser = Chromium(self.active_layers(), self.isolation, executable=self.executable,
                           start_timeout_s=self.start_timeout_s)
        with self._lock:
            if self._closed:
                browser.kill()
                raise ChromiumError("screenshot pool closed")
            self._live.add(browser)
        return browser

    def _discard(self, browser: Optional[Chromium]) -> None:
        if browser is None:
            return None
        with self._lock:
            self._live.discard(browser)
        self._count("restarts")
        try:
            browser.kill()
        except Exception:  # noqa: BLE001
            log.exception("killing a browser failed")
        return None

    def _count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1
