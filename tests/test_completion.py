"""`cairn completion SHELL` prints the script click's `_CAIRN_COMPLETE=<shell>_source cairn` prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cairn.config import toml_loads
from cairn.hot.vault import find_vault
from cairn.index.build import index_file_for
from helpers.cli import invoke_cli
from helpers.shells import Tab, fish_tab, shell_env, zsh_tab
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
    # click before 8.4.2 ends the script it prints with a blank line: the tests allow click>=8.2
    assert by_env.stdout in (printed.stdout, printed.stdout + "\n")
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
    shutil.rmtree(index_file_for(find_vault(unindexed.root)).parent)  # `vault add` built it: a vault with none
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


def test_cairn_does_not_install_the_click_whose_completion_skips_a_groups_commands() -> None:
    """Bug fixed: pyproject allowed click 8.2.0, whose completion offers the group's command names again after one of
    them (pallets/click#2906): with it, `cairn vault remove <Tab>` offered no vault name and the test above failed."""
    pyproject = toml_loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "click>=8.1,!=8.2.0" in pyproject["project"]["dependencies"]


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


def _configure_team_and_notes(tmp_path: Path, vault_repo: VaultRepo) -> None:
    """The two-card vault as `team` (with a card whose id holds a comma), and a one-card `notes`, both indexed."""
    make_vault(vault_repo)
    vault_repo.write(
        COMMA_ID, "Restore the cache after the lockfile", "Key the CI cache on the lockfile, otherwise it goes stale."
    )
    vault_repo.commit("A card whose id holds a comma")
    notes = VaultRepo(tmp_path / "notes")
    notes.write_raw("cairn.toml", "")
    notes.write("git/x", "A git note", "Something to know about git.")
    notes.commit()
    for name, vault in (("team", vault_repo), ("notes", notes)):  # in-process: what is tested is the Tab
        assert invoke_cli(["vault", "add", str(vault.root), "--name", name], cwd=tmp_path).returncode == 0
        assert invoke_cli(["index", "--vault", name], cwd=tmp_path).returncode == 0


COMMA_ID = "ci/cache,restore"  # a plain id (id-text takes a comma); fish's script splits its replies at commas
TEAM_IDS = ["docker/layer-cache-order", REBASE_ID]
# The lines both shells are asked (a Tab at the end of each), after the command name's: every id, NAME:ID whole and
# begun, a comma's id, a value after an option's `=` and after its blank.
IDS_AND_VAULTS = [
    "cairn show ",
    "cairn show team:",
    "cairn show team:g",
    "cairn show notes:",
    "cairn show team:ci/",
    "cairn show --vault=te",
    "cairn show --vault te",
]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
def test_the_zsh_script_completes_commands_card_ids_and_name_colon_id(tmp_path: Path, vault_repo: VaultRepo) -> None:
    """zsh as a user has it after `eval "$(cairn completion zsh)"`, a Tab typed in its line editor. `_describe`
    reads `VALUE:DESCRIPTION`, so a command (sent with its help) must come back without it, and a `NAME:ID` (no
    help, so compadd) whole.
    Bug fixed: `cairn show --vault=te<Tab>` gave `cairn show team`: zsh put each reply in place of the whole word,
    `--vault=` lost (click completes the part after the `=`), and `--vault=FOLDER`, `--body-file=FILE` nothing."""
    _configure_team_and_notes(tmp_path, vault_repo)
    lines = [
        "cairn sh",
        "cairn show --vau",
        *IDS_AND_VAULTS,
        f"cairn add --body-file={tmp_path}/notes/cairn.t",
        f"cairn list --vault={tmp_path}/vau",
    ]
    tabs = zsh_tab(lines, tmp_path, tmp_path / "zsh")
    assert tabs[:-2] == [
        Tab(["show"], "cairn show "),
        Tab(["--vault"], "cairn show --vault "),
        Tab([f"team:{COMMA_ID}", *(f"team:{i}" for i in TEAM_IDS), "notes:git/x"], "cairn show "),
        Tab([f"team:{COMMA_ID}", *(f"team:{i}" for i in TEAM_IDS)], "cairn show team:"),
        Tab([f"team:{REBASE_ID}"], f"cairn show team:{REBASE_ID} "),
        Tab(["notes:git/x"], "cairn show notes:git/x "),
        Tab([f"team:{COMMA_ID}"], f"cairn show team:{COMMA_ID} "),
        Tab(["team"], "cairn show --vault=team "),
        Tab(["team"], "cairn show --vault team "),
    ]
    # _path_files completes these (a compadd for each folder of the path): what matters is the line
    assert [tab.line for tab in tabs[-2:]] == [
        f"cairn add --body-file={tmp_path}/notes/cairn.toml ",
        f"cairn list --vault={tmp_path}/vault/",
    ]
    inside = zsh_tab(["cairn show ", "cairn show g"], vault_repo.root, tmp_path / "zsh-in-vault")
    assert inside == [Tab([COMMA_ID, *TEAM_IDS], "cairn show "), Tab([REBASE_ID], f"cairn show {REBASE_ID} ")]


@pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish")
def test_the_fish_script_completes_commands_card_ids_and_name_colon_id(tmp_path: Path, vault_repo: VaultRepo) -> None:
    """fish as a user has it after `cairn completion fish | source`, asked with `complete -C` what a Tab offers.
    Bugs fixed: an id holding a comma was offered cut at it (`ci/cache`: the script split each reply at every comma);
    `cairn show --vault=te<Tab>`, `--vault=FOLDER` and `--body-file=FILE` offered nothing (fish keeps the replies that
    start with the whole word, and click completes the part after the `=`)."""
    _configure_team_and_notes(tmp_path, vault_repo)
    lines = [
        "cairn sh",
        *IDS_AND_VAULTS,
        f"cairn list --vault={tmp_path}/vau",
        f"cairn list --vault {tmp_path}/vau",
        f"cairn add --body-file={tmp_path}/notes/cairn.t",
    ]
    offered = fish_tab(lines, tmp_path)
    assert offered[0] == ["show\tPrint the whole card ID with its provenance."]
    assert offered[1:] == [  # fish sorts what it offers
        ["notes:git/x", f"team:{COMMA_ID}", *(f"team:{i}" for i in TEAM_IDS)],
        [f"team:{COMMA_ID}", *(f"team:{i}" for i in TEAM_IDS)],
        [f"team:{REBASE_ID}"],
        ["notes:git/x"],
        [f"team:{COMMA_ID}"],
        ["--vault=team"],
        ["team"],
        [f"--vault={tmp_path}/vault/\tDirectory"],
        [f"{tmp_path}/vault/\tDirectory"],
        [f"--body-file={tmp_path}/notes/cairn.toml"],
    ]
    assert fish_tab(["cairn show ", "cairn show g"], vault_repo.root) == [[COMMA_ID, *TEAM_IDS], [REBASE_ID]]
    # as the README has a fish user install it, run in fish: the script written once where fish finds completions,
    # which `$XDG_CONFIG_HOME` moves (this test sets it: `~/.config/fish/completions`, the line it gave, was not read)
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    [line] = re.findall(r"run `(mkdir -p \$__fish_config_dir[^`]+)` once", readme)
    installed = subprocess.run(
        ["fish", "-c", line], env=shell_env(), cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert installed.returncode == 0, installed.stderr
    assert (Path(os.environ["XDG_CONFIG_HOME"]) / "fish" / "completions" / "cairn.fish").is_file()
    assert fish_tab(["cairn show team:g"], tmp_path, installed=True) == [[f"team:{REBASE_ID}"]]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
def test_the_zsh_line_the_docs_give_comes_after_compinit(tmp_path: Path) -> None:
    """Bug fixed: the README and `cairn completion --help` had the `eval` in ~/.zshrc and nothing more; in a zsh
    whose completion is not started (a new Mac's), it fails: `command not found: compdef`. They say after compinit."""
    env = {"PATH": f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"}
    line = 'eval "$(cairn completion zsh)"'
    bare = _run(["zsh", "-f", "-c", line], env, tmp_path)
    assert "command not found: compdef" in bare.stderr
    started = _run(["zsh", "-f", "-c", f"autoload -Uz compinit && compinit -u -D; {line}"], env, tmp_path)
    assert (started.returncode, started.stderr) == (0, "")
    root = Path(__file__).resolve().parents[1]
    for doc in (root / "README.md").read_text(), (root / "README.zh-CN.md").read_text():
        assert "`autoload -Uz compinit && compinit`" in doc
    assert f"{line}           # in ~/.zshrc, after compinit" in invoke_cli(["completion", "--help"]).stdout
