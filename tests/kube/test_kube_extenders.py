"""`kubesched run` with extenders: the filter narrows the nodes, and a bind extender binds the pod
itself by POSTing the Binding to the API server (kubesched does not bind it again)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApiServer

from conftest import SCHEDULER, Replica, node_of, pod, wait_for
from kubesched.testkit.builders import make_node
from kubesched.testkit.extender_server import extender_server, keep_nodes

pytestmark = pytest.mark.timeout(60)


def config(url: str) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": SCHEDULER}],
            "extenders": [{"urlPrefix": url, "filterVerb": "filter", "bindVerb": "bind"}]}


def test_the_extender_filters_and_binds_through_the_api_server(fake: FakeApiServer,
                                                              replicas: Callable[..., Replica]) -> None:
    for name in ("n0", "n1", "n2"):
        fake.create(make_node(name))

    def bind(args: dict[str, Any]) -> tuple[int, Any]:
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"], "uid": args["PodUID"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}}
        request = urllib.request.Request(
            f"{fake.url}/api/v1/namespaces/{args['PodNamespace']}/pods/{args['PodName']}/binding",
            data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass
        return 200, {"Error": ""}

    with extender_server() as ext:
        ext.answers["filter"] = keep_nodes(lambda n: n == "n2", failed="not this one")
        ext.answers["bind"] = bind
        replicas("a", config=config(ext.url))
        fake.create(pod("p0"))
        fake.create(pod("p1"))
        wait_for(lambda: node_of(fake, "p0") == "n2" and node_of(fake, "p1") == "n2", timeout=15,
                 what="both pods bound by the extender on n2")
        assert ext.verbs().count("bind") == 2
    # the bindings came from the extender alone
    assert len(fake.requests_matching("POST", r"/pods/p0/binding$")) == 1
