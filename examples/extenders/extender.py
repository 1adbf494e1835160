"""An example scheduler extender, in the Python standard library only.

It speaks kube-scheduler's extender protocol (JSON over HTTP POST, the types of
k8s.io/kube-scheduler/extender/v1) and decides with node labels and pod annotations:

filter      nodes labelled ``example.com/maintenance: "true"`` are refused as unresolvable
            (preemption cannot help there); nodes whose ``example.com/team`` label differs from the
            pod's ``example.com/team`` annotation are refused (plainly unschedulable)
prioritize  nodes labelled ``example.com/power: green`` score 10, ``mixed`` 5, others 0
preempt     keeps the candidates whose victims are all preemptible: a pod annotated
            ``example.com/protected: "true"`` is never a victim, so its node is dropped
bind        not offered: a bind extender must itself POST the binding to the API server

Two ways to use it:

    python examples/extenders/extender.py --port 8888     # a real HTTP server on 127.0.0.1:8888
    kubesched simulate examples/extenders/cluster.yaml --scheduler-config examples/extenders/http.yaml

or in the simulator's process, without a server (``urlPrefix: python:extender.py:handle``):

    kubesched simulate examples/extenders/cluster.yaml

``handle(verb, args)`` is the whole extender; the HTTP server only carries its documents.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAINTENANCE = "example.com/maintenance"
TEAM = "example.com/team"
POWER = "example.com/power"
PROTECTED = "example.com/protected"
POWER_SCORES = {"green": 10, "mixed": 5}


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderArgs -> ExtenderFilterResult."""
    team = _annotations(args["Pod"]).get(TEAM)
    passed: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    for node in (args.get("Nodes") or {}).get("items") or []:
        name = node["metadata"]["name"]
        labels = _labels(node)
        if labels.get(MAINTENANCE) == "true":
            unresolvable[name] = "node is in a maintenance window"
        elif team and labels.get(TEAM) not in (None, team):
            failed[name] = f"node belongs to team {labels[TEAM]}"
        else:
            passed.append(node)
    return {"Nodes": {"metadata": {}, "items": passed}, "NodeNames": None, "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable, "Error": ""}


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    """ExtenderArgs -> HostPriorityList (scores 0..10)."""
    return [{"Host": node["metadata"]["name"], "Score": POWER_SCORES.get(_labels(node).get(POWER, ""), 0)}
            for node in (args.get("Nodes") or {}).get("items") or []]


def preempt(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderPreemptionArgs -> ExtenderPreemptionResult: the candidates without a protected victim,
    their victims named by UID."""
    kept: dict[str, Any] = {}
    for node, victims in (args.get("NodeNameToVictims") or {}).items():
        pods = victims.get("Pods") or []
        if any(_annotations(pod).get(PROTECTED) == "true" for pod in pods):
            continue
        kept[node] = {"Pods": [{"UID": pod["metadata"]["uid"]} for pod in pods],
                      "NumPDBViolations": victims.get("NumPDBViolations", 0)}
    return {"NodeNameToMetaVictims": kept}


VERBS = {"filter": filter_nodes, "prioritize": prioritize, "preempt": preempt}


def handle(verb: str, args: dict[str, Any]) -> Any:
    """One call of the extender: ``verb`` is the last path segment of the URL."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    return VERBS[verb](args)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        length = int(self.headers.get("Content-Length") or 0)
        try:
            answer = handle(verb, json.loads(self.rfile.read(length)))
        except (ValueError, KeyError, TypeError) as err:
            self.send_error(404 if verb not in VERBS else 400, str(err))
            return
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(host: str = "127.0.0.1", port: int = 8888) -> ThreadingHTTPServer:
    """A server answering on ``http://host:port/<verb>``; call ``serve_forever()`` on it."""
    return ThreadingHTTPServer((host, port), _Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description="An example kube-scheduler extender.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    options = parser.parse_args()
    server = serve(options.host, options.port)
    print(f"extender listening on http://{options.host}:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
