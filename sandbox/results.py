"""Result types of the compile sandbox and the conversion from the worker's wire format.

The Node worker speaks JavaScript string offsets (UTF-16 code units); Python callers index
``str`` by code points. Characters outside the BMP (emoji, some CJK) are two UTF-16 units but
one code point, so every span is converted here, once, and line/col are recomputed from the
converted offset so they agree with ``code.splitlines()``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

MAX_MESSAGE_CHARS = 1000
MAX_CSS_CHARS = 1 << 20
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class Diagnostic:
    """A compiler error, a render failure or a lint finding. ``start``/``end`` index the Python
    ``str`` (code points), [start, end); ``line`` is 1-based, ``col`` 0-based in code points.
    ``rule`` names what found it beyond the compilers: an ESLint rule (``react/jsx-key``,
    ``react-hooks/rules-of-hooks``) or a render check (``render/throw``, ``render/empty``,
    ``render/timeout``, ...); ``start == end == 0`` with a ``render/...`` rule has no place."""

    start: int
    end: int
    line: int
    col: int
    message: str
    severity: str = "error"
    rule: str | None = None
    # [start, end) of what the compiler's notes point at (the opening tag a closing tag fails to match)
    related: tuple[tuple[int, int], ...] = ()

    @property
    def located(self) -> bool:
        return self.end > self.start or self.rule is None


# Render statuses that are the sandbox's limits or rules, not an ordinary bug: scored lowest.
FATAL_RENDER = frozenset({"timeout", "memory", "stack", "violation", "output", "crashed"})


@dataclass(frozen=True)
class RenderResult:
    """What executing the component showed (level ``render``; see ``sandbox/README.md``).

    ``status``: ``ok``; ``error`` (a throw or an invalid element), ``empty``, ``hooks`` (broke
    the rules of hooks), ``no_component``; ``not_built``; or a fatal one (:data:`FATAL_RENDER`):
    ``timeout``, ``memory``, ``stack``, ``violation`` (reached for the host, modified a
    built-in), ``output`` (markup or console flood), ``crashed``. ``html`` is the server
    render's markup, ``text`` a sample of its visible text."""

    status: str
    message: str = ""
    html: str = ""
    text: str = ""
    text_chars: int = 0
    elements: int = 0
    tags: dict[str, int] = field(default_factory=dict)
    component: str | None = None
    props: dict[str, Any] = field(default_factory=dict)
    props_from: str = "none"
    effects: int = 0
    timers: int = 0
    effect_errors: list[str] = field(default_factory=list)
    console_bytes: int = 0
    violations: list[str] = field(default_factory=list)
    ms: float = 0.0
    css: str = ""  # the markup's Tailwind classes compiled (asked for with render option tailwind)
    css_ms: float = 0.0

    @property
    def fatal(self) -> bool:
        return self.status in FATAL_RENDER

    @property
    def rendered(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class CompileResult:
    """Outcome of compiling one file. Bad code never raises: it yields ``ok=False``."""

    ok: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    timed_out: bool = False
    crashed: bool = False
    elapsed_s: float = 0.0
    lint: list[Diagnostic] = field(default_factory=list)
    render: RenderResult | None = None
    # "time" or "memory" when a per-rollout budget stopped this input (then timed_out or crashed)
    over_budget: str | None = None

    @property
    def budget_blamed(self) -> bool:
        """A budget overrun the sandbox could place: some diagnostic spans the construct that
        spent the budget (a recursive generic type alias and its instantiation), so the
        failure is the code's, located like a compile error, not a fault of the whole file."""
        return self.over_budget is not None and any(d.end > d.start for d in self.diagnostics)


class Utf16Index:
    """Maps UTF-16 offsets of ``code`` to code-point offsets, and offsets to (line, col)."""

    def __init__(self, code: str) -> None:
        self._length = len(code)
        astral = [i for i, ch in enumerate(code) if ord(ch) > 0xFFFF]
        # UTF-16 offset at which the k-th astral character starts: its index plus k extra units.
        self._astral_utf16 = [index + k for k, index in enumerate(astral)]
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(code) if ch == "\n"]

    def to_index(self, utf16_offset: int) -> int:
        """Code-point index of a UTF-16 offset; an offset inside a surrogate pair rounds down."""
        offset = max(0, int(utf16_offset))
        astral_before = bisect.bisect_left(self._astral_utf16, offset)
        return min(offset - astral_before, self._length)

    def line_col(self, index: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, index) - 1
        return line + 1, index - self._line_starts[line]


def _convert_spans(value: Any, index: Utf16Index) -> Any:
    """Recursively rewrite every {"start", "end"} pair in a summary to code-point offsets."""
    if isinstance(value, list):
        return [_convert_spans(item, index) for item in value]
    if isinstance(value, dict):
        converted = {key: _convert_spans(item, index) for key, item in value.items()}
        for key in ("start", "end"):
            if isinstance(converted.get(key), int):
                converted[key] = index.to_index(converted[key])
        return converted
    return value


