"""The hook command `cairn install` writes: every argument survives the shell it runs in, word for word."""

from __future__ import annotations

import shlex

import pytest

from cairn import install


@pytest.mark.parametrize(
    "vault",
    ["~/team lessons", "/srv/it's here", "/plain/path", 'a "quoted" $HOME `x`', "/home/me/~backup", ""],
)
def test_hook_command_quotes_every_argument(vault: str) -> None:
    command = install.hook_command("codex", vault=vault or None, scope="py, web", executable="/opt/my tools/cairn")
    expected = ["/opt/my tools/cairn", "hook", "--format", "codex"]
    expected += ["--vault", vault] if vault else []
    assert shlex.split(command) == [*expected, "--scope", "py, web", *install.NEVER_BLOCKS]


def test_plain_arguments_stay_unquoted() -> None:
    assert install.hook_command("claude-code", vault="/srv/lessons") == (
        "cairn hook --format claude-code --vault /srv/lessons"
    )
