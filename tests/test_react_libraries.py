"""React components that import the curated UI libraries (lucide-react, framer-motion / motion,
recharts, clsx, date-fns), scored by the real ``react`` scorer on real Node workers (issue 39).

The corpus (tests/data/react_libraries/*.tsx) is written in the style of WebDev Arena answers:
a dashboard with charts, a landing page with icons and motion, a booking form with date
handling, a pricing toggle with ``motion/react``. Honest ones pass at every level; a misuse of
each library's types fails ``typecheck`` with the blame on the misused token (the libraries'
real declarations are in the program, not ``any``); a hallucinated export fails ``build`` at the
imported name; an import outside the allow list is refused at its specifier. At ``render`` the
libraries run inside the component's realm: their animation frames are virtual and bounded, a
mutation of a built-in made in a callback a library calls is a violation, and the spec is judged
on what was shown (a decoy hidden inside a ``motion.div``, an icon in place of a button).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox import libraries
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.sandbox.screenshot import ScreenshotPool
from tests import rest_checks
from tests.helpers import require_host
from tests.node_toolchain import require_node_toolchain

HOST = iso.detect()
CORPUS_DIR = Path(__file__).parent / "data" / "react_libraries"
CORPUS = {path.stem: path.read_text() for path in sorted(CORPUS_DIR.glob("*.tsx"))}
LEVELS = ("syntax", "build", "typecheck", "render")
REPO = Path(__file__).resolve().parents[1]

# One misuse of each library's types: (code, the token the type error must be blamed on).
MISUSES = {
    "lucide-react: an unknown prop on an icon": ('''import { Bell } from "lucide-react";

export default function Alerts({ count }: { count: number }) {
  return <button><Bell size={18} colour="red" /> {count} alerts</button>;
}
''', "colour"),
    "framer-motion: a string where a duration is a number": ('''import { motion } from "framer-motion";

export default function Banner() {
  return <motion.div animate={{ opacity: 1 }} transition={{ duration: "slow" }}>Welcome back</motion.div>;
}
''', "duration"),
    "motion/react: an unknown variant option": ('''import { motion } from "motion/react";

export default function Card() {
  return <motion.section whileHover={{ scale: 1.02 }} drag="sideways">Drag me</motion.section>;
}
''', "drag"),
    "recharts: a curve type that does not exist": ('''import { LineChart, Line } from "recharts";

const DATA = [{ day: "Mon", value: 3 }, { day: "Tue", value: 5 }];

export default function Trend() {
  return <LineChart width={300} height={120} data={DATA}><Line dataKey="value" type="wiggly" /></LineChart>;
}
''', "type"),
    "date-fns: a number where a format string goes": ('''import { format } from "date-fns";

export default function Stamp({ at }: { at: Date }) {
  return <time>{format(at, 42)}</time>;
}
''', "42"),
    "clsx: its string result where a number goes": ('''import clsx from "clsx";

export default function Pill({ active }: { active: boolean }) {
  return <span className={clsx("pill", { active })} tabIndex={clsx(active && 0)}>New</span>;
}
''', "tabIndex"),
}

HALLUCINATED_ICON = '''import { Home, SparkleMagic } from "lucide-react";

export default function Nav() {
  return <nav><Home /> <SparkleMagic /> Home</nav>;
}
'''
OUTSIDE_THE_LIST = '''import moment from "moment";
import { Clock } from "lucide-react";

export default function Now() {
  return <p><Clock /> {moment().format("HH:mm")}</p>;
}
'''


def fenced(code: str) -> str:
    return f"```tsx\n{code}```"


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=20.0) as pool:
        yield ReactScorer(pool)


def score(scorer, code: str, level: str, spec=None):
    reference = {"spec": spec} if spec is not None else None
    [result] = scorer.score_batch([Rollout(fenced(code), reference=reference)], ReactOptions(level=level))
    return result


def errors_on(result, completion: str) -> list[str]:
    """The text each reported error spans, in the completion."""
    return [completion[e["start"]:e["end"]] for e in result.details["errors"]]


def blamed(result, start: int, end: int) -> bool:
    """The local signal marks [start, end) of the completion as blamed."""
    return any(s.start <= start and end <= s.end and s.score < 0 for s in result.local)


def test_the_curated_libraries_are_the_default_allow_list_and_installed():
    from botgrpo.reward_server.settings import ServerSettings
    from botgrpo.sandbox.launcher import NODE_DIR

    require_node_toolchain()
    assert set(libraries.curated()) >= {"lucide-react", "framer-motion", "recharts", "clsx", "date-fns"}
    assert tuple(ServerSettings().react_allow) == libraries.curated()
    assert libraries.missing(libraries.curated(), NODE_DIR) == []
    manifest = json.loads((NODE_DIR / "package.json").read_text())
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())["packages"]
    for name in map(libraries.package_of, libraries.curated()):
        pinned = manifest["dependencies"][name]
        assert pinned[0].isdigit(), (name, pinned)  # an exact version, not a range
        assert lock[f"node_modules/{name}"]["version"] == pinned
    # each library's types come with it (or from @types), so typecheck sees real declarations
    for name in ("lucide-react", "framer-motion", "recharts", "clsx", "date-fns"):
        package = json.loads((NODE_DIR / "node_modules" / name / "package.json").read_text())
        assert package.get("types") or package.get("typings") or "types" in json.dumps(package.get("exports", {})), name


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_honest_components_pass_at_every_level(scorer, name, level):
    if level == "render":
        require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    result = score(scorer, CORPUS[name], level)
    assert result.passed and result.score == 1.0, (name, level, result.details)
    if level == "render":
        render = result.details["render"]
        assert render["status"] == "ok", render
        assert render["text_chars"] > 20, render


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_a_misused_library_type_fails_typecheck_on_its_token(scorer, name):
    code, token = MISUSES[name]
    completion = fenced(code)
    built = score(scorer, code, "build")
    assert built.passed, (name, built.details)  # it bundles: only the types say it is wrong
    checked = score(scorer, code, "typecheck")
    assert not checked.passed and checked.score == -1.0, (name, checked.details)
    spans = errors_on(checked, completion)
    assert token in spans, (name, spans, checked.details["errors"])
    start = completion.index(token, completion.index("export default"))
    assert blamed(checked, start, start + len(token)), (name, checked.local)


def test_a_hallucinated_icon_fails_build_on_its_name(scorer):
    completion = fenced(HALLUCINATED_ICON)
    for level in ("build", "typecheck", "render"):
        if level == "render" and iso.render_refusal(HOST.layers):
            continue
        result = score(scorer, HALLUCINATED_ICON, level)
        assert not result.passed, (level, result.details)
        assert errors_on(result, completion) == ["SparkleMagic"], (level, result.details["errors"])
        assert 'No matching export in "lucide-react" for import "SparkleMagic"' in result.details["errors"][0]["message"]


def test_an_import_outside_the_list_is_refused_at_its_specifier(scorer):
    completion = fenced(OUTSIDE_THE_LIST)
    for level in ("build", "typecheck"):
        result = score(scorer, OUTSIDE_THE_LIST, level)
        assert not result.passed
        assert errors_on(result, completion) == ['"moment"'], result.details["errors"]
        assert "is not allowed in this sandbox" in result.details["errors"][0]["message"]


def test_a_narrower_list_refuses_the_libraries_it_leaves_out(scorer):
    narrow = ReactScorer(scorer.pool, allow=["clsx"])
    code = CORPUS["landing"]
    completion = fenced(code)
    result = narrow.score_batch([Rollout(completion)], ReactOptions(level="typecheck"))[0]
    assert not result.passed
    assert set(errors_on(result, completion)) == {'"framer-motion"', '"lucide-react"'}, result.details["errors"]


def test_an_allowed_module_that_is_not_installed_is_refused_at_start_up():
    require_node_toolchain()
    with pytest.raises(libraries.LibraryNotInstalled, match="'left-pad'.*not installed in the sandbox"):
        ReactScorer(allow=["clsx", "left-pad"])
    env = {**os.environ, "BOTGRPO_REACT_ALLOW": "[clsx, left-pad]"}
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "score", "--task", "react", str(CORPUS_DIR / "landing.tsx")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode != 0
    assert "'left-pad'" in done.stderr and "not installed" in done.stderr, done.stderr[-2000:]


def test_the_server_refuses_to_start_with_an_allowed_module_not_installed():
    from fastapi.testclient import TestClient

    from botgrpo.reward_server.app import create_app
    from botgrpo.reward_server.settings import ServerSettings

    require_node_toolchain()
    app = create_app(ServerSettings(react_allow=["lucide-react", "left-pad"]))
    with pytest.raises(libraries.LibraryNotInstalled, match="'left-pad'"):
        with TestClient(app):
            pass


def test_botgrpo_score_uses_the_allow_list_setting(tmp_path):
    require_node_toolchain()
    completion = tmp_path / "landing.md"
    completion.write_text(fenced(CORPUS["landing"]))
    verdicts = {}
    for allow in ("", "[clsx]"):
        env = {k: v for k, v in os.environ.items() if k != "BOTGRPO_REACT_ALLOW"}
        if allow:
            env["BOTGRPO_REACT_ALLOW"] = allow
        done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "score", "--task", "react", "-o", "level=build",
                               "--json", str(completion)], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        verdicts[allow] = json.loads(done.stdout.splitlines()[-1])
    assert verdicts[""]["passed"] is True, verdicts[""]["details"]
    assert verdicts["[clsx]"]["passed"] is False
    assert "is not allowed in this sandbox" in verdicts["[clsx]"]["details"]["errors"][0]["message"]


def test_the_server_says_and_applies_the_curated_list(tmp_path):
    """The same check the wheel's and the image's servers pass (tests/rest_checks.py), here on
    the checkout's server in-process; and ``botgrpo score`` passes the same probe."""
    from fastapi.testclient import TestClient

    from botgrpo.reward_server.app import create_app
    from botgrpo.reward_server.settings import ServerSettings

    require_node_toolchain()
    assert rest_checks.CURATED == libraries.curated()
    with TestClient(create_app(ServerSettings())) as client:
        rest_checks.check_libraries(client)
    probe = tmp_path / "probe.md"
    probe.write_text(rest_checks.LIBRARY_PROBE)
    env = {k: v for k, v in os.environ.items() if k != "BOTGRPO_REACT_ALLOW"}
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "score", "--task", "react", "-o", "level=typecheck",
                           "--json", str(probe)], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1])["passed"] is True


