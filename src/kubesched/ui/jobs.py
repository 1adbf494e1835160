"""Jobs: the ui's simulations, run off the request path so that no page waits for one.

A request that needs a simulation (a what-if, an edit or a delete run again, a pod diagnosed at an
earlier moment) submits a :class:`Job` and answers at once with where to follow it (``/jobs/ID``,
``/api/jobs/ID``). Each job has a state (queued, running, done, failed, cancelled), its progress (the
simulated time reached and where the run ends, the scheduling cycles run, the pods pending and
running) and can be cancelled.

Most jobs run in a worker process of their own, forked by a fork server (``forkserver``: a process
started once, without threads, that has imported what the workers run; the server itself runs
threads, and a child forked from a threaded process may inherit a lock some other thread held). A
worker so starts in milliseconds instead of the second or more a fresh interpreter takes to import
the simulator (where there is no fork server, ``spawn`` starts one). The job's inputs are pickled to
it (a scenario once per run of the ui: :class:`~kubesched.ui.runner.Packed`); it answers over a
pipe, progress first and then the answer (or the error). Cancelling a job, or stopping the server, terminates its process (its process group:
a what-if may fork a child of its own), so a run never outlives what asked for it. A worker whose
server is gone (killed without a chance to stop it) sees so at its next progress report and exits.

A job whose answer is the server's own new state (an edit's run: its scheduler is what the pod
pages diagnose with, and a live scheduler does not pickle) runs on a thread of the server instead;
it is cancelled from its progress callback, which the simulator calls after every simulated instant
and every few hundred scheduling cycles.

At most :attr:`Jobs.workers` jobs run at once; the others wait, queued, in the order they came.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from kubesched.api.errors import KubeschedError
from kubesched.sim.runner import RunStatus

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
#: the phases of a running job, in order: the server pickling what its worker is handed (the first
#: job of a run), the worker reading it, the simulation set up (every object copied and stored,
#: before the first simulated instant: most of a minute at 150 000 pods, with no progress report of
#: the simulator's own), the run (the simulator's reports), and what is done with its answer (the
#: diagnosis at a moment; an edit's views worked out before its run is swapped in)
PREPARING, READING, SETTING_UP, SIMULATING, FINISHING = "preparing", "reading", "setting up", "running", "finishing"
PHASES = (PREPARING, READING, SETTING_UP, SIMULATING, FINISHING)
FINISHED = frozenset({DONE, FAILED, CANCELLED})
#: finished jobs kept (their pages and answers); running and queued ones are always kept
JOBS_KEPT = 64
#: seconds between two progress reports of a worker (the simulator reports far more often)
REPORT_EVERY = 0.25
#: seconds a terminated worker has to exit before it is killed
STOP_GRACE = 5.0
#: how often (seconds) a job's thread looks whether it was cancelled while it waits
POLL = 0.1
#: what the fork server imports once, for every worker it forks
PRELOAD = ["kubesched.ui.runner"]

#: a job's work: called with the job's arguments, ``progress=`` the simulator's progress callback and
#: ``phase=`` a callback told each phase (:data:`PHASES`) the work enters before the run and after it
Work = Callable[..., Any]
#: a job's arguments, or what makes them (called on the job's thread, in its ``preparing`` phase)
Args = tuple[Any, ...] | Callable[[], tuple[Any, ...]]
#: the phase callback a job's work is given
PhaseCallback = Callable[[str], None]
#: what is done with a job's answer in the server (keep it, swap it in): told the job and its answer,
#: returns the links to its result (a page, the API's document)
Finish = Callable[["Job", Any], "tuple[str, str | None]"]


class Cancelled(Exception):  # noqa: N818 - what happened, not an error
    """Raised from the progress callback of a job run on the server's thread once it is cancelled."""


def status_of(status: RunStatus) -> dict[str, Any]:
    """A simulator's progress report as a job shows it."""
    return {"now": status.now, "cycles": status.cycles, "pending": status.pending, "running": status.running,
            "finished": status.finished}


