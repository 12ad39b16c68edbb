"""The react scorer on a labelled corpus, the spec check, and adversarial inputs (real Node)."""
import time

import pytest

from botgrpo.reward_server.react.extract import extract_code
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.spans import compose
from botgrpo.reward_server.spans import char_scores, default_split
from tests.node_toolchain import require_node_toolchain
from tests.data.react_corpus import CASES, COUNTER, GLUED_ATTRIBUTE


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    s = ReactScorer(pool_size=2, timeout_s=5.0)
    yield s
    s.close()


def tokens(completion, result, local_weight=0.5):
    offsets = default_split(completion)
    return offsets, compose(result, len(completion), offsets, local_weight)


def local_chars(completion, result):
    return char_scores(result.local, result.local_default, len(completion))


def line_of(completion, start, end):
    """Line of the first visible character of the token ``completion[start:end]``."""
    text = completion[start:end]
    return completion.count("\n", 0, start + len(text) - len(text.lstrip())) + 1


LEVEL_CASES = [(name, text, level, ok, line) for name, text, verdicts, line in CASES for level, ok in verdicts.items()]


@pytest.mark.parametrize("name,completion,level,ok,error_line", LEVEL_CASES, ids=[f"{c[0]}-{c[2]}" for c in LEVEL_CASES])
def test_corpus_verdicts_and_blame(scorer, name, completion, level, ok, error_line):
    [result] = scorer.score_batch([Rollout(completion)], ReactOptions(level=level))
    assert result.passed is ok, result.details
    offsets, scores = tokens(completion, result)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    if ok:
        assert result.score == 1.0 and min(scores) == 1.0
        return
    assert result.score == -1.0 and max(scores) < 1.0  # no failing token scores like a passing one
    if error_line is not None:
        lowest = min(scores)
        blamed_lines = {line_of(completion, s, e) for (s, e), v in zip(offsets, scores) if v == lowest and e > s}
        assert error_line in blamed_lines, (result.details["errors"], blamed_lines)
        assert max(blamed_lines) - min(blamed_lines) <= 2  # a window, not the whole file


def test_scores_are_deterministic(scorer):
    rollouts = [Rollout(text) for _, text, _, _ in CASES]
    first = scorer.score_batch(rollouts, ReactOptions(level="typecheck"))
    second = scorer.score_batch(list(reversed(rollouts)), ReactOptions(level="typecheck"))
    for a, b in zip(first, reversed(second)):
        assert (a.score, a.passed, a.local, a.local_default) == (b.score, b.passed, b.local, b.local_default)


def test_window_reaches_back_to_the_true_mistake(scorer):
    """esbuild reports the glued attribute at `</`; three lexical tokens back is the mistake."""
    for options in (ReactOptions(level="syntax"), ReactOptions(level="syntax", window_unit="lines", window=1)):
        [result] = scorer.score_batch([Rollout(GLUED_ATTRIBUTE)], options)
        chars = local_chars(GLUED_ATTRIBUTE, result)
        assert chars[GLUED_ATTRIBUTE.index('"title"Back')] == -1.0
        assert chars[GLUED_ATTRIBUTE.index("export")] == 0.0


def test_token_window_blames_less_code_than_a_line_window(scorer):
    by_unit = {unit: scorer.score_batch([Rollout(GLUED_ATTRIBUTE)], ReactOptions(level="syntax", window_unit=unit,
                                                                                  window=3 if unit == "tokens" else 1))[0]
               for unit in ("tokens", "lines")}
    blamed = {unit: int((local_chars(GLUED_ATTRIBUTE, r) < 0).sum()) for unit, r in by_unit.items()}
    assert 0 < blamed["tokens"] < blamed["lines"]


