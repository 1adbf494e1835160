"""A pod's identity (kubesched.sim.identity): the name that pairs the same pod across two runs, and
the what-if's pairing by it where a change shifts the generated names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import load_scenario
from kubesched.cli.main import cli
from kubesched.sim import simulate
from kubesched.sim.identity import pod_by_identity
from kubesched.testkit.builders import (
    make_deployment,
    make_job,
    make_node,
    make_pod,
    make_priority_class,
    make_replicaset,
    make_statefulset,
)
from kubesched.testkit.scenarios import create_step, patch_step, scenario_document, write_scenario


def _web_cluster(tmp_path: Path, seed: int = 1) -> Path:
    """Two 4-cpu nodes; at 10 s a ReplicaSet ``web`` of three 1-cpu pods; a bare pod ``solo``."""
    web = make_replicaset("web", 3, make_pod("web", cpu="1", namespace=None))
    return write_scenario(tmp_path, [make_node("n1", cpu="4"), make_node("n2", cpu="4"),
                                     make_pod("solo", cpu="100m"),
                                     scenario_document(steps=[create_step("10s", web)], seed=seed)])


def _extra_job(tmp_path: Path) -> Path:
    """A Job whose one pod takes a whole node at time 0: its name is drawn before web's."""
    path = tmp_path / "extra.yaml"
    path.write_text(yaml.safe_dump(make_job("extra", make_pod("extra", cpu="4", namespace=None, restartPolicy="Never"))))
    return path


def _keys(result: dict[str, Any], prefix: str) -> dict[str, str]:
    """identity -> key of the pods whose identity starts with ``prefix``."""
    return {p["identity"]: k for k, p in result["pods"].items() if p["identity"].startswith(prefix)}


def test_a_change_that_shifts_generated_names_pairs_the_same_replicaset_pods(tmp_path: Path) -> None:
    from kubesched.analysis.whatif.changes import load_change_objects

    changes = Changes(apply=load_change_objects([str(_extra_job(tmp_path))]))
    diff, _ = whatif(load_scenario(_web_cluster(tmp_path)), changes)
    base, new = diff["baseline"], diff["changed"]
    base_web, new_web = _keys(base, "default/ReplicaSet/web#"), _keys(new, "default/ReplicaSet/web#")
    assert sorted(base_web) == sorted(new_web) == [f"default/ReplicaSet/web#{n}" for n in range(3)]
    # the Job's pod drew its name first: not one of web's pods has its baseline name, and a name both
    # runs have is another pod in each (what pairing by name compared)
    assert all(base_web[i] != new_web[i] for i in base_web)
    shared = set(base_web.values()) & set(new_web.values())
    assert shared
    for key in shared:
        assert base["pods"][key]["identity"] != new["pods"][key]["identity"]
    assert all(new["pods"][k]["phase"] == "Running" for k in new_web.values())

    # paired by identity, only the Job's pod starts and no pod fails to start
    (extra,) = _keys(new, "default/Job/extra#").values()
    assert diff["started"] == [{"pod": extra, "identity": "default/Job/extra#0", "node": new["pods"][extra]["node"]}]
    assert diff["notStarted"] == [] and diff["stopped"] == []
    # the Job's pod takes a node whole: the web pods the baseline had there run on the other one
    node_of_extra = new["pods"][extra]["node"]
    moved = {i: (base["pods"][k]["node"], new["pods"][new_web[i]]["node"]) for i, k in base_web.items()
             if base["pods"][k]["node"] != new["pods"][new_web[i]]["node"]}
    assert moved and all(before == node_of_extra for before, _ in moved.values())
    assert diff["moved"] == [{"pod": new_web[i], "baselinePod": base_web[i], "identity": i, "from": src, "to": dst}
                             for i, (src, dst) in sorted(moved.items(), key=lambda item: new_web[item[0]])]
    assert diff["summary"]["started"] == 1 and diff["summary"]["notStarted"] == 0


def test_the_whatif_table_says_what_a_renamed_pod_was_called(tmp_path: Path) -> None:
    scenario, extra = _web_cluster(tmp_path), _extra_job(tmp_path)
    out = CliRunner().invoke(cli, ["whatif", str(scenario), "--apply", str(extra)])
    assert out.exit_code == 0, out.output
    diff = yaml.safe_load(CliRunner().invoke(cli, ["whatif", str(scenario), "--apply", str(extra), "-o", "json"]).output)
    assert diff["moved"]
    for entry in diff["moved"]:
        assert f"{entry['pod']} (was {entry['baselinePod']}) {entry['from']} → {entry['to']}" in out.output


