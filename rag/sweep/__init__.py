"""Parameter sweeps with held-out reporting (``rag-bench sweep``).

:mod:`rag.sweep.grid` parses ``--grid`` axes into the cartesian product of configs;
:mod:`rag.sweep.evaluate` scores every method at every point, re-using every cache a grid key does
not touch; :mod:`rag.sweep.split` splits each question set, seeded, into dev and test;
:mod:`rag.sweep.select` chooses the best point per method on dev and reports it on test beside the
config's own setting (bootstrap CIs, paired randomization test); :mod:`rag.sweep.plots` and
:mod:`rag.sweep.outputs` write the sweep directory. :func:`load_sweep_summary` reads one back for a
report.
"""

from rag.sweep.outputs import SweepSummary, load_sweep_summary

__all__ = ["SweepSummary", "load_sweep_summary"]
