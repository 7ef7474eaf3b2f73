"""connwalk paper checks: the empirical claims E1–E6 measured with null models and verdicts."""
