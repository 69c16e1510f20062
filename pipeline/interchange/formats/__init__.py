"""Import formats: one small parser per kind of source, registered by name, all applied by one engine.

``facts`` (the default), ``persona-md``, ``hermes``, ``instructions``,
``lines``, ``mem0`` and ``assistant``; each module says what its source looks like and how
it maps to facts. :func:`import_source` reads a source (a path, or ``-`` for
standard input, within :data:`MAX_IMPORT_BYTES`) and imports it.
"""

from ..fact_entry import MAX_IMPORT_BYTES
from . import assistant, facts, hermes, instructions, lines, mem0, persona_md  # noqa: F401  (importing them registers them)
from .registry import DEFAULT_TOPIC, ImportFormat, Source, get_format, import_format, known_formats
from .source import STDIN, STDIN_NAME, import_source, read_source

__all__ = ["DEFAULT_TOPIC", "MAX_IMPORT_BYTES", "STDIN", "STDIN_NAME", "ImportFormat", "Source", "get_format",
           "import_format", "import_source", "known_formats", "read_source"]
