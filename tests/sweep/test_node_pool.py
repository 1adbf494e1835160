"""A node pool chosen by a label selector, as a real cluster's node group is (an EKS dump, kubectl
shaped): a count above the group's size adds copies of its first node, one below it leaves out its
last nodes; each variant is the simulation of the dump with those nodes added or deleted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump

GROUP = "eks.amazonaws.com/nodegroup"


def _dump(tmp_path: Path) -> Path:
    dump = ClusterDump()
    general = [f"ip-10-0-1-{10 + i}.ec2.internal" for i in range(3)]
    for i, name in enumerate(general):
        dump.node(name, cpu="3", zone=f"us-east-1{'ab'[i % 2]}", instance_type="m5.xlarge",
                  labels={GROUP: "general"}, provider_id=f"aws:///us-east-1a/i-0{i}")
    dump.node("ip-10-0-2-20.ec2.internal", cpu="4", instance_type="m5.xlarge", labels={GROUP: "system"},
              taints=[{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}])
    # 3 cores a node: 12 pods of 1 core, 9 placed (3 to a node of the group), 3 pending
    dump.deployment("api", 12, [n for n in general for _ in range(3)] + [None] * 3, cpu="1")
    return dump.write(tmp_path / "cluster.yaml")


def _file(tmp_path: Path, kind: str, **spec: Any) -> Path:
    path = tmp_path / f"{kind.lower()}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind, "metadata": {"name": "g"},
                                    "spec": {"base": "cluster.yaml", **spec}}))
    return path


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _sweep_general_group(tmp_path: Path, counts: list[int]) -> tuple[Path, Any, Path]:
    """The dump, and a sweep of its general node group over ``counts`` with seed 7: its output and
    the directory of its per-variant results."""
    dump = _dump(tmp_path)
    pool = {"selector": {"matchLabels": {GROUP: "general"}}, "counts": counts}
    sweep = _file(tmp_path, "Sweep", nodePool=pool, seeds=[7])
    out = _run("sweep", str(sweep), "--local", "--out", str(tmp_path / "out"), "-o", "json")
    assert out.exit_code == 0, out.output
    return dump, out, tmp_path / "out" / "results"


def test_a_selected_node_group_grows_by_copies_of_its_first_node(tmp_path: Path) -> None:
    dump, _, results = _sweep_general_group(tmp_path, [3, 5])
    as_is = _run("simulate", str(dump), "--seed", "7", "-o", "json").output
    assert (results / "nodePoolCount=3,seed=7.json").read_text() == as_is  # the group's own size: the dump
    grown = json.loads((results / "nodePoolCount=5,seed=7.json").read_text())
    added = [n["node"] for n in grown["nodes"] if n["node"] not in {m["node"] for m in json.loads(as_is)["nodes"]}]
    assert added == ["ip-10-0-1-10.ec2.internal-4", "ip-10-0-1-10.ec2.internal-5"]
    assert json.loads(as_is)["summary"]["pending"] == 3 and grown["summary"]["pending"] == 0
    assert {grown["pods"][p]["node"] for p in grown["pods"]} >= set(added)  # the new nodes take the pending pods


def _without_nodes(dump: Path, names: list[str], directory: Path) -> Path:
    """The dump with these Nodes' items deleted by hand (the rest as it is, the same file name)."""
    document = yaml.safe_load(dump.read_text())
    document["items"] = [i for i in document["items"] if not (i["kind"] == "Node" and i["metadata"]["name"] in names)]
    directory.mkdir()
    out = directory / dump.name
    out.write_text(yaml.safe_dump(document))
    return out


