"""Finding 7 of issue 20: ``local: oracle`` aligned code and reference with
``difflib.SequenceMatcher``, whose longest-match recursion is quadratic or worse on repetitive
text (``v0 ... v12`` against a cycle of ``v0 ... v10``: 18 s at 4,000 tokens). The matcher is
now the same alignment under a work budget linear in the tokens, with a documented fallback.

Checked here: the matcher's alignment equals difflib's (property test), oracle's spans are the
old implementation's on the task generator's corrupted components and on long repetitive
components, the fallback blames the differing region, and the cost grows linearly (ratio of
times at n and 4n, as tests/test_linear_time.py does)."""
from __future__ import annotations

import difflib
import random
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from botgrpo.reward_server.react import local as L
from botgrpo.reward_server.react.extract import extract_code
from botgrpo.reward_server.react.local import CompileOutcome, Window, matching_blocks, opcodes, oracle
from tests.test_linear_time import assert_linear

tokens = st.lists(st.sampled_from(["a", "b", "c", "<", ">", "x"]), max_size=40)


@settings(max_examples=400, deadline=None)
@given(tokens, tokens)
def test_the_matcher_aligns_as_difflib_does(a, b):
    expected = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert opcodes(matching_blocks(a, b, 10**9)) == [tuple(op) for op in expected]


def test_the_matcher_gives_up_past_its_budget():
    a, b = ["v"] * 200, ["v"] * 199 + ["w"]
    assert matching_blocks(a, b, 10**9) is not None
    assert matching_blocks(a, b, 1000) is None


def old_oracle(outcome: CompileOutcome, window: Window, reference: Optional[str]) -> list:
    """The implementation before the fix (difflib, no budget), the reference for equality."""
    ours, theirs = L.lexemes(outcome.code), L.lexemes(reference)
    a = [outcome.code[s:e] for s, e in ours]
    b = [reference[s:e] for s, e in theirs]
    blamed = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == 1 == j2 - j1 and L._same_kind(a[i1], b[j1])):
            continue
        if i2 > i1:
            blamed.append((ours[i1][0], ours[i2 - 1][1]))
        elif ours:
            blamed.append((ours[max(0, i1 - 1)][0], ours[min(i1, len(ours) - 1)][1]))
    return L._spans(outcome, blamed)


def corrupted_pairs():
    from botgrpo.trainer.tasks import react as tasks
    from botgrpo.trainer.tasks.react_corruptions import CORRUPTIONS
    rng = random.Random(0)
    for shape in tasks.SHAPES:
        for example in tasks.make_examples(40, 3, shape=shape):
            for _ in range(2):
                completion = tasks.corrupt_many([rng.choice(sorted(CORRUPTIONS))], example, rng)
                block = extract_code(completion, False)
                yield (block.code if block else completion), example.task.reference["code"]


def repetitive_component(rng: random.Random, n_lines: int) -> list[str]:
    return [rng.choice([f'      <li key="{i}" className="item">{{items[{i}].name}}</li>',
                        f"  const [v{i}, setV{i}] = useState({i});",
                        f'      <div className="row"><span>{{v{i % 7}}}</span></div>',
                        f"  useEffect(() => {{ setV{i % 5}(x => x + 1); }}, []);"]) for i in range(n_lines)]


def mutated(lines: list[str], rng: random.Random, mutations: int) -> list[str]:
    out = list(lines)
    for _ in range(mutations):
        k, op = rng.randrange(len(out)), rng.random()
        if op < 0.3:
            del out[k]
        elif op < 0.6:
            out.insert(k, out[rng.randrange(len(out))])
        else:
            out[k] = out[k].replace("className", "class").replace("=>", "=")
    return out


def test_oracle_blames_what_the_old_oracle_blamed():
    pairs = list(corrupted_pairs())
    rng = random.Random(5)
    reference = repetitive_component(rng, 150)  # ~2,600 tokens, the most repetitive React there is
    pairs += [("\n".join(mutated(reference, rng, m)), "\n".join(reference)) for m in (1, 5, 20, 60)]
    assert len(pairs) > 100
    differing = 0
    for code, ref in pairs:
        outcome = CompileOutcome(len(code) + 7, 7, code)
        expected = old_oracle(outcome, Window(), ref)
        assert oracle(outcome, Window(), ref) == expected
        differing += bool(expected)
    assert differing > len(pairs) // 2  # the comparison is not between empty lists


def crafted(n_tokens: int, cycle: int) -> str:
    return " ".join(f"v{i % cycle}" for i in range(n_tokens))


def test_crafted_repetitive_text_falls_back_to_the_differing_region():
    code, ref = crafted(4000, 13), crafted(4000, 11)
    spans = oracle(CompileOutcome(len(code), 0, code), Window(), ref)
    first_difference = code.index("v11")  # the first 11 tokens are common
    assert [(s.start, s.end, s.score) for s in spans] == [(first_difference, len(code), L.BLAME)]
    same = oracle(CompileOutcome(len(ref), 0, ref), Window(), ref)
    assert same == []


def test_oracle_is_linear_on_crafted_repetitive_text():
    """18 s at 4,000 tokens before (1,000 -> 0.2 s, 4,000 -> 18 s: x85); now ~x4."""
    def run(pair):
        code, ref = pair
        oracle(CompileOutcome(len(code), 0, code), Window(), ref)

    assert_linear(run, lambda n: (crafted(n, 13), crafted(n, 11)), 4000, "oracle v0..v12 against a cycle of 11")
