"""No module of kubesched reaches into another's private code: a name starting with one underscore
is its module's own (``from m import _name`` and ``m._name`` from elsewhere are refused), and a
module starting with one is its package's own (imported only from inside that package). What two
modules share gets a public name in a public home."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import kubesched

SRC = Path(kubesched.__file__).parent
ROOT = "kubesched"

#: (importing module, what it uses) pairs allowed, each with the reason it cannot be helped
ALLOWED: dict[tuple[str, str], str] = {}


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(module: str | None, level: int, package: str) -> str:
    if level == 0:
        return module or ""
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _private_module_outside_its_package(target: str, importer_package: str) -> str | None:
    """The first private module on ``target``'s path whose package ``importer_package`` is not in."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            owner = ".".join(parts[:i])
            if importer_package != owner and not importer_package.startswith(owner + "."):
                return ".".join(parts[: i + 1])
    return None


def _violations(source: str, module: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, what is used) for each reach into private code in ``source``, the text of ``module``
    (of ``package``)."""
    tree = ast.parse(source)
    module_aliases: dict[str, str] = {}  # local name -> the kubesched module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != ROOT:
                    continue
                bad = _private_module_outside_its_package(alias.name, package)
                if bad:
                    yield node.lineno, bad
                if alias.asname:
                    module_aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, package)
            if source.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                # a private name of another module, or a private module of another package
                if _is_private(alias.name) and not _is_submodule(target):
                    if source != module:
                        yield node.lineno, target
                    continue
                bad = _private_module_outside_its_package(target, package)
                if bad:
                    yield node.lineno, bad
                if _is_submodule(target):
                    module_aliases[alias.asname or alias.name] = target
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _is_private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in module_aliases):
            yield node.lineno, f"{module_aliases[node.value.id]}.{node.attr}"


def _is_submodule(dotted: str) -> bool:
    relative = Path(*dotted.split(".")[1:])
    return (SRC / relative).with_suffix(".py").is_file() or (SRC / relative / "__init__.py").is_file()


def _all_violations() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        for line, used in _violations(path.read_text(), module, _package_of(module, path)):
            if (module, used) not in ALLOWED:
                found.append(f"{module}:{line} uses {used}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    assert _all_violations() == []


def test_the_scan_sees_each_way_of_reaching_in() -> None:
    """The check itself, on a module written for it: a private name imported, a private name read
    off an imported module, a private module imported from another package."""
    source = (
        "from kubesched.scheduler.plugins.nodeaffinity import _compiled\n"
        "from kubesched.scheduler.plugins import nodeaffinity as na\n"
        "from kubesched.api import _checks\n"
        "na._pod_preferred\n"
    )
    found = [used for _, used in _violations(source, "kubesched.scheduler.probe", "kubesched.scheduler")]
    assert found == ["kubesched.scheduler.plugins.nodeaffinity._compiled", "kubesched.api._checks",
                     "kubesched.scheduler.plugins.nodeaffinity._pod_preferred"]
