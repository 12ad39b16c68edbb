"""The algorithm: advantage estimators, policy losses, reward shaping, method presets and their
settings (the `core_algos` analogue)."""
