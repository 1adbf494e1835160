"""Scheduler extenders against a real HTTP server on loopback: what the extender receives, and what a
user sees of its answers (where pods go, the messages, errors and retries), as kube-scheduler v1.28."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.testkit.builders import make_node, make_pod, make_priority_class
from kubesched.testkit.extender_server import extender_server, keep_nodes, node_names
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import create_step, scenario_document, write_scenario


def config(*extenders: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "extenders": list(extenders)}


def run(tmp_path: Path, extenders: list[dict[str, Any]], objects: list[dict[str, Any]], *, explain: bool = False,
        **scenario: Any) -> ScenarioRun:
    return run_docs(tmp_path, [scenario_document(config=config(*extenders), **scenario), *objects], explain=explain)


NODES = [make_node(f"n{i}") for i in range(4)]


def test_filter_gets_the_pod_and_the_feasible_nodes_and_its_verdicts_reach_the_pod(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n == "n2", failed="no licence here",
                                           unresolvable=lambda n: n == "n3")
        result = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter"}],
                     [*NODES, make_node("small", cpu="1"), make_pod("p", cpu="2")])
        assert result.node_of("p") == "n2"
        verb, args = ext.calls[0]
        assert verb == "filter"
        assert set(args) == {"Pod", "Nodes", "NodeNames"} and args["NodeNames"] is None
        assert args["Pod"]["metadata"]["name"] == "p"
        # only the nodes that passed the scheduler's own filters, as full Node objects
        assert sorted(node_names(args)) == ["n0", "n1", "n2", "n3"]
        assert args["Nodes"]["items"][0]["status"]["allocatable"]["cpu"] == "4"

        ext.answers["filter"] = keep_nodes(lambda n: False, failed="no licence here",
                                           unresolvable=lambda n: n == "n3")
        pending = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter"}],
                      [*NODES, make_node("small", cpu="1"), make_pod("p", cpu="2")], until="5s")
    assert pending.node_of("p") is None
    message = "0/5 nodes are available: 1 Insufficient cpu, 4 no licence here. preemption: 0/5 nodes are " \
              "available: 1 Preemption is not helpful for scheduling, 4 No preemption victims found for " \
              "incoming pod.."  # upstream doubles the full stop
    assert pending.failed("p")[0] == (0.0, message)


def test_node_cache_capable_extender_gets_and_answers_node_names(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n in ("n1", "n3"))
        result = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}],
                     [*NODES, make_pod("p")])
        _, args = ext.calls[0]
        assert args["Nodes"] is None and sorted(args["NodeNames"]) == ["n0", "n1", "n2", "n3"]
        assert result.node_of("p") in ("n1", "n3")

        ext.answers["filter"] = lambda args: (200, {"NodeNames": ["elsewhere"]})
        bad = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}],
                  [*NODES, make_pod("p")], until="3s")
    assert bad.failed("p")[0][1] == (f'extender "{ext.url}" claims a filtered node "elsewhere" which is not found '
                                     "in the input node list")


def test_scores_are_weighted_and_scaled_to_max_node_score(tmp_path: Path) -> None:
    """An extender's 0..10 score counts ``score * weight * 10``: weight 1 and score 10 outweigh every
    default plugin's preference between equal empty nodes."""
    with extender_server() as ext:
        ext.answers["prioritize"] = lambda args: (200, [{"Host": n, "Score": 10 if n == "n3" else 0}
                                                        for n in node_names(args)])
        result = run(tmp_path, [{"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 1}],
                     [*NODES, *(make_pod(f"p{i}") for i in range(3))], explain=True)
    assert [result.node_of(f"p{i}") for i in range(3)] == ["n3"] * 3
    scores = result.attempts("default/p0")[0]["scores"][0]
    assert scores["node"] == "n3" and scores["plugins"][ext.url] == 100


def test_prioritize_errors_are_ignored(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["prioritize"] = lambda args: (500, {})
        result = run(tmp_path, [{"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 3}],
                     [*NODES, make_pod("p")])
    assert result.node_of("p") is not None and result.failed("p") == []


def test_a_failing_filter_fails_the_attempt_unless_ignorable(tmp_path: Path) -> None:
    """The error sends the pod to the unschedulable pods (v1.28's queue), retried on the next
    cluster event: here a node added at 5 s."""
    with extender_server() as ext:
        ext.answers["filter"] = lambda args: (500, {})
        failing = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter"}], [*NODES, make_pod("p")],
                      until="6s", steps=[create_step("5s", make_node("late"))])
        ignorable = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter", "ignorable": True}],
                        [*NODES, make_pod("p")])
    message = f"failed filter with extender at URL {ext.url}/filter, code 500"
    assert failing.failed("p") == [(0.0, message), (5.0, message)]
    live = failing.live("p")
    assert live is not None
    condition = live["status"]["conditions"][0]
    assert (condition["reason"], condition["message"]) == ("SchedulerError", message)
    assert ignorable.node_of("p") is not None


def test_an_extender_error_answer_and_an_unreachable_one(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["filter"] = lambda args: (200, {"Error": "licence server down"})
        answered = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter"}], [*NODES, make_pod("p")],
                       until="1s")
        port_gone = ext.httpd.server_address[1]
    assert answered.failed("p")[0][1] == "licence server down"
    url = f"http://127.0.0.1:{port_gone}/ext"
    gone = run(tmp_path, [{"urlPrefix": url, "filterVerb": "filter"}], [*NODES, make_pod("p")], until="1s")
    assert gone.failed("p")[0][1] == (f'Post "{url}/filter": dial tcp 127.0.0.1:{port_gone}: connect: '
                                      "connection refused")


def test_a_slow_extender_times_out_with_the_http_timeout(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: True)
        ext.delay = 1.0
        slow = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter", "httpTimeout": "200ms"}],
                   [*NODES, make_pod("p")], until="0s")
        skipped = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter", "httpTimeout": "200ms",
                                  "ignorable": True}], [*NODES, make_pod("p")], until="0s")
    assert slow.failed("p")[0][1] == (f'Post "{ext.url}/filter": context deadline exceeded (Client.Timeout '
                                      "exceeded while awaiting headers)")
    assert skipped.node_of("p") is not None


