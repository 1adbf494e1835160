"""Analyses on top of the simulator: why a pod is pending (diagnose) and what a change would do (whatif)."""
