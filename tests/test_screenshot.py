"""Screenshots of rendered components in headless Chromium (Debian's chromium, under the
sandbox's isolation layers, driven over the DevTools protocol): real PNGs, looked at pixel by
pixel, bounded in time and size, through the scorer and ``botgrpo score --screenshot``."""
from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest
from PIL import Image

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.sandbox.screenshot import ScreenshotPool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

RED_BOX = ('<div style="width:200px;height:100px;background:#ff0000"></div>'
           '<h1 style="color:#0000ff">Hello screenshot</h1>')
CARD = '''export default function Card({ title }: { title: string }) {
  return (
    <section style={{ border: "4px solid rgb(0, 128, 0)", padding: 12, width: 300 }}>
      <h2>{title}</h2>
      <button>Add</button>
    </section>
  );
}
'''


@pytest.fixture(scope="module")
def shots():
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    with ScreenshotPool(size=1, timeout_s=20.0) as pool:
        yield pool


def image(png: bytes) -> Image.Image:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return Image.open(io.BytesIO(png)).convert("RGB")


def test_a_real_png_of_the_markup(shots):
    shot = shots.shoot(RED_BOX, width=400, height=300)
    assert shot.error is None, shot.error
    img = image(shot.png)
    assert img.size == (400, 300)
    assert img.getpixel((100, 50)) == (255, 0, 0)          # inside the red box (8px body padding)
    assert img.getpixel((390, 290)) == (255, 255, 255)     # the white page
    colours = img.getcolors(maxcolors=1 << 16)
    assert any(b > 200 and r < 80 and g < 80 for _, (r, g, b) in colours)  # the blue heading's text


def test_scripts_do_not_run_and_nothing_loads(shots):
    page = ('<p id="t" style="font-size:40px">static</p>'
            '<script>document.body.style.background = "rgb(0,0,0)"</script>'
            '<img src="http://127.0.0.1:6379/x.png" style="width:100px;height:100px">')
    img = image(shots.shoot(page, width=300, height=200).png)
    assert img.getpixel((290, 190)) == (255, 255, 255)  # the script would have painted it black


def test_bounds_and_recovery(shots):
    assert "limit" in shots.shoot("x" * (shots.max_html_chars + 1)).error
    assert "viewport" in shots.shoot("<p>x</p>", width=0).error
    slow = ScreenshotPool(size=1, timeout_s=0.001)
    try:
        first = slow.shoot("<p>x</p>")
        assert first.png is None and ("timed out" in first.error or "failed" in first.error)
        assert slow.counts["timeouts"] + slow.counts["failures"] >= 1
    finally:
        slow.close()
    started = time.monotonic()
    again = shots.shoot(RED_BOX, 200, 120)
    assert again.png is not None and time.monotonic() - started < 20
    assert shots.healthy()


def test_the_scorer_returns_a_screenshot_of_the_render():
    require_node_toolchain()
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1) as pool:
        scorer = ReactScorer(pool)
        try:
            results = scorer.score_batch([Rollout(f"```tsx\n{CARD}```"), Rollout("```tsx\nexport default 1\n```")],
                                         ReactOptions(level="render", screenshot=True, screenshot_width=500,
                                                      screenshot_height=300))
        finally:
            scorer.close()
    import base64

    card, broken = results
    img = image(base64.b64decode(card.details["screenshot_png"]))
    assert img.size == (500, 300)
    greens = [img.getpixel((x, 20)) for x in range(8, 320)]
    assert (0, 128, 0) in greens  # the card's green border
    assert "screenshot_png" not in broken.details


def test_botgrpo_score_writes_the_screenshot(tmp_path):
    require_node_toolchain()
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")
    answer = tmp_path / "answer.md"
    answer.write_text(f"```tsx\n{CARD}```\n")
    out = tmp_path / "out.png"
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "score", "--task", "react", str(answer),
                           "-o", "level=render", "--screenshot", str(out)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    img = image(out.read_bytes())
    assert img.size == (800, 600) and len(img.getcolors(maxcolors=1 << 16)) > 2


def test_the_server_returns_the_screenshot_on_request(tmp_path):
    import base64

    import httpx

    from tests.live_server import LiveServer

    require_node_toolchain()
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")
    srv = LiveServer(tmp_path, env={"BOTGRPO_WARM_SCORERS": "false"})
    try:
        reply = httpx.post(srv.url + "/v1/rewards", timeout=180, json={
            "task": "react", "options": {"level": "render", "screenshot": True, "screenshot_width": 400,
                                         "screenshot_height": 200},
            "rollouts": [{"id": "card", "completion": f"```tsx\n{CARD}```"}]})
        assert reply.status_code == 200, reply.text
        (result,) = reply.json()["results"]
        assert result["passed"] is True and result["details"]["render"]["status"] == "ok"
        assert image(base64.b64decode(result["details"]["screenshot_png"])).size == (400, 200)
        plain = httpx.post(srv.url + "/v1/rewards", timeout=60, json={
            "task": "react", "options": {"level": "render"}, "rollouts": [{"id": "c", "completion": f"```tsx\n{CARD}```"}]})
        assert "screenshot_png" not in plain.json()["results"][0]["details"]
    finally:
        srv.stop()


TAILWIND_CARD = '''export default function Promo() {
  return (
    <main className="p-6">
      <div className="h-24 w-64 rounded-xl bg-red-500 p-4 text-2xl font-bold text-white shadow-lg">Sale</div>
    </main>
  );
}
'''


def test_tailwind_classes_style_the_screenshot():
    """The same render shot with and without its Tailwind stylesheet: only the styled page shows
    the red box the class names ask for (Tailwind v4 from the lockfile, compiled in the sandbox)."""
    import base64

    require_node_toolchain()
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1) as pool:
        scorer = ReactScorer(pool)
        try:
            shots = {styled: scorer.score_batch([Rollout(f"```tsx\n{TAILWIND_CARD}```")], ReactOptions(
                level="render", screenshot=True, screenshot_tailwind=styled, screenshot_width=400, screenshot_height=200))[0]
                for styled in (True, False)}
        finally:
            scorer.close()
    styled, plain = (image(base64.b64decode(shots[s].details["screenshot_png"])) for s in (True, False))
    red = lambda rgb: rgb[0] > 200 and rgb[1] < 100 and rgb[2] < 100  # noqa: E731 - Tailwind's red-500
    inside = (60, 60)  # p-6 (24 px) + the body's 8 px: inside the 256 x 96 box
    assert red(styled.getpixel(inside)), styled.getpixel(inside)
    assert not red(plain.getpixel(inside)), plain.getpixel(inside)
    assert styled.tobytes() != plain.tobytes()