def test_managed_resources_choose_the_pods_sent_and_ignored_by_scheduler_skips_the_fit_check(
        tmp_path: Path) -> None:
    gpu = "example.com/gpu"
    wants_gpu = make_pod("trainer", containers=[{"name": "t", "image": "t", "resources": {
        "requests": {"cpu": "1", gpu: "2"}, "limits": {gpu: "2"}}}])
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n == "n1")
        result = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter",
                                 "managedResources": [{"name": gpu, "ignoredByScheduler": True}]}],
                     [*NODES, make_pod("plain"), wants_gpu])
    # only the pod asking for the managed resource goes to the extender
    assert [args["Pod"]["metadata"]["name"] for _, args in ext.calls] == ["trainer"]
    # no node has example.com/gpu: NodeResourcesFit ignores it, the extender decides
    assert result.node_of("trainer") == "n1"
    assert result.node_of("plain") is not None


def test_preempt_verb_narrows_the_candidates(tmp_path: Path) -> None:
    """Both nodes hold one low-priority pod; the extender only lets the one on n1 go."""
    objects = [make_priority_class("high", 1000), make_node("n0", cpu="2"), make_node("n1", cpu="2"),
               make_pod("low-0", cpu="2", node="n0"), make_pod("low-1", cpu="2", node="n1")]
    steps = [create_step("1s", make_pod("urgent", cpu="2", priority_class="high"))]

    def keep_n1(args: dict[str, Any]) -> tuple[int, Any]:
        victims = args["NodeNameToVictims"] or {}
        return 200, {"NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]], "NumPDBViolations": 0}
            for node, v in victims.items() if node == "n1"}}

    with extender_server() as ext:
        ext.answers["preempt"] = keep_n1
        result = run(tmp_path, [{"urlPrefix": ext.url, "preemptVerb": "preempt"}], objects, steps=steps)
        verb, args = ext.calls[0]
    assert verb == "preempt"
    assert sorted(args["NodeNameToVictims"]) == ["n0", "n1"] and args["NodeNameToMetaVictims"] is None
    assert [p["metadata"]["name"] for p in args["NodeNameToVictims"]["n1"]["Pods"]] == ["low-1"]
    assert result.victims() == {"low-1"}
    assert result.node_of("urgent") == "n1"


def test_preempt_verb_of_a_node_cache_capable_extender_gets_uids_and_a_wrong_uid_is_an_error(
        tmp_path: Path) -> None:
    objects = [make_priority_class("high", 1000), make_node("n0", cpu="2"),
               make_pod("low-0", cpu="2", node="n0", uid="uid-low-0")]
    steps = [create_step("1s", make_pod("urgent", cpu="2", priority_class="high"))]
    with extender_server() as ext:
        ext.answers["preempt"] = lambda args: (200, {"NodeNameToMetaVictims": {
            "n0": {"Pods": [{"UID": "someone-else"}], "NumPDBViolations": 0}}})
        result = run(tmp_path, [{"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": True}],
                     objects, steps=steps, until="3s")
        _, args = ext.calls[0]
    assert args["NodeNameToVictims"] is None
    assert args["NodeNameToMetaVictims"] == {"n0": {"Pods": [{"UID": "uid-low-0"}], "NumPDBViolations": 0}}
    assert result.victims() == set()
    assert result.failed("urgent")[0][1] == (
        f"0/1 nodes are available: 1 Insufficient cpu. preemption: extender: {ext.url} claims to preempt pod "
        "(UID: &{someone-else}) on node: n0, but the pod is not found on that node.")


