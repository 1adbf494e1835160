"""A node pool chosen by a label selector, as a real cluster's node group is (an EKS dump, kubectl
shaped): a count adds copies of the group's first node; each variant is the simulation of the
dump with those nodes added, and a count that would remove nodes is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.testkit.dumps import ClusterDump

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


def test_a_selected_node_group_grows_by_copies_of_its_first_node(tmp_path: Path) -> None:
    dump = _dump(tmp_path)
    pool = {"selector": {"matchLabels": {GROUP: "general"}}, "counts": [3, 5]}
    sweep = _file(tmp_path, "Sweep", nodePool=pool, seeds=[7])
    out = _run("sweep", str(sweep), "--local", "--out", str(tmp_path / "out"), "-o", "json")
    assert out.exit_code == 0, out.output
    results = tmp_path / "out" / "results"
    as_is = _run("simulate", str(dump), "--seed", "7", "-o", "json").output
    assert (results / "nodePoolCount=3,seed=7.json").read_text() == as_is  # the group's own size: the dump
    grown = json.loads((results / "nodePoolCount=5,seed=7.json").read_text())
    added = [n["node"] for n in grown["nodes"] if n["node"] not in {m["node"] for m in json.loads(as_is)["nodes"]}]
    assert added == ["ip-10-0-1-10.ec2.internal-4", "ip-10-0-1-10.ec2.internal-5"]
    assert json.loads(as_is)["summary"]["pending"] == 3 and grown["summary"]["pending"] == 0
    assert {grown["pods"][p]["node"] for p in grown["pods"]} >= set(added)  # the new nodes take the pending pods


def test_a_count_below_the_group_or_a_selector_matching_nothing_is_refused(tmp_path: Path) -> None:
    _dump(tmp_path)
    smaller = _file(tmp_path, "Sweep", nodePool={"selector": {"matchLabels": {GROUP: "general"}}, "counts": [2, 4]})
    out = _run("sweep", str(smaller), "--local")
    assert out.exit_code == 2
    assert f"{smaller}: document 1 (Sweep): spec.nodePool.counts: 2: the pool has 3 nodes in the base " \
           "(ip-10-0-1-10.ec2.internal, ip-10-0-1-11.ec2.internal, ip-10-0-1-12.ec2.internal)" in out.output
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
    low = _file(tmp_path, "Plan", goals=["pending == 0"],
                nodePool={"selector": {"matchLabels": {GROUP: "general"}}, "min": 1, "max": 16})
    out = _run("plan", str(low), "--local")
    assert out.exit_code == 2 and "spec.nodePool.min: 1: the pool has 3 nodes in the base" in out.output
