"""Whole-run invariants over generated clusters, and reproducibility: the same scenario and seed
always give byte-identical output (the promise of the README's `--output json`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.sim import simulate
from kubesched.testkit.builders import make_priority_class
from kubesched.testkit.scenarios import create_step, write_scenario

from .conftest import node, pod, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "preemption-design"
CLASSES = {"low": 100, "mid": 500, "high": 1000, "never": 1500}
NEVER = "never"


def run_scenario(path: str, **options: Any) -> dict[str, Any]:
    """The result document of :func:`kubesched.sim.simulate`. (Hypothesis derives the derandomized
    examples from the tests' source, so the tests keep calling it by this name.)"""
    return simulate(path, **options).result


# -- generated clusters ------------------------------------------------------------------------
@st.composite
def clusters(draw):
    nodes = [
        {
            "name": f"n{i}",
            "cpu": draw(st.sampled_from([1000, 2000, 4000])),
            "mem": draw(st.sampled_from([2048, 4096])),
            "pods": draw(st.sampled_from([3, 110])),
        }
        for i in range(draw(st.integers(2, 4)))
    ]
    used = {n["name"]: [0, 0, 0] for n in nodes}
    pods = []
    for i in range(draw(st.integers(3, 12))):
        spec = {
            "name": f"p{i:02d}",
            "cls": draw(st.sampled_from([None, "low", "mid", "high", NEVER])),
            "cpu": draw(st.sampled_from([0, 250, 500, 1000, 2000, 3000])),
            "mem": draw(st.sampled_from([0, 256, 1024])),
            "at": draw(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 8, 13, 20])),
            "grace": draw(st.sampled_from([0, 5, 30])),
            "run_for": draw(st.sampled_from([None, None, 15])),
            "on": None,
        }
        if spec["at"] == 0 and draw(st.booleans()):
            target = draw(st.sampled_from(nodes))
            u = used[target["name"]]
            if (u[0] + spec["cpu"] <= target["cpu"] and u[1] + spec["mem"] <= target["mem"]
                    and u[2] + 1 <= target["pods"]):
                spec["on"] = target["name"]
                u[0] += spec["cpu"]
                u[1] += spec["mem"]
                u[2] += 1
        pods.append(spec)
    return nodes, pods


def _manifest(spec: dict) -> dict:
    cpu = f"{spec['cpu']}m" if spec["cpu"] else None
    mem = f"{spec['mem']}Mi" if spec["mem"] else None
    ann = {"kubesched.io/run-for": f"{spec['run_for']}s"} if spec["run_for"] else None
    return pod(spec["name"], cpu, mem, priority_class=spec["cls"], node=spec["on"], grace=spec["grace"], annotations=ann)


def write_yaml(path: Path, docs: list[dict]) -> Path:
    """Write ``docs`` as a scenario next to ``path``. (Hypothesis derives the generated examples from
    the test's source text, so the test keeps calling it by this name.)"""
    return write_scenario(path.parent, docs)


def _docs(nodes: list[dict], pods: list[dict]) -> list[dict]:
    docs = [make_priority_class(name, value, policy="Never" if name == NEVER else None) for name, value in CLASSES.items()]
    docs += [node(n["name"], cpu=f"{n['cpu']}m", memory=f"{n['mem']}Mi", pods=str(n["pods"])) for n in nodes]
    docs += [_manifest(p) for p in pods if p["at"] == 0]
    docs.append(scenario([create_step(p["at"], _manifest(p)) for p in pods if p["at"] > 0], seed=3))
    return docs


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_invariants_over_generated_clusters(cluster):
    nodes, pods = cluster
    with tempfile.TemporaryDirectory() as tmp:
        path = write_yaml(Path(tmp) / "gen.yaml", _docs(nodes, pods))
        result = run_scenario(str(path))
    by_name = {f"default/{p['name']}": p for p in pods}
    alloc = {n["name"]: n for n in nodes}
    events = result["events"]
    assert result["rejected"] == []

    # 1. no node's requested resources exceed allocatable at any Scheduled event
    on_node: dict[str, str] = {k: p["on"] for k, p in by_name.items() if p["on"]}
    for e in events:
        if e["reason"] == "Scheduled":
            assert e["pod"] not in on_node, f"{e['pod']} bound twice"
            on_node[e["pod"]] = e["node"]
            members = [by_name[k] for k, n in on_node.items() if n == e["node"]]
            cap = alloc[e["node"]]
            assert sum(m["cpu"] for m in members) <= cap["cpu"], (e, members)
            assert sum(m["mem"] for m in members) <= cap["mem"], (e, members)
            assert len(members) <= cap["pods"], (e, members)
        elif e["reason"] in ("Deleted", "Completed", "Failed"):
            on_node.pop(e["pod"], None)

    # 2./3. preemption only by strictly higher priority, never by a preemptionPolicy=Never pod
    prio = {k: v["priority"] for k, v in result["pods"].items()}
    for e in events:
        if e["reason"] == "Preempted":
            preemptor = e["preemptor"]
            assert prio[preemptor] > prio[e["pod"]], e
            assert by_name[preemptor]["cls"] != NEVER, e

    # 4. every pod ends placed, pending after ≥1 FailedScheduling, or deleted
    failed = {e["pod"] for e in events if e["reason"] == "FailedScheduling"}
    assert set(result["pods"]) == set(by_name)
    for k, p in result["pods"].items():
        if p["phase"] in ("Running", "Succeeded"):
            assert p["node"], (k, p)
        elif p["phase"] == "Pending":
            assert k in failed, (k, p)
            assert p["node"] is None
        else:
            assert p["phase"] == "Deleted", (k, p)


# -- reproducibility ---------------------------------------------------------------------------
def _tie_scenario(tmp_path: Path, seed: int) -> Path:
    docs = [node("n1", cpu="1000", memory="4Ti"), node("n2", cpu="1000", memory="4Ti"),
            *[pod(f"p{i:02d}", "10m", "10Mi") for i in range(40)], scenario(seed=seed)]
    return write_scenario(tmp_path, docs)


def test_same_seed_gives_byte_identical_json(tmp_path):
    for path in (EXAMPLES / "example-4.yaml", EXAMPLES / "example-2.yaml", _tie_scenario(tmp_path, 11)):
        for explain in (False, True):
            first = json.dumps(run_scenario(str(path), explain=explain))
            second = json.dumps(run_scenario(str(path), explain=explain))
            assert first == second, path


def test_seed_override_is_reproducible_and_matters(tmp_path):
    path = _tie_scenario(tmp_path, 11)
    runs = {seed: json.dumps(run_scenario(str(path), seed=seed)) for seed in (1, 2)}
    assert runs[1] == json.dumps(run_scenario(str(path), seed=1))
    placements = {seed: [e.get("node") for e in json.loads(r)["events"] if e["reason"] == "Scheduled"]
                  for seed, r in runs.items()}
    assert placements[1] != placements[2]
    assert json.loads(runs[1])["seed"] == 1
