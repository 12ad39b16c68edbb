"""What an installed server must score right through REST: React at ``build`` and ``typecheck``
and math, on hand-written cases (the wheel's and the image's tests share them)."""
from __future__ import annotations

import httpx

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
    body = {"task": task, "options": options or {},
            "rollouts": [{"id": "a", "completion": completion, "reference": reference}]}
    reply = httpx.post(f"{url}/v1/rewards", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"][0]


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
