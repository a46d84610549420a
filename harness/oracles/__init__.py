"""Properties any correct cuzk-compatible prover has, each judged into oracle records: the
suites preflight, validity, warmup, isolation and timing, and their registry."""
