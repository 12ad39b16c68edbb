"""The ``botgrpo train`` config keys the instrument itself sets or reads: the one place they are named.

Everything else in a cell's config is the protocol's data (the shared base and the arm's
overrides, passed through untouched). When the trainer's config changes shape, only the
right-hand side below changes. Dotted names are nested keys.
"""
from __future__ import annotations

# the instrument's name -> the trainer's (dotted) key
TRAINER_KEYS = {
    # set for every cell from the protocol (never by the base or an arm)
    "seed": "seed",
    "steps": "steps",
    "eval_every": "eval.every",
    "eval_prompts": "eval.prompts",
    # set for every cell by the instrument
    "output_dir": "output_dir",
    "progress": "log.progress",          # off: the instrument reports progress itself
    "resume": "checkpoint.resume",              # on when the cell's directory holds a checkpoint
    "save_every": "checkpoint.save_every",      # only with `botgrpo compare --save-every N`
    # the held-out set: from the protocol's evaluation.dataset, else the base's (never an arm's)
    "eval_dataset": "eval.dataset",
    # read: the shared start's files, fingerprinted in the lock
    "model": "model",
    "dataset": "data.dataset",
}

SET_BY_COMPARE = ("seed", "steps", "eval_every", "eval_prompts", "output_dir", "progress", "resume", "save_every")
START_FILES = ("model", "dataset", "eval_dataset")

# the per-step fields of metrics.jsonl a cell's record keeps (its curves; the rest stays in the run directory)
METRIC_FIELDS = ("step", "reward_mean", "pass_rate", "completion_len_mean", "kl", "entropy", "loss", "grad_norm",
                 "time_step")


def key(name: str) -> str:
    """The trainer's key for the instrument's ``name``."""
    return TRAINER_KEYS[name]
