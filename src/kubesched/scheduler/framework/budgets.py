"""The cluster's PodDisruptionBudgets as a preemption dry run reads them: compiled once per version
of each budget (kept in step with the cluster's change journal, not re-read every cycle), matched
against a pod only where their selectors can select it, with the answer kept on the pod for as
long as no selector changes. :meth:`DisruptionBudgets.split` is upstream's
``filterPodsWithPDBViolation``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.api.budgets import BudgetIndex
from kubesched.k8s.objects import split_key
from kubesched.scheduler.framework.interface import Handle
from kubesched.scheduler.framework.types import PodInfo

KIND = "PodDisruptionBudget"
#: the key of a pod's cache holding (the index's selection token, the keys of the budgets selecting it)
_CACHE_KEY = "disruptionBudgets"


class DisruptionBudgets:
    """The budgets a handle's cluster holds. :meth:`refresh` brings them up to date (once per dry
    run); between refreshes they are what the cluster held then."""

    __slots__ = ("_handle", "_mark", "index")

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._mark: int | None = None
        self.index = BudgetIndex()

    def refresh(self) -> DisruptionBudgets:
        mark, keys = self._handle.changes(KIND, self._mark)
        self._mark = mark
        if keys is None:
            self.index.replace_all(self._handle.list(KIND))
        else:
            for key in keys:
                namespace, name = split_key(key)
                self.index.update(key, self._handle.get(KIND, namespace, name))
        return self

    def __bool__(self) -> bool:
        return bool(self.index)

    @property
    def selection(self) -> object:
        """Stands for the budgets' selectors: a new object whenever one of them changes."""
        return self.index.selection

    def selecting(self, pod: PodInfo) -> tuple[str, ...]:
        """The keys of the budgets selecting ``pod`` (none for a pod without labels)."""
        if not pod.labels:
            return ()
        selection = self.index.selection
        cached = pod.cache.get(_CACHE_KEY)
        if cached is not None and cached[0] is selection:
            keys: tuple[str, ...] = cached[1]
            return keys
        keys = self.index.selecting(pod.namespace, pod.labels)
        pod.cache[_CACHE_KEY] = (selection, keys)
        return keys

    @property
    def version(self) -> int:
        """Changes whenever a budget does (its status included)."""
        return self.index.version

    def split(self, pods: Sequence[PodInfo],
              covers: Sequence[tuple[str, ...]] | None = None) -> tuple[list[PodInfo], list[PodInfo]]:
        """Upstream ``filterPodsWithPDBViolation``: ``pods`` (most important first) split into those
        whose eviction would violate a budget and the others, each budget's disruptionsAllowed
        spent in that order (a pod the budget already counts as disrupted spends nothing).
        ``covers``: the keys of the budgets selecting each pod, when known."""
        if not self.index:
            return [], list(pods)
        index = self.index
        left: dict[str, int] = {}
        violating: list[PodInfo] = []
        non_violating: list[PodInfo] = []
        for k, pod in enumerate(pods):
            violated = False
            keys = self.selecting(pod) if covers is None else covers[k]
            for key in keys:
                budget = index.get(key)
                assert budget is not None
                if pod.name in budget.disrupted:
                    continue
                remaining = left.get(key, budget.allowed) - 1
                left[key] = remaining
                if remaining < 0:
                    violated = True
            (violating if violated else non_violating).append(pod)
        return violating, non_violating
