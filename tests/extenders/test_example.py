"""examples/extenders: the example extender decides the same in the simulator's process and as a real
HTTP server, and the scenario tells the story its comments tell."""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

from kubesched.api.loader import load_scenario, load_scheduler_configuration
from kubesched.sim import simulate
from kubesched.testkit.runs import ScenarioRun, run_path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extenders"


def test_python_and_http_extenders_give_the_same_simulation() -> None:
    in_process = run_path(EXAMPLE / "cluster.yaml")
    assert in_process.node_of("ml-training") == "node-b"
    assert in_process.victims() == {"batch-plain"}  # the protected pod on node-a was never a victim
    assert in_process.node_of("batch-protected") == "node-a"  # the green node scored higher
    assert in_process.node_of("web-frontend") == "node-d"
    assert in_process.failed("ml-training")[0][1] == (
        "0/4 nodes are available: 1 node belongs to team web, 1 node is in a maintenance window, "
        "2 Insufficient cpu.")

    spec = importlib.util.spec_from_file_location("example_extender", EXAMPLE / "extender.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.serve("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        scenario = load_scenario(EXAMPLE / "cluster.yaml")
        config = load_scheduler_configuration(str(EXAMPLE / "http.yaml"))
        config["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{server.server_address[1]}/"
        scenario.scheduler_configuration = config
        over_http = ScenarioRun(simulate(scenario))
    finally:
        server.shutdown()
        server.server_close()
    assert json.dumps(over_http.result, sort_keys=True) == json.dumps(in_process.result, sort_keys=True)


def test_explain_shows_the_extenders_verdicts_beside_the_plugins() -> None:
    from click.testing import CliRunner

    from kubesched.cli.main import cli

    result = CliRunner().invoke(cli, ["explain", "default/ml-training", str(EXAMPLE / "cluster.yaml"), "--at", "30s",
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    diagnosis = json.loads(result.output)
    failures = {n["node"]: [(f["plugin"], f["code"], f["reason"]) for f in n["failures"]] for n in diagnosis["nodes"]}
    assert failures == {
        "node-a": [("NodeResourcesFit", "UNSCHEDULABLE", "Insufficient cpu")],
        "node-b": [("NodeResourcesFit", "UNSCHEDULABLE", "Insufficient cpu")],
        "node-c": [("Extender", "UNSCHEDULABLE_AND_UNRESOLVABLE", "node is in a maintenance window")],
        "node-d": [("Extender", "UNSCHEDULABLE", "node belongs to team web")],
    }
    assert diagnosis["upstreamMessage"].startswith(
        "0/4 nodes are available: 1 node belongs to team web, 1 node is in a maintenance window, 2 Insufficient cpu.")
