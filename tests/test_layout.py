"""The folder tree is the architecture: a folder imports only the folders below it.

Read from the source's own import statements (those inside functions too), the
way the docs tests keep the docs honest.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

import pipeline
import pipeline.store
from pipeline.moved import MOVED

PACKAGE = Path(pipeline.__file__).parent

# Lower layers first. A module may import its own folder and any folder of a lower layer;
# folders that share a layer are siblings and may not import each other.
LAYERS: list[set[str]] = [
    {"errors", "clock", "tiers", "text", "warn_once", "defaults", "inputs", "caches"},
    {"fs"},
    {"hosts"},  # what each host is, as data: every floor above reads the registry
    {"scopes"},  # a host scope names a registered host
    {"config"},
    {"store", "render"},
    {"deliver"},  # the fast path: it compares with the records' home and the store's own statement
    {"interchange"},
    {"stages"},
    {"schedule"},
    {"inject"},
    {"integrations", "ui"},
    {"cli"},
]
# The public API (lazy re-exports) and the entry point sit above everything, and so do the old paths that
# third-party stages imported, kept one release as deprecated re-exports.
TOP = {"__init__", "__main__", "moved"}
# Importing the built-in stages registers them with the registry they import: the one cycle on purpose.
BUILTIN_STAGES = {f"pipeline.stages.{name}" for name in ("extract", "rank", "render", "cap", "write")}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every ``pipeline`` module this file imports, resolved to its full name."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only(tree)
    for node in ast.walk(tree):
        if node in type_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module.startswith("pipeline") and module != "pipeline"}


def _type_only(tree: ast.Module) -> set[ast.AST]:
    """Imports under ``if TYPE_CHECKING:``: annotations only, never run, so no dependency at run time."""
    blocks = [node for node in ast.walk(tree) if isinstance(node, ast.If)
              and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    return {child for block in blocks for statement in block.body for child in ast.walk(statement)}


def folder(module: str) -> str:
    return module.split(".")[1]


def layer(module: str) -> int:
    return next(index for index, names in enumerate(LAYERS) if folder(module) in names)


FILES = sorted(PACKAGE.rglob("*.py"))
MODULES = {module_name(path) for path in FILES}
GRAPH = {module_name(path): imports_of(path) for path in FILES}


def test_every_module_belongs_to_a_layer() -> None:
    known = set().union(*LAYERS) | TOP
    assert sorted({folder(module) for module in MODULES if module != "pipeline"} - known) == []


def test_no_import_points_up_or_sideways() -> None:
    wrong = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module != "pipeline" and folder(module) not in TOP
        for target in targets
        if folder(target) != folder(module) and layer(target) >= layer(module)
    ]
    assert wrong == []


def test_no_import_cycles_but_the_stage_registration() -> None:
    cycles = [cycle for cycle in _cycles() if not set(cycle) <= BUILTIN_STAGES | {"pipeline.stages.registry"}]
    assert cycles == []


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_the_public_api_names_every_export_once_and_each_one_loads() -> None:
    declared = _type_checking_names()
    assert sorted(declared) == pipeline.__all__
    for name in pipeline.__all__:
        assert getattr(pipeline, name) is not None, name


def _type_checking_names() -> set[str]:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


# One query reads every profile's tables at once to find the due ones; it lives with the schedule it serves.
# A forget scrubs a host's own SQLite database (Codex's copies of its threads) in place: not our store's tables.
SQL_OUTSIDE_THE_STORE = {"pipeline.schedule.due", "pipeline.fs.host_sqlite"}


def test_only_the_store_runs_sql() -> None:
    """Each table has one module in store/; elsewhere, code asks the store."""
    running = {module_name(path) for path in FILES if ".execute(" in path.read_text(encoding="utf-8")}
    assert sorted(module for module in running if folder(module) != "store") == sorted(SQL_OUTSIDE_THE_STORE)


def test_the_interchange_reaches_the_store_only_through_its_exported_names() -> None:
    """``pipeline.store.__all__`` is the store's face to the floor above it: no module of the store's inside."""
    face = {"pipeline.store", *(f"pipeline.store.{name}" for name in pipeline.store.__all__)}
    inside = [f"{module} -> {target}" for module, targets in GRAPH.items() if module.startswith("pipeline.interchange")
              for target in targets if target.startswith("pipeline.store") and target not in face]
    assert inside == []


def test_every_import_of_ours_names_a_module_that_exists() -> None:
    """Lazy imports inside functions too: mypy, told to ignore missing imports for third parties, would not say."""
    missing = [f"{module} -> {target}" for module, targets in GRAPH.items() for target in targets
               if target not in MODULES]
    assert missing == []


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_still_works_and_says_it_is_deprecated(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        aliased = importlib.import_module(old)
    assert aliased is importlib.import_module(new)
    assert old not in MODULES, "an old path is an alias, never a file beside the module that replaced it"


def test_an_old_path_gives_its_names_to_a_from_import():
    sys.modules.pop("pipeline.store.fact", None)
    with pytest.warns(DeprecationWarning):
        from pipeline.store.fact import Fact
    assert Fact is pipeline.Fact


def test_no_module_is_over_400_lines():
    """A module that grows past this does more than one job: split it by job, as config/ and store/ are."""
    long = {module_name(path): n for path in FILES if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


# Strings spelled like a host that name something else: a command (`persona mcp`, `persona hermes install`), the
# directory Mnemosyne derives a bank name from, Hermes' memory format (the importer's name for USER.md).
NOT_A_HOST = {
    "pipeline.cli.root": {"mcp", "hermes"},
    "pipeline.cli.agent_cmds": {"mcp", "hermes"},
    "pipeline.fs.banks": {"hermes"},
    "pipeline.interchange.formats.hermes": {"hermes"},
    "pipeline.integrations.onboarding": {"hermes"},
    # the old assistants an import prompt is for (Google's Gemini app, Microsoft's Copilot), not the coding hosts
    "pipeline.interchange.import_prompt": {"gemini", "copilot"},
    # the editor a fact names ("uses Zed"), one of a slot's words, not the coding host
    "pipeline.store.slot_words": {"zed"},
}


def host_names() -> set[str]:
    from pipeline.hosts import registry

    return set(registry.HOSTS) | set(registry.presets())


def string_constants(tree: ast.Module) -> set[str]:
    """Every string constant of the module, its docstrings left out (prose may name a host)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def test_only_the_hosts_folder_names_a_host():
    """A new host is one module in pipeline/hosts/ and its line in the registry; nothing else spells its name."""
    names = host_names()
    named = {module_name(path): sorted(found) for path in FILES if not module_name(path).startswith("pipeline.hosts")
             if (found := string_constants(ast.parse(path.read_text(encoding="utf-8"))) & names
                 - NOT_A_HOST.get(module_name(path), set()))}
    assert named == {}


