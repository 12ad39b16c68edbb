"""The trainer: rollouts, BoT-GRPO advantages, the policy update.

Installed as ``botgrpo.trainer`` (pyproject's package-dir); the folder is never a top-level package.
"""
if __name__ != "botgrpo.trainer":  # one module, one name
    raise ImportError(f"import botgrpo.trainer, not {__name__}: the trainer/ folder installs as botgrpo.trainer")
