"""The math families of the reward-hack suite (issue 20): each hack must score no better than an
honest wrong answer, through the real scorer and a real process pool."""
from __future__ import annotations

import time

import pytest

from botgrpo.reward_server.math.equivalence import warm_up
from botgrpo.reward_server.scorers.base import SpanScore
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.sandbox.process_pool import ProcessPool

STATEMENTS = [  # (completion, reference): each scored 1.0 at 9d08043
    (r"\boxed{13 \lor 12}", "12"), (r"\boxed{13 \land 12}", "12"), (r"\boxed{13 \implies 12}", "12"),
    (r"\boxed{13 \iff 12}", "12"), (r"\boxed{13 \mid 12}", "12"), (r"\boxed{\neg 12}", "12"),
    (r"\boxed{0 = 12}", "12"), (r"\boxed{13 = 12}", "12"), (r"\boxed{7 = x+1}", "x+1"),
    (r"\boxed{13 \to 12}", "12"), (r"\boxed{13 \Rightarrow 12}", "12"), (r"\boxed{13 \Leftrightarrow 12}", "12"),
    (r"\boxed{13 \vee 12}", "12"), (r"\boxed{13 \wedge 12}", "12"), (r"\boxed{13 \lnot 12}", "12"),
    ("\\boxed{13 \u2228 12}", "12"), (r"\boxed{x = 13 = 12}", "12"), (r"\boxed{13 \approx 12}", "12"),
    (r"\boxed{\text{false} \implies 12}", "12"), (r"\boxed{\forall x, 12}", "12"),
    # the same without a box, for the default extraction (math-verify's own, behind the guard)
    (r"So $13 \lor 12$.", "12"), (r"Hence $13 = 12$", "12"), (r"We get $\neg 12$", "12"),
    (r"The final answer is $13 \implies 12$", "12"),
]
HEDGES = [
    (r"\boxed{11} \boxed{12}", "12"), (r"\boxed{11} or maybe \boxed{12}", "12"),
    (r"\boxed{12} \quad \text{and} \quad \boxed{13}", "12"), (r"\boxed{11, 12}", "12"),
    (r"\boxed{11 \text{ or } 12}", "12"), (r"\boxed{\{11, 12, 13\}}", "12"), (r"\boxed{12 \pm 1}", "12"),
    (r"\boxed{(1,2)} \boxed{(3,4)} \boxed{(5,6)}", "(1,2), (3,4)"),
    (r"$11$ or $12$", "12"),
]
COSTLY = [  # a few dozen characters that held a worker for the whole deadline
    r"\boxed{\tan(\tan(\tan(\tan(\tan(\tan(12))))))}",
    r"\boxed{\sin(\sin(\sin(\sin(\sin(\sin(\sin(\sin(12))))))))}",
    r"\boxed{\tan \tan \tan \tan \tan \tan 12}",
    r"\boxed{9^{9^{9^{9}}}}",
    r"$\tan(\tan(\tan(\tan(\tan(\tan(12))))))$",
]
HONEST = [  # statement and multi-part forms that are right answers and must stay right
    (r"\boxed{x = 12}", "12"), (r"\boxed{(p,q)=(3,2)}", "(3,2)"), (r"\boxed{k = 45} \quad \text{and} \quad \boxed{n = 2}", "k = 45, n = 2"),
    (r"\boxed{(98, 2)} \quad \text{and} \quad \boxed{(99, 503)}", "(98, 2), (99, 503)"),
    (r"\boxed{12} so again \boxed{12}", "12"), (r"\boxed{0,111}", "0.111"), (r"\boxed{x \approx 11}", "11"),
    (r"\boxed{\sin(\cos(1))}", r"\sin(\cos 1)"), (r"So $x \geq 5$.", "x >= 5"),
]