def test_retired_schemes_reproduce_their_numbers(scorer):
    """`window`: pass +1, a failing completion's text -0.2, its windows -1; `uniform`: -1 on every token."""
    by_scheme = {s: scorer.score_batch([Rollout(GLUED_ATTRIBUTE)], ReactOptions(level="syntax", scheme=s))[0]
                 for s in ("window", "uniform")}
    window_opts = ReactOptions(scheme="window")
    assert (window_opts.local, window_opts.window_unit, window_opts.window) == ("all_errors", "lines", 1)
    _, window = tokens(GLUED_ATTRIBUTE, by_scheme["window"], window_opts.local_weight)
    assert max(window) == pytest.approx(-0.2) and min(window) == pytest.approx(-1.0)
    _, uniform = tokens(GLUED_ATTRIBUTE, by_scheme["uniform"], ReactOptions(scheme="uniform").local_weight)
    assert set(uniform) == {-1.0}
    assert ReactOptions(scheme="window", local_weight=0.5).local_weight == 0.5  # a field the request sets wins


def test_first_error_ignores_the_cascade_all_errors_does_not(scorer):
    two = "```tsx\nexport function A() {\n  return <div><p>x</div>;\n}\nconst b = ;\n```"
    first, every = (scorer.score_batch([Rollout(two)], ReactOptions(level="syntax", local=name))[0]
                    for name in ("first_error", "all_errors"))
    assert len(first.local) == 1 and len(every.local) >= len(first.local)


@pytest.mark.parametrize("completion,reason", [
    ("I cannot help with that.", "compile error"),
    ("", "no code in the completion"),
    ("```tsx\n   \n```", "no code in the completion"),
    ("```tsx\nexport default function A() {\n  return <div>", "unterminated code block (truncated output)"),
])
def test_no_code_and_truncated_output_are_blamed_throughout(scorer, completion, reason):
    [result] = scorer.score_batch([Rollout(completion)], ReactOptions())
    assert result.passed is False and result.details["reason"] == reason
    if reason != "compile error":
        assert result.local_default == -1.0 and not result.local
        end = (len(completion), len(completion))  # the eos after the text
        assert set(compose(result, len(completion), default_split(completion) + [end], 0.5)) == {-1.0}


def test_an_empty_completion_scores_below_every_failing_attempt(scorer):
    """Stopping at once must never beat trying: the eos of "" is the lowest score there is."""
    empty, failing = scorer.score_batch([Rollout(""), Rollout(GLUED_ATTRIBUTE)], ReactOptions(level="syntax"))
    [eos] = compose(empty, 0, [(0, 0)], 0.5)
    _, attempt = tokens(GLUED_ATTRIBUTE, failing)
    assert eos == -1.0 <= min(attempt) and eos < max(attempt)  # only the attempt's blamed window sinks as low


SPEC = {"component": "Counter", "elements": ["button", "p"], "text": ["Add one"], "props": {"button": ["onClick"]}}


def test_spec_met_scores_like_compile_only(scorer):
    [result] = scorer.score_batch([Rollout(COUNTER, reference={"spec": SPEC})], ReactOptions())
    assert result.details["spec_passed"] is True and result.score == 1.0
    assert min(tokens(COUNTER, result)[1]) == 1.0


def test_spec_violations_are_blamed_where_they_are(scorer):
    wrong = COUNTER.replace("Counter", "Clicker").replace('onClick={() => setCount(count + 1)}', "")
    [result] = scorer.score_batch([Rollout(wrong, reference={"spec": SPEC})], ReactOptions(spec_weight=0.5))
    assert result.passed is True and result.details["spec_passed"] is False
    assert any("Clicker" in v for v in result.details["spec_violations"])
    assert any("lacks prop 'onClick'" in v for v in result.details["spec_violations"])
    chars = local_chars(wrong, result)
    assert chars[wrong.index("Clicker")] == -1.0 and chars[wrong.index("useState")] == 0.0
    offsets = [(wrong.index("Clicker"), wrong.index("Clicker") + 7), (wrong.index("useState"), wrong.index("useState") + 8)]
    # outcome 0.5 * (+1) + 0.5 * (-1) = 0; blamed: 0 - 0.5 -> -0.2 in [-1, 1]; elsewhere 0 -> 0.2
    assert compose(result, len(wrong), offsets, 0.5) == pytest.approx([-0.2, 0.2])
    assert result.score == 0.0


