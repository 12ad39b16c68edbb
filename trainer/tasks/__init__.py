"""Synthetic tasks for the demo and for tests: prompts, references, correct and broken completions.

Each task module (:mod:`.react`, :mod:`.arith`) offers the same API:

* ``make_prompts(n, seed) -> list[Task]``: prompts with the reference their scorer reads;
* ``make_sft_corpus(n, seed, broken_share) -> list[(prompt, completion)]``: a warm-start corpus
  in which ``broken_share`` of the completions carry a realistic mistake, so that a policy
  trained on it starts well below a perfect score and RL has something to improve.

The format is chat-free (see :mod:`.base`): ``Task.prompt`` is the policy's input verbatim
(an instruction line ending in ``"\\n"``) and the policy continues with the completion.
"""
from botgrpo.trainer.tasks.base import PROMPT_END, Task, format_prompt, write_jsonl

__all__ = ["PROMPT_END", "Task", "format_prompt", "write_jsonl"]