def test_identities_are_stable_across_runs_and_seeds_while_generated_names_are_not(tmp_path: Path) -> None:
    path = _web_cluster(tmp_path)
    first, again = simulate(path).result, simulate(path).result
    assert {k: p["identity"] for k, p in first["pods"].items()} == {k: p["identity"] for k, p in again["pods"].items()}
    other_seed = simulate(path, seed=7).result
    assert set(_keys(first, "default/ReplicaSet/web#")) == set(_keys(other_seed, "default/ReplicaSet/web#"))
    assert set(_keys(first, "default/ReplicaSet/")).isdisjoint(set(other_seed["pods"]))
    for result in (first, other_seed):
        for identity, key in _keys(result, "default/").items():
            assert pod_by_identity(result, identity) == key
    assert pod_by_identity(first, "default/ReplicaSet/web#3") is None


def test_the_inputs_pods_and_statefulset_pods_keep_their_names_as_identity(tmp_path: Path) -> None:
    legacy = make_replicaset("legacy", 2, make_pod("legacy", cpu="100m", namespace=None))
    legacy["metadata"]["uid"] = "legacy-uid"
    adopted = make_pod("legacy-abcde", node="n1", labels={"app": "legacy"},
                       owner_references=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "legacy",
                                          "uid": "legacy-uid", "controller": True}])
    adopted["metadata"]["generateName"] = "legacy-"
    db = make_statefulset("db", 2, make_pod("db", cpu="100m", namespace=None))
    path = write_scenario(tmp_path, [make_node("n1", cpu="8"), make_pod("solo"), legacy, adopted, db,
                                     scenario_document(steps=[create_step("5s", make_pod("late"))])])
    result = simulate(path).result
    # the ReplicaSet (created before the input's bound pod) makes two pods, then deletes one of them
    made = [e["pod"] for e in result["events"] if e["reason"] == "Created"
            and e["pod"].startswith("default/legacy-") and e["pod"] != "default/legacy-abcde"]
    assert len(made) == 2
    assert {k: p["identity"] for k, p in result["pods"].items()} == {
        "default/solo": "default/solo", "default/late": "default/late",
        "default/legacy-abcde": "default/legacy-abcde",  # the input's pod, generated name and all
        "default/db-0": "default/db-0", "default/db-1": "default/db-1",
        **{key: f"default/ReplicaSet/legacy#{n}" for n, key in enumerate(made)},
    }


def test_a_deployments_rollout_gives_the_new_revisions_pods_identities_of_their_own(tmp_path: Path) -> None:
    web = make_deployment("web", 2, make_pod("web", cpu="100m", namespace=None))
    rollout = patch_step("30s", "Deployment", "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    path = write_scenario(tmp_path, [make_node("n1", cpu="8"), web, scenario_document(steps=[rollout])])
    pods = simulate(path).result["pods"]
    assert sorted(p["identity"] for p in pods.values()) == [
        "default/Deployment/web@1#0", "default/Deployment/web@1#1",
        "default/Deployment/web@2#0", "default/Deployment/web@2#1"]
    for key, pod in pods.items():  # the old revision's pods are gone, the new one's run
        assert pod["phase"] == ("Running" if "@2#" in pod["identity"] else "Deleted"), key


def test_a_whatif_that_changes_a_deployments_template_pairs_its_pods_by_revision(tmp_path: Path) -> None:
    web = make_deployment("web", 2, make_pod("web", cpu="100m", namespace=None))
    path = write_scenario(tmp_path, [make_node("n1", cpu="8"), make_priority_class("gold", 1000), web,
                                     scenario_document()])
    diff, _ = whatif(load_scenario(path), Changes(priority_classes=[("app=web", "gold")]))
    base, new = _keys(diff["baseline"], "default/Deployment/web@1#"), _keys(diff["changed"], "default/Deployment/web@1#")
    assert sorted(base) == sorted(new) == ["default/Deployment/web@1#0", "default/Deployment/web@1#1"]
    # another template, another ReplicaSet name (its hash) and other pod names: the same pods all the same
    assert not set(base.values()) & set(new.values())
    assert diff["started"] == diff["notStarted"] == diff["stopped"] == diff["moved"] == []
    assert {r["priorityClass"]: r["runningAfter"] for r in diff["impact"]} == {"(none)": 0, "gold": 2}