@dataclass(eq=False)
class Job:
    id: int
    #: what it runs: "whatif", "edit", "delete" or "moment"
    kind: str
    #: what it does, in a line
    title: str
    #: the simulated time its run ends at (its ``until``), or where the run it stands beside ended
    #: (an estimate), or None when unknown
    end: float | None
    #: whether ``end`` is an estimate (a run without ``until`` ends when nothing more happens)
    estimated: bool = False
    state: str = QUEUED
    #: the last progress report: ``now`` (simulated seconds), ``cycles``, ``pending``, ``running``, ``finished``
    progress: dict[str, Any] = field(default_factory=dict)
    #: what a running job does now (one of :data:`PHASES`; empty before it starts), and since when
    phase: str = ""
    phase_since: float | None = None
    #: every phase it entered, in order, with when: ``[[phase, time], ...]``
    phases: list[tuple[str, float]] = field(default_factory=list)
    error: str | None = None
    #: where the answer is once it is done: a page, and the API's document (None: the job page says it all)
    link: str | None = None
    api_link: str | None = None
    #: what it said of its answer, for the job page (an edit's objects applied, its warnings)
    notes: list[str] = field(default_factory=list)
    #: an edit's: the version of the scenario it was made on, and the version its run made once it
    #: is swapped in (to edit on from there); None for other jobs
    based_on: int | None = None
    version: int | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def fraction(self) -> float | None:
        """How far the run is, 0 to 1 (None when its end is unknown or nothing was reported yet)."""
        if self.state == DONE:
            return 1.0
        now = self.progress.get("now")
        if now is None or not self.end:
            return None
        return max(0.0, min(1.0, now / self.end))

    def enter(self, phase: str) -> None:
        """The job is now in ``phase`` (:data:`PHASES`)."""
        if phase != self.phase:
            now = time.time()
            self.phases.append((phase, now))
            self.phase_since, self.phase = now, phase

    def reported(self, progress: dict[str, Any]) -> None:
        """A progress report of the simulator: the job is running its simulation."""
        self.progress = progress
        if self.phase != FINISHING:
            self.enter(SIMULATING)

    @property
    def phase_text(self) -> str:
        """The phase in words, as the job's page says it: ``setting up the simulation (12 s)``,
        ``running 42%``; empty when the job is not running."""
        if self.state != RUNNING or not self.phase:
            return ""
        if self.phase == SIMULATING:
            fraction = self.fraction
            return "running" + (f" {100 * fraction:.0f}%" if fraction is not None else "")
        words = {PREPARING: "preparing the scenario for the worker", READING: "reading the scenario",
                 SETTING_UP: "setting up the simulation", FINISHING: "finishing"}[self.phase]
        since = max(0.0, time.time() - (self.phase_since or time.time()))
        return f"{words} ({since:.0f} s)"
    @property
    def finished_(self) -> bool:
        return self.state in FINISHED

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "title": self.title, "state": self.state,
                "phase": self.phase if self.state == RUNNING else None, "phaseSince": self.phase_since,
                "phaseText": self.phase_text, "phases": [list(p) for p in self.phases],
                "progress": {**self.progress, "end": self.end, "endEstimated": self.estimated,
                             "fraction": self.fraction},
                "error": self.error, "result": self.link, "apiResult": self.api_link, "notes": self.notes,
                "basedOn": self.based_on, "version": self.version,
                "created": self.created, "started": self.started, "finished": self.finished}


