"""kubesched: a Kubernetes pod scheduler with priority and preemption, and a cluster simulator."""

__version__ = "0.1.0"
