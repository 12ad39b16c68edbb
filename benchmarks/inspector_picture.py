"""The README's picture of the reward inspector (docs/inspector.png): a live ``botgrpo serve``
scores a few math and React rollouts, then headless Chromium (tests/browser.py) shows /inspector
(tokens coloured by score; the blame reasons are the tooltips of the dotted tokens).

    .venv/bin/python -m benchmarks.inspector_picture docs/inspector.png
"""
from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import httpx
from PIL import Image

from botgrpo.processes import Server
from tests.browser import Browser

TYPE_ERROR = """```tsx
export default function Counter({ start }: { start: number }) {
  const label: string = start + 1;
  return <button>{label}</button>;
}
```"""
ROLLOUTS = [
    ("math", {}, "12 * 3 = 36. 36 + 5 = 41. So \\boxed{41}", {"answer": "41"}),
    ("math", {}, "12 * 3 = 36. 36 + 5 = 42. So the total is \\boxed{42}", {"answer": "41"}),
    ("react", {"level": "typecheck"}, TYPE_ERROR, None),
]


def main(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        browser = Browser()
        try:
            for i, (task, options, completion, reference) in enumerate(ROLLOUTS):
                body = {"task": task, "options": options,
                        "rollouts": [{"id": f"example-{i + 1}", "completion": completion, "reference": reference}]}
                httpx.post(f"{server.url}/v1/rewards", json=body, timeout=120).raise_for_status()
            browser.open(f"{server.url}/inspector", "document.body.dataset.loaded === 'true'", width=900, height=820)
            png = browser.png()
        finally:
            browser.kill()
            server.stop()
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=96)  # a small file for the README
    image.save(out, optimize=True)
    print(f"wrote {out} ({Path(out).stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/inspector.png")