def clean_message(message: Any, redact: Iterable[tuple[str, str]] = ()) -> str:
    """A diagnostic message as it may leave the sandbox: one line, no host paths in
    ``redact`` (path, placeholder), no lone surrogates (which no UTF-8 encoder accepts),
    at most ``MAX_MESSAGE_CHARS``. The worker sanitises too; this is the second line."""
    text = str(message)
    for path, placeholder in redact:
        if path:
            text = text.replace(path, placeholder)
    text = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text)).strip()
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


def diagnostic_at(code: str, start: int, end: int, message: str) -> Diagnostic:
    """A diagnostic built on the Python side (already in code points)."""
    line, col = Utf16Index(code).line_col(start)
    return Diagnostic(start=start, end=end, line=line, col=col, message=clean_message(message))


def failure(code: str, message: str, elapsed_s: float = 0.0, *, timed_out: bool = False,
            crashed: bool = False, over_budget: str | None = None) -> CompileResult:
    """A failing result that is not the code's fault alone (timeout, crash, limits)."""
    return CompileResult(ok=False, diagnostics=[diagnostic_at(code, 0, 0, message)],
                         timed_out=timed_out, crashed=crashed, elapsed_s=elapsed_s,
                         over_budget=over_budget)


def _diagnostics(raws: Any, index: Utf16Index, redact: tuple[tuple[str, str], ...]) -> list[Diagnostic]:
    out = []
    for raw in raws or []:
        start = index.to_index(raw.get("start", 0))
        end = max(start, index.to_index(raw.get("end", 0)))
        line, col = index.line_col(start)
        rule = raw.get("rule")
        out.append(Diagnostic(start=start, end=end, line=line, col=col,
                              message=clean_message(raw.get("message", ""), redact),
                              severity=str(raw.get("severity", "error")),
                              rule=clean_message(rule)[:100] if rule else None,
                              related=_related(raw.get("related"), index)))
    return out


def _related(raws: Any, index: Utf16Index) -> tuple[tuple[int, int], ...]:
    """The notes' spans, in code points; anything malformed is dropped (at most four kept)."""
    spans = []
    for raw in raws if isinstance(raws, list) else []:
        if isinstance(raw, dict) and all(type(raw.get(k)) is int and raw[k] >= 0 for k in ("start", "end")):
            start = index.to_index(raw["start"])
            spans.append((start, max(start, index.to_index(raw["end"]))))
    return tuple(spans[:4])


def _render(raw: Any, redact: tuple[tuple[str, str], ...]) -> RenderResult | None:
    if not isinstance(raw, dict):
        return None
    tags = raw.get("tags") if isinstance(raw.get("tags"), dict) else {}
    props = raw.get("props") if isinstance(raw.get("props"), dict) else {}
    return RenderResult(
        status=str(raw.get("status", "crashed")), message=clean_message(raw.get("message", ""), redact),
        html=_SURROGATE.sub("\ufffd", str(raw.get("html", ""))),
        text=_SURROGATE.sub("\ufffd", str(raw.get("text", ""))), text_chars=int(raw.get("textChars", 0) or 0),
        elements=int(raw.get("elements", 0) or 0), tags={str(k): int(v) for k, v in tags.items()},
        component=str(raw["component"]) if raw.get("component") is not None else None, props=props,
        props_from=str(raw.get("props_from", "none")), effects=int(raw.get("effects", 0) or 0),
        timers=int(raw.get("timers", 0) or 0),
        effect_errors=[clean_message(e, redact)[:300] for e in raw.get("effectErrors") or []][:5],
        console_bytes=int(raw.get("consoleBytes", 0) or 0),
        violations=[clean_message(v, redact)[:200] for v in raw.get("violations") or []][:20],
        ms=float(raw.get("ms", 0.0) or 0.0),
        css=str(raw.get("css") or "")[:MAX_CSS_CHARS], css_ms=float(raw.get("css_ms", 0.0) or 0.0))


def from_response(code: str, response: dict[str, Any], elapsed_s: float,
                  redact: Iterable[tuple[str, str]] = ()) -> CompileResult:
    """Convert one worker response line (already JSON-decoded) into a CompileResult.
    Raises on a malformed response (the dispatcher turns that into a failing result)."""
    index = Utf16Index(code)
    redact = tuple(redact)
    diagnostics = _diagnostics(response.get("diagnostics"), index, redact)
    summary = _convert_spans(response.get("summary") or {}, index)
    timed_out, crashed = bool(response.get("timed_out")), bool(response.get("crashed"))
    budget = response.get("budget")
    over_budget = budget if budget in ("time", "memory") and (timed_out or crashed) else None
    return CompileResult(ok=bool(response.get("ok")) and not (timed_out or crashed),
                         diagnostics=diagnostics, summary=summary, timed_out=timed_out,
                         crashed=crashed, elapsed_s=elapsed_s,
                         lint=_diagnostics(response.get("lint"), index, redact),
                         render=_render(response.get("render"), redact), over_budget=over_budget)
