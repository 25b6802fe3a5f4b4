"""Comparing arms: stats.py (seeded bootstrap, paired differences), metrics.py (aggregates,
the Pareto front, the recommendation), stability.py (whether seed subsets agree with it) and
suite.py (a folder of scenario files summarised with the trace as the unit)."""
