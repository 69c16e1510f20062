"""`persona config show | set | init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import inputs
from ..errors import ConfigError, PersonaError
from ..fs.locations import default_config_path
from .common import CliState, JsonOption, emit_json, state

config_app = typer.Typer(rich_markup_mode=None, help="Show, edit and create configuration.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")


@config_app.command("show")
def show(
    ctx: typer.Context,
    sources: Annotated[bool, typer.Option("--sources", help="Say where each value came from.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Print every effective setting."""
    from ..config.edit import model_leaves
    from ..config.load import load_settings_with_provenance
    from ..config.provenance import source_of
    from ..config.urls import redact

    cli = state(ctx)
    settings, provenance = load_settings_with_provenance(
        config_files=cli.config_files or None, env_name=cli.env_name, overrides=cli.overrides()
    )
    leaves = [(".".join(path), value, source_of(provenance, path)) for path, value in model_leaves(settings)]
    if as_json:
        data = settings.model_dump(mode="json")
        data["store"]["url"] = redact(data["store"]["url"])
        emit_json({"settings": data, "sources": {k: s for k, _, s in leaves}} if sources else data)
        return
    for key, value, source in leaves:
        value = redact(value)
        shown = repr(value) if isinstance(value, str) and value != value.strip() else value
        line = f"{key} = {shown}"
        typer.echo(f"{line:<60}  # {source}" if sources else line)


def _edit_target(cli: CliState, file: Path | None) -> Path:
    from ..config.files import resolve_config_files

    if file is not None:
        return file
    if cli.config_files:
        return cli.config_files[-1]
    explicit = inputs.environ("MNEMOSYNE_PERSONA_CONFIG")
    named = resolve_config_files(None, environ=inputs.environment()) if explicit else []
    return named[-1] if named else default_config_path()


@config_app.command("set")
def set_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="Dotted key, e.g. cap.token_cap.")],
    value: Annotated[str, typer.Argument(metavar="VALUE", help="New value, read as YAML (900, true, text).")],
    file: Annotated[Path | None, typer.Option("--file", help="File to edit (default: the last config file).")] = None,
) -> None:
    """Set one key in a YAML file, keeping its comments and layout."""
    from ..config.edit import set_config_value

    cli = state(ctx)
    target = _edit_target(cli, file)
    set_config_value(target, key, value, env_name=cli.env_name, protected=_protected(cli))
    typer.echo(f"{target}: set {key}")


def _protected(cli: CliState) -> dict[Path, str]:
    """The store and the persona files: a config edit must never land on one."""
    from ..config.targets import protected_paths

    try:
        return protected_paths(cli.settings(), config_files=False)
    except PersonaError:  # a broken config may be exactly what the user is fixing
        return {}


@config_app.command("init")
def init(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(metavar="PATH", help="Where to write (default: $HERMES_HOME/mnemosyne/persona.yaml)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented config with every key at its default."""
    from ..config.edit import reference_yaml
    from ..fs.read import real_path, regular_file_kind
    from ..fs.write import atomic_write_text, refuse_protected

    target = path or default_config_path()
    if target.exists() and not force:
        raise ConfigError([f"{target} already exists; pass --force to overwrite it"])
    kind = regular_file_kind(target)
    if kind is not None:
        raise ConfigError([f"{target} is {kind}, not a regular file; refusing to replace it"])
    refuse_protected(target, _protected(state(ctx)), what="the reference config")
    try:
        atomic_write_text(real_path(target), reference_yaml(), mode=0o600)
    except OSError as error:
        raise ConfigError([f"cannot write {target}: {error.strerror or error}"]) from None
    typer.echo(f"wrote {target}")
