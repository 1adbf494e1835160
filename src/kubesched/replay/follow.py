"""``kubesched replay --follow-recorded``: the recording's own decisions, checked one by one.

A free replay (:mod:`.compare`) lets the scheduler under test place every pod, so after the first
decision it takes differently — and kube-scheduler decides ties between equally scored nodes at
random — its cluster is no longer the recorded one, and later decisions are taken on another
cluster. Here the replay's cluster **follows the recording** instead: every recorded binding,
nomination and preemption (the recorded scheduler's deletion of a victim) is applied as recorded,
at the moment the API server received it, besides the history's own steps (creations, deletions,
evictions, node changes). No scheduling cycle runs. At each recorded decision the scheduler under
test is asked what it would decide on that state (:func:`~kubesched.analysis.decide.would_decide`:
the filters, the scores, the preemption dry run when no node fits), and the recorded node is set
beside its answer:

* a **placement** (a binding): ``same`` (the recorded node is the one best-scored node), ``tie``
  (it is one of several equally best: the recorded scheduler chose among them at random), or
  ``differs`` (with the recorded node's score, or why it does not fit, beside the best one's); a
  pod bound to the node it was nominated to is a ``nominated`` decision (a cycle takes a fitting
  nominated node without scoring);
* a **preemption** (a nomination, asked just before the first of its victims was deleted): whether
  the recorded node is the candidate, or among the candidates equal on every criterion.

Pods keep their recorded start times (``status.startTime``, which preemption's last criterion
reads), or none if the history has none (a recording without kubelets).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kubesched.analysis.decide import WouldDecide, would_decide
from kubesched.api.loader import Scenario
from kubesched.k8s.objects import ApiError
from kubesched.k8s.timefmt import rfc3339
from kubesched.replay.compare import API_VERSION
from kubesched.replay.dynamic import RunTimeSteps, split_recreations
from kubesched.replay.history import Followed, History, ReplayError
from kubesched.replay.timeline import RECREATION
from kubesched.sim.runner import Simulation

#: how many nodes of a decision's best a row lists
BEST_LISTED = 5
VERDICTS = ("same", "tie", "differs", "missing")


def _decision_points(followed: Sequence[Followed]) -> list[tuple[float, int, str, Followed]]:
    """Every action to apply and every decision to ask, in order: ``(time, rank, what, action)``
    (``what``: ``ask`` before ``apply`` at the same moment). A binding is asked just before it; a
    nomination just before the first deletion of a victim on its node since the previous nomination
    (the recorded scheduler deletes the victims, then nominates the preemptor), or before itself."""
    points: list[tuple[float, int, str, Followed]] = []
    where: dict[str, str] = {}
    victims: list[Followed] = []
    for f in followed:
        if f.action == "bind":
            points.append((f.at, 0, "ask", f))
            assert f.node is not None
            where[f.pod] = f.node
        elif f.action == "preempt":
            victims.append(f)
        elif f.action == "nominate" and f.node is not None:
            mine = [v.at for v in victims if where.get(v.pod) == f.node]
            points.append((min(mine) if mine else f.at, 0, "ask", f))
            victims = []
        points.append((f.at, 1, "apply", f))
    points.sort(key=lambda p: (p[0], p[1]))
    return points


class Follower:
    """Applies the recorded scheduler's actions to a simulation and asks its scheduler at each
    recorded decision (``attach`` it before driving the simulation's loop)."""

    def __init__(self, sim: Simulation, history: History) -> None:
        self.sim, self.history = sim, history
        self.decisions: list[dict[str, Any]] = []
        self.not_applied: Counter[str] = Counter()

    def attach(self) -> None:
        for at, _, what, action in _decision_points(self.history.followed):
            callback = self._ask if what == "ask" else self._apply
            self.sim.loop.call_at(at, functools.partial(callback, action))

    def _pod(self, key: str) -> dict[str, Any] | None:
        ns, name = key.split("/", 1) if "/" in key else ("default", key)
        return self.sim.cluster.api.get("Pod", ns, name)

    # -- the recorded actions -----------------------------------------------------------------
    def _apply(self, f: Followed) -> None:
        pod = self._pod(f.pod)
        if pod is None:
            self.not_applied[f"{f.action}: the pod is not in the replay"] += 1
            return
        try:
            if f.action == "bind":
                if (pod.get("spec") or {}).get("nodeName"):
                    self.not_applied["bind: the pod is bound already"] += 1
                    return
                self.sim.cluster.bind(pod, f.node or "")
                # the kubelet starts it at this instant: then its start time is the recorded one
                self.sim.loop.call_at(self.sim.loop.now(), functools.partial(self._started, f.pod))
            elif f.action == "nominate":
                self.sim.cluster.patch_pod_status(pod, {"nominatedNodeName": f.node})
            elif f.action == "preempt":
                self.sim.cluster.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"], f.grace)
        except ApiError as err:
            self.not_applied[f"{f.action}: {err.reason}"] += 1

    def _started(self, key: str) -> None:
        pod = self._pod(key)
        if pod is None:
            return
        started = self.history.started.get(key)
        self.sim.cluster.api.patch_pod_status(pod, {"startTime": None if started is None else rfc3339(started)})

    # -- the decisions --------------------------------------------------------------------------
    def _ask(self, f: Followed) -> None:
        pod = self._pod(f.pod)
        row: dict[str, Any] = {"pod": f.pod, "time": round(self.sim.loop.now(), 6), "recorded": f.node}
        if f.action == "nominate":
            row["kind"] = "preemption"
        elif pod is not None and ((pod.get("status") or {}).get("nominatedNodeName") or None) == f.node:
            row["kind"] = "nominated node"
        else:
            row["kind"] = "placement"
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            row.update(verdict="missing", why="the pod is not pending in the replay")
            self.decisions.append(row)
            return
        ns, name = f.pod.split("/", 1)
        answer = would_decide(self.sim.scheduler, ns, name)
        row.update(_verdict(row["kind"], f.node or "", answer))
        self.decisions.append(row)


def _verdict(kind: str, recorded: str, answer: WouldDecide) -> dict[str, Any]:
    """The verdict of one decision and its evidence (see the module's description)."""
    out: dict[str, Any] = {"would": answer.kind, "best": answer.best[:BEST_LISTED], "bestCount": len(answer.best)}
    wanted = "preemption" if kind == "preemption" else ("score", "nominated")
    if answer.kind not in wanted:
        out["verdict"] = "differs"
        if answer.kind == "unschedulable":
            out["why"] = f"no node fits and preemption finds none: {answer.message}"
        elif kind == "preemption":
            out["why"] = f"the pod fits without preemption ({answer.kind}: {', '.join(answer.best[:BEST_LISTED])})"
        else:
            out["why"] = f"no node fits: the scheduler would preempt on {', '.join(answer.best[:BEST_LISTED])}"
        return out
    if recorded in answer.best:
        out["verdict"] = "same" if len(answer.best) == 1 else "tie"
    else:
        out["verdict"] = "differs"
        if answer.kind == "preemption":
            criteria = answer.criteria.get(recorded)
            out["why"] = (f"{recorded} is no candidate" if criteria is None else
                          f"{recorded}'s criteria {_criteria(criteria)} against {answer.best[0]}'s "
                          f"{_criteria(answer.criteria[answer.best[0]])}")
        elif answer.kind == "nominated":
            out["why"] = f"the pod's nominated node {answer.best[0]} fits: a cycle takes it"
        elif recorded in answer.scores:
            out["why"] = f"{recorded} scores {answer.scores[recorded]}, {answer.best[0]} {answer.scores[answer.best[0]]}"
        else:
            out["why"] = f"{recorded} does not fit: {answer.rejected.get(recorded, 'not a node of the replay')}"
    if answer.scores:
        out["bestScore"] = answer.scores[answer.best[0]]
        if recorded in answer.scores:
            out["recordedScore"] = answer.scores[recorded]
    return out


def _criteria(key: list[float]) -> str:
    """A candidate's criteria as people read them: PDB violations, highest victim priority, sum of
    priorities, victims (the key scores each so that higher is better: signs undone)."""
    violations, top, total, count = -key[0], -key[1], -key[2] - 2**31 * -key[3], -key[3]
    return f"({int(violations)} PDB violations, top victim {int(top)}, sum {int(total)}, {int(count)} victims)"


def _rate(agree: int, of: int) -> dict[str, Any]:
    return {"agree": agree, "of": of, "rate": round(agree / of, 4) if of else None}


def summarize(decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """The decisions counted: per verdict, the agreement excluding ties (same of same + differs),
    same-or-tie of all, and the same per kind of decision."""

    def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
        c = Counter(r["verdict"] for r in rows)
        return {"decisions": len(rows), **{v: c[v] for v in VERDICTS},
                "agreement": _rate(c["same"], c["same"] + c["differs"]),
                "sameOrTie": _rate(c["same"] + c["tie"], len(rows))}

    kinds = sorted({r["kind"] for r in decisions})
    return {**counts(decisions), "byKind": {k: counts([r for r in decisions if r["kind"] == k]) for k in kinds}}


def replay_following(history: History, scenario: Scenario | None = None, *, seed: int | None = None,
                     changes: Sequence[str] = ()) -> dict[str, Any]:
    """Replay ``history`` (or ``scenario``: the same with a what-if's changes) following the
    recording, and ask the scheduler under test at each recorded decision: the ReplayResult
    document with its ``decisions`` (docs/replay.md describes it)."""
    if not history.followed:
        raise ReplayError(f"{history.report.source}: the history records no scheduler decision (no binding) to "
                          "follow: --follow-recorded needs an audit log with pods/binding")
    scenario = history.scenario if scenario is None else scenario
    scenario, recreations = split_recreations(scenario, RECREATION)
    sim = Simulation(scenario, seed=seed, owned=True)
    RunTimeSteps(list(history.identity_steps), recreations).attach(sim)
    follower = Follower(sim, history)
    follower.attach()
    loop = sim.loop
    while True:  # the recording's clock, without the scheduler's cycles: nothing is scheduled
        loop.run_due()
        if not loop.advance(sim.until):
            break
    for scheduler in sim.schedulers:
        scheduler.close()
    rows = follower.decisions
    return {
        "apiVersion": API_VERSION, "kind": "ReplayResult", "mode": "followRecorded",
        "history": history.report.to_dict(), "start": history.start, "until": scenario.until,
        "seed": sim.seed, "changes": list(changes),
        "decisions": {"summary": summarize(rows), "rows": rows},
        "run": {"notApplied": dict(sorted(follower.not_applied.items())), "rejected": sim.log.rejected,
                "missedWrites": []},
    }
