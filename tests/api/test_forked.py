"""Work on the other core: the answers are those of doing it here, errors included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubesched.api import loader
from kubesched.api.errors import ManifestError
from kubesched.api.forked import Forked
from kubesched.api.loader import load_scenario


def test_a_forked_part_answers_from_another_process() -> None:
    part = Forked(lambda: (os.getpid(), [1, 2, 3]))
    pid, value = part.result()
    assert value == [1, 2, 3] and pid != os.getpid()


def test_a_forked_part_raises_what_it_raised() -> None:
    def fail() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        Forked(fail).result()


def test_a_child_that_dies_without_answering_is_done_here() -> None:
    parent = os.getpid()

    def dies_in_a_child() -> int:
        if os.getpid() != parent:
            os._exit(1)
        return 7

    assert Forked(dies_in_a_child).result() == 7


def _objects(n: int) -> str:
    docs = []
    for i in range(n):
        extra = "  nodeSelectr: {a: b}\n" if i % 7 == 3 else ""  # an unknown field: a warning
        bad = "  priority: high\n" if i in (2, n - 2) else ""  # invalid: an error in each half
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec:\n"
                    f"  containers: [{{name: c, image: i}}]\n{extra}{bad}")
    return "---\n".join(docs)


def test_checking_in_two_halves_finds_what_checking_in_one_finds(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(_objects(30))
    found = []
    for threshold in (10**9, 1):
        monkeypatch.setattr(loader, "PARALLEL_CHECKS_ABOVE", threshold)
        with pytest.raises(ManifestError) as err:
            load_scenario(path)
        found.append([str(err.value), *(str(e) for e in err.value.related)])
    assert found[0] == found[1] and len(found[0]) == 2
    path.write_text(_objects(30).replace("  priority: high\n", ""))
    warnings = []
    for threshold in (10**9, 1):
        monkeypatch.setattr(loader, "PARALLEL_CHECKS_ABOVE", threshold)
        warnings.append([str(w) for w in load_scenario(path).warnings])
    assert warnings[0] == warnings[1] and len(warnings[0]) == 4
