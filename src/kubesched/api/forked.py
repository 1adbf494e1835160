"""Work done on the machine's other core: a function run in a forked child process.

Python runs one thread at a time, and the work a production-size dump needs (checking 150 000
objects, simulating the two sides of a what-if) is Python code. A forked child starts with the
parent's memory as it is (shared until written, so nothing is copied or sent to it), does its part,
and sends back only its answer, pickled. Used where two parts of one job are independent and each
is big; the answers are the same as running both parts one after the other.

Where ``os.fork`` is missing the part is run in this process when its answer is asked for, and so
is it when a child fails for a reason of its own (it was killed, its answer does not pickle) unless
``rerun`` was set to False (the parent has changed what the part reads): that is an error then.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Forked(Generic[T]):
    """``fn()`` running in a forked child; :meth:`result` waits for its answer (or re-raises its
    exception). Call :meth:`result` exactly once."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._pid = 0
        self._read = -1
        #: whether a child that died without answering is made up for by running the part here
        self.rerun = True
        if not hasattr(os, "fork"):
            return
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answer, then leave without any cleanup of the parent's state
            os.close(read)
            try:
                try:
                    payload = pickle.dumps((True, fn()), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException as exc:  # noqa: BLE001 - handed to the parent
                    payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(0)
        os.close(write)
        self._pid, self._read = pid, read

    @property
    def in_child(self) -> bool:
        """Whether the part runs in a child (else it runs here, when :meth:`result` is called)."""
        return bool(self._pid)

    def result(self) -> T:
        if not self._pid:
            return self._fn()
        with os.fdopen(self._read, "rb") as answer:
            data = answer.read()
        os.waitpid(self._pid, 0)
        try:
            ok, value = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - no answer: the child died
            if not self.rerun:
                raise RuntimeError("a forked part died without answering (out of memory?)") from exc
            return self._fn()
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]
