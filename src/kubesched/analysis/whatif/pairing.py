"""The pods of a what-if's two runs paired by identity (:mod:`kubesched.sim.identity`), not by
generated name: a change that draws one name more or less from the seeded random draws shifts every
generated name after it, so that the baseline's ``batch-8lqvb`` and the changed run's are two
different pods, while the same pod has the same identity in both runs.

An entry of the diff names a pod as the changed run calls it (``pod``, or ``victim`` and
``preemptor``), as the baseline calls it when that differs (``baselinePod``, ``baselineVictim``,
``baselinePreemptor``) and by its identity (``identity``, ``victimIdentity``,
``preemptorIdentity``); a pod only the baseline has is named as the baseline calls it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.sim.identity import identities


@dataclass(frozen=True)
class Pairing:
    """Each run's pods by key and by identity."""

    base_ids: dict[str, str]  # baseline pod key -> identity
    new_ids: dict[str, str]  # changed run's pod key -> identity
    base_keys: dict[str, str]  # identity -> baseline pod key
    new_keys: dict[str, str]  # identity -> changed run's pod key

    @classmethod
    def of(cls, base: dict[str, Any], new: dict[str, Any]) -> Pairing:
        base_ids, new_ids = identities(base), identities(new)
        return cls(base_ids, new_ids, {i: k for k, i in base_ids.items()}, {i: k for k, i in new_ids.items()})

    def shown(self, identity: str) -> str:
        """The pod's name in the changed run, else in the baseline."""
        return self.new_keys.get(identity) or self.base_keys.get(identity) or identity

    def identities(self) -> list[str]:
        """Every pod of either run, in the order of the names the diff shows them by."""
        return sorted(set(self.base_keys) | set(self.new_keys), key=lambda i: (self.shown(i), i))

    def names(self, identity: str, field: str = "pod", baseline_field: str = "baselinePod",
              identity_field: str = "identity") -> dict[str, Any]:
        """How an entry names the pod of ``identity``: the changed run's name (the baseline's if
        only the baseline has the pod), the baseline's when it differs, and the identity."""
        entry = {field: self.shown(identity)}
        was = self.base_keys.get(identity)
        if was is not None and was != entry[field]:
            entry[baseline_field] = was
        entry[identity_field] = identity
        return entry

    def identity(self, key: str, in_baseline: bool) -> str:
        """The identity of a pod of one of the runs (a key the run's pods lack: the key itself)."""
        return (self.base_ids if in_baseline else self.new_ids).get(key, key)

    def pair(self, entry: dict[str, Any], in_baseline: bool) -> tuple[str, str]:
        """A preemption of one of the runs as the victim's and the preemptor's identities."""
        return self.identity(entry["victim"], in_baseline), self.identity(entry["preemptor"], in_baseline)

    def preemption(self, entry: dict[str, Any], in_baseline: bool) -> dict[str, Any]:
        """A preemption of either run (its victim and preemptor keys that run's) named as the diff
        names pods; the entry's fields keep their order, the new ones come last."""
        victim_id, preemptor_id = self.pair(entry, in_baseline)
        victim = self.names(victim_id, "victim", "baselineVictim", "victimIdentity")
        preemptor = self.names(preemptor_id, "preemptor", "baselinePreemptor", "preemptorIdentity")
        return {**entry, **victim, **preemptor}
