"""Adapters that bring BoT-GRPO's token-level advantages into other RL frameworks.

* :mod:`botgrpo.trainer.integrations.trl`: ``BoTGRPOTrainer``, a drop-in TRL ``GRPOTrainer`` (extra ``[trl]``);
* :mod:`botgrpo.trainer.integrations.verl` (verl-free) and :mod:`botgrpo.trainer.integrations.verl_plugin` (imported by verl's
  ``VERL_USE_EXTERNAL_MODULES`` hook): the estimator, a token-reward manager and trainer modes for verl.

Each submodule imports its framework itself; importing this package imports neither.
"""
