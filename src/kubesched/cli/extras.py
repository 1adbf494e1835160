"""The optional extras of pyproject.toml and the commands (or options) that need them.

A command that needs an extra checks for it before doing anything else and, when a module of it
cannot be imported, says which extra to install and exits with code 2 (a usage error: the same
command works once the extra is installed), never with a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

#: extra -> the modules of it kubesched imports (pyproject.toml's [project.optional-dependencies])
EXTRAS: dict[str, tuple[str, ...]] = {
    "kube": ("kubernetes", "prometheus_client"),
    "sweep": ("dask", "distributed", "pyarrow"),
    "ui": ("fastapi", "uvicorn", "jinja2"),
}


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """Those of ``modules`` that cannot be imported (imported, not only looked up: a module found
    but broken is as good as missing)."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def require_extra(what: str, extra: str, modules: tuple[str, ...] | None = None, hint: str = "") -> None:
    """Exit with code 2 and a message naming the extra when ``what`` (a command, or a command's
    option) cannot import ``modules`` (by default every module of ``extra``)."""
    missing = missing_modules(EXTRAS[extra] if modules is None else modules)
    if missing:
        names = ", ".join(missing)
        click.echo(f"error: {what} needs the {extra} extra ({names} not installed): "
                   f"pip install 'kubesched[{extra}]'{hint}", err=True)
        sys.exit(2)
