"""The texts users see: FitError messages (upstream ``framework/types.go FitError.Error``, kept in
the framework) and event notes."""

from __future__ import annotations

from kubesched.scheduler.framework.types import fit_error_message, reasons_histogram

__all__ = ["NOTE_LENGTH_LIMIT", "fit_error_message", "reasons_histogram", "truncate_note"]

NOTE_LENGTH_LIMIT = 1024


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