# ---------------------------------------------------------------- render: the same isolation

@pytest.fixture(scope="module")
def render_scorer(scorer):
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    return scorer


def test_library_markup_is_rendered(render_scorer):
    html = score(render_scorer, CORPUS["dashboard"], "render").details["render"]
    result = render_scorer.pool.compile(CORPUS["dashboard"], "render", libraries.curated())
    assert result.render.status == "ok", html
    assert 'class="lucide lucide-dollar-sign' in result.render.html  # the icon's own SVG
    assert "recharts-surface" in result.render.html  # the chart drew its SVG
    assert "Sales overview" in result.render.text


def test_an_endless_animation_runs_on_bounded_virtual_frames(render_scorer):
    code = '''import { useEffect } from "react";
import { motion, animate, useMotionValue } from "framer-motion";

export default function Spinner() {
  const rotate = useMotionValue(0);
  useEffect(() => {
    const controls = animate(rotate, 360, { duration: 0.5, repeat: Infinity, ease: "linear" });
    return () => controls.stop();
  }, [rotate]);
  return <motion.div style={{ rotate }} animate={{ scale: [1, 1.2, 1] }} transition={{ repeat: Infinity }}>Loading</motion.div>;
}
'''
    result = score(render_scorer, code, "render")
    render = result.details["render"]
    assert result.passed and render["status"] == "ok", render
    assert render["effects"] >= 1