def test_hacked_output_that_ignores_the_prompt_loses_to_one_that_follows_it(scorer):
    hack = "```tsx\nexport default function A() {\n  return <div />;\n}\n```"
    follow, ignore = scorer.score_batch([Rollout(COUNTER, reference={"spec": SPEC}), Rollout(hack, reference={"spec": SPEC})],
                                        ReactOptions())
    assert follow.score > ignore.score and ignore.passed is True and ignore.details["spec_passed"] is False


def test_malformed_spec_is_reported_not_raised(scorer):
    [result] = scorer.score_batch([Rollout(COUNTER, reference={"spec": {"colour": "red"}})], ReactOptions())
    assert "colour" in result.details["spec_error"] and result.passed is True


def test_extract_prefers_tsx_block_and_keeps_offsets():
    text = "```bash\nnpm i\n```\nthen\n```tsx\nconst A = () => <b />;\n```"
    block = extract_code(text)
    assert block.code == "const A = () => <b />;\n" and text[block.start:block.end] == block.code


@pytest.mark.parametrize("make,passes", [
    (lambda: "```tsx\n" + "const x = 1;\n" * 90_000 + "```", False),  # ~1.1 MB: over the input limit
    (lambda: "```tsx\nconst A = () => " + "<div>" * 5000 + "</div>" * 5000 + ";\n```", True),  # deep but valid
    (lambda: "```tsx\nconst s = 'never closed\n" + "x" * 100_000 + "\n```", False),
    (lambda: "```tsx\nconst fs = require('fs'); fs.readFileSync('/etc/passwd');\n"
             "import net from 'net'; net.connect(6379, '127.0.0.1');\n```", False),
], ids=["1MB", "nested-5000", "unterminated-100KB", "fs-and-socket"])
def test_adversarial_inputs_answered_within_limit_and_pool_stays_healthy(scorer, make, passes):
    completion = make()
    start = time.monotonic()
    [result] = scorer.score_batch([Rollout(completion)], ReactOptions(level="build"))
    assert time.monotonic() - start < 10.0
    assert result.passed is passes and result.score == (1.0 if passes else -1.0)
    assert "root:" not in str(result.details)  # nothing is executed, nothing read
    assert scorer.healthy()
    [again] = scorer.score_batch([Rollout(COUNTER)], ReactOptions(level="build"))
    assert again.passed is True


def test_server_setting_requires_sandbox_layers():
    from botgrpo.reward_server.service import ScoringService
    from botgrpo.reward_server.settings import ServerSettings
    require_node_toolchain()
    with pytest.raises(ValueError, match="teleport"):
        ScoringService(ServerSettings(sandbox_require=["teleport"])).scorer("react").pool  # noqa: B018
    service = ScoringService(ServerSettings(sandbox_require=["no_network", "clean_env"]))
    try:
        assert {"no_network", "clean_env"} <= set(service.scorer("react").pool.active_layers())
    finally:
        service.close()


def test_code_cut_off_by_the_token_limit_is_truncated_output_fenced_or_not(scorer):
    """A policy learned to drop the fence and run into the token limit: the parser then reports
    at the end of the file and only the last tokens were blamed. `finish_reason: length` makes
    unfenced code that was cut off fail as truncated output, blamed throughout."""
    cut = "export function A() {\n  return (\n    <div>\n      <p>x</p>\n      <p>y</p>\n      <p"
    free, truncated = scorer.score_batch([Rollout(cut), Rollout(cut, truncated=True)], ReactOptions(level="syntax"))
    assert free.details["reason"] == "compile error" and free.local_default == 0.0
    assert truncated.details["reason"] == "unterminated code block (truncated output)"
    assert truncated.local_default == -1.0 and set(tokens(cut, truncated)[1]) == {-1.0}
    # a closed fence followed by text the limit cut off: the code itself is whole and judged as usual
    [whole] = scorer.score_batch([Rollout(COUNTER + "\nThis component counts and", truncated=True)], ReactOptions())
    assert whole.passed is True


