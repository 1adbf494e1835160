"""The scheduler's PodDisruptionBudgets follow the cluster's change journal: a budget created,
updated (its status) or deleted between two dry runs is seen by the second, and a budget nobody
changed is not read again."""

from __future__ import annotations

import numpy as np

from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.des.clock import EventLoop
from kubesched.k8s.objcopy import deep_copy
from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.types import PodInfo
from kubesched.testkit.builders import make_pdb, make_pod
from kubesched.testkit.framework import FakeHandle


def test_budgets_follow_the_clusters_writes() -> None:
    loop = EventLoop()
    cluster = EmbeddedCluster(loop, EventLog(loop.now), np.random.default_rng(0))
    budgets = DisruptionBudgets(FakeHandle(cluster=cluster))
    web = [PodInfo.from_pod(make_pod(f"web-{i}", labels={"app": "web"})) for i in range(3)]
    assert budgets.refresh().split(web) == ([], web)
    cluster.create(make_pdb("web", {"matchLabels": {"app": "web"}}, namespace="default", max_unavailable=1,
                            disruptions_allowed=1))
    violating, non_violating = budgets.refresh().split(web)
    assert [p.name for p in non_violating] == ["web-0"] and [p.name for p in violating] == ["web-1", "web-2"]
    compiled = budgets.index.get("default/web")
    budgets.refresh()
    assert budgets.index.get("default/web") is compiled  # nothing changed: nothing read again
    updated = deep_copy(cluster.get("PodDisruptionBudget", "default", "web"))
    updated["status"]["disruptionsAllowed"] = 2
    updated["status"]["disruptedPods"] = {"web-0": "2025-01-01T00:00:00Z"}
    cluster.api.update(updated)
    violating, non_violating = budgets.refresh().split(web)
    # web-0 is already counted as disrupted: it spends nothing
    assert [p.name for p in non_violating] == ["web-0", "web-1", "web-2"] and violating == []
    cluster.api.delete("PodDisruptionBudget", "default", "web")
    assert not budgets.refresh()
