"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kubesched.api.durations import parse_duration


def _to_seconds(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err


def duration_option(*names: str, help: str) -> Callable[[Any], Any]:
    """A Go-style duration option (``250ms``, ``5s``, ``10m``) parsed to seconds."""
    return click.option(*names, callback=_to_seconds, default=None, metavar="DURATION", help=help)
