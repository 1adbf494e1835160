"""IdentityMemo: a value per object, not per equal value; forgotten past its limit."""

from __future__ import annotations

from kubesched.k8s.memo import IdentityMemo


def test_one_computation_per_object_and_a_bounded_memory() -> None:
    calls: list[dict[str, int]] = []

    def compute(obj: dict[str, int]) -> int:
        calls.append(obj)
        return obj["x"] * 2

    memo: IdentityMemo[dict[str, int], int] = IdentityMemo(compute, 2)
    a, b, c = {"x": 1}, {"x": 1}, {"x": 3}
    assert (memo(a), memo(a), memo(b)) == (2, 2, 2)
    assert [obj is a for obj in calls] == [True, False]  # b is equal to a but another object
    memo(c)  # a third entry: the two held are forgotten first
    memo(a)
    assert len(calls) == 4
