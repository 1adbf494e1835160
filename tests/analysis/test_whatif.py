"""What-if: the diff reports exactly what running the changed scenario directly does."""

from __future__ import annotations

from pathlib import Path

from kubesched.analysis.whatif.apply import apply_changes
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import load_scenario
from kubesched.sim import simulate
from kubesched.testkit.builders import make_pdb
from kubesched.testkit.scenarios import write_scenario

CLUSTER = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-1, labels: {app: batch}}
spec:
  nodeName: n1
  priorityClassName: low
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: batch-2, labels: {app: batch}}
spec:
  nodeName: n2
  priorityClassName: low
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3500m"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  priorityClassName: high
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "2"}}}]
"""

PDB = make_pdb("batch", {"matchLabels": {"app": "batch"}}, max_unavailable=0)

#: the same cluster with preemption switched off in its scheduler (a rollout's first stage)
WITHOUT_PREEMPTION = CLUSTER + """---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: cluster}
spec:
  schedulerConfiguration:
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
    - schedulerName: default-scheduler
      plugins: {postFilter: {disabled: [{name: DefaultPreemption}]}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_enabling_preemption_kills_exactly_the_pods_the_changed_run_kills(tmp_path: Path) -> None:
    base = load_scenario(_write(tmp_path, WITHOUT_PREEMPTION))
    diff, _ = whatif(base, Changes(preemption=True))
    assert diff["baseline"]["summary"]["preemptions"] == 0
    assert diff["baseline"]["pods"]["default/api"]["phase"] == "Pending"
    # the prediction: api preempts batch-1 on n1 (the node with the cheaper victim set)
    assert [(p["victim"], p["preemptor"], p["node"]) for p in diff["preempted"]] == [
        ("default/batch-1", "default/api", "n1")]
    assert diff["started"] == [{"pod": "default/api", "node": "n1"}]
    assert diff["stopped"] == [{"pod": "default/batch-1", "node": "n1", "phaseAfter": "Deleted"}]
    # ... checked against simulating the changed scenario directly
    _, changed = apply_changes(base, Changes(preemption=True))
    docs = list(changed.objects) + [{"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario",
                                     "metadata": {"name": "changed"},
                                     "spec": {"schedulerConfiguration": changed.scheduler_configuration}}]
    changed_file = write_scenario(tmp_path, docs)
    direct = simulate(str(changed_file)).result
    direct_victims = sorted(e["pod"] for e in direct["events"] if e["reason"] == "Preempted")
    assert direct_victims == sorted(p["victim"] for p in diff["preempted"])
    assert direct["pods"]["default/api"]["node"] == diff["changed"]["pods"]["default/api"]["node"]


def test_adding_a_pdb_reports_the_violation(tmp_path: Path) -> None:
    base = load_scenario(_write(tmp_path, WITHOUT_PREEMPTION))
    diff, _ = whatif(base, Changes(preemption=True, apply=[PDB]))
    assert diff["summary"]["pdbViolations"] == 1
    assert diff["preempted"][0]["violatesPDB"] is True
    assert diff["preempted"][0]["violatedPDBs"] == ["default/batch"]


def test_enabling_preemption_that_is_already_on_changes_nothing_and_says_why(tmp_path: Path) -> None:
    base = load_scenario(_write(tmp_path, CLUSTER))  # the default profile: preemption on
    diff, _ = whatif(base, Changes(preemption=True))
    assert diff["baseline"]["summary"]["preemptions"] == 1  # the baseline is the cluster as it is
    assert diff["preempted"] == [] and diff["started"] == [] and diff["stopped"] == []
    assert "already enabled" in diff["note"]


def test_reprioritising_and_cordoning(tmp_path: Path) -> None:
    base = load_scenario(_write(tmp_path, CLUSTER))
    diff, _ = whatif(base, Changes(priority_classes=[("app=batch", "high")], cordon=["n2"]))
    # batch pods now share api's priority: nothing is preempted and api stays pending
    assert diff["preempted"] == []
    assert diff["changed"]["pods"]["default/api"]["phase"] == "Pending"
    classes = {(r["priorityClass"], r["runningAfter"]) for r in diff["impact"]}
    assert ("high", 2) in classes


def test_drain_evicts_the_nodes_pods_as_kubectl_does(tmp_path: Path) -> None:
    base = load_scenario(_write(tmp_path, CLUSTER))
    # the batch pods declare no controller: kubectl drain refuses them without --force
    refused, _ = whatif(base, Changes(drain=["n1"]))
    assert refused["drains"][0]["outcome"] == "failed"
    assert refused["drains"][0]["refused"] == [
        "cannot delete Pods that declare no controller (use --force to override): default/batch-1"]
    diff, _ = whatif(base, Changes(drain=["n1"], drain_options={"force": True}))
    # baseline: api preempts batch-1 on n1; drained: n1 is cordoned and batch-1 evicted (nothing
    # replaces it: lost), so api preempts batch-2 on n2
    assert diff["baseline"]["pods"]["default/api"]["node"] == "n1"
    assert diff["changed"]["pods"]["default/batch-1"]["phase"] == "Deleted"
    assert diff["changed"]["pods"]["default/api"]["node"] == "n2"
    assert diff["stopped"] == [{"pod": "default/batch-2", "node": "n2", "phaseAfter": "Deleted"}]
    assert [p["victim"] for p in diff["preempted"]] == ["default/batch-2"]
    (drain,) = diff["drains"]
    assert drain["outcome"] == "drained"
    assert drain["pods"] == [{"pod": "default/batch-1", "evicted": 0.0, "lost": True}]


def test_a_baseline_already_simulated_with_explanations_gives_the_same_diff() -> None:
    """``kubesched ui`` hands in the run it shows (simulated as explain simulates, every candidate
    kept) as the baseline: the diff is the one of a what-if simulating both sides."""
    import json

    from kubesched.analysis.whatif.run import decided_run

    demo = load_scenario(str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"))
    shown = simulate(demo, explain=True)
    baseline = decided_run(shown.result, shown.simulation.history.owners, shown.simulation.history.labels)
    assert baseline.result == simulate(demo, decisions=True).result  # what a what-if's baseline records
    for changes in (Changes(cordon=["node-2"]), Changes(preemption=False), Changes(preemption=True),
                    Changes(drain=["node-2"], drain_options={"force": True, "ignoreDaemonSets": True})):
        alone, _ = whatif(demo, changes)
        given, _ = whatif(demo, changes, baseline=baseline)
        assert json.dumps(given, sort_keys=True) == json.dumps(alone, sort_keys=True)
