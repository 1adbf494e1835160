"""benchmarks/production_dump.py at a tiny size: its dumps read back as kubectl would have written
them, kubesched loads them, and every command it times runs on them (the figures themselves are
measured by running the benchmark, never by a test)."""

from __future__ import annotations

import json
import string
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import production_dump  # noqa: E402

from kubesched.api.loader import load_scenario  # noqa: E402

NODES, PODS = 20, 300
#: ``kubectl get nodes,pods,pdb,priorityclasses,deploy,rs,sts,ds``: the kinds in the command's order
KINDS = ("Node", "Pod", "PodDisruptionBudget", "PriorityClass", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")


class _NoAliases(yaml.CSafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], dict[str, Path]]:
    directory = tmp_path_factory.mktemp("dumps")
    meta, rows = production_dump.ensure_dumps(directory, NODES, PODS, ["yaml", "json", "jsonl"], without=True,
                                              log=lambda _: None)
    dump, _ = production_dump.build(NODES, PODS)
    paths = {row["format"]: Path(row["path"]) for row in rows}
    paths |= {row["format"] + "-nopreempt": Path(row["without_path"]) for row in rows}
    return dump.as_list(with_workloads=True), meta, paths


def test_each_format_has_the_bytes_kubectl_and_pyyaml_or_json_would_write(dumps) -> None:
    listed, _, paths = dumps
    assert paths["yaml"].read_text() == yaml.dump(listed, Dumper=_NoAliases, sort_keys=True)
    assert paths["yaml"].read_text().startswith("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n")
    assert paths["json"].read_text() == json.dumps(listed, indent=4, sort_keys=True) + "\n"
    lines = paths["jsonl"].read_text().splitlines()
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(listed["items"]))


