"""A KubeSchedulerConfiguration file read and checked as every command that takes one reads it
(``simulate``/``explain``/``whatif --scheduler-config``, ``run --config``, and the ui's what-if form):
one document, of that kind, without unknown fields, whose top level the scheduler accepts.

It lives here, below both the commands and the web app, so that each reads the file the same way
without importing the other; each words the error for its own option or form field.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.errors import KubeschedError, Location, ManifestError
from kubesched.api.loader import read_scheduler_configuration
from kubesched.scheduler.config import ConfigError, parse_configuration


class SchedulerConfigError(KubeschedError):
    """The file is not a configuration the scheduler takes: the loader's or the parser's words,
    naming the file, the document and the field."""


def read_checked_scheduler_config(path: str) -> tuple[dict[str, Any], Location]:
    """The configuration of ``path`` (``-``: standard input) and where it was read (the file and
    document that errors found later, when a scheduler is built from it, name)."""
    try:
        loaded, location = read_scheduler_configuration(path)
    except ManifestError as exc:
        raise SchedulerConfigError(str(exc)) from exc
    try:
        parse_configuration(loaded)
    except ConfigError as exc:
        raise SchedulerConfigError(str(location.error(exc.message, exc.path))) from exc
    return loaded, location
