"""The table modules hold narrow handles: a ``Database`` (profile, reads, transactions, dialect), not the whole
``PersonaStore``, which composes them (issue 37). Read from the source, as tests/test_layout.py reads imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pipeline.store

STORE = Path(pipeline.store.__file__).parent
# PersonaStore's own module, and the interchange modules that move out of the store (issue 37 point 1).
NOT_TABLES = {"facts.py", "importing.py", "edit.py", "edit_file.py", "facts_file.py", "fact_entry.py"}
MAX_WHOLE_STORE = 10


def whole_store_functions() -> list[str]:
    """``module:function`` of every function in a table module with a parameter annotated ``PersonaStore``."""
    found = []
    for path in sorted(STORE.rglob("*.py")):
        if path.name in NOT_TABLES or "formats" in path.relative_to(STORE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _takes_whole_store(node):
                found.append(f"{path.relative_to(STORE)}:{node.name}")
    return found


def _takes_whole_store(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return any(arg is not None and arg.annotation is not None and "PersonaStore" in ast.unparse(arg.annotation)
               for arg in every)


def test_at_most_ten_table_functions_take_the_whole_store() -> None:
    found = whole_store_functions()
    assert len(found) <= MAX_WHOLE_STORE, found


def test_the_ones_that_do_compose_the_fact_table_with_others() -> None:
    # A replace inserts through PersonaStore.insert_row; a forget erases fact rows and reads the listed facts; a
    # topic's rename lists the facts and moves each as a replace does; an agent's held write, once the user
    # accepts it, is made by the store's own add, promote, replace or demote.
    assert sorted(whole_store_functions()) == ["erasure.py:erase_fact", "erasure.py:erase_profile",
                                               "erasure.py:forget_fact", "held_writes.py:_make",
                                               "supersede.py:replace", "topics.py:_move", "topics.py:rename",
                                               "topics.py:topics"]


def test_the_count_sees_a_quoted_annotation() -> None:
    source = "def f(store: 'PersonaStore', conn: object) -> None: ...\ndef g(db: 'Database') -> None: ..."
    functions = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]
    assert [_takes_whole_store(function) for function in functions] == [True, False]
