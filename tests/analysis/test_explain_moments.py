"""`kubesched explain` says which moment it explains, and explains a pod as it is then: a pod bound in
the run is reported where and when it was scheduled (and diagnosed as the scheduler saw it, not as a
pod pending on its own node), and a pod whose preemption is under way is not told that preemption
would not help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump

NODES = 20


def _preempting_dump(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """``NODES`` nodes of 4 cpu, each running a 3-cpu batch pod; one 2-cpu online pod pending, which
    preempts a batch pod at t=0 and is bound once that pod is gone (its grace period, 30 s, later).
    The snapshot file, the online pod's key and the batch pods' keys."""
    dump = ClusterDump()
    names = [node["metadata"]["name"] for node in dump.eks_nodegroup("general", NODES, cpu="4", memory="16Gi")]
    dump.system_classes()
    dump.priority_class("batch", 100)
    dump.priority_class("online", 100000)
    _, _, batch = dump.deployment("filler", NODES, list(names), namespace="batch", cpu="3",
                                  priority_class="batch", priority=100)
    _, _, web = dump.deployment("web", 1, [None], namespace="shop", cpu="2", priority_class="online",
                                priority=100000)
    path = dump.write(tmp_path / "snap.yaml")
    return path, f"shop/{web[0]['metadata']['name']}", [f"batch/{p['metadata']['name']}" for p in batch]


def _explain(*args: str) -> Result:
    return CliRunner().invoke(cli, ["explain", *args], env={"COLUMNS": "250"})


def _json(*args: str) -> Any:
    result = _explain(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_pod_scheduled_in_the_run_is_reported_where_and_when_and_diagnosed_as_the_scheduler_saw_it(
        tmp_path: Path) -> None:
    path, web, batch = _preempting_dump(tmp_path)
    data = _json(web, str(path))
    node = data["node"]
    assert data["phase"] == "Running" and node is not None
    history = data["history"]
    assert history["scheduled"] == {"time": 30.0, "node": node, "attempt": history["attempts"]}
    assert history["failedAttempts"] == history["attempts"] - 1 >= 1
    (preemption,) = history["preemptions"]
    assert preemption["time"] == 0.0 and preemption["node"] == node
    (victim,) = preemption["victims"]
    assert victim["pod"] in batch and victim["priority"] == 100
    # diagnosed as a pending pod now: no nodeName of its own, itself not counted on its node; its own
    # node (the preempted pod gone, its replacement pending) is the one that fits
    assert data["asIfPending"] is True
    assert not any(f["plugin"] == "NodeName" for v in data["nodes"] for f in v["failures"])
    assert [v["node"] for v in data["nodes"] if v["fits"]] == [node]
    assert data["upstreamMessage"] == "" and data["preemption"] is None

    text = " ".join(_explain(web, str(path)).output.split())
    assert f"{web} (priority 100000) at t=30s (end of the run): Running on {node}" in text
    assert (f"Successfully assigned {web} to {node} at t=30s (attempt {history['attempts']}, "
            f"after {history['failedAttempts']} failed attempts)") in text
    assert f"preempted {victim['pod']} (priority 100) on {node} at t=0s" in text
    assert f"fits 1 of {NODES} nodes: {node}" in text
    for wrong in ("pod asks for node", "didn't match the requested node name", "nodes are available"):
        assert wrong not in text


def test_a_pod_bound_before_the_run_is_not_said_to_be_scheduled_in_it(tmp_path: Path) -> None:
    path, _, batch = _preempting_dump(tmp_path)
    # a batch pod the online pod did not preempt: running from the start to the end
    data = _json(batch[0], str(path))
    still_running = batch[0] if data["phase"] == "Running" else batch[1]
    data = data if still_running == batch[0] else _json(batch[1], str(path))
    assert data["history"]["scheduled"] is None and data["history"]["attempts"] == 0
    text = " ".join(_explain(still_running, str(path)).output.split())
    assert f"Running on {data['node']}" in text
    assert "not placed by the scheduler in this run: its spec.nodeName was set when it was created" in text
    assert "Successfully assigned" not in text


def test_at_the_moment_of_its_preemption_the_pod_waits_for_its_victim(tmp_path: Path) -> None:
    """At t=0 the pod has preempted a batch pod and is nominated to its node: upstream's
    PodEligibleToPreemptOthers then refuses a new preemption (a lower-priority pod preempted by the
    scheduler is terminating on the nominated node), which is what its next attempt reports; but
    preemption did help, and is under way."""
    path, web, _ = _preempting_dump(tmp_path)
    data = _json(web, str(path), "--at", "0s")
    node = data["nominatedNodeName"]
    assert data["phase"] == "Pending" and data["node"] is None and node is not None
    assert data["preemption"]["outcome"] == "not eligible"
    assert data["upstreamMessage"].endswith("preemption: not eligible due to a terminating pod on the nominated node..")
    (victim,) = data["history"]["preemptions"][0]["victims"]
    assert data["terminatingOnNominatedNode"] == [{"pod": victim["pod"], "priority": 100, "node": node, "preemptor": web}]

    text = " ".join(_explain(web, str(path), "--at", "0s").output.split())
    assert "preemption would not help" not in text
    assert (f"preemption under way: it preempted {victim['pod']} (priority 100) on {node} at t=0s and is "
            f"nominated there; it waits for the victim to terminate") in text


def test_the_header_and_the_json_say_which_moment_is_explained(tmp_path: Path) -> None:
    path, web, _ = _preempting_dump(tmp_path)
    assert _json(web, str(path))["at"] == {"time": 30.0, "endOfRun": True}
    assert _json(web, str(path), "--at", "0s")["at"] == {"time": 0.0, "endOfRun": False}
    at_zero = _explain(web, str(path), "--at", "0s").output
    assert at_zero.startswith(f"{web} (priority 100000) at t=0s (--at): Pending, nominated to ")
    assert _explain(web, str(path)).output.startswith(f"{web} (priority 100000) at t=30s (end of the run): ")


def test_a_forgotten_pod_argument_is_named(tmp_path: Path) -> None:
    path, _, _ = _preempting_dump(tmp_path)
    result = _explain(str(path))
    assert result.exit_code == 2
    assert f"missing POD: {path} is the SNAPSHOT; give the pod to explain before it" in result.output
    assert "--all-pending" in result.output
    assert "give a SNAPSHOT file or directory" not in result.output
    usage = _explain("--help").output
    assert "[POD] [SCENARIO]" not in usage
    assert "Usage: cli explain [OPTIONS] POD SNAPSHOT" in usage
    assert "kubesched explain [OPTIONS] --all-pending (SNAPSHOT | --kubeconfig FILE)" in usage


def test_diagnosing_a_bound_pod_leaves_the_scheduler_cache_as_it_was(tmp_path: Path) -> None:
    """The bound pod is taken out of the cache for its diagnosis only: its node counts it again
    afterwards, and a second diagnosis (of it, or of a pending pod) sees the same cluster."""
    from kubesched.analysis.diagnose import diagnose
    from kubesched.sim import simulate

    path, web, _ = _preempting_dump(tmp_path)
    outcome = simulate(path, explain=True)
    namespace, name = web.split("/", 1)
    node = outcome.result["pods"][web]["node"]
    info = outcome.scheduler.cache.get(node)
    assert info is not None
    before = (sorted(p.key for p in info.pods), dict(info.requested))
    first = diagnose(outcome.scheduler, namespace, name, run=outcome.result)
    assert (sorted(p.key for p in info.pods), dict(info.requested)) == before
    again = diagnose(outcome.scheduler, namespace, name, run=outcome.result)
    assert again.to_dict() == first.to_dict()
