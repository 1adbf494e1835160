"""The texts users see: FitError messages (upstream ``framework/types.go FitError.Error``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kubesched.scheduler.framework.interface import Status

NOTE_LENGTH_LIMIT = 1024


def reasons_histogram(statuses: Iterable[Status]) -> list[str]:
    """``"<count> <reason>"`` strings sorted byte-wise, as upstream sorts them."""
    counts: Counter[str] = Counter()
    for status in statuses:
        for reason in status.reasons:
            counts[reason] += 1
    return sorted((f"{n} {reason}" for reason, n in counts.items()), key=lambda s: s.encode())


def fit_error_message(
    num_all_nodes: int, pre_filter_msg: str, statuses: Iterable[Status], post_filter_msg: str
) -> str:
    msg = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = reasons_histogram(statuses)
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}."
    return msg


def truncate_note(message: str) -> str:
    """Event notes are limited to 1024 *bytes* (upstream ``truncateMessage`` measures and cuts the
    UTF-8 string with Go's ``len``/slicing); ``" ..."`` marks the cut. A multi-byte character cut
    in two leaves invalid bytes, which Go's JSON encoding sends as one U+FFFD each."""
    raw = message.encode()
    if len(raw) <= NOTE_LENGTH_LIMIT:
        return message
    head = raw[: NOTE_LENGTH_LIMIT - 4]
    text = head.decode(errors="ignore")
    dangling = len(head) - len(text.encode())
    return text + "\ufffd" * dangling + " ..."
