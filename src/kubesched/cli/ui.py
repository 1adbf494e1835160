"""``kubesched ui``: a local web app over one scenario or snapshot."""

from __future__ import annotations

import socket
import sys
import webbrowser

import click

from kubesched.api.errors import KubeschedError
from kubesched.cli.options import INPUT_PATH

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command()
@click.argument("scenario", metavar="SCENARIO", type=INPUT_PATH)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback shares the app (and your cluster's dump) with "
                   "whoever reaches this machine: it needs saying twice, so a warning is printed.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8750, show_default=True,
              help="Port to listen on (0: any free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
def ui(scenario: str, host: str, port: int, open_browser: bool) -> None:
    """Serve a web page over SCENARIO (a scenario, manifests or a kubectl dump): the cluster by node
    pool and zone, each pod's filter verdicts on every node, its attempts and scores per plugin and
    what preemption would cost, the timeline with a scrubber, what-if drains, cordons and class
    changes, and objects edited as YAML; the same documents as JSON under /api (documented at /docs).
    Needs the ui extra: pip install 'kubesched[ui]'."""
    try:
        import uvicorn

        from kubesched.ui.app import create_app
        from kubesched.ui.state import UiState
    except ImportError as err:
        click.echo(f"error: kubesched ui needs the ui extra (pip install 'kubesched[ui]'): {err}", err=True)
        sys.exit(2)
    try:
        state = UiState.load(scenario)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if host not in LOOPBACK:
        click.echo(f"warning: listening on {host}: anyone who reaches this machine can read the cluster and run "
                   "simulations", err=True)
    if port == 0:  # a free port, known before the server starts so that the URL can be printed
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    config = uvicorn.Config(create_app(state), host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    click.echo(f"kubesched ui: {state.result['scenario']} at {url} (Ctrl-C to stop)")
    if open_browser:
        webbrowser.open(url)
    server.run()
