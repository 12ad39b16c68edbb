"""``botgrpo compare``: the study instrument. Estimators compared honestly, as a user feature.

A protocol file (:mod:`~botgrpo.compare.protocol`) fixes the shared start, the arms, the seeds,
the budget, the endpoint and the comparisons before any study run; :mod:`~botgrpo.compare.lock`
holds it to that. Cells (an arm on a seed) run as ``botgrpo train`` processes
(:mod:`~botgrpo.compare.cells`, :mod:`~botgrpo.compare.run`); pilots size the study
(:mod:`~botgrpo.compare.power`); the report tests what the protocol names
(:mod:`~botgrpo.compare.report`, :mod:`~botgrpo.compare.plots`) with the pure statistics of
:mod:`~botgrpo.compare.stats`. :mod:`~botgrpo.compare.study` runs the steps in order. The
method, and why: ``docs/compare.md``.
"""
