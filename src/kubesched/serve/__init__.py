"""`kubesched run`: the scheduler process against a real API server (kube backend, scheduler loop,
metrics and probes, leader election)."""
