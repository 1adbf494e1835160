"""``kubesched ui``: a local web app over one scenario or snapshot, or a live cluster read once."""

from __future__ import annotations

import socket
import sys
import webbrowser
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from kubesched.api.errors import KubeschedError
from kubesched.cli.extras import require_extra
from kubesched.cli.options import INPUT_PATH, live_cluster_options, load_live_cluster, load_source

if TYPE_CHECKING:
    from kubesched.ui.jobs import Jobs
    from kubesched.ui.state import UiState

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: seconds the requests under way get to finish once the server is told to stop
GRACE = 5


@click.command()
@click.argument("scenario", metavar="SCENARIO", type=INPUT_PATH, required=False)
@live_cluster_options("SCENARIO")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback shares the app (and your cluster's dump) with "
                   "whoever reaches this machine: it needs saying twice, so a warning is printed.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8750, show_default=True,
              help="Port to listen on (0: any free one).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests naming this host (a name or an address, no port; repeatable). Requests "
                   "are answered only when their Host header names localhost, 127.0.0.1, [::1] or --host: a page "
                   "of another site that makes its own name resolve to this machine (DNS rebinding) is refused.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
def ui(scenario: str | None, kubeconfig: str | None, context: str | None, host: str, port: int,
       allow_hosts: tuple[str, ...], open_browser: bool) -> None:
    """Serve a web page over SCENARIO (a scenario, manifests or a kubectl dump; - for standard input)
    or over a live cluster read once through --kubeconfig (read-only: GET requests only; the pages
    show the cluster as it was then): the cluster summed by node pool and zone (a pool's nodes a page
    at a time, any node found by name or label, nodes sorted by name or by the share requested),
    every pod of the run in a list filtered, sorted and paged (those gone at the end too, with who
    preempted whom, linked both ways), each pod's filter verdicts on every node, its attempts and
    scores per plugin and what preemption would cost, the timeline with a chart and every event a
    page at a time, what-if drains, cordons, class changes, objects applied and scheduler
    configurations, and objects edited as YAML; the same documents as JSON under /api (documented
    at /docs). What-ifs, edits and a pod at an earlier moment (?at=, up to the run's end) are
    simulated as jobs in worker processes, each with a page of its progress and a cancel button;
    no page waits for them. SIGTERM or Ctrl-C stops the server and its workers. Needs the ui extra:
    pip install 'kubesched[ui]'.

    Safe on the loopback by default: requests naming another host are refused, and so are changes
    (edits, what-ifs, cancelling a job) sent by pages of other sites; the forms carry a token of this
    process, and an edit made on an earlier version of the scenario (another tab's) is refused, not
    applied over it.

    \b
    kubesched ui [OPTIONS] SCENARIO
    kubesched ui [OPTIONS] --kubeconfig FILE [--context CONTEXT]"""
    require_extra("kubesched ui", "ui")
    import uvicorn

    from kubesched.ui.app import create_app
    from kubesched.ui.jobs import Jobs
    from kubesched.ui.security import Safety

    try:
        safety = Safety.serving(host, allow_hosts)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--allow-host") from err
    jobs = Jobs()
    jobs.warm()  # the jobs' fork server starts (and imports the simulator) while the scenario loads
    try:
        state = _state(scenario, kubeconfig, context, jobs)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if host not in LOOPBACK:
        click.echo(f"warning: listening on {host}: anyone who reaches this machine can read the cluster and run "
                   "simulations", err=True)
        if host in ("0.0.0.0", "::") and not allow_hosts:
            click.echo("warning: only requests naming localhost or 127.0.0.1 are answered: give --allow-host NAME "
                       "for each name or address other machines reach this one by", err=True)
    if port == 0:  # a free port, known before the server starts so that the URL can be printed
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    # SIGTERM or Ctrl-C: the server stops taking requests, gives those under way a few seconds, and
    # terminates the simulations still running (their worker processes) before it exits
    config = uvicorn.Config(create_app(state, safety), host=host, port=port, log_level="warning",
                            timeout_graceful_shutdown=GRACE)
    server = uvicorn.Server(config)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    click.echo(f"kubesched ui: {state.result['scenario']} from {state.source} at {url} (Ctrl-C to stop)")
    if open_browser:
        webbrowser.open(url)
    try:
        server.run()
    finally:
        state.jobs.shutdown()


def _state(scenario: str | None, kubeconfig: str | None, context: str | None, jobs: Jobs) -> UiState:
    """The UiState of SCENARIO, or of the live cluster read once now (its header says which cluster
    and when it was read: the pages do not follow it afterwards)."""
    from kubesched.ui.state import UiState

    if kubeconfig is not None and scenario is None:
        live = load_live_cluster(kubeconfig, context)
        read = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return UiState.of(live.scenario, f"{live.describe()}, read at {read}", jobs)
    return UiState.of(load_source(scenario, kubeconfig, context, "SCENARIO"), str(scenario), jobs)
