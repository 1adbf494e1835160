"""Exception types shared by kubesched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

#: how many additional errors ``str(ManifestError)`` lists after the first one
MAX_LISTED_ERRORS = 20


class KubeschedError(Exception):
    """Base class of every error kubesched raises on purpose."""


class InvalidQuantity(KubeschedError, ValueError):
    """A string that is not a valid Kubernetes resource.Quantity."""


class ManifestError(KubeschedError):
    """A manifest or scenario file that cannot be accepted.

    ``file``: the file it came from (None for in-memory input); ``document``: 1-based index of the
    document in the YAML stream; ``object_ref``: e.g. ``"Pod default/web"``; ``path``: the field path
    inside the document (``"spec.containers[0].resources.requests.cpu"``; empty when the error is about
    the whole document); ``message``: what is wrong.  When several errors were found, the first one
    is this object and ``related`` holds the others (``errors`` gives all of them).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        document: int | None = None,
        path: str = "",
        object_ref: str | None = None,
        related: Sequence[ManifestError] = (),
    ) -> None:
        self.file = file
        self.document = document
        self.path = path
        self.message = message
        self.object_ref = object_ref
        self.related: tuple[ManifestError, ...] = tuple(related)
        super().__init__(self.location_text())

    @property
    def errors(self) -> list[ManifestError]:
        """This error followed by every related one."""
        return [self, *self.related]

    def location_text(self) -> str:
        """The single-line form of this error alone, e.g.
        ``x.yaml: document 3 (Pod default/web): spec.containers[0].image: required value``."""
        where: list[str] = []
        if self.file is not None:
            where.append(self.file)
        if self.document is not None:
            doc = f"document {self.document}"
            where.append(doc)
        head = ": ".join(where)
        if self.object_ref:
            head = f"{head} ({self.object_ref})" if head else f"({self.object_ref})"
        parts = [p for p in (head, self.path, self.message) if p]
        return ": ".join(parts)

    def __str__(self) -> str:
        text = self.location_text()
        if not self.related:
            return text
        n = len(self.related)
        lines = [f"{text}", f"... and {n} more error{'s' if n != 1 else ''}:"]
        for err in self.related[:MAX_LISTED_ERRORS]:
            lines.append(f"  {err.location_text()}")
        if n > MAX_LISTED_ERRORS:
            lines.append(f"  ... ({n - MAX_LISTED_ERRORS} not shown)")
        return "\n".join(lines)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # keep the keyword-only constructor picklable
        return (
            _rebuild_manifest_error,
            (self.message, self.file, self.document, self.path, self.object_ref, self.related, type(self)),
        )


class ManifestNotice(ManifestError):
    """A warning about input that Kubernetes accepts as it is, and kubesched simulates as Kubernetes
    would (a pod bound to a node the cluster does not have), but that is rarely what was meant:
    printed as the other warnings are, and never refused, not even with ``--strict``."""


def _rebuild_manifest_error(
    message: str,
    file: str | None,
    document: int | None,
    path: str,
    object_ref: str | None,
    related: tuple[ManifestError, ...],
    cls: type[ManifestError] = ManifestError,
) -> ManifestError:
    return cls(message, file=file, document=document, path=path, object_ref=object_ref, related=related)


@dataclass(frozen=True)
class Location:
    """Where a part of the input was read: a file, a document of it, the object there and the path
    of the part inside that document (e.g. a Scenario's ``spec.schedulerConfiguration``), for
    errors found in the part after it was loaded (a scheduler configuration's values, checked when
    the scheduler is built from it)."""

    file: str | None
    document: int | None = None
    path: str = ""
    object_ref: str | None = None

    def below(self, path: str) -> Location:
        """The place of the field at ``path`` inside this part."""
        if not path:
            return self
        joined = f"{self.path}.{path}" if self.path and not path.startswith("[") else self.path + path
        return replace(self, path=joined)

    def error(self, message: str, path: str = "") -> ManifestError:
        """``message`` about the field at ``path`` inside the part, as a ManifestError naming the
        file, the document and the field's full path."""
        at = self.below(path)
        return ManifestError(message, file=at.file, document=at.document, path=at.path, object_ref=at.object_ref)