def test_propagate_blames_from_the_first_parse_error_to_the_end(scorer):
    [result] = scorer.score_batch([Rollout(GLUED_ATTRIBUTE)], ReactOptions(level="syntax", local="propagate"))
    chars = local_chars(GLUED_ATTRIBUTE, result)
    mistake = GLUED_ATTRIBUTE.index('"title"Back')
    assert chars[mistake] == -1.0 and chars[-1] == -1.0           # the window and everything after
    assert chars[:GLUED_ATTRIBUTE.index('="title"')].max() == 0.0  # the completable prefix is not blamed


UNCLOSED = ("```tsx\nexport function Card() {\n  return (\n    <main>\n      <h2>Title</h2>\n      <p>Body\n"
            "      <span>more</span>\n    </main>\n  );\n}\n```")


def test_first_cause_blames_the_unclosed_tag_not_the_outer_close(scorer):
    """esbuild reports the unclosed <p> at </main>, the component's last tag, with a note at <p>:
    first_error blames the close (pushing down ending the component), first_cause the <p>."""
    opening, closing = UNCLOSED.index("<p>"), UNCLOSED.index("</main>")
    at_report, at_cause = (local_chars(UNCLOSED, scorer.score_batch([Rollout(UNCLOSED)],
                                                                    ReactOptions(level="build", local=name))[0])
                           for name in ("first_error", "first_cause"))
    assert at_report[closing] == -1.0 and at_report[opening + 1] == 0.0
    assert at_cause[opening + 1] == -1.0 and at_cause[closing:].max() == 0.0
    assert at_cause.min() == -1.0 and (at_cause < 0).sum() < 20  # a window, not a span to the end


def test_compiler_notes_reach_the_diagnostic_in_code_points(scorer):
    """The note's span survives the UTF-16 -> code point conversion (an astral character before it)."""
    code = "export const A = () => (<main>\U0001F600<p>x</main>);"
    [result] = scorer.pool.compile_many([code], "build")
    first = min(result.diagnostics, key=lambda d: d.start)
    assert first.related and code[first.related[0][0]:first.related[0][1]] == "p"


def test_malformed_notes_from_a_worker_are_dropped():
    """The worker's ``related`` spans are checked like the rest of its answer: junk is dropped."""
    from botgrpo.sandbox.results import from_response

    junk = [{"start": 1, "end": 2}, {"start": -1, "end": 2}, {"start": "1", "end": 2}, "x", None,
            {"start": True, "end": 3}, {"start": 2, "end": 1}] + [{"start": 0, "end": 1}] * 10
    response = {"ok": False, "diagnostics": [{"start": 0, "end": 1, "message": "m", "related": junk},
                                             {"start": 0, "end": 1, "message": "m", "related": "nope"}]}
    first, second = from_response("abcdef", response, 0.0).diagnostics
    assert first.related == ((1, 2), (2, 2), (0, 1), (0, 1)) and second.related == ()


EXTRA_CLOSE = ("```tsx\nexport function Card() {\n  return (\n    <main>\n      <h2>Title</h2>\n      <p>Body</p>\n"
               "      </div>\n    </main>\n  );\n}\n```")


