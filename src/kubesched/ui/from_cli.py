"""The one place the ui takes what it shares with the command line from ``kubesched.cli``: the pools
and workloads the tables group by, and ``explain``'s words for a pod it cannot diagnose. The ui's
modules import these names from here, so that when they move to a module below both packages only
this file changes."""

from __future__ import annotations

from kubesched.cli.explain import missing_pod_text
from kubesched.cli.grouping import POOL_LABELS, ClusterFacts, Workload, cluster_facts, pool_by_name, pool_of

__all__ = ["POOL_LABELS", "ClusterFacts", "Workload", "cluster_facts", "missing_pod_text", "pool_by_name", "pool_of"]