def test_a_count_below_the_group_leaves_out_its_last_nodes_as_if_deleted_by_hand(tmp_path: Path) -> None:
    dump, out, results = _sweep_general_group(tmp_path, [1, 2])
    for count, removed in ((2, ["ip-10-0-1-12.ec2.internal"]),
                           (1, ["ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal"])):
        by_hand = _without_nodes(dump, removed, tmp_path / f"by-hand-{count}")
        expected = _run("simulate", str(by_hand), "--seed", "7", "-o", "json").stdout
        assert (results / f"nodePoolCount={count},seed=7.json").read_text() == expected
    shrunk = json.loads((results / "nodePoolCount=2,seed=7.json").read_text())
    assert {n["node"] for n in shrunk["nodes"]} == {"ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal",
                                                     "ip-10-0-2-20.ec2.internal"}
    # the 3 pods of the node left out are deleted by the pod garbage collector and replaced: with the
    # 3 pending before, 6 pods of 1 core wait, as the 6 cores left are taken
    assert shrunk["summary"]["pending"] == 6
    assert sum(1 for p in shrunk["pods"].values() if p["node"] == "ip-10-0-1-12.ec2.internal") == 3
    assert all(p["phase"] == "Deleted" for p in shrunk["pods"].values() if p["node"] == "ip-10-0-1-12.ec2.internal")
    by_count = {c["axes"]["nodePoolCount"]: c["metrics"]["pending"]["mean"] for c in json.loads(out.output)["configurations"]}
    assert by_count == {1: 9, 2: 6}


def test_a_selector_matching_nothing_or_given_with_a_template_is_refused(tmp_path: Path) -> None:
    _dump(tmp_path)
    none = _file(tmp_path, "Sweep", nodePool={"selector": {"matchLabels": {GROUP: "gpu"}}, "counts": [4]})
    out = _run("sweep", str(none), "--local")
    assert out.exit_code == 2 and f"spec.nodePool.selector: no Node of the base has {GROUP}=gpu" in out.output
    both = _file(tmp_path, "Sweep", nodePool={"template": "x", "selector": {"matchLabels": {GROUP: "general"}},
                                              "counts": [4]})
    out = _run("sweep", str(both), "--local")
    assert out.exit_code == 2 and "spec.nodePool: either template (a Node's name) or selector" in out.output


def test_a_plan_over_a_selected_node_group(tmp_path: Path) -> None:
    _dump(tmp_path)
    plan = _file(tmp_path, "Plan", seeds=[1, 2], goals=["pending == 0"],
                 nodePool={"selector": {"matchLabels": {GROUP: "general"}}, "min": 3, "max": 16})
    out = _run("plan", str(plan), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["answer"] == 4 and document["template"] == f"{GROUP}=general"  # 3 pending pods: one more node


def test_a_plan_searches_below_an_over_provisioned_group(tmp_path: Path) -> None:
    """The dump's group with 6 nodes for 9 pods of 1 core on 3-core nodes: the goal holds as it is,
    and the plan finds the fewest nodes below that, 3, where it still holds."""
    dump = ClusterDump()
    general = [f"ip-10-0-1-{10 + i}.ec2.internal" for i in range(6)]
    for i, name in enumerate(general):
        dump.node(name, cpu="3", zone=f"us-east-1{'ab'[i % 2]}", instance_type="m5.xlarge", labels={GROUP: "general"})
    dump.deployment("api", 9, [n for n in general for _ in range(2)][:9], cpu="1")
    dump.write(tmp_path / "cluster.yaml")
    plan = _file(tmp_path, "Plan", seeds=[1, 2], goals=["pending == 0"],
                 nodePool={"selector": {"matchLabels": {GROUP: "general"}}, "min": 1, "max": 6})
    out = _run("plan", str(plan), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["answer"] == 3
    assert {r["count"]: r["holds"] for r in document["rounds"]}[2] is False
    assert document["oneFewerFails"][0]["goal"] == "pending == 0"


def test_the_shrinking_example_of_the_docs() -> None:
    """docs/sweeps.md: six 4-core nodes of `general` for 13 cores of pods; 4 do."""
    example = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "node-group-shrink.yaml"
    out = _run("plan", str(example), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["answer"] == 4 and [r["count"] for r in document["rounds"]] == [6, 1, 3, 4]