def test_first_cause_blames_an_extra_closing_tag_itself(scorer):
    """An extra `</div>` (no opener) is reported with a note at the enclosing <main>: the mistake is
    the closing tag, so first_cause blames it, not the opener (which the missing-close case blames)."""
    [result] = scorer.score_batch([Rollout(EXTRA_CLOSE)], ReactOptions(level="build", local="first_cause"))
    chars = local_chars(EXTRA_CLOSE, result)
    extra = EXTRA_CLOSE.index("</div>")
    assert chars[extra:extra + len("</div>")].max() == -1.0 and chars[extra + 2] == -1.0
    assert chars[EXTRA_CLOSE.index("<main>"):EXTRA_CLOSE.index("<main>") + 6].max() == 0.0
    assert (chars < 0).sum() < 30  # a window, not a span to the end
    for level in ("syntax", "typecheck"):  # every level that parses with esbuild blames it the same way
        [again] = scorer.score_batch([Rollout(EXTRA_CLOSE)], ReactOptions(level=level, local="first_cause"))
        assert local_chars(EXTRA_CLOSE, again)[extra + 2] == -1.0


def test_an_extra_closing_tag_among_siblings_is_blamed_too(scorer):
    code = "```tsx\nexport function A() {\n  return <div><p>x</p></p></div>;\n}\n```"
    [result] = scorer.score_batch([Rollout(code)], ReactOptions(level="syntax"))
    chars = local_chars(code, result)
    second = code.index("</p>", code.index("</p>") + 1)
    assert chars[second + 2] == -1.0 and chars[code.index("<div>") + 1] == 0.0


def test_component_declared_separates_the_task_from_a_compiling_fragment(scorer):
    """``details.component_declared``: the named component, exported; what the trainer's
    evaluation counts as "compiles and declares the named component" (a lone JSX line compiles)."""
    spec = {"component": "Card", "elements": ["div"]}
    cases = {"export default function Card() { return <div>x</div>; }\n": True,
             "function Card() { return <div>x</div>; }\nexport default function App() { return <p/>; }\n": False,
             "<div>x</div>;\n": False,
             "export function Other() { return <div>x</div>; }\n": False}
    rollouts = [Rollout(completion=f"```tsx\n{code}```\n", reference={"spec": spec}) for code in cases]
    results = scorer.score_batch(rollouts, ReactOptions(level="build"))
    assert [r.details["component_declared"] for r in results] == list(cases.values())
    assert all(r.passed for r in results)  # every one of them compiles
    plain = scorer.score_batch([Rollout(completion="```tsx\n<div/>;\n```\n", reference={"spec": {"elements": ["div"]}})],
                               ReactOptions(level="build"))[0]
    assert plain.details["component_declared"] is None  # a spec that names no component


def test_the_summary_is_asked_for_only_where_a_spec_reads_it(scorer, monkeypatch):
    """The worker skips the summary (and at level syntax its TypeScript parse) for a rollout with
    no spec or a malformed one; every score, blame and detail is what the summary always gave."""
    broken = COUNTER.replace("</button>", "</buton>")
    rollouts = [Rollout(COUNTER, reference={"spec": SPEC}), Rollout(COUNTER), Rollout(broken),
                Rollout(COUNTER, reference={"spec": {"colour": "red"}}), Rollout(broken, reference={"spec": SPEC}),
                Rollout(COUNTER.replace("Counter", "Clicker"), reference={"spec": SPEC})]
    real = scorer.pool.compile_many
    asked = []

    def lazy(*args, summary=True, **kwargs):
        asked.append(summary)
        return real(*args, summary=summary, **kwargs)

    def always(*args, summary=True, **kwargs):
        return real(*args, summary=True, **kwargs)

    view = lambda r: (r.score, r.passed, r.local, r.local_default,  # noqa: E731
                      {k: v for k, v in r.details.items() if k != "compile_s"})
    for level in ("syntax", "build", "typecheck"):
        opts = ReactOptions(level=level, lint="fail")
        monkeypatch.setattr(scorer.pool, "compile_many", lazy)
        got = [view(r) for r in scorer.score_batch(rollouts, opts)]
        monkeypatch.setattr(scorer.pool, "compile_many", always)
        assert got == [view(r) for r in scorer.score_batch(rollouts, opts)], level
    assert asked == [[True, False, False, False, True, True]] * 3
