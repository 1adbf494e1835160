"""The table output of a run whose schedulers race (the result's ``racing`` section;
docs/racing-schedulers.md)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from kubesched.cli.tables import Table


def _seconds(value: float) -> str:
    return f"{value:g}s"


def render_racing(console: Console, racing: dict[str, Any]) -> None:
    """One row per scheduler, then the preemptions across schedulers, the ping-pong rounds and the
    pods the kubelet's admission refused."""
    table = Table(title="Schedulers", title_justify="left")
    for col in ("scheduler", "schedulerNames", "informer delay", "bind delay", "scheduled", "preemptions",
                "victims", "refused by kubelet"):
        table.add_column(col)
    for row in racing["schedulers"]:
        table.add_row(row["name"], ", ".join(row["schedulerNames"]), _seconds(row["informerDelay"]),
                      _seconds(row["bindDelay"]), str(row["scheduled"]), str(row["preemptions"]),
                      str(row["victims"]), str(row["rejectedByKubelet"]))
    console.print(table)
    for cross in racing["crossPreemptions"]:
        victims = "1 pod" if cross["victims"] == 1 else f"{cross['victims']} pods"
        console.print(f"  {cross['preemptor']} preempted {victims} placed by {cross['victimPlacedBy']}")
    for pair in racing["pingPong"]:
        first, second = pair["schedulers"]
        console.print(f"  preemption ping-pong {first} <-> {second}: {pair['rounds']} "
                      f"round{'' if pair['rounds'] == 1 else 's'}")
    for refused in racing["admissionRejections"]:
        pods = "1 pod" if refused["pods"] == 1 else f"{refused['pods']} pods"
        placer = refused["placedBy"] or "no scheduler"
        console.print(f"  kubelet admission refused {pods} placed by {placer}: {refused['reason']}")