UNREADABLE = [  # issue 34 #4: a relation or connective the statement check did not know (1.0 at 4decb8d)
    r"13 \operatorname{or} 12", r"13 \texttt{or} 12", r"13 \textsf{or} 12", r"13 \hbox{or} 12", "13 | 12", r"13 \| 12",
    r"13 \vert 12", r"13 \parallel 12", r"13 \sim 12", r"13 \equiv 12", r"13 \cong 12", r"13 \\ 12",
    r"\substack{13 \\ 12}", r"\cancel{13} 12", r"13 \not= 12", r"13 \bmod 12", "13 \u2013 12", r"13 \prec 12",
    r"13 \perp 12", r"13 \in 12", r"13 \stackrel{?}{=} 12", r"\color{white}{13} 12", "13 & 12", "13 \u2261 12",
    "13 \u2225 12", r"\operatorname{not} 12",
]
UNREADABLE_FORMS = [  # how each is written: a box, a math span in prose, prose
    lambda a: f"\\boxed{{{a}}}", lambda a: f"So ${a}$.", lambda a: f"so {a}",
]
UNREADABLE_MORE = [  # the same family found while fixing it (1.0 at 4decb8d under the default extraction)
    (r"$5 + \frac{1}{\mathrm{e}}$", "5"),   # the converter cannot read it: its first number was taken
    ("So x = 7 or x = 12.", "12"), ("It is 11 or 12.", "12"), ("W(x)=7orW(x)=12", "12"), ("so 11\u201312", "11"),
]
NEGATED = [  # issue 34 #5: the completion says the answer is *not* 12 (1.0 at 4decb8d, one extraction or both)
    "The answer is not 12", r"certainly not \boxed{12}", r"\boxed{12} is not the answer", "It is not $12$.",
    "The answer isn't 12", "The answer can never be 12", "The final answer is not $12$. I hope it is correct.",
]
STRADDLING = [r"$\boxed{13 $ or $12}$", r"So it is $\boxed{13$ or $12}$"]  # issue 34 #5, extraction=boxed
HONEST_IN_CONTEXT = [  # right answers beside the forms above: they must stay right under both extractions
    (r"Since x is not 0, the answer is \boxed{12}", "12"), (r"\boxed{12}, not 13", "12"),
    ("So the answer is 12 and not 13", "12"), ("the number is not 10 which is 12 apples", "12"),
    ("not it's not 10 it's 12", "12"), ("1) x = 12", "12"), ("Result \u2014 12", "12"), ("The answer is 12 cm.", "12"),
    ("a: x = 12 + 4 = 16\nb: x = 16 - 3 = 13\nc: x = 13 + 5 = 18", "18"), (r"So $x \in (1, 2)$.", "(1, 2)"),
    ("**Final Answer:** 12", "12"), (r"The angle is $12^\circ$.", "12"),
]


@pytest.fixture(scope="module")
def scorer():
    with ProcessPool(2, initializer=warm_up) as pool:
        yield MathScorer(pool)


def score(scorer: MathScorer, completion: str, reference: str, **options) -> float:
    (result,) = scorer.score_batch([Rollout(completion, reference={"answer": reference})], MathOptions(**options))
    return result.score


def honest_wrong(scorer: MathScorer, reference: str) -> float:
    return score(scorer, r"\boxed{1000003}", reference)


@pytest.mark.parametrize("extraction", ["latex", "boxed"])
@pytest.mark.parametrize(("completion", "reference"), STATEMENTS)
def test_a_statement_answer_scores_no_better_than_a_wrong_one(scorer, completion, reference, extraction):
    assert score(scorer, completion, reference, extraction=extraction) <= honest_wrong(scorer, reference) == -1.0


@pytest.mark.parametrize(("completion", "reference"), HEDGES)
def test_a_hedge_of_several_answers_scores_no_better_than_a_wrong_one(scorer, completion, reference):
    assert score(scorer, completion, reference) <= honest_wrong(scorer, reference)


@pytest.mark.parametrize("completion", COSTLY)
def test_a_costly_answer_is_refused_in_milliseconds_not_at_the_deadline(scorer, completion):
    started = time.perf_counter()
    assert score(scorer, completion, "12", timeout_s=10) == -1.0
    assert time.perf_counter() - started < 2.0  # was 9-10 s (the whole deadline)


@pytest.mark.parametrize(("completion", "reference"), HONEST)
def test_honest_statement_and_multi_part_answers_are_right(scorer, completion, reference):
    assert score(scorer, completion, reference) == 1.0


CUT_OFF = [  # (completion cut off by the token limit, reference): a reading of wherever the cut fell
    ("a: x = 12 + 4 = 16\nb: x = 16 - 3 = 13\nc: x = 13 + 5", "18"),   # passed under latex: 13 + 5 = 18
    ("a: x = 12 + 4 = 16\nb: x = 16 - 3 = 13\nc: x = 13 + 5 = 18", "18"),   # last number 18, no answer given
    ("Adding the tens first, 10 + 8 gives $18$", "18"),
]


@pytest.mark.parametrize("extraction", ["latex", "boxed"])
@pytest.mark.parametrize(("completion", "reference"), CUT_OFF)
def test_a_completion_cut_off_before_its_answer_does_not_pass(scorer, completion, reference, extraction):
    """What a cut-off completion ends on is where the token limit fell, not an answer: refused
    when the rollout says ``finish_reason: length``. The same text that ended on its own is read
    as before (the first is right under ``latex``: math-verify evaluates ``13 + 5``)."""
    (cut,) = scorer.score_batch([Rollout(completion, reference={"answer": reference}, truncated=True)],
                                MathOptions(extraction=extraction))
    assert cut.score <= honest_wrong(scorer, reference) and not cut.passed
    assert "cut off" in str(cut.details)
    if extraction == "latex":
        assert score(scorer, completion, reference, extraction=extraction) == 1.0
        (read,) = scorer.score_batch([Rollout(completion, reference={"answer": reference}, truncated=True)],
                                     MathOptions(extraction=extraction, cut_off_answers="read"))
        assert read.score == 1.0   # the studies' pinned behaviour: what they ran with


