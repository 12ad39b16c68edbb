"""Adapters that bring BoT-GRPO's token-level advantages into other RL frameworks.

* :mod:`trainer.integrations.trl`: ``BoTGRPOTrainer``, a drop-in TRL ``GRPOTrainer`` (extra ``[trl]``);
* :mod:`trainer.integrations.verl`: ``register()`` adds ``bot_grpo`` to verl's advantage estimators.

Each submodule imports its framework itself; importing this package imports neither.
"""