def test_a_built_in_mutated_in_a_callback_a_library_calls_is_a_violation(render_scorer):
    code = '''import { LineChart, Line, XAxis } from "recharts";

const DATA = [{ day: "Mon", value: 3 }, { day: "Tue", value: 5 }];

export default function Chart() {
  const tick = (value: string) => {
    try { (Array.prototype as any).includes = () => true; } catch { /* hidden */ }
    return value.toUpperCase();
  };
  return <LineChart width={300} height={120} data={DATA}><XAxis dataKey="day" tickFormatter={tick} /><Line dataKey="value" /></LineChart>;
}
'''
    result = score(render_scorer, code, "render")
    assert result.details["render"]["status"] == "violation", result.details["render"]
    assert result.score == -1.0


SPEC = {"elements": ["button"], "text": ["Start free trial"]}


HIDING = {
    "display none": '<motion.div animate={{ y: 0 }} style={{ display: "none" }}>',
    "animated out of sight": "<motion.div initial={{ opacity: 1 }} animate={{ opacity: 0 }}>",
}


@pytest.mark.parametrize("how", sorted(HIDING))
def test_a_decoy_hidden_inside_a_motion_div_does_not_meet_the_spec(render_scorer, how):
    honest = '''import { motion } from "framer-motion";

export default function Hero() {
  return <motion.div animate={{ y: 0 }}><h1>Grow faster</h1><button>Start free trial</button></motion.div>;
}
'''
    hidden = honest.replace("<motion.div animate={{ y: 0 }}>", HIDING[how])
    assert score(render_scorer, honest, "render", SPEC).details["spec_passed"] is True
    decoy = score(render_scorer, hidden, "render", SPEC)
    assert decoy.details["spec_passed"] is False, (how, decoy.details)


