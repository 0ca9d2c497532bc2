"""What every command shares: the --vault and --json options, the error funnel, progress and output helpers."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from cairn.errors import CairnError
from cairn.terminal import clean
from cairn.vault import Vault, find_vault

F = TypeVar("F", bound=Callable[..., Any])

vault_option = click.option(
    "--vault",
    "vault_path",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="The vault (default: $CAIRN_VAULT, else the vault around the current folder).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def errors_to_exit(func: F) -> F:
    """Translate Cairn's exceptions into `Error: ...` on stderr and exit 1, once, at the edge."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CairnError as exc:
            raise click.ClickException(clean(str(exc))) from None
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise click.ClickException(clean(f"{exc.strerror or exc}{where}")) from None

    return wrapper  # type: ignore[return-value]


def open_vault(vault_path: str | None) -> Vault:
    return find_vault(vault_path)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False))


def echo(text: str = "", err: bool = False) -> None:
    """Human output: card text is cleaned of terminal escapes."""
    click.echo(clean(text), err=err)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback drawing a bar on a terminal (stderr) and nothing elsewhere."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True)
            bar.__enter__()
            state["bar"] = bar
            state["pos"] = 0
        bar.update(done - state["pos"])
        state["pos"] = done

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)