def test_the_host_rule_sees_a_host_named_in_code_and_not_in_prose():
    tree = ast.parse('"""Writes for codex."""\nHOSTS = ("codex",)  # and cursor\n')
    assert string_constants(tree) & host_names() == {"codex"}


# What reads the environment or the user's home: a recorded answer is keyed by what its run read, so every such
# read goes through pipeline/inputs.py, which notes it (a child process's environment is handed on, not read).
ENVIRONMENT_READS = ("os.environ", "os.getenv", "Path.home()", ".expanduser(", "os.path.expanduser")


def test_only_the_inputs_module_reads_the_environment_or_the_home():
    reading = {module_name(path): [needle for needle in ENVIRONMENT_READS if needle in path.read_text(encoding="utf-8")]
               for path in FILES if module_name(path) != "pipeline.inputs"}
    assert {module: found for module, found in reading.items() if found} == {}


# Copies live in one home: a cache in pipeline/caches.py, a record in pipeline/fs/records.py. A record's writer
# is the records module's: nothing else names the records folder.
def test_only_the_records_module_names_the_records_folder():
    naming = [module_name(path) for path in FILES if '"records"' in path.read_text(encoding="utf-8")]
    assert naming == ["pipeline.fs.records"]


# Every in-process cache is declared in pipeline/caches.py, with its owner, key, bound and whether it holds fact text
# (a forget clears those that do). A functools cache, or a module-level map a module fills as it runs, is a copy
# nobody declared: no bound, and a forget never reaches it. These module-level maps are no copy of anything.
NOT_CACHES = {
    "pipeline.stages.registry._STAGES": "the stage registry, filled as stage modules load",
    "pipeline.interchange.formats.registry._FORMATS": "the import formats' registry, filled as they load",
    "pipeline.inputs._CHECKERS": "each input kind's checker, registered as its module loads",
    "pipeline.store.postgres.backend._STATE": "each pooled connection's own settings, weakly: they leave with it",
    "pipeline.store.postgres.backend._SILENT": "until when a server that stopped answering is not asked again",
}
FUNCTOOLS_CACHES = {"cache", "lru_cache", "cached_property"}
EMPTY_MAPS = {"dict", "OrderedDict", "defaultdict", "WeakKeyDictionary", "WeakValueDictionary", "set"}
DECLARING = {"memo", "cache", "per_object", "holders"}


