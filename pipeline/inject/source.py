"""The one reader of "the capped text of a target", with its two sources: a file, or a block in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..config.targets import ResolvedTarget
from ..store import PersonaStore
from ..store.runs import recorded_tokens
from ..warn_once import ProblemLog
from .file_source import FileSource, KnownTokens
from .store_source import StoreSource

if TYPE_CHECKING:  # `persona status` runs without pydantic
    from ..config.schema import Settings


class Source(Protocol):
    def read(self) -> str:
        """The capped text now; OSError (MissingBlock for a block) or PersonaError says why not."""
        ...

    def text(self) -> str:
        """The capped text as last read, re-checked at most once per ``injection.check_interval_ms``;
        never raises (a warning, and "" or the last good text)."""
        ...

    def describe(self, error: BaseException) -> str:
        """One line for a failed :meth:`read`, for warnings."""
        ...

    def close(self) -> None: ...


def open_source(settings: Settings, target: ResolvedTarget, problems: ProblemLog, *,
                store: PersonaStore | None = None, known_tokens: KnownTokens | None = None) -> Source:
    """The target's source.

    ``store`` is the caller's (left open). A store target's block is read
    through it; for a file, it finds the token count a render recorded for
    the file's exact bytes (unless ``known_tokens`` is given), so a host's
    first turn need not load the tokenizer.
    """
    if target.in_store:
        return StoreSource(settings, target, problems, store=store)
    if known_tokens is None and store is not None:
        counter = settings.cap.counter
        known_tokens = lambda path, sha256: recorded_tokens(store, path, sha256, counter)  # noqa: E731
    return FileSource(settings, target, problems, known_tokens=known_tokens)
