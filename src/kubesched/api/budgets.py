"""PodDisruptionBudgets compiled once and indexed, for the questions preemption asks of them many
times a cycle: which budgets select this pod, and how many disruptions each still allows.

A :class:`Budget` is one PDB read once (its selector parsed, ``status.disruptionsAllowed`` and
``status.disruptedPods`` taken out); a :class:`BudgetIndex` holds the budgets of a cluster filed by
namespace and by a label their selector requires, so a pod is matched only against the budgets
that can select it. Selecting follows upstream's preemption (``filterPodsWithPDBViolation`` in
``pkg/scheduler/framework/preemption``): a budget selects a pod of its namespace that has labels
and that its selector matches; a missing, empty (``{}``) or invalid selector selects nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubesched.api.selectors import LabelSelector
from kubesched.k8s.objects import Obj, key_of, namespace_of


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget as preemption reads it."""

    key: str
    namespace: str
    #: None when the budget selects nothing (no selector, an empty one, or an invalid one)
    selector: LabelSelector | None
    #: ``status.disruptionsAllowed``
    allowed: int
    #: ``status.disruptedPods``: pods whose eviction the API server has admitted but not yet seen done
    disrupted: frozenset[str]
    obj: Obj

    @classmethod
    def of(cls, key: str, pdb: Obj) -> Budget:
        spec = pdb.get("spec") or {}
        status = pdb.get("status") or {}
        try:
            selector: LabelSelector | None = LabelSelector.from_dict(spec.get("selector"))
        except ValueError:  # upstream: an invalid selector does not match the pod
            selector = None
        if selector is not None and selector.is_empty:
            selector = None
        try:
            allowed = int(status.get("disruptionsAllowed") or 0)
        except (TypeError, ValueError):
            allowed = 0
        disrupted = status.get("disruptedPods") or {}
        return cls(key, namespace_of(pdb), selector, allowed,
                   frozenset(disrupted) if isinstance(disrupted, Mapping) else frozenset(), pdb)


def _anchors(selector: LabelSelector) -> tuple[list[tuple[str, str]], str | None]:
    """Where a selector is filed: label pairs a matching pod has one of, or a key every matching pod
    has; ([], None) when it names no label a pod must carry (only NotIn / DoesNotExist)."""
    if selector.match_labels:
        return [selector.match_labels[0]], None
    for requirement in selector.requirements:
        if requirement.operator == "In":
            return [(requirement.key, value) for value in sorted(requirement.values)], None
    for requirement in selector.requirements:
        if requirement.operator == "Exists":
            return [], requirement.key
    return [], None


class _Filed:
    """The selecting budgets of one namespace, filed by what their selectors require."""

    __slots__ = ("by_label", "by_key", "other")

    def __init__(self) -> None:
        self.by_label: dict[tuple[str, str], list[str]] = {}
        self.by_key: dict[str, list[str]] = {}
        self.other: list[str] = []

    def add(self, budget: Budget) -> None:
        assert budget.selector is not None
        pairs, key = _anchors(budget.selector)
        if pairs:
            for pair in pairs:
                self.by_label.setdefault(pair, []).append(budget.key)
        elif key is not None:
            self.by_key.setdefault(key, []).append(budget.key)
        else:
            self.other.append(budget.key)

    def candidates(self, labels: Mapping[str, str]) -> list[str]:
        out = list(self.other)
        by_label, by_key = self.by_label, self.by_key
        for pair in labels.items():
            filed = by_label.get(pair)
            if filed:
                out.extend(filed)
            if by_key:
                filed = by_key.get(pair[0])
                if filed:
                    out.extend(filed)
        return out


class BudgetIndex:
    """The PodDisruptionBudgets of a cluster, compiled and filed. :meth:`update` replaces or removes
    one budget; the filing is rebuilt lazily, only when a budget's selector or namespace changed
    (a status update, the usual change, keeps it), and :attr:`selection` then changes: answers of
    :meth:`selecting` may be kept for as long as it is the same object."""

    __slots__ = ("_budgets", "_filed", "selection", "version")

    def __init__(self, pdbs: Iterable[Obj] = ()) -> None:
        self._budgets: dict[str, Budget] = {}
        self._filed: dict[str, _Filed] | None = None
        #: a token standing for the budgets' selectors: replaced whenever one of them changes
        self.selection = object()
        #: counts the changes of any budget (its status included)
        self.version = 0
        for pdb in pdbs:
            self.update(key_of(pdb), pdb)

    def __bool__(self) -> bool:
        return bool(self._budgets)

    def get(self, key: str) -> Budget | None:
        return self._budgets.get(key)

    def update(self, key: str, pdb: Obj | None) -> None:
        """The budget ``key`` (``namespace/name``) is now ``pdb``, or gone (None). An unchanged
        object (the same one) costs a lookup."""
        old = self._budgets.get(key)
        if pdb is None:
            if old is not None:
                del self._budgets[key]
                self.version += 1
                if old.selector is not None:
                    self._reselect()
            return
        if old is not None and old.obj is pdb:
            return
        budget = Budget.of(key, pdb)
        self._budgets[key] = budget
        self.version += 1
        if old is None:
            if budget.selector is not None:
                self._reselect()
        elif old.selector != budget.selector or old.namespace != budget.namespace:
            self._reselect()

    def replace_all(self, pdbs: Iterable[Obj]) -> None:
        """Exactly ``pdbs`` from now on (those already held as the same objects are kept as compiled)."""
        seen: set[str] = set()
        for pdb in pdbs:
            key = key_of(pdb)
            seen.add(key)
            self.update(key, pdb)
        for key in [k for k in self._budgets if k not in seen]:
            self.update(key, None)

    def _reselect(self) -> None:
        self._filed = None
        self.selection = object()

    def selecting(self, namespace: str, labels: Mapping[str, str]) -> tuple[str, ...]:
        """The keys of the budgets that select a pod of ``namespace`` with ``labels``."""
        if not labels:
            return ()
        filed = self._filed
        if filed is None:
            filed = self._filed = {}
            for budget in self._budgets.values():
                if budget.selector is not None:
                    filed.setdefault(budget.namespace, _Filed()).add(budget)
        in_namespace = filed.get(namespace)
        if in_namespace is None:
            return ()
        budgets = self._budgets
        return tuple(key for key in in_namespace.candidates(labels)
                     if budgets[key].selector.matches(labels))  # type: ignore[union-attr]