def undeclared_caches(module: str, tree: ast.Module) -> list[str]:
    """Where ``tree`` keeps a cache outside pipeline/caches.py: each functools cache and module-level memo map."""
    found = [f"{module}: functools.{node.attr}" for node in ast.walk(tree) if isinstance(node, ast.Attribute)
             and isinstance(node.value, ast.Name) and node.value.id == "functools" and node.attr in FUNCTOOLS_CACHES]
    found += [f"{module}: from functools import {alias.name}" for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module == "functools"
              for alias in node.names if alias.name in FUNCTOOLS_CACHES]
    for node in tree.body:
        target, value = _assigned(node)
        if target is not None and _empty_map(value) and f"{module}.{target}" not in NOT_CACHES:
            found.append(f"{module}: {target}, a module-level map")
    return found


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _empty_map(value: ast.expr | None) -> bool:
    """``{}``, ``set()``, ``dict()``, ``OrderedDict()``, a weak map...: a map made empty to be filled later."""
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Call) and not value.args:
        called = value.func
        name = called.attr if isinstance(called, ast.Attribute) else called.id if isinstance(called, ast.Name) else ""
        return name in EMPTY_MAPS
    return False


def test_every_cache_is_declared_in_the_caches_module():
    found = [problem for path in FILES if module_name(path) != "pipeline.caches"
             for problem in undeclared_caches(module_name(path), ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_cache_rule_sees_each_kind_of_undeclared_cache_and_not_a_table():
    source = ("import functools\nfrom functools import cache, partial\nimport weakref\n"
              "from collections import OrderedDict\n"
              "@functools.lru_cache(maxsize=4)\ndef f(x): return x\n"
              "_SEEN: dict[str, int] = {}\n_KEPT = OrderedDict()\n_WEAK = weakref.WeakValueDictionary()\n"
              "TABLE = {'a': 1}\nKEPT = caches.cache('m.kept', owner='run', key='k', bound=1, holds_text=False)\n"
              "def g():\n    local = {}\n    return local\n")
    assert undeclared_caches("pipeline.m", ast.parse(source)) == [
        "pipeline.m: functools.lru_cache", "pipeline.m: from functools import cache",
        "pipeline.m: _SEEN, a module-level map", "pipeline.m: _KEPT, a module-level map",
        "pipeline.m: _WEAK, a module-level map"]


# An object's own map, kept between its calls, is a cache too: declared (``caches.per_object(...).new()``), or one
# of these, each no copy of anything (or a copy for the length of one call or one render).
NOT_OBJECT_CACHES = {
    "pipeline.warn_once.ProblemLog._said": "the problems already said, by their wording (never a fact's text)",
    "pipeline.inputs.Recorder.entries": "what one full run read, for the delivery record it writes",
    "pipeline.inputs.Recorder.covered": "the folders one full run listed, for the same record",
    "pipeline.caches.Cache._items": "the cache itself",
    "pipeline.render.prepared.PreparedFacts.used": "one render's work, handed to the declared render.kept cache",
    "pipeline.render.prepared.PreparedFacts.fits": "one render's work, handed to the declared render.kept cache",
    "pipeline.render.prepared.PreparedFacts.counted": "one render's work, handed to the declared render.kept cache",
    "pipeline.render.fair_fit._Search._sizes": "one fit's search, dropped when it returns",
    "pipeline.fs.json_probe.Probe._chars": "one scan's needles",
    "pipeline.fs.json_probe.Probe._relevant": "one scan's needles",
    "pipeline.fs.json_probe.Probe._hiders": "one scan's needles",
    "pipeline.fs.json_probe.Probe._escapes": "one scan's needles",
    "pipeline.integrations.mcp_resources.Watcher._watched": "the subscriptions, with a digest of what each was told",
    "pipeline.integrations.hermes_section.PersonaSection._rooms": "the section's room last recorded, by Hermes home "
                                                                  "(figures, no text)",
    "pipeline.store.postgres.watchdog.Watchdog._armed": "the statements being watched now",
    "pipeline.store.postgres.listen.BlockListener._watchers": "who listens to which block (no text)",
    "pipeline.store.postgres.listen.BlockListener._counts": "announcements heard, by block (no text)",
    "pipeline.store.postgres.locks.Heartbeat._held": "the locks held now",
}


def object_maps(module: str, tree: ast.Module) -> list[str]:
    """Each map an object of ``tree``'s classes makes empty for itself (``self.x = {}``, ``OrderedDict()``...)."""
    found = []
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for node in (inner for method in cls.body if isinstance(method, ast.FunctionDef) for inner in ast.walk(method)):
            target, value = _assigned_attribute(node)
            if target is not None and _empty_map(value):
                found.append(f"{module}.{cls.name}.{target}")
    return found


def _assigned_attribute(node: ast.AST) -> tuple[str | None, ast.expr | None]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    for target in targets:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            return target.attr, value
    return None, None


def test_every_map_an_object_keeps_is_declared_or_no_copy():
    found = [name for path in FILES for name in object_maps(module_name(path), ast.parse(path.read_text("utf-8")))]
    assert sorted(set(found) - set(NOT_OBJECT_CACHES)) == []
    assert sorted(set(NOT_OBJECT_CACHES) - set(found)) == []  # the list names only what is there


def test_the_object_map_rule_sees_an_undeclared_map_and_not_a_declared_one():
    source = ("class Reader:\n    def __init__(self):\n        self._seen: dict[str, str] = {}\n"
              "        self._kept = KEPT.new()\n        self.size = 3\n")
    assert object_maps("pipeline.m", ast.parse(source)) == ["pipeline.m.Reader._seen"]


def declarations(tree: ast.Module) -> list[str]:
    """The names of the caches a module declares (``caches.memo("module.what", ...)`` and its kin)."""
    return [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "caches" and node.func.attr in DECLARING
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]


def test_every_cache_is_named_after_the_module_that_owns_it_and_is_registered():
    from pipeline import caches

    named = {module_name(path): declarations(ast.parse(path.read_text(encoding="utf-8"))) for path in FILES}
    wrong = [f"{module}: {name}" for module, names in named.items() for name in names
             if name.partition(".")[0] != module.rpartition(".")[2] or not name.partition(".")[2]]
    assert wrong == []
    for module in named:
        if named[module]:
            importlib.import_module(module)
    listed = [*(name for names in named.values() for name in names), "caches.erasures"]
    assert sorted(declaration.name for declaration in caches.declared()) == sorted(listed)