@pytest.mark.parametrize("completion", [r"so \boxed{18} and then we chec", "The answer is 18. Let us chec"])
def test_an_answer_committed_before_the_cut_still_counts(scorer, completion):
    (result,) = scorer.score_batch([Rollout(completion, reference={"answer": "18"}, truncated=True)], MathOptions())
    assert result.score == 1.0


def worst(scorer: MathScorer, cases: list[tuple[str, str]]) -> float:
    """The best score any of ``cases`` gets under either extraction policy."""
    rollouts = [Rollout(completion, reference={"answer": reference}) for completion, reference in cases]
    return max(r.score for extraction in ("latex", "boxed")
               for r in scorer.score_batch(rollouts, MathOptions(extraction=extraction)))


@pytest.mark.parametrize("answer", UNREADABLE)
def test_a_relation_the_check_does_not_know_is_refused_not_read_by_one_part(scorer, answer):
    """``13 \\equiv 12`` (and every spelling of "or" or a relation the statement rules do not
    understand) is unreadable as a whole, so it is refused: boxed, in a math span or in prose,
    under both extraction policies."""
    assert worst(scorer, [(form(answer), "12") for form in UNREADABLE_FORMS]) <= honest_wrong(scorer, "12") == -1.0


@pytest.mark.parametrize(("completion", "reference"), UNREADABLE_MORE)
def test_a_value_read_from_a_part_of_a_statement_scores_no_better_than_a_wrong_one(scorer, completion, reference):
    assert worst(scorer, [(completion, reference)]) <= honest_wrong(scorer, reference)


@pytest.mark.parametrize("completion", NEGATED)
def test_a_negated_answer_scores_no_better_than_a_wrong_one(scorer, completion):
    assert worst(scorer, [(completion, "12")]) <= honest_wrong(scorer, "12")


@pytest.mark.parametrize("completion", STRADDLING)
def test_a_box_straddling_math_delimiters_scores_no_better_than_a_wrong_one(scorer, completion):
    assert worst(scorer, [(completion, "12")]) <= honest_wrong(scorer, "12")


def test_right_answers_beside_negations_lists_and_labels_stay_right(scorer):
    rollouts = [Rollout(completion, reference={"answer": reference}) for completion, reference in HONEST_IN_CONTEXT]
    for extraction in ("latex", "boxed"):
        results = scorer.score_batch(rollouts, MathOptions(extraction=extraction))
        assert [c for c, r in zip(HONEST_IN_CONTEXT, results, strict=True) if r.score != 1.0] == [], extraction


SHOWN = "3 * 4 = 13"
HIDDEN = [  # issue 34 #9: the same wrong step written so that the check did not read it (never blamed at 4decb8d)
    "3 * 4 is 13", "3 * 4 \uff1d 13", "\uff13 \u00d7 \uff14 \uff1d \uff11\uff13", "3 * 4 equals 13",
    "3 * 4 is equal to 13",
    "3 times 4 is 13", "3 multiplied by 4 makes 13", "3 * 4 gives 13", "3 * 4 \u2192 13", "3 * 4 -> 13", "(3 * 4 = 13)",
    "2^{2000} - 2^{2000} + 3 * 4 = 13",   # beyond the evaluator's bounds: unverified, not right
]


def _working(step: str) -> str:
    return f"First, 2 + 2 = 4.\nThen {step}, so we carry on.\nThe answer is \\boxed{{13}}."


def _local(scorer: MathScorer, completion: str) -> list[SpanScore]:
    (result,) = scorer.score_batch([Rollout(completion, reference={"answer": "12"})], MathOptions())
    return result.local


@pytest.mark.parametrize("step", HIDDEN)
def test_hiding_a_wrong_step_earns_no_more_local_credit_than_showing_it(scorer, step):
    """The same wrong step, written checkably or not, is blamed from where it starts to the end."""
    shown, hidden = _working(SHOWN), _working(step)
    assert _local(scorer, shown) == [SpanScore(shown.index(SHOWN), len(shown), -1.0)]
    start = hidden.index(step.lstrip("("))
    assert _local(scorer, hidden) == [SpanScore(start, len(hidden), -1.0)]
