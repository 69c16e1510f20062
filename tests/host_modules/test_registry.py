"""The registry lists every host module once, and each host's declarations hold together: its presets' files are
relative paths, its variants are its own presets, its limits are positive and name their source."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import PurePosixPath

import pytest

import pipeline.hosts
from pipeline.hosts import registry
from pipeline.hosts.model import FirstFound, Host, MemoryFiles, PerDirectory, RulesFolders
from pipeline.scopes import HOSTS

NOT_HOSTS = {"model", "registry", "escapes"}  # the folder's modules that declare no host
MODULES = sorted(info.name for info in pkgutil.iter_modules(pipeline.hosts.__path__) if info.name not in NOT_HOSTS)
EVERY_HOST = sorted(registry.HOSTS.values(), key=lambda host: host.name)


def ids(host: Host) -> str:
    return host.name


@pytest.mark.parametrize("module", MODULES)
def test_every_host_module_is_registered_under_its_scope_name(module):
    host = importlib.import_module(f"pipeline.hosts.{module}").HOST
    assert registry.HOSTS[host.name] is host
    assert module.rstrip("_") == host.name.replace("-", "_")  # continue_.py: `continue` is a keyword


def test_every_registered_host_has_a_module_and_scopes_know_them_all():
    assert sorted(host.name.replace("-", "_") for host in EVERY_HOST) == sorted(m.rstrip("_") for m in MODULES)
    assert HOSTS == registry.NAMES


def test_names_are_unique_across_hosts_and_presets():
    presets = [name for host in EVERY_HOST for name in host.presets]
    assert len(presets) == len(set(presets))
    assert len({host.display for host in EVERY_HOST}) == len(EVERY_HOST)
    # a preset named like a host is that host's main preset
    assert all(name in registry.HOSTS[name].presets for name in presets if name in registry.HOSTS)


@pytest.mark.parametrize("host", [host for host in EVERY_HOST if host.presets], ids=ids)
def test_a_hosts_presets_are_its_own_and_write_relative_paths(host):
    assert next(iter(host.presets)) == host.name  # the main preset first, named after its host
    for name, preset in host.presets.items():
        assert (preset.host_name or name) == host.name
        assert preset.host == host.display
        for file in (preset.project_file, preset.user_file):
            if file is not None:
                assert not PurePosixPath(file).is_absolute() and ".." not in PurePosixPath(file).parts, file
        assert preset.budget > 0
    assert host.rules_variant is None or host.rules_variant in host.presets


@pytest.mark.parametrize("host", EVERY_HOST, ids=ids)
def test_every_limit_is_positive_in_a_known_unit_and_names_its_source(host):
    limits = [limit for preset in host.presets.values() for limit in preset.limits]
    limits += list(host.hook.limits) if host.hook is not None else []
    for limit in limits:
        assert limit.amount > 0 and limit.unit in ("tokens", "chars", "bytes") and limit.scope in ("file", "chain")
        assert limit.source, f"{host.name}: a limit without its source"


@pytest.mark.parametrize("host", [host for host in EVERY_HOST if host.load is not None], ids=ids)
def test_a_load_model_names_relative_files(host):
    model = host.load
    files = (*model.names, model.home_dir) if isinstance(model, PerDirectory) else ()
    files += (model.global_file, model.folder) if isinstance(model, RulesFolders) else ()
    if isinstance(model, MemoryFiles):
        files += (*model.names, *model.user_files, *model.fallback, *filter(None, (model.rules, model.user_rules)))
    files += (*model.names, *model.user_files) if isinstance(model, FirstFound) else ()
    assert files and all(not PurePosixPath(file).is_absolute() for file in files)


def test_what_init_offers_has_a_user_level_file():
    assert registry.offered_by_init() == ("claude-code", "codex", "gemini", "opencode", "amp", "zed", "goose", "kilo")
    assert all(registry.presets()[name].user_file is not None for name in registry.offered_by_init())


def test_hook_formats_are_unique_and_name_their_host():
    formats = [hook.format for hook in registry.hooks().values()]
    assert len(formats) == len(set(formats)) and set(registry.hooks()) <= set(registry.HOSTS)
