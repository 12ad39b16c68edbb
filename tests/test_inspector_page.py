"""The reward inspector page in headless Chromium against a live server: hostile rollout text is
shown as text and never runs, tokens are coloured by their score (pixels of a real screenshot),
blame reasons sit on the tokens they name, the API key is asked for, and the paste box scores
through /v1/rewards."""
from __future__ import annotations

import io
import json

import httpx
import pytest

from tests.browser import Browser, browser
from tests.live_server import LiveServer

KEY = "inspector-page-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
TITLE = "BoT-GRPO reward inspector"
# each sets window.__pwned and the title if it ever runs
PAYLOADS = ["<script>window.__pwned = 1; document.title = 'pwned'</script>",
            "<img src=x onerror=\"window.__pwned = 2; document.title = 'pwned'\">",
            "</style><script>window.__pwned = 3</script><style>",
            "</pre><svg onload=\"window.__pwned = 4\"></svg>"]
READY = "document.body.dataset.loaded === 'true'"


def score(url: str, rollouts: list[dict]) -> None:
    reply = httpx.post(f"{url}/v1/rewards", json={"task": "math", "rollouts": rollouts}, headers=AUTH, timeout=60)
    assert reply.status_code == 200, reply.text


@pytest.fixture(scope="module")
def chromium():
    b = browser()
    yield b
    b.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory, chromium):
    srv = LiveServer(tmp_path_factory.mktemp("inspector-page"), env={"BOTGRPO_API_KEY": KEY,
                                                                     "BOTGRPO_WARM_SCORERS": "false"})
    hostile = " ".join(PAYLOADS)
    score(srv.url, [
        {"id": "right", "completion": "3 * 4 = 12, so \\boxed{12}", "reference": {"answer": "12"}},
        {"id": "wrong", "completion": "3 * 4 = 13, so \\boxed{13}", "reference": {"answer": "12"}},
        {"id": "hostile " + PAYLOADS[1], "completion": f"2 + 2 = 4 {hostile} \\boxed{{4}}", "reference": {"answer": "4"}},
    ])
    yield srv
    srv.stop()


def open_with_key(chromium: Browser, url: str, height: int = 700) -> None:
    """Load the page in a fresh tab state: it asks for the key, then shows the rollouts."""
    chromium.open(url + "/inspector", "document.readyState === 'complete'")
    chromium.evaluate("sessionStorage.clear()")
    chromium.open(url + "/inspector", "!document.getElementById('key').hidden", height=height)
    assert chromium.evaluate("document.querySelectorAll('#rollouts article').length") == 0
    chromium.evaluate(f"document.getElementById('key-input').value = {json.dumps(KEY)}; "
                      "document.getElementById('key-use').click()")
    chromium.wait(READY)


def test_hostile_text_is_shown_as_text_and_nothing_runs(chromium, server):
    # the payloads are live: put in a page as markup (no policy there), they run
    chromium.open("about:blank", "document.readyState === 'complete'")
    chromium.evaluate(f"document.body.innerHTML = {json.dumps(PAYLOADS[1])}")
    chromium.wait("window.__pwned === 2", timeout_s=10)

    open_with_key(chromium, server.url)
    chromium.evaluate("new Promise((done) => setTimeout(done, 500))")  # time for anything that would run
    assert chromium.evaluate("window.__pwned === undefined") is True
    assert chromium.evaluate("document.title") == TITLE
    assert chromium.evaluate("document.querySelectorAll('#rollouts script, #rollouts img, #rollouts svg, "
                             "#rollouts style').length") == 0
    shown = chromium.evaluate("[...document.querySelectorAll('#rollouts article')].map((a) => a.textContent)")
    hostile = next(text for text in shown if "hostile" in text)
    assert all(payload in hostile for payload in PAYLOADS)  # every payload, verbatim, as text
    assert chromium.evaluate("document.styleSheets.length") == 1  # the page's own sheet only


def test_tokens_are_coloured_by_score_and_blame_is_on_the_tokens_it_names(chromium, server):
    from PIL import Image

    open_with_key(chromium, server.url, height=1600)  # every card in view, whatever order they finished in
    colours = chromium.evaluate("""Object.fromEntries([...document.querySelectorAll('#rollouts article')].map((a) => [
        a.querySelector('.id').textContent,
        [...a.querySelectorAll('.text span')].map((s) => [s.textContent, getComputedStyle(s).backgroundColor, s.title])]))""")
    right, wrong = colours["id right"], colours["id wrong"]
    assert "".join(text for text, _, _ in right) == "3 * 4 = 12, so \\boxed{12}"
    assert all(bg != "rgba(0, 0, 0, 0)" for _, bg, _ in right + wrong)  # every token coloured
    assert {bg for _, bg, _ in right}.isdisjoint({bg for _, bg, _ in wrong})
    blamed = [title for text, _, title in wrong if "wrong step: 3 * 4 = 13" in title]
    assert blamed and all(title.startswith("score -") for title in blamed)

    # the screenshot: the wrong answer's card holds many reddish pixels, the right one's many
    # greenish ones, and neither is a flat fill
    screenshot = Image.open(io.BytesIO(chromium.png())).convert("RGB")

    def pixels(rollout_id: str) -> list[tuple[int, ...]]:
        box = chromium.evaluate(f"""(() => {{ const card = [...document.querySelectorAll('#rollouts article')]
            .find((a) => a.querySelector('.id').textContent === 'id {rollout_id}');
            const r = card.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }})()""")
        assert box[3] <= screenshot.height, "the card is in view"
        raw = screenshot.crop(tuple(int(v) for v in box)).tobytes()
        return [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)]

    def reddish(p: list) -> int:
        return sum(1 for r, g, b in p if r > 180 and r - g > 60 and r - b > 60)

    def greenish(p: list) -> int:
        return sum(1 for r, g, b in p if g > 180 and g - r > 60 and g - b > 60)

    wrong_card, right_card = pixels("wrong"), pixels("right")
    assert reddish(wrong_card) > 500 and greenish(wrong_card) < 50, (reddish(wrong_card), greenish(wrong_card))
    assert greenish(right_card) > 500 and reddish(right_card) < 50, (greenish(right_card), reddish(right_card))
    assert len(set(wrong_card)) > 20 and len(set(right_card)) > 20  # text and colours, not one flat fill


def test_the_paste_box_scores_through_the_rest_endpoint(chromium, server):
    open_with_key(chromium, server.url)
    before = chromium.evaluate("document.querySelectorAll('#rollouts article').length")
    chromium.evaluate("""(() => {
        document.getElementById('task').value = 'math';
        document.getElementById('completion').value = '6 * 7 = 42, so \\\\boxed{42}';
        document.getElementById('reference').value = '{"answer": "42"}';
        document.getElementById('score').click(); })()""")
    chromium.wait(f"document.querySelectorAll('#rollouts article').length === {before + 1}")
    top = chromium.evaluate("document.querySelector('#rollouts article').textContent")
    assert "passed" in top and "6 * 7 = 42, so \\boxed{42}" in top and "id inspector-" in top
    assert chromium.evaluate("document.getElementById('score-status').textContent") == "score 1.000"
    # options the scorer refuses are the server's 422, said on the page
    chromium.evaluate("document.getElementById('options').value = '{\"nope\": 1}'; "
                      "document.getElementById('score').click()")
    chromium.wait("document.getElementById('score-status').textContent.startsWith('422: invalid options')")
