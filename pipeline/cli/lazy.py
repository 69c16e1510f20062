"""Commands built on first use: ``persona status`` imports and builds status alone, not every command.

typer builds every option of every command before it parses anything (the
signatures and annotations of some fifty functions), and each command's
module imports what it needs. A :class:`LazyGroup` knows each command's
module by name, imports it when the command is invoked, and builds only that
command. ``persona --help`` imports every module but builds none: the list
needs only each command's help text.
"""

from __future__ import annotations

import inspect
from difflib import get_close_matches
from importlib import import_module
from typing import Any, ClassVar

import typer
import typer.main
from typer._click.exceptions import UsageError
from typer.core import TyperCommand
from typer.models import CommandInfo, TyperInfo

from .. import caches
from .common import PersonaGroup

try:  # typer 0.29's own hook for an option's coercion; without it, typer builds them all, as it always did
    from typer._coercion import build_runtime_param
except ImportError:  # pragma: no cover - another typer
    build_runtime_param = None  # type: ignore[assignment]

Info = CommandInfo | TyperInfo


class LazyGroup(PersonaGroup):
    """The root group; ``modules`` maps each command's name to the module under ``pipeline.cli`` whose
    ``register(app)`` adds it, in the order ``persona --help`` lists them."""

    modules: ClassVar[dict[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        coerce_when_given(self)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.modules, *(name for name in super().list_commands(ctx) if name not in self.modules)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.modules:
            command = coerce_when_given(_build(registered(self.modules[cmd_name])[cmd_name]))
            self.add_command(command, cmd_name)  # built once per process
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as error:  # typer suggests from the commands built so far: here, from every name
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in error.message:
                error.message = f"{error.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The list of commands from their help texts, without building any of them."""
        listed = [(name, _help_only(name, info)) for name, info in self._infos().items()]
        shown = [(name, command) for name, command in listed if not command.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in shown])

    def _infos(self) -> dict[str, Info]:
        return {name: registered(module)[name] for name, module in self.modules.items()}


@caches.memo("lazy.registered", owner="process", key="a command module's name", bound=64)
def registered(module: str) -> dict[str, Info]:
    """What ``pipeline.cli.<module>``'s ``register(app)`` adds, by command name."""
    app = typer.Typer(rich_markup_mode=None)
    import_module(f"{__package__}.{module}").register(app)
    infos: dict[str, Info] = {}
    for command in app.registered_commands:
        assert command.callback is not None
        infos[command.name or typer.main.get_command_name(command.callback.__name__)] = command
    for group in app.registered_groups:
        assert group.name is not None, f"{module}: a group needs a name"
        infos[group.name] = group
    return infos


def _build(info: Info) -> Any:
    """The click command typer would have built for ``info`` as a command of the root."""
    if isinstance(info, CommandInfo):
        return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
    return typer.main.get_group_from_info(info, pretty_exceptions_short=True, suggest_commands=True,
                                          rich_markup_mode=None)


def _help_only(name: str, info: Info) -> TyperCommand:
    """A stand-in with the command's help text and nothing else, for the list of commands."""
    if isinstance(info, CommandInfo):
        text = inspect.cleandoc(info.help) if info.help is not None else inspect.getdoc(info.callback)
        return TyperCommand(name, help=text, short_help=info.short_help, hidden=info.hidden,
                            deprecated=info.deprecated, rich_markup_mode=None)
    solved = typer.main.solve_typer_info_defaults(info)
    return TyperCommand(name, help=solved.help, short_help=solved.short_help, hidden=solved.hidden,
                        deprecated=solved.deprecated, rich_markup_mode=None)


class _WhenGiven:
    """typer's coercion of one parameter, built when the parameter has a value.

    typer builds a pydantic ``TypeAdapter`` for every parameter of the
    command it runs, given or not, only to turn ``None`` into ``None``
    (about a millisecond each, and a dozen per command). An absent value is
    answered as typer's own ``RuntimeParam.coerce`` answers it; a given one
    goes to the coercion typer builds for it.
    """

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        param._runtime_param = build_runtime_param(param.type_descriptor)
        return param._runtime_param.coerce(value, param=param, ctx=ctx)


_WHEN_GIVEN = _WhenGiven()


def coerce_when_given(command: Any) -> Any:
    """``command`` (and its subcommands), each parameter's coercion built only when it is given."""
    if build_runtime_param is None:  # pragma: no cover - another typer
        return command
    for param in command.params:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = _WHEN_GIVEN
    for sub in getattr(command, "commands", {}).values():
        coerce_when_given(sub)
    return command