def _work(conn: Connection, work: Work, args: tuple[Any, ...]) -> None:
    """A worker process: ``work(*args, progress=...)``, its reports and its answer sent over ``conn``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the terminal's group: the server stops us
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # a group of its own, children included, for the server to terminate whole
    parent = os.getppid()
    last = 0.0

    def progress(status: RunStatus) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < REPORT_EVERY:
            return
        last = now
        if os.getppid() != parent:  # the server is gone: nobody wants the answer
            os._exit(1)
        conn.send(("progress", status_of(status)))

    def phase(name: str) -> None:
        if os.getppid() != parent:
            os._exit(1)
        conn.send(("phase", name))

    try:
        answer: tuple[str, Any] = ("done", work(*args, progress=progress, phase=phase))
    except KubeschedError as err:
        answer = ("failed", str(err))
    except Exception as err:  # noqa: BLE001 - reported as the job's error
        answer = ("failed", f"{type(err).__name__}: {err}")
    try:
        conn.send(answer)
    except Exception as err:  # noqa: BLE001 - an answer that does not pickle
        conn.send(("failed", f"the answer could not be sent back: {type(err).__name__}: {err}"))
    conn.close()


def worker_context() -> multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext:
    """How workers start: forked by the fork server (:data:`PRELOAD` imported), else spawned."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _stop(process: multiprocessing.process.BaseProcess) -> None:
    """Terminate a worker and its children (its process group), killing them if they linger."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not process.is_alive() or process.pid is None:
            break
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):  # not yet in a group of its own
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, sig)
        process.join(STOP_GRACE)
    process.join(STOP_GRACE)


class Jobs:
    """The jobs of one server, at most ``workers`` running at once (default: one fewer than the
    machine's cores, at least one)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or max(1, (os.cpu_count() or 2) - 1)
        self._slots = threading.BoundedSemaphore(self.workers)
        self._jobs: OrderedDict[int, Job] = OrderedDict()
        self._processes: dict[int, multiprocessing.process.BaseProcess] = {}
        self._lock = threading.Lock()  # the registry only: held for no more than a lookup
        self._ids = itertools.count(1)
        self._context = worker_context()
        self._closed = False

    def warm(self) -> None:
        """Start the fork server now (it imports the simulator: a second or two, best spent while the
        server loads its scenario on the other core, rather than by the first job)."""
        if self._context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()

    def submit(self, kind: str, title: str, work: Work, args: Args, finish: Finish, *,
               end: float | None = None, estimated: bool = False, here: bool = False,
               notes: list[str] | None = None, based_on: int | None = None) -> Job:
        """A new job running ``work(*args, progress=..., phase=...)`` (in a worker process, or ``here``
        on a thread of this process; ``args`` may be a function making them, called on the job's
        thread once it runs); ``finish(job, answer)`` is called here with its answer and returns the
        links to its result (raising KubeschedError fails the job with that message); ``based_on``: an
        edit's version of the scenario."""
        with self._lock:
            if self._closed:
                raise KubeschedError("the server is stopping: no new simulation starts")
            job = Job(next(self._ids), kind, title, end, estimated, notes=list(notes or ()), based_on=based_on)
            self._jobs[job.id] = job
            finished = [j.id for j in self._jobs.values() if j.finished_]
            for old in finished[:max(0, len(finished) - JOBS_KEPT)]:
                del self._jobs[old]
        threading.Thread(target=self._run, args=(job, work, args, finish, here), name=f"kubesched-job-{job.id}",
                         daemon=True).start()
        return job

    def get(self, job_id: int) -> Job:
        """A job kept (KeyError once it is no longer)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise KeyError(f"no job {job_id} (the last {JOBS_KEPT} finished jobs are kept)")
        return job

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def active(self) -> int:
        """How many jobs are queued or running."""
        with self._lock:
            return sum(not job.finished_ for job in self._jobs.values())

    def cancel(self, job_id: int) -> Job:
        """Cancel a job (one already finished stays as it ended)."""
        job = self.get(job_id)
        job.cancel_event.set()
        return job

    def shutdown(self) -> None:
        """Cancel every job and terminate every worker (the server is stopping)."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
            processes = list(self._processes.values())
        for job in jobs:
            job.cancel_event.set()
        for process in processes:
            _stop(process)

    # -- running --------------------------------------------------------------------------------
    def _run(self, job: Job, work: Work, args: Args, finish: Finish, here: bool) -> None:
        while not self._slots.acquire(timeout=POLL):
            if job.cancel_event.is_set():
                self._end(job, CANCELLED)
                return
        try:
            if job.cancel_event.is_set():
                self._end(job, CANCELLED)
                return
            job.state, job.started = RUNNING, time.time()
            if callable(args):
                job.enter(PREPARING)
                args = args()
            ok, answer = self._here(job, work, args) if here else self._in_worker(job, work, args)
            if not ok and job.cancel_event.is_set():  # an answer that came before the cancel is taken
                self._end(job, CANCELLED)
            elif not ok:
                self._end(job, FAILED, answer)
            else:
                try:
                    job.enter(FINISHING)
                    job.link, job.api_link = finish(job, answer)
                except KubeschedError as err:
                    self._end(job, FAILED, str(err))
                else:
                    self._end(job, DONE)
        except Exception as err:  # noqa: BLE001 - the job fails, the server goes on
            self._end(job, FAILED, f"{type(err).__name__}: {err}")
        finally:
            self._slots.release()

    @staticmethod
    def _end(job: Job, state: str, error: str | None = None) -> None:
        job.error, job.finished = error, time.time()
        job.state = state  # last: a reader that sees the state sees the rest

    def _here(self, job: Job, work: Work, args: tuple[Any, ...]) -> tuple[bool, Any]:
        def progress(status: RunStatus) -> None:
            if job.cancel_event.is_set():
                raise Cancelled
            job.reported(status_of(status))

        def phase(name: str) -> None:
            if job.cancel_event.is_set():
                raise Cancelled
            job.enter(name)

        try:
            return True, work(*args, progress=progress, phase=phase)
        except Cancelled:
            return False, None
        except KubeschedError as err:
            return False, str(err)

    def _in_worker(self, job: Job, work: Work, args: tuple[Any, ...]) -> tuple[bool, Any]:
        job.enter(READING)
        receive, send = self._context.Pipe(duplex=False)
        process = self._context.Process(target=_work, args=(send, work, args), name=f"kubesched-job-{job.id}",
                                        daemon=True)
        with self._lock:
            if self._closed:
                return False, "the server is stopping"
            process.start()
            self._processes[job.id] = process
        send.close()
        try:
            while not job.cancel_event.is_set():
                if not receive.poll(POLL):
                    if not process.is_alive() and not receive.poll():
                        return False, f"the worker process ended without an answer (exit code {process.exitcode})"
                    continue
                try:
                    kind, value = receive.recv()
                except EOFError:
                    process.join(STOP_GRACE)
                    return False, f"the worker process ended without an answer (exit code {process.exitcode})"
                if kind == "progress":
                    job.reported(value)
                    continue
                if kind == "phase":
                    job.enter(value)
                    continue
                return kind == "done", value
            return False, None
        finally:
            _stop(process)
            receive.close()
            with self._lock:
                self._processes.pop(job.id, None)
