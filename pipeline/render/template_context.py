"""What every template sees, as ``persona``: plain data, importable without Jinja (the prepared-fact memo and the
render child's protocol use it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TemplateItem:
    """One fact: ``text`` is already a single inert line."""

    text: str
    tier: str
    confidence: float
    reinforcement_count: int


@dataclass(frozen=True, slots=True)
class TemplateSection:
    """One topic: its facts in rank order, and how many more did not fit ``max_items_per_section``."""

    topic: str
    items: tuple[TemplateItem, ...]
    omitted: int


@dataclass(frozen=True, slots=True)
class PersonaContext:
    """Everything a template sees, as ``persona``. Nothing in it changes between runs on the same data."""

    target: str
    sections: tuple[TemplateSection, ...]
    fact_count: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PersonaContext:
        sections = tuple(TemplateSection(s["topic"], tuple(TemplateItem(**i) for i in s["items"]), s["omitted"])
                         for s in data["sections"])
        return cls(data["target"], sections, data["fact_count"])
