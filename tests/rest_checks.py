"""What an installed server must score right through REST: React at ``build`` and ``typecheck``
and math, on hand-written cases, and the curated UI libraries (the wheel's, the image's and the
in-process server's tests share them)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

# The allow-list's one source: the sandbox's package.json, read from this checkout (the wheel and
# the image ship copies of it; what they serve must be this list).
CURATED = tuple(json.loads((Path(__file__).resolve().parents[1] / "sandbox" / "node" / "package.json")
                           .read_text())["botgrpo"]["libraries"])

GOOD_TSX = """```tsx
export default function Greeting({ name }: { name: string }) {
  return <p>Hello, {name}</p>;
}
```"""
TYPE_ERROR_TSX = """```tsx
export default function Count() {
  const n: number = "three";
  return <p>{n}</p>;
}
```"""


def score(url: str, task: str, completion: str, options=None, reference=None) -> dict:
    """POST one rollout to ``url``/v1/rewards; its result (asserting a 200)."""
    with httpx.Client(base_url=url, timeout=120) as client:
        return score_with(client, task, completion, options, reference)


def check_react_and_math(url: str) -> None:
    """A component that builds and type-checks passes both levels; a type error passes ``build``
    (only the checker sees it) and fails ``typecheck`` with negative token scores; a right boxed
    answer scores 1.0, a wrong one fails."""
    assert score(url, "react", GOOD_TSX, {"level": "build"})["passed"] is True
    assert score(url, "react", GOOD_TSX, {"level": "typecheck"})["passed"] is True
    wrong = score(url, "react", TYPE_ERROR_TSX, {"level": "typecheck"})
    assert wrong["passed"] is False and min(wrong["token_scores"]) < 0
    assert score(url, "react", TYPE_ERROR_TSX, {"level": "build"})["passed"] is True
    right = score(url, "math", "3 * 4 = 12, so \\boxed{12}", reference={"answer": "12"})
    assert right["passed"] is True and right["score"] == 1.0
    assert score(url, "math", "\\boxed{13}", reference={"answer": "12"})["passed"] is False


# A component importing every curated module once, each used with its real types.
LIBRARY_PROBE = """```tsx
import { useState } from "react";
import { Bell } from "lucide-react";
import { motion } from "framer-motion";
import { motion as m } from "motion/react";
import { Bar, BarChart } from "recharts";
import clsx from "clsx";
import { format } from "date-fns";

export default function Probe() {
  const [on, setOn] = useState(false);
  return (
    <motion.div className={clsx("p-4", on && "bg-blue-50")}>
      <Bell size={16} />
      <m.button onClick={() => setOn(!on)}>Toggle</m.button>
      <p>{format(new Date(2026, 0, 2), "yyyy-MM-dd")}</p>
      <BarChart width={120} height={60} data={[{ v: 1 }, { v: 2 }]}>
        <Bar dataKey="v" />
      </BarChart>
    </motion.div>
  );
}
```"""
OUTSIDE_THE_LIST = """```tsx
import moment from "moment";

export default function When() {
  return <p>{moment().year()}</p>;
}
```"""


def probe_imports() -> set[str]:
    """The modules :data:`LIBRARY_PROBE` imports besides React."""
    return set(re.findall(r'from "([^"]+)"', LIBRARY_PROBE)) - {"react"}


def check_libraries(client: httpx.Client) -> None:
    """The server's allow-list is :data:`CURATED`, exactly: ``GET /v1/scorers`` says so for
    ``react``, a component importing every curated module passes ``typecheck`` (each installed,
    with its types), and a module outside the list is refused at ``build``, naming it."""
    assert probe_imports() == set(CURATED), "LIBRARY_PROBE must import each curated module: update it"
    listed = client.get("/v1/scorers")
    assert listed.status_code == 200, listed.text
    react = next(info for info in listed.json()["scorers"] if info["task"] == "react")
    assert react["allowed_imports"] == list(CURATED), react["allowed_imports"]
    for level in ("build", "typecheck"):
        result = score_with(client, "react", LIBRARY_PROBE, {"level": level})
        assert result["passed"] is True, (level, result["details"])
    refused = score_with(client, "react", OUTSIDE_THE_LIST, {"level": "build"})
    assert refused["passed"] is False
    assert any('"moment"' in e["message"] and "is not allowed" in e["message"] for e in refused["details"]["errors"]), \
        refused["details"]["errors"]


def score_with(client: httpx.Client, task: str, completion: str, options=None, reference=None) -> dict:
    """:func:`score` through ``client`` (a base-URL client, or FastAPI's TestClient)."""
    body = {"task": task, "options": options or {},
            "rollouts": [{"id": "a", "completion": completion, "reference": reference}]}
    reply = client.post("/v1/rewards", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"][0]
