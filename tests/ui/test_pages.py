"""What each agent sees: a bar per unit of the host's limits, however a preset comes to name them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pipeline import PersonaStore
from pipeline.config.presets import PRESETS
from pipeline.ui.pages import Bar, agent_views, preset_limits

from ..conftest import local_settings


@dataclass(frozen=True)
class Limit:
    unit: str
    limit: int


@dataclass(frozen=True)
class FuturePreset:
    """A preset as it may come to declare limits in characters and bytes (docs/hosts.md, per host)."""

    host: str = "Someone"
    budget: int = 2000
    max_chars: int = 4000
    chain_bytes: int = 32768
    limits: dict[str, int] = field(default_factory=lambda: {"file_chars": 6000})
    more: tuple[Limit, ...] = (Limit("bytes", 1024),)
    debug: bool = True


def test_limits_in_characters_and_bytes_are_read_whatever_a_preset_calls_them():
    assert sorted(preset_limits(FuturePreset())) == [("bytes", 1024), ("bytes", 32768), ("characters", 4000),
                                                     ("characters", 6000)]


@pytest.mark.parametrize("host", sorted(PRESETS))
def test_every_shipped_preset_reads_without_error(host):
    assert all(unit in ("characters", "bytes") and limit > 0 for unit, limit in preset_limits(PRESETS[host]))


def test_a_bar_says_how_full_and_whether_it_is_over():
    assert (Bar("tokens", 50, 200).percent, Bar("tokens", 50, 200).over) == (25, False)
    assert (Bar("bytes", 300, 200).percent, Bar("bytes", 300, 200).over) == (100, True)


def test_each_target_shows_its_exact_text_tokens_first_and_what_it_left_out(tmp_path):
    settings = local_settings(tmp_path, {"targets.codex": {"output": "region", "path": str(tmp_path / "AGENTS.md"),
                                                           "host": "codex", "budget": 30}})
    with PersonaStore.from_settings(settings) as store:
        for n in range(6):
            store.add(f"Fact number {n} about the user's habits.", topic=f"topic {n}")
        views = {view.target: view for view in agent_views(settings, store)}
    codex, markdown = views["codex"], views["markdown"]
    assert codex.host == "Codex" and markdown.host == "Hermes Agent (injected)"
    assert codex.bars[0].unit == "tokens" and codex.bars[0].limit == 30 and codex.bars[0].used <= 30
    assert {fact.fate for fact in codex.left_out} >= {"section dropped"}
    assert "Fact number" in codex.text and not (tmp_path / "AGENTS.md").exists(), "nothing is written"
    assert markdown.left_out == () and markdown.kept == 6
