"""Linux cpuset lists (``"0-3,8,10-11"``), as the kubelet's ``reservedSystemCPUs`` and the
``cpuset`` package read and print them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable


def parse_cpuset(text: str) -> list[int]:
    """A Linux cpuset list (``"0-3,8,10-11"``) as sorted CPU ids. Raises ValueError."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise ValueError(f'invalid cpuset "{text}"')
        first, last = int(low), int(high) if sep else int(low)
        if last < first:
            raise ValueError(f'invalid cpuset "{text}": range {part} is reversed')
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpuset(cpus: Iterable[int]) -> str:
    """Sorted CPU ids as a cpuset list (``[0, 1, 2, 5]`` -> ``"0-2,5"``)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    for _, group in itertools.groupby(enumerate(ordered), key=lambda iv: iv[1] - iv[0]):
        run = [v for _, v in group]
        parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(parts)
