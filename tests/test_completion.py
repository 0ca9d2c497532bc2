"""`cairn completion SHELL` prints the script click's `_CAIRN_COMPLETE=<shell>_source cairn` prints."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.cli import invoke_cli
from helpers.vaults import REBASE_ID, VaultRepo, cache_dir, cairn_executable, make_vault, run_cairn


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env={**os.environ, **env}, cwd=cwd, check=False)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_clicks_script_for_the_shell(shell: str, tmp_path: Path) -> None:
    cairn = cairn_executable()
    printed = _run([cairn, "completion", shell], {}, tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "_CAIRN_COMPLETE" in printed.stdout and f"{shell}_complete" in printed.stdout
    by_env = _run([cairn], {"_CAIRN_COMPLETE": f"{shell}_source"}, tmp_path)
    assert by_env.returncode == 0, by_env.stderr
    assert printed.stdout == by_env.stdout
    assert invoke_cli(["completion", shell]).stdout == printed.stdout  # made in-process, not by a second cairn


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_completes_a_command(tmp_path: Path) -> None:
    cairn = cairn_executable()
    script = (
        f'eval "$("{cairn}" completion bash)"; COMP_WORDS=(cairn revi); COMP_CWORD=1; '
        'PATH="$CAIRN_DIR:$PATH" _cairn_completion cairn; echo "${COMPREPLY[@]}"'
    )
    done = _run(["bash", "-c", script], {"CAIRN_DIR": str(Path(cairn).parent)}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["review"]


def test_completion_help_and_a_shell_it_does_not_know() -> None:
    helped = invoke_cli(["completion", "--help"])
    assert helped.returncode == 0
    assert 'eval "$(cairn completion bash)"' in helped.stdout
    unknown = invoke_cli(["completion", "tcsh"])
    assert unknown.returncode == 2
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in unknown.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_completes_card_ids_and_vault_names_from_what_is_built(
    tmp_path: Path, vault_repo: VaultRepo
) -> None:
    """Bug fixed: Tab after `cairn show`, `cairn sync` or `cairn vault remove` offered nothing (nor files): the card
    ids and vault names had no completion. They now come from the index Cairn already built and the user
    configuration; a vault with no index offers nothing and gets none built by a Tab."""
    make_vault(vault_repo)
    assert run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    unindexed = VaultRepo(tmp_path / "notes")
    unindexed.write_raw("cairn.toml", "")
    unindexed.write("ops/x", "A note", "Something to know about ops.")
    unindexed.commit()
    assert run_cairn("vault", "add", str(unindexed.root), "--name", "notes", cwd=tmp_path).returncode == 0
    cache = sorted(p.name for p in cache_dir().rglob("*"))

    def complete(*words: str, cwd: Path) -> list[str]:
        return _bash_complete(list(words), cwd)

    assert complete("cairn", "show", "", cwd=vault_repo.root) == ["docker/layer-cache-order", REBASE_ID]
    assert complete("cairn", "show", "--vault", "team", "g", cwd=tmp_path) == [REBASE_ID]
    assert complete("cairn", "show", "", cwd=tmp_path) == ["team:docker/layer-cache-order", f"team:{REBASE_ID}"]
    assert complete("cairn", "show", "--vault", "notes", "", cwd=tmp_path) == []
    assert complete("cairn", "sync", "", cwd=tmp_path) == ["team", "notes"]
    assert complete("cairn", "vault", "remove", "n", cwd=tmp_path) == ["notes"]
    # --vault takes a configured vault's NAME too (README: Tab completes "the configured vaults' names"); a name
    # matching none completes folders, as before
    assert complete("cairn", "list", "--vault", "", cwd=tmp_path) == ["team", "notes"]
    assert complete("cairn", "recall", "--vault", "t", cwd=tmp_path) == ["team"]
    assert complete("cairn", "recall", "--vault", "no", cwd=tmp_path) == ["notes"]
    assert complete("cairn", "lint", "--vault", "not", cwd=vault_repo.root) == ["notes"]
    assert sorted(p.name for p in cache_dir().rglob("*")) == cache  # nothing built, nothing written


def _bash_complete(words: list[str], cwd: Path, line: str | None = None) -> list[str]:
    """What Cairn's bash script replies for COMP_WORDS `words` (the last the one completed), and COMP_LINE `line`
    with the point at its end when given, as bash sets them for a line."""
    cairn = cairn_executable()
    given_line = "" if line is None else f"COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}; "
    script = (
        f'eval "$("{cairn}" completion bash)"; COMP_WORDS=({" ".join(shlex.quote(w) for w in words)}); '
        f"COMP_CWORD={len(words) - 1}; {given_line}"
        'PATH="$CAIRN_DIR:$PATH" _cairn_completion cairn; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = _run(["bash", "-c", script], {"CAIRN_DIR": str(Path(cairn).parent)}, cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_completes_a_name_and_id_that_bash_splits_at_the_colon(
    tmp_path: Path, vault_repo: VaultRepo
) -> None:
    """Bug fixed: `cairn show team:<Tab>` completed nothing in bash, which splits words at the characters of
    COMP_WORDBREAKS (`:` and `=` among them): cairn was asked to complete `:` after an argument `team`. The script
    now joins the words the line holds with no blank between, and gives bash each reply without the part before
    the colon, which bash keeps. COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT are what bash 5 sets for each line
    (read from a real interactive bash)."""
    make_vault(vault_repo)
    assert run_cairn("vault", "add", str(vault_repo.root), "--name", "team", cwd=tmp_path).returncode == 0
    assert run_cairn("index", "--vault", "team", cwd=tmp_path).returncode == 0

    def complete(line: str, *words: str) -> list[str]:
        return _bash_complete(list(words), tmp_path, line)

    # one vault configured: plain ids, and NAME:ID as the user typed it
    assert complete("cairn show team:", "cairn", "show", "team", ":") == ["docker/layer-cache-order", REBASE_ID]
    assert complete("cairn show team:g", "cairn", "show", "team", ":", "g") == [REBASE_ID]
    assert complete("cairn show --vault=te", "cairn", "show", "--vault", "=", "te") == ["team"]
    assert complete("cairn show team : g", "cairn", "show", "team", ":", "g") == []  # blanks between: three words
    other = VaultRepo(tmp_path / "notes")
    other.write_raw("cairn.toml", "")
    other.write("git/x", "A git note", "Something to know about git.")
    other.commit()
    assert run_cairn("vault", "add", str(other.root), "--name", "notes", cwd=tmp_path).returncode == 0
    assert run_cairn("index", "--vault", "notes", cwd=tmp_path).returncode == 0
    assert complete("cairn show notes:", "cairn", "show", "notes", ":") == ["git/x"]
    assert complete("cairn show team:g", "cairn", "show", "team", ":", "g") == [REBASE_ID]
