"""The differential: the run plan, the session that computes runs and oracle records, config
deltas and suspects, the verdict, and :func:`run_differential`."""
