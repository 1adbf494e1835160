"""Work on the other core: the answers are those of doing it here, errors included."""

from __future__ import annotations

import os

import pytest

from kubesched.api.forked import Forked


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