def test_a_bind_extender_binds_instead_of_the_default_binder(tmp_path: Path) -> None:
    with extender_server() as ext:
        ext.answers["bind"] = lambda args: (200, {"Error": ""})
        result = run(tmp_path, [{"urlPrefix": ext.url, "bindVerb": "bind"}], [*NODES, make_pod("p", uid="uid-p")])
        bound = result.node_of("p")
        assert ext.calls == [("bind", {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p",
                                       "Node": bound})]
        assert result.phase("p") == "Running"

        ext.calls.clear()
        ext.answers["bind"] = lambda args: (200, {"Error": "binding refused by policy"})
        refused = run(tmp_path, [{"urlPrefix": ext.url, "bindVerb": "bind"}], [*NODES, make_pod("p")], until="2s")
    assert refused.node_of("p") is None
    assert [m for _, m in refused.failed("p")][:2] == ["binding refused by policy"] * 2
    assert ext.verbs()[:2] == ["bind", "bind"]


def test_extenders_are_called_in_order_ignorable_ones_last(tmp_path: Path) -> None:
    with extender_server() as first, extender_server() as second:
        first.answers["filter"] = keep_nodes(lambda n: n != "n0", failed="first says no")
        second.answers["filter"] = keep_nodes(lambda n: n != "n1", failed="second says no")
        result = run(tmp_path, [{"urlPrefix": second.url, "filterVerb": "filter", "ignorable": True},
                                {"urlPrefix": first.url, "filterVerb": "filter"}], [*NODES, make_pod("p")])
        # the second (ignorable) extender only saw what the first let through
        assert sorted(node_names(second.calls[0][1])) == ["n1", "n2", "n3"]
    assert result.node_of("p") in ("n2", "n3")


@pytest.mark.parametrize(("extenders", "message"), [
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p"}],
     "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://x", "bindVerb": "b"}, {"urlPrefix": "http://y", "bindVerb": "b"}],
     'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "cpu"}]}],
     'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name'),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "example.com/a"}]},
      {"urlPrefix": "http://y", "managedResources": [{"name": "example.com/a"}]}],
     'extenders[1].managedResources[0].name: Invalid value: "example.com/a": duplicate extender managed '
     "resource name"),
    ([{"urlPrefix": "ftp://x"}], "extenders[0].urlPrefix: must be an http:// or https:// URL"),
    ([{"urlPrefix": "http://x", "httpTimeout": "soon"}], "extenders[0].httpTimeout: invalid duration"),
    ([{"urlPrefix": "python:nowhere.py:handle"}], "extenders[0].urlPrefix: "),
])
def test_invalid_extender_configuration_is_refused_naming_the_field(
        tmp_path: Path, extenders: list[dict[str, Any]], message: str) -> None:
    path = write_scenario(tmp_path, [scenario_document(config=config(*extenders)), make_node("n")])
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "spec.schedulerConfiguration" in result.output and message in result.output, result.output


def test_a_pod_only_extenders_refused_waits_for_the_leftover_flush(tmp_path: Path) -> None:
    """v1.28 records the fake plugin "Extender" for such a pod; no plugin registers events for it, so
    a new node does not retry the pod: the 5-minute flush of unschedulable pods does."""
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: False, failed="closed")
        result = run(tmp_path, [{"urlPrefix": ext.url, "filterVerb": "filter"}], [*NODES, make_pod("p")],
                     until="6m", steps=[create_step("5s", make_node("late"))])
    times = [t for t, _ in result.failed("p")]
    assert times[0] == 0.0 and 5.0 not in times
    assert 300.0 <= times[1] <= 330.0


def test_calls_share_a_kept_alive_connection_until_the_extender_closes_it(tmp_path: Path) -> None:
    """Like Go's HTTP client, the scheduler keeps its connection to the extender open between calls
    (and closes it when the run ends); when the extender answers "Connection: close" the next call
    opens a new one and nothing fails."""
    pods = [make_pod(f"p{i}") for i in range(6)]
    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n != "n0")
        ext.answers["prioritize"] = lambda args: (200, [{"Host": n, "Score": 1} for n in node_names(args)])
        extender = {"urlPrefix": ext.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}
        result = run(tmp_path, [extender], [*NODES, *pods])
        assert all(result.node_of(f"p{i}") not in (None, "n0") for i in range(6))
        assert ext.verbs() == ["filter", "prioritize"] * 6
        assert len(ext.connections) == 1

        deadline = time.monotonic() + 10
        while ext.finished < 1 and time.monotonic() < deadline:  # the run's end let go of it
            time.sleep(0.01)
        assert ext.finished == 1

        ext.calls.clear()
        ext.connections.clear()
        ext.close_after = 3  # the third call's answer closes the connection
        again = run(tmp_path, [extender], [*NODES, *pods])
        assert all(again.node_of(f"p{i}") not in (None, "n0") for i in range(6))
        assert ext.verbs() == ["filter", "prioritize"] * 6
    assert len(ext.connections) == len(ext.calls) - 2  # from the third call on, one each
