"""Why a scored completion failed: the first React level it fails at (or the spec) and a kind
that groups diagnostics differing only in their particulars, or the arithmetic failure's kind.
Pure functions over the records :mod:`benchmarks.real_model` writes (``sample["scored"][level]``).
"""
from __future__ import annotations

import re
from typing import Optional

REACT_LEVELS = ("build", "typecheck", "render")

_QUOTED = re.compile(r'"[^"\n]*"|\'[^\'\n]*\'|`[^`\n]*`')


def normalise(message: str) -> str:
    """A diagnostic without its particulars: quoted text and numbers replaced, first line only."""
    text = _QUOTED.sub("…", (message or "").splitlines()[0] if message else "")
    return re.sub(r"\b\d+\b", "N", text).strip()[:90]


def _fatal_kind(reason: str) -> Optional[str]:
    if reason == "no code in the completion":
        return "no code block"
    if reason and reason.startswith("unterminated code block"):
        return "truncated inside the code block"
    if reason in ("compiler timed out", "compiler crashed"):
        return reason
    return None


def react_failure(sample: dict) -> Optional[dict]:
    """Where and why a React completion fails: the first level (build, typecheck, render) it fails
    at, else the spec; None when it passes every level and the spec."""
    for level in REACT_LEVELS:
        r = sample["scored"][level]
        if r["error"]:
            return {"level": level, "kind": "unscored: " + r["error"][:60], "reason": r["error"]}
        if r["passed"]:
            continue
        fatal = _fatal_kind(r["reason"])
        if fatal:
            return {"level": level, "kind": fatal, "reason": r["reason"]}
        if level == "render" and r["render"] and r["render"].get("status") not in (None, "not_built"):
            status = r["render"]["status"]
            detail = normalise(r["render"].get("message") or "") if status == "error" else ""
            return {"level": level, "kind": f"render {status}" + (f": {detail}" if detail else ""),
                    "reason": r["reason"], "first_error": r["render"].get("message")}
        first = r["errors"][0]["message"] if r["errors"] else r["reason"]
        return {"level": level, "kind": f"{level}: {normalise(first)}", "reason": r["reason"], "first_error": first}
    last = sample["scored"][REACT_LEVELS[-1]]
    if last["spec_passed"] is False:
        violation = last["spec_violations"][0] if last["spec_violations"] else "spec"
        return {"level": "spec", "kind": f"spec: {normalise(violation)}", "reason": "; ".join(last["spec_violations"])}
    return None


def math_failure(sample: dict) -> Optional[dict]:
    r = sample["scored"]["math"]
    if r["error"]:
        return {"level": "math", "kind": "unscored: " + r["error"][:60], "reason": r["error"]}
    if r["passed"]:
        return None
    wrong = [s for s in r["steps"] or [] if s["ok"] is False]
    if r["reason"] == "no final answer found":
        kind = "no final answer"
    elif wrong:
        kind = "wrong answer after a wrong step"
    elif any(s["ok"] for s in r["steps"] or []):
        kind = "wrong answer, every checked step right"
    else:
        kind = "wrong answer, no checkable step"
    if sample["truncated"]:
        kind += " (truncated)"
    return {"level": "math", "kind": kind, "reason": r["reason"], "answer": r["answer"],
            "first_error": wrong[0]["text"] if wrong else None}
