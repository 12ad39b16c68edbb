"""Throughput of the ``math`` scorer vs calling math-verify directly, and adversarial latency.

Run: ``.venv/bin/python benchmarks/math_throughput.py [--n 2000] [--workers 2]``

* "ordinary": GSM8K-like completions (a few arithmetic steps, a boxed integer, decimal or
  fraction; 70% correct). The scorer decides these without sympy.
* "symbolic": answers that need sympy (radicals, expressions, percent), through the pool.
* baseline: ``verify(parse(f"${reference}$"), parse(completion))`` in this process,
  math-verify's documented usage (its own SIGALRM timeouts on, as in a single-threaded script).
  It runs after the scorer, so sympy's caches are no warmer for the scorer's side.
* adversarial: wall time of one ``score_batch`` call per pathological completion.
"""
from __future__ import annotations

import argparse
import random
import time

from botgrpo.reward_server.math.equivalence import warm_up
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.sandbox.process_pool import ProcessPool

SYMBOLIC = [  # (answer, reference) templates, made distinct per case so no cache helps either side
    ("\\sqrt{{{sq}}}", "{k}\\sqrt{{2}}"),
    ("x^2+{two_k}x+{sq_k}", "(x+{k})^2"),
    ("{k}\\%", "{frac}"),
    ("\\frac{{\\sqrt{{3}}}}{{{k3}}}", "\\frac{{1}}{{{k}\\sqrt{{3}}}}"),
    ("\\frac{{{k}\\pi}}{{3}}", "\\frac{{{k2}\\pi}}{{6}}"),
]
ADVERSARIAL = {
    "1 MB of prose": "x" * 1_000_000 + " \\boxed{18}",
    "1 MB of wrong steps": "1 + 1 = 3\n" * 100_000 + "\\boxed{18}",
    "power tower": "\\boxed{9^{9^{9^9}}}",
    "huge factorial": "\\boxed{1000000!}",
    "huge binomial": "\\boxed{\\binom{10^{6}}{5 \\cdot 10^{5}}}",
    "deep braces": "\\boxed{" + "{" * 500 + "1" + "}" * 500 + "}",
    "unterminated box": "So \\boxed{",
}


def ordinary(rng: random.Random) -> tuple[str, str]:
    a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
    total = a * b + c
    answer = rng.choice([str(total), f"{total}.0", f"\\frac{{{2 * total}}}{{2}}"])
    if rng.random() < 0.3:
        answer = str(total + rng.randint(1, 5))
    text = f"First {a} * {b} = {a * b}. Then {a * b} + {c} = {total}.\nSo the answer is \\boxed{{{answer}}}."
    return text, str(total)


def symbolic_case(i: int) -> tuple[str, str]:
    k = i // len(SYMBOLIC) + 2
    answer, reference = SYMBOLIC[i % len(SYMBOLIC)]
    values = {
        "k": k, "sq": 2 * k * k, "two_k": 2 * k, "sq_k": k * k, "frac": k / 100, "k3": 3 * k, "k2": 2 * k
    }
    return f"So \\boxed{{{answer.format(**values)}}}", reference.format(**values)


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:8.0f} answers/s ({seconds * 1000 / n:.2f} ms each)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(0)
    cases = [ordinary(rng) for _ in range(args.n)]
    symbolic = [symbolic_case(i) for i in range(args.n // 10)]

    started = time.perf_counter()
    pool = ProcessPool(args.workers, initializer=warm_up)
    print(f"pool start ({args.workers} warm workers): {time.perf_counter() - started:.2f} s")
    scorer, options = MathScorer(pool), MathOptions()
    for label, batch in (("ordinary", cases), ("symbolic", symbolic)):
        rollouts = [Rollout(text, reference={"answer": ref}) for text, ref in batch]
        started = time.perf_counter()
        for chunk in range(0, len(rollouts), 64):  # requests of 64 rollouts
            scorer.score_batch(rollouts[chunk : chunk + 64], options)
        print(f"scorer   {label:9s}: {rate(len(rollouts), time.perf_counter() - started)}")

    from math_verify import parse, verify

    for label, batch in (("ordinary", cases[: args.n // 4]), ("symbolic", symbolic)):
        started = time.perf_counter()
        for text, ref in batch:
            verify(parse(f"${ref}$"), parse(text))  # a bare "2\\sqrt{2}" gold would not parse
        print(f"baseline {label:9s}: {rate(len(batch), time.perf_counter() - started)}")

    for name, text in ADVERSARIAL.items():
        started = time.perf_counter()
        (result,) = scorer.score_batch([Rollout(text, reference={"answer": "17"})], options)
        elapsed = (time.perf_counter() - started) * 1000
        reason = result.details.get("reason")
        print(f"adversarial {name:20s}: {elapsed:7.1f} ms  passed={result.passed}  {reason}")
    print("pool after adversarial:", pool.stats())
    pool.close()


if __name__ == "__main__":
    main()
