"""`kubesched explain` on a kubectl dump: per-plugin hints naming what is in the way, namespaces as
kubectl takes them, and what preemption would cost a pod whose policy forbids it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump


def _dump(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    dump = ClusterDump()
    dump.node("node-a", cpu="4", zone="zone-a")
    dump.node("node-b", cpu="4", zone="zone-b")
    dump.system_classes()
    dump.priority_class("quiet", 200000, preemption_policy="Never")
    dump.priority_class("batch", 100)
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    _, _, db = dump.deployment("db", 3, ["node-a", "node-b", None], namespace="data", cpu="500m", template_extra=anti)
    dump.deployment("filler", 2, ["node-a", "node-b"], namespace="batch", cpu="3", priority_class="batch",
                    priority=100)
    _, _, web = dump.deployment("web", 1, [None], namespace="shop", cpu="2", priority_class="quiet", priority=200000,
                                preemption_policy="Never")
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(dump.as_list(with_workloads=True), sort_keys=False))
    return path, {"db": db[2]["metadata"]["name"], "web": web[0]["metadata"]["name"]}


def _explain(*args: str) -> Result:
    return CliRunner().invoke(cli, ["explain", *args], env={"COLUMNS": "250"})


def test_anti_affinity_hint_names_the_conflicting_pods(tmp_path: Path) -> None:
    path, names = _dump(tmp_path)
    result = _explain(names["db"], str(path), "-n", "data", "-o", "json")
    assert result.exit_code == 0, result.output
    diagnosis = json.loads(result.output)
    by_node = {v["node"]: {f["plugin"]: f["hints"] for f in v["failures"]} for v in diagnosis["nodes"]}
    for node in ("node-a", "node-b"):
        # the pod's own term refuses the db pod there, and that pod's term refuses the pod
        mine, theirs = by_node[node]["InterPodAffinity"]
        assert mine.startswith("pod data/db-") and mine.endswith(
            f"on {node} matches the pod's anti-affinity (kubernetes.io/hostname={node})")
        assert theirs.endswith(f"on {node} refuses pods like this one (kubernetes.io/hostname={node}, its anti-affinity)")
    assert diagnosis["upstreamMessage"].startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: ")


def test_all_pending_lists_every_pending_pod_with_its_reason(tmp_path: Path) -> None:
    path, names = _dump(tmp_path)
    every = _explain("--all-pending", str(path), "-A")
    assert every.exit_code == 0, every.output
    rows = {line.split("│")[1].strip(): line for line in every.output.splitlines() if line.startswith("│")}
    assert set(rows) == {f"data/{names['db']}", f"shop/{names['web']}"}
    assert "didn't match pod anti-affinity rules" in rows[f"data/{names['db']}"]
    shop = _explain("--all-pending", str(path), "-n", "shop")
    assert f"data/{names['db']}" not in shop.output and f"shop/{names['web']}" in shop.output


def test_a_pod_in_another_namespace_is_pointed_to(tmp_path: Path) -> None:
    path, names = _dump(tmp_path)
    out = _explain(names["web"], str(path))
    assert out.exit_code == 2
    assert f'pods "{names["web"]}" not found in namespace "default"; there is shop/{names["web"]} (-n shop)' in out.stderr


def test_preemption_policy_never_says_whom_preemption_would_cost(tmp_path: Path) -> None:
    path, names = _dump(tmp_path)
    out = _explain(names["web"], str(path), "-n", "shop")
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "preemption would help, but the pod's preemptionPolicy is Never" in text
    assert "evicting batch/filler-" in text
    data: Any = json.loads(_explain(f"shop/{names['web']}", str(path), "-o", "json").output)
    assert data["preemption"]["outcome"] == "not eligible"
    assert data["preemptionIfAllowed"]["outcome"] == "would preempt"
    assert data["upstreamMessage"].endswith("preemption: not eligible due to preemptionPolicy=Never..")


def test_the_message_without_detail_is_the_one_with_it(tmp_path: Path) -> None:
    """`explain --all-pending` works the message out from the filters run over all nodes at once,
    as a scheduling cycle does: it is the message the node-by-node diagnosis gives, for pods held
    back by resources, taints, anti-affinity, node affinity, spreading and a Never policy."""
    import sys

    from kubesched.analysis.diagnose import diagnose
    from kubesched.sim import simulate

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from production_dump import ensure_dumps

    ensure_dumps(tmp_path, 60, 1500, ["json"], log=lambda _: None)
    outcome = simulate(next(p for p in tmp_path.glob("*.json") if not p.name.endswith(".meta.json")), explain=True)
    pending = [k for k, p in outcome.result["pods"].items() if p["phase"] == "Pending"]
    assert len(pending) > 10
    for key in pending:
        namespace, name = key.split("/", 1)
        light = diagnose(outcome.scheduler, namespace, name, detail=False)
        full = diagnose(outcome.scheduler, namespace, name)
        assert light.upstream_message == full.upstream_message, key
        assert light.preemption == full.preemption, key
    path, names = _dump(tmp_path)
    small = simulate(path, explain=True)
    for key in (f"data/{names['db']}", f"shop/{names['web']}"):
        namespace, name = key.split("/", 1)
        assert diagnose(small.scheduler, namespace, name, detail=False).upstream_message == \
            diagnose(small.scheduler, namespace, name).upstream_message