def test_the_same_arguments_make_the_same_dump() -> None:
    a, meta_a = production_dump.build(NODES, PODS, seed=7)
    b, meta_b = production_dump.build(NODES, PODS, seed=7)
    assert meta_a == meta_b
    assert json.dumps(a.as_list(with_workloads=True)) == json.dumps(b.as_list(with_workloads=True))
    c, _ = production_dump.build(NODES, PODS, seed=8)
    assert json.dumps(c.as_list(with_workloads=True)) != json.dumps(a.as_list(with_workloads=True))


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_the_dump_is_a_cluster_as_kubectl_lists_it(dumps, fmt: str) -> None:
    _, meta, paths = dumps
    text = paths[fmt].read_text()
    if fmt == "jsonl":
        items = [json.loads(line) for line in text.splitlines()]
    else:
        listed = yaml.load(text, Loader=yaml.CSafeLoader) if fmt == "yaml" else json.loads(text)
        assert (listed["apiVersion"], listed["kind"], listed["metadata"]) == ("v1", "List", {"resourceVersion": ""})
        items = listed["items"]
    kinds = [item["kind"] for item in items]
    assert sorted(kinds, key=KINDS.index) == kinds and set(kinds) == set(KINDS)
    for kind in KINDS:  # each kind as the API server lists it: by namespace, then name
        keys = [(i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items if i["kind"] == kind]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert Counter(kinds)["Node"] == NODES and Counter(kinds)["Pod"] == PODS
    owners = {i["metadata"]["uid"]: i for i in items if i["kind"] in ("ReplicaSet", "StatefulSet", "DaemonSet")}
    nodes = {i["metadata"]["name"]: i for i in items if i["kind"] == "Node"}
    pods = [i for i in items if i["kind"] == "Pod"]
    assert any(n["spec"].get("taints") == [production_dump.GPU_TAINT] for n in nodes.values())
    assert len({n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes.values()}) == 3
    bare, pending, per_daemonset = 0, 0, Counter[str]()
    for pod in pods:
        meta_ = pod["metadata"]
        assert meta_["managedFields"] and meta_["uid"] and meta_["resourceVersion"] and pod["status"]["qosClass"]
        assert any(t.get("key") == "node.kubernetes.io/not-ready" or t.get("operator") == "Exists"
                   for t in pod["spec"]["tolerations"])
        assert pod["spec"]["volumes"][0]["name"].startswith("kube-api-access-")
        if "ownerReferences" in meta_:
            (ref,) = meta_["ownerReferences"]
            owner = owners[ref["uid"]]
            assert (ref["kind"], ref["name"], ref["controller"]) == (owner["kind"], owner["metadata"]["name"], True)
            if ref["kind"] == "DaemonSet":
                per_daemonset[ref["name"]] += 1
            if ref["kind"] == "StatefulSet":
                assert meta_["name"].rsplit("-", 1) == [ref["name"], meta_["labels"]["apps.kubernetes.io/pod-index"]]
        else:
            bare += 1
        (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        if pod["spec"].get("nodeName"):
            assert pod["spec"]["nodeName"] in nodes
            assert (scheduled["status"], pod["status"]["phase"]) == ("True", "Running")
        else:
            pending += 1
            assert (scheduled["status"], scheduled["reason"], pod["status"]["phase"]) == ("False", "Unschedulable",
                                                                                           "Pending")
            assert scheduled["message"].startswith(f"0/{NODES} nodes are available: ")
            assert [m["manager"] for m in meta_["managedFields"]] == ["kube-controller-manager", "kube-scheduler"]
    assert bare == meta["counts"]["bare pods"] >= 1
    assert pending == meta["counts"]["pending pods"] + meta["counts"]["preemptor pods"]
    assert meta["counts"]["pending pods"] >= 3 and meta["counts"]["preemptor pods"] >= 1
    assert set(per_daemonset.values()) == {NODES} and len(per_daemonset) == meta["counts"]["daemonsets"]
    explained = next(p for p in pods if f"{p['metadata']['namespace']}/{p['metadata']['name']}" == meta["explain_pod"])
    assert not explained["spec"].get("nodeName")
    drained = [p for p in pods if p["spec"].get("nodeName") == meta["drain_node"]]
    assert len(drained) == meta["drain_node_pods"]
    kinds = {(p["metadata"].get("ownerReferences") or [{"kind": None}])[0]["kind"] for p in drained}
    assert {None, "DaemonSet", "ReplicaSet"} <= kinds  # a bare pod for --force, DaemonSets' for --ignore-daemonsets


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_kubesched_loads_the_dump_without_a_warning(dumps, fmt: str) -> None:
    listed, _, paths = dumps
    scenario = load_scenario(paths[fmt])
    assert len(scenario.objects) == len(listed["items"])
    assert scenario.warnings == []  # every field is one its kind declares


def test_the_preemptors_need_preemption_and_the_budgets_cover_their_victims(dumps) -> None:
    """No node has room for a preemptor, every general and memory node would once its lower-priority
    pods were gone; its class is above every other but the system ones; a third of the Deployments
    are under a PDB, some allowing no disruption; the dump without the preemptors is the dump less
    their Deployment, ReplicaSet and pods."""
    listed, meta, paths = dumps
    items = listed["items"]
    namespace, name = production_dump.PREEMPTOR[:2]
    pods = [i for i in items if i["kind"] == "Pod"]
    theirs = [p for p in pods if p["metadata"]["namespace"] == namespace and p["metadata"]["labels"].get("app") == name]
    assert len(theirs) == meta["counts"]["preemptor pods"] and meta["preemptor_pod"] in {
        f"{namespace}/{p['metadata']['name']}" for p in theirs}
    classes = {c["metadata"]["name"]: c["value"] for c in items if c["kind"] == "PriorityClass"}
    assert theirs[0]["spec"]["priority"] == max(v for c, v in classes.items() if not c.startswith("system-"))
    assert theirs[0]["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    (scheduled,) = theirs[0]["status"]["conditions"]
    assert " preemption: " not in scheduled["message"] and "Insufficient cpu" in scheduled["message"]

    def millicores(value: str) -> int:
        return int(value[:-1]) if value.endswith("m") else int(value) * 1000
    ask = millicores(theirs[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
    used: Counter[str] = Counter()
    kept: Counter[str] = Counter()  # what no preemption frees: pods of a priority not below the preemptor's
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node:
            cpu = sum(millicores(c["resources"].get("requests", {}).get("cpu", "0")) for c in pod["spec"]["containers"])
            used[node] += cpu
            kept[node] += cpu if pod["spec"]["priority"] >= theirs[0]["spec"]["priority"] else 0
    nodes = [i for i in items if i["kind"] == "Node"]
    for node in nodes:  # the GPU nodes' taint keeps the preemptors off
        allocatable, node_name = millicores(node["status"]["allocatable"]["cpu"]), node["metadata"]["name"]
        if not node["spec"].get("taints"):
            assert allocatable - kept[node_name] >= ask > allocatable - used[node_name], node_name
    pdbs = [i for i in items if i["kind"] == "PodDisruptionBudget"]
    deployments = [i for i in items if i["kind"] == "Deployment"]
    guarded = {(p["metadata"]["namespace"], p["spec"]["selector"]["matchLabels"]["app"]) for p in pdbs}
    share = sum(1 for d in deployments if (d["metadata"]["namespace"], d["metadata"]["name"]) in guarded) / len(deployments)
    assert 0.15 < share < 0.6
    assert {p["status"]["disruptionsAllowed"] for p in pdbs} >= {0, 1}
    without = json.loads(paths["json-nopreempt"].read_text())["items"]
    assert without == [i for i in items if not (i["kind"] in ("Pod", "Deployment", "ReplicaSet")
                                                and i["metadata"].get("namespace") == namespace
                                                and i["metadata"]["labels"].get("app") == name)]


@pytest.mark.parametrize("command", production_dump.COMMANDS)
def test_each_command_runs_on_the_dump(dumps, command: str) -> None:
    _, meta, paths = dumps
    argv = production_dump.kubesched_argv() + production_dump.command_line(command, paths["json"], meta)
    run = production_dump.run_once(argv, timeout=120)
    assert run.status == "ok", run.detail
    assert run.seconds > 0 and run.peak_rss_mib > 10 and run.cpu_seconds > 0
    said = production_dump.what_it_said(command, run.output)
    preemptors = meta["counts"]["preemptor pods"]
    expected = {"simulate": f"{preemptors} preemptions, ", "simulate-without": "0 preemptions, 0 victims",
                "explain-preemptor": "Running, ", "whatif-no-preemption": f"preemptions {preemptors} -> 0, "}
    assert said.startswith(expected.get(command, "")), run.output[:2000]


def test_a_failing_or_slow_command_is_a_row_not_a_crash() -> None:
    assert production_dump.run_once([sys.executable, "-c", "import sys; sys.exit('no such pod')"], 60)[::3] == (
        "exit 1", "no such pod")
    run = production_dump.run_once([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert run.status == "timeout" and run.seconds < 10
    grow = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)"
    run = production_dump.run_once([sys.executable, "-c", grow], 60, max_rss_mib=200)
    assert (run.status, run.detail) == ("memory", "killed at 200 MiB RSS") and run.seconds < 10
    assert run.peak_rss_mib > 200
    spin = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.3: pass')"
    assert production_dump.run_once([sys.executable, "-c", spin], 60).cpu_seconds >= 0.3


def test_the_benchmark_runs_from_its_command_line_and_keeps_its_dumps(tmp_path: Path) -> None:
    args = ["--nodes", str(NODES), "--pods", str(PODS), "--formats", "json", "--commands", "simulate",
            "--keep", str(tmp_path / "kept"), "--json", str(tmp_path / "out.json")]
    assert production_dump.main(args) == 0
    first = json.loads((tmp_path / "out.json").read_text())
    assert [(r["command"], r["format"], r["status"]) for r in first["runs"]] == [("simulate", "json", "ok")]
    assert first["dumps"][0]["write_seconds"] is not None and first["dumps"][0]["mib"] > 0
    assert production_dump.main([*args, "--commands", "explain"]) == 0
    again = json.loads((tmp_path / "out.json").read_text())
    assert again["dumps"][0]["write_seconds"] is None  # the kept dump, not written again
    assert again["runs"][0]["command"] == "explain" and again["runs"][0]["status"] == "ok"


TRICKY = ["", "...", "...x", "---", "-", "- a", "?", ":", "a:", "a: b", "a:b", "k:{\"uid\":\"x\"}", "true", "True", "yes",
          "off", "null", "~", "=", "<<", "1", "1.5", "0x1F", "1_000", "+1", ".5", ".inf", "2026-11-20T09:30:00Z",
          "2026-11-20", "a#b", "a #b", "#a", "'", "it's", '"', 'a"b', "é", "a\nb", "a,b", "[x]", "{x}", "x[0]", "@a",
          "a@b", "/dev/termination-log", ".", "a b", "kubelet is posting ready status",
          "0/5000 nodes are available: 250 Insufficient nvidia.com/gpu, 4750 node(s) didn't match Pod's node "
          "affinity/selector. preemption: 0/5000 nodes are available: 4750 Preemption is not helpful for scheduling.",
          "x" * 130, "10.0.0.1", "1e3", "0o17", "012", "-1", "2000001000", "%a", "&a", "*a", "!a", "|", ">", "`a"]


def test_the_fast_yaml_writer_writes_what_pyyaml_writes() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kubesched.testkit.dumps.kubectl_list import yaml_item

    scalars = st.one_of(st.sampled_from(TRICKY), st.integers(-10, 10**10), st.booleans(), st.none(),
                        st.text(alphabet=string.printable, max_size=12))
    values = st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.sampled_from(TRICKY), st.text(alphabet=string.printable, max_size=8)),
                                                     inner, max_size=4)), max_leaves=25)
    items = st.dictionaries(st.one_of(st.sampled_from(TRICKY), st.text(max_size=8)), values, min_size=1, max_size=5)

    @settings(max_examples=400, deadline=None)
    @given(items)
    def check(item: dict[str, Any]) -> None:
        assert yaml_item(item) == yaml.dump([item], Dumper=_NoAliases, sort_keys=True)

    check()