def test_an_icon_in_place_of_the_specs_button_does_not_meet_it(render_scorer):
    code = '''import { Play } from "lucide-react";

export default function Hero() {
  return <div><h1>Grow faster</h1><Play aria-label="button" /> Start free trial</div>;
}
'''
    result = score(render_scorer, code, "render", SPEC)
    assert result.details["spec_passed"] is False
    assert "missing element <button>" in result.details["spec_violations"], result.details


@pytest.mark.parametrize("module", ["framer-motion", "motion/react"])
def test_an_entrance_animation_is_judged_at_rest(render_scorer, module):
    """A hero that fades in from opacity 0 is what a user sees a moment after load: rendered in its
    animated-to state (AnimatePresence initial={false} around the root), it meets the spec."""
    code = f'''import {{ motion }} from "{module}";

export default function Hero() {{
  return (
    <motion.div initial={{{{ opacity: 0, y: 20 }}}} animate={{{{ opacity: 1, y: 0 }}}}>
      <h1>Grow faster</h1>
      <motion.button whileHover={{{{ scale: 1.05 }}}}>Start free trial</motion.button>
    </motion.div>
  );
}}
'''
    result = score(render_scorer, code, "render", SPEC)
    assert result.passed and result.details["spec_passed"] is True, result.details
    assert result.score == 1.0


def test_the_library_benchmark_runs_and_reports_every_rate():
    """``python -m benchmarks.library_corpus`` (the numbers in docs/performance.md) still runs:
    one round, every level's rate on both corpora, the Tailwind cost of a screenshot."""
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    require_host(ScreenshotPool.available(), "Chromium (apt-get install chromium)")
    done = subprocess.run([sys.executable, "-m", "benchmarks.library_corpus", "--rounds", "1"], capture_output=True,
                          text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    for level in ("build", "typecheck", "render"):
        assert out[level]["libraries"] > 0 and out[level]["plain"] > 0, out
    assert out["tailwind_cost_ratio"] > 0 and all(size > 0 for size in out["css_bytes"]), out
