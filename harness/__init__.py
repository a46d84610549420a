"""proofdiff test harness: differential regression testing for GPU proof-generation daemons."""
