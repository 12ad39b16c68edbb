"""Pure building blocks of the ``math`` scorer: extract, guard, compare, check steps, blame.

Nothing here starts processes or keeps state; :mod:`botgrpo.reward_server.scorers.math` wires these
functions to the process pool. See ``README.md`` in this folder for the token-score scheme.
"""
