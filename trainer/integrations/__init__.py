"""Adapters that bring BoT-GRPO's token-level advantages into other RL frameworks.

* :mod:`botgrpo.trainer.integrations.trl`: ``BoTGRPOTrainer``, a drop-in TRL ``GRPOTrainer`` (extra ``[trl]``);
* :mod:`botgrpo.trainer.integrations.verl` (verl-free) and :mod:`botgrpo.trainer.integrations.verl_plugin` (imported by verl's
  ``VERL_USE_EXTERNAL_MODULES`` hook): the estimator, a token-reward manager and trainer modes for verl;
* :mod:`botgrpo.trainer.integrations.skyrl`: the estimators in SkyRL's registry, a generator wrapper giving its
  output the server's per-token rewards, and an entrypoint for SkyRL's launcher;
* :mod:`botgrpo.trainer.integrations.contract` (framework-free): the estimator call and the reference verl and
  SkyRL share.

Each submodule imports its framework itself; importing this package imports none.
"""
