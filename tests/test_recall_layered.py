"""`cairn recall` and `cairn explain` outside any vault serve every configured vault, as the prompt hook does (the
same `serve_layers`: one merge, `name:id` ids, one session across vaults, `projects` and `scopes` honoured); a vault
named or found around the current folder keeps today's one-vault output. And the hook's background re-index builds
the ref the user configured for a vault.

Real HOME, config, cache and state folders under tmp_path; real git vaults registered with `cairn vault add`; the
installed `cairn` run from a third folder."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from cairn.hot import index_path
from helpers.payloads import FITTING_PROMPT, log_entries
from helpers.vaults import REBASE_ID, VaultRepo, run_cairn
from test_hook_layered import (
    BOTH_PROMPT,
    VENV_ID,
    VENV_PROMPT,
    cairn,
    hook,
    org_copy_vault,
    personal_vault,
    register,
    team_and_mine,
    team_vault,
)

REBASE_NAME = "Pull --rebase drops local commits after a force-push"
REBASE_SUMMARY = (
    "If the shared branch was force-pushed, git pull --rebase can silently drop your local commits; "
    "compare with git reflog before you pull."
)
VENV_NAME = "Activate the venv before pip install"
VENV_SUMMARY = "pip install outside the virtualenv puts packages in the system python; activate the venv first."


@pytest.fixture
def home(isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CAIRN_CONFIG", str(tmp_path / "config" / "cairn.toml"))
    return isolated_env


@pytest.fixture
def two(home: Path, tmp_path: Path) -> tuple[VaultRepo, VaultRepo, Path]:
    """The team's vault and mine, registered in that order, and a project folder that is neither."""
    return team_and_mine(tmp_path)


def ok(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """The installed `cairn ARGS` from `cwd` (with `env` added): it succeeds, silently on stderr; its stdout."""
    done = run_cairn(*args, cwd=cwd, env=env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def test_recall_from_a_project_serves_every_configured_vault_as_the_hook_does(
    two: tuple[VaultRepo, VaultRepo, Path],
) -> None:
    team, mine, project = two
    as_json = json.loads(ok("recall", BOTH_PROMPT, "--json", cwd=project))
    hooked = json.loads(hook(project, BOTH_PROMPT, session="h-1", fmt="json"))
    assert [c["id"] for c in as_json["cards"]] == [f"me:{VENV_ID}", "team:docker/layer-cache-order"]
    assert as_json["cards"] == hooked["cards"]  # the same cards, ids, vaults, paths and scores as the hook
    assert as_json["abstained"] is False and "already_injected" not in as_json
    # each vault asked and the commit its answer was read from (`--json` named none)
    heads = [
        {"name": "team", "commit": team.git("rev-parse", "HEAD")},
        {"name": "me", "commit": mine.git("rev-parse", "HEAD")},
    ]
    assert as_json["vaults"] == heads, as_json
    explained = json.loads(ok("explain", BOTH_PROMPT, "--json", cwd=project))["vaults"]
    assert [{"name": s["vault"], "commit": s["commit"]} for s in explained] == heads  # explain --json named none
    venv = as_json["cards"][0]
    assert venv == {
        "id": f"me:{VENV_ID}",
        "name": VENV_NAME,
        "summary": VENV_SUMMARY,
        "path": f"cards/{VENV_ID}.md",
        "score": venv["score"],
        "file": str(mine.root / "cards" / f"{VENV_ID}.md"),
        "vault": "me",
    }
    # each card's path is relative to its own vault: `file` says which one, as the text's full path does
    assert [c["file"] for c in as_json["cards"]] == [
        str(mine.root / "cards" / f"{VENV_ID}.md"),
        str(team.root / "cards" / "docker/layer-cache-order.md"),
    ]
    rebase = json.loads(ok("recall", FITTING_PROMPT, "--json", cwd=project))["cards"]
    assert ok("recall", FITTING_PROMPT, cwd=project) == (
        f"1. {REBASE_NAME}  [team:{REBASE_ID}]  score {rebase[0]['score']:.2f}\n"
        f"   {REBASE_SUMMARY}\n"
        f"   {team.root / 'cards' / REBASE_ID}.md\n"
    )
    assert ok("recall", "bake a chocolate cake with vanilla frosting", cwd=project) == (
        "No card fits this prompt in any configured vault (recall abstained). `cairn explain QUERY` shows why.\n"
    )


def test_a_session_is_one_across_recall_the_hook_and_every_vault(two: tuple[VaultRepo, VaultRepo, Path]) -> None:
    team, mine, project = two
    first = json.loads(ok("recall", VENV_PROMPT, "--json", "--session", "s-1", cwd=project))
    assert ([c["id"] for c in first["cards"]], first["already_injected"]) == ([f"me:{VENV_ID}"], [])
    assert hook(project, VENV_PROMPT, session="s-1") == ""  # the hook's session saw recall's card
    assert ok("recall", VENV_PROMPT, "--session", "s-1", cwd=project) == (
        f"Already given in this session: me:{VENV_ID} (no other card fits this prompt).\n"
    )
    assert hook(project, FITTING_PROMPT, session="s-2") != ""  # the hook's card, recorded as team:...
    assert json.loads(ok("recall", FITTING_PROMPT, "--json", "--session", "s-2", cwd=project)) == {
        "cards": [],
        "abstained": True,
        "vaults": [
            {"name": "team", "commit": team.git("rev-parse", "HEAD")},
            {"name": "me", "commit": mine.git("rev-parse", "HEAD")},
        ],
        "already_injected": [f"team:{REBASE_ID}"],
    }


def test_one_vault_resolved_keeps_bare_ids_and_projects_limit_the_configured_ones(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = team_vault(tmp_path / "team-lessons")
    mine = personal_vault(tmp_path / "my-notes")
    acme = tmp_path / "work" / "acme"
    (acme / "src").mkdir(parents=True)
    other = tmp_path / "work" / "other"
    other.mkdir()
    register(team.root, "team", "--project", str(acme))
    register(mine.root, "me")

    def ids(*args: str, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
        return [c["id"] for c in json.loads(ok("recall", *args, "--json", cwd=cwd, env=env))["cards"]]

    assert ids(FITTING_PROMPT, cwd=acme / "src") == [f"team:{REBASE_ID}"]
    assert ids(FITTING_PROMPT, cwd=other) == []  # the team vault serves acme only, as in the hook
    # explain says which projects: "outside the projects it is limited to" named none, doctor does
    skipped = f"== team ({team.root}) ==\nSkipped: the current folder is outside the projects it is limited to ({acme})"
    explained = ok("explain", FITTING_PROMPT, cwd=other)
    assert skipped in explained, explained
    assert ids(VENV_PROMPT, cwd=other) == [f"me:{VENV_ID}"]
    # one vault resolved (--vault, CAIRN_VAULT, the vault around the current folder): today's output, bare ids
    assert ids(FITTING_PROMPT, "--vault", "team", cwd=acme) == [REBASE_ID]
    assert ids(VENV_PROMPT, cwd=mine.root / "cards") == [VENV_ID]
    text = ok("recall", FITTING_PROMPT, "--vault", "team", cwd=acme)
    assert text.startswith(f"1. {REBASE_NAME}  [{REBASE_ID}]  score ") and text.endswith(f"cards/{REBASE_ID}.md\n")
    # named outside its projects: served all the same (the vault was asked for), with a note the hook would not
    note = (
        f"Note: the prompt hook serves vault 'team' only to agents working under {acme}; the current folder is "
        "outside them.\n"
    )
    for env in (None, {"CAIRN_VAULT": str(team.root)}):
        args = () if env else ("--vault", "team")
        done = run_cairn("recall", FITTING_PROMPT, *args, "--json", cwd=other, env=env)
        assert (done.returncode, done.stderr) == (0, note)
        assert [c["id"] for c in json.loads(done.stdout)["cards"]] == [REBASE_ID]


def test_one_vault_named_keeps_its_configured_scopes_as_the_hook_does(home: Path, tmp_path: Path) -> None:
    """A configured vault limited to scopes serves only those cards however it is asked: the hook, recall and
    explain, by its name or folder (`recall --vault NAME` once served every card of the vault)."""
    mine = personal_vault(tmp_path / "my-notes")
    register(mine.root, "me", "--scope", "docker")
    project = tmp_path / "project"
    project.mkdir()
    compose = "docker compose does not read my .env from the project folder"
    note = "Note: vault 'me' serves only cards of scope docker (its configuration).\n"
    assert hook(project, VENV_PROMPT, session="s-1") == ""  # a python card: out of the vault's scope
    for where in ("me", str(mine.root)):
        done = run_cairn("recall", VENV_PROMPT, "--vault", where, "--json", cwd=project)
        assert (done.returncode, done.stderr, json.loads(done.stdout)["cards"]) == (0, note, [])
        done = run_cairn("recall", compose, "--vault", where, "--json", cwd=project)
        assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["docker/compose-env"]
    rows = json.loads(run_cairn("explain", VENV_PROMPT, "--vault", "me", "--json", cwd=project).stdout)["candidates"]
    assert {r["id"]: r["reason"] for r in rows}[VENV_ID] == "out_of_scope"
    # a scope asked that shares no tag with the vault's: nothing, and why
    done = run_cairn("recall", compose, "--vault", "me", "--scope", "python", "--json", cwd=project)
    assert json.loads(done.stdout) == {"cards": [], "abstained": True, "commit": None}  # no index read
    assert done.returncode == 0 and "so the prompt hook serves nothing from it" in done.stderr
    done = run_cairn("explain", compose, "--vault", "me", "--scope", "python", "--json", cwd=project)
    assert json.loads(done.stdout) == {
        "query": compose,
        "abstained": True,
        "injected": [],
        "candidates": [],
        "skipped": "scope",
        "commit": None,  # no index read, as recall says it
    }


def test_explain_shows_each_vault_under_its_heading(two: tuple[VaultRepo, VaultRepo, Path]) -> None:
    team, mine, project = two
    data = json.loads(ok("explain", BOTH_PROMPT, "--json", cwd=project))
    assert (data["query"], data["abstained"]) == (BOTH_PROMPT, False)
    assert data["injected"] == [f"me:{VENV_ID}", "team:docker/layer-cache-order"]
    assert [(v["vault"], v["path"], v["injected"]) for v in data["vaults"]] == [
        ("team", str(team.root), ["team:docker/layer-cache-order"]),
        ("me", str(mine.root), [f"me:{VENV_ID}"]),
    ]
    for section in data["vaults"]:
        assert section["candidates"] and all(r["id"].startswith(section["vault"] + ":") for r in section["candidates"])
    text = ok("explain", VENV_PROMPT, cwd=project)
    lines = text.splitlines()
    assert lines[0] == (
        f"Across 2 configured vault(s): injected me:{VENV_ID} (at most 3 in total; each vault's own thresholds)."
    )
    team_at, me_at = lines.index(f"== team ({team.root}) =="), lines.index(f"== me ({mine.root}) ==")
    assert 0 < team_at < me_at
    assert lines[team_at + 2] == "Abstained: nothing fits."
    assert lines[me_at + 2] == f"Injected: me:{VENV_ID}"
    assert lines[me_at + 5].split()[-2:] == ["injected", f"me:{VENV_ID}"]
    # one vault named: today's output, bare ids, no headings
    single = ok("explain", VENV_PROMPT, "--vault", "me", cwd=project)
    assert "==" not in single and f"Injected: {VENV_ID}\n" in single
    single_json = json.loads(ok("explain", VENV_PROMPT, "--vault", "me", "--json", cwd=project))
    assert single_json["injected"] == [VENV_ID]  # as the configured vaults' and MCP explain's JSON give it


def test_the_merge_leaves_the_second_copy_out_and_explain_says_why(home: Path, tmp_path: Path) -> None:
    team = team_vault(tmp_path / "team-lessons")
    org = org_copy_vault(tmp_path / "org-lessons", team)
    register(org.root, "org")
    register(team.root, "team")
    project = tmp_path / "project"
    project.mkdir()
    cards = json.loads(ok("recall", FITTING_PROMPT, "--json", cwd=project))["cards"]
    assert [c["id"] for c in cards] == ["org:vcs/rebase-after-force-push"]  # listed first: org wins
    data = json.loads(ok("explain", FITTING_PROMPT, "--json", cwd=project))
    team_rows = {r["id"]: r for r in data["vaults"][1]["candidates"]}
    assert (team_rows[f"team:{REBASE_ID}"]["decision"], team_rows[f"team:{REBASE_ID}"]["reason"]) == (
        "rejected",
        "same_lesson",
    )
    # which vault's card hides it (it was just `same_lesson`, naming neither the card nor the vault that won)
    assert team_rows[f"team:{REBASE_ID}"]["same_as"] == "org:vcs/rebase-after-force-push"
    text = ok("explain", FITTING_PROMPT, cwd=project).splitlines()
    at = text.index(f"== team ({team.root}) ==")
    assert text[at + 2] == "Injected: none after the merge across vaults."
    assert text[at + 5].split()[-5:] == [
        "rejected",
        "same_lesson",
        "(as",
        "org:vcs/rebase-after-force-push)",
        f"team:{REBASE_ID}",
    ]


def _gone(name: str, root: Path) -> str:
    return (
        f"configured vault {name!r} at {root} is not a folder (moved or deleted?); if it moved: `cairn vault add "
        f"NEW_PATH --name {name} --replace`; if it is gone: `cairn vault remove {name}`"
    )


def test_a_configured_vault_that_moved_is_named_on_stderr_the_others_serve(
    two: tuple[VaultRepo, VaultRepo, Path], tmp_path: Path
) -> None:
    _, mine, project = two
    mine.root.rename(tmp_path / "moved")
    done = cairn("recall", FITTING_PROMPT, "--json", cwd=project)
    assert done.returncode == 0
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == [f"team:{REBASE_ID}"]
    assert done.stderr == f"Warning: vault 'me' serves nothing: {_gone('me', mine.root)}\n"
    explained = cairn("explain", FITTING_PROMPT, cwd=project)
    assert f"== me (unusable) ==\nSkipped: configured vault 'me' at {mine.root} is not a folder" in explained.stdout


def test_a_configured_vault_whose_index_cannot_be_opened_is_named_on_stderr_the_others_serve(
    two: tuple[VaultRepo, VaultRepo, Path],
) -> None:
    """Bug fixed: a vault whose index the system refuses to open (no permission; here a file in place of its cache
    folder, which root meets as well) made `cairn recall` one `Error: File exists (...)` line, with none of the
    other vaults' cards, which the hook serves all the same. It is one warning line now, as a moved vault's is."""
    _, mine, project = two
    folder = index_path(mine.root).parent
    shutil.rmtree(folder)
    folder.write_text("not a folder")
    done = cairn("recall", FITTING_PROMPT, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == [f"team:{REBASE_ID}"]
    assert done.stderr.startswith(f"Warning: vault 'me' serves nothing: File exists ({folder})"), done.stderr
    assert f"team:{REBASE_ID}" in hook(project, FITTING_PROMPT, session="as-the-hook")  # the hook serves it too


def test_the_hook_reindexes_the_configured_ref_in_the_background(home: Path, tmp_path: Path) -> None:
    """A vault served from `refs/heads/stable`: a card committed to main is never served; one committed to stable
    makes the index stale, the hook serves nothing and re-indexes in the background, from stable, then serves it."""
    team = team_vault(tmp_path / "team-lessons")  # indexed from main, which stable starts at
    team.git("branch", "stable")
    register(team.root, "team", "--ref", "refs/heads/stable")
    project = tmp_path / "project"
    project.mkdir()
    assert json.loads(hook(project, FITTING_PROMPT, session="s-0", fmt="json"))["cards"][0]["id"] == (
        f"team:{REBASE_ID}"
    )
    team.write("python/main-only", "Unreviewed lesson on tox envs", "tox recreates envs when tox.ini changes.")
    team.commit("On main, not on stable")
    team.git("checkout", "-q", "stable")
    team.write("python/pytest-fixtures", "Pytest fixtures scope", "A session-scoped pytest fixture is built once.")
    stable = team.commit("Reviewed, on stable")
    team.git("checkout", "-q", "main")  # the working tree is back on main: the hook must still read stable
    prompt = "is a session-scoped pytest fixture built once"
    assert (
        hook(project, prompt, session="s-1", fmt="json") == '{"cards": [], "abstained": true, "already_injected": []}\n'
    )
    (line,) = log_entries()[-1]["vaults"]
    assert (line["ref"], line["stale"]) == ("refs/heads/stable", True)
    deadline = time.monotonic() + 60
    got: list[str] = []
    while time.monotonic() < deadline and not got:
        time.sleep(0.5)
        got = [c["id"] for c in json.loads(hook(project, prompt, session="s-2", fmt="json"))["cards"]]
    assert got == ["team:python/pytest-fixtures"]
    (line,) = log_entries()[-1]["vaults"]
    assert (line["commit"], line["stale"]) == (stable, False)
    tox = "tox recreates envs when tox.ini changes"
    assert json.loads(hook(project, tox, session="s-3", fmt="json"))["cards"] == []  # main's card: never served


def test_ref_head_and_stdin_reach_every_configured_vault(two: tuple[VaultRepo, VaultRepo, Path]) -> None:
    """An author tries a branch before it is merged: `--ref HEAD` reads each vault's HEAD, ids still `name:id`."""
    _, mine, project = two
    mine.git("checkout", "-q", "-b", "new-lesson")
    mine.write("python/pytest-fixtures", "Pytest fixtures scope", "A session-scoped pytest fixture is built once.")
    mine.commit("Under review")
    prompt = "is a session-scoped pytest fixture built once"

    def ids(*args: str, stdin: str | None = None) -> list[str]:
        done = run_cairn("recall", *args, "--json", cwd=project, input=stdin)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return [c["id"] for c in json.loads(done.stdout)["cards"]]

    assert ids(prompt) == []  # main, the served ref, does not have it
    assert ids(prompt, "--ref", "HEAD") == ["me:python/pytest-fixtures"]
    assert ids("-", stdin=VENV_PROMPT + "\n") == [f"me:{VENV_ID}"]


def test_outside_any_vault_an_uncommitted_card_is_named_with_the_command_that_asks_it(
    two: tuple[VaultRepo, VaultRepo, Path],
) -> None:
    """An author who edits a card as explain advised and asks again from a project got the same "nothing fits" and
    no word of the uncommitted file, which recall and explain run in the vault say; the command they name works."""
    _, mine, project = two
    mine.write("python/pytest-fixtures", "Pytest fixtures scope", "A session-scoped pytest fixture is built once.")
    prompt = "is a session-scoped pytest fixture built once"
    for command, reads in (("explain", "reads the card files"), ("recall", "reads the card files as they are")):
        done = run_cairn(command, prompt, cwd=project)
        assert done.returncode == 0, done.stderr
        assert done.stderr == (
            "Note: vault 'me': cards/python/pytest-fixtures.md in the vault's folder is not committed, and agents are "
            f"served main only once it holds them; `cairn {command} --worktree QUERY` {reads}.\n"
        )
        asked = ok(command, "--worktree", prompt, cwd=project)  # as the note says
        assert "me:python/pytest-fixtures" in asked.splitlines()[0]  # "1. ... [ID]", "Across ...: injected ID"
    assert run_cairn("recall", prompt, "--json", cwd=project).stderr == ""  # JSON: stdout alone


def test_no_usable_configured_vault_is_an_error_that_says_why(
    two: tuple[VaultRepo, VaultRepo, Path], tmp_path: Path
) -> None:
    team, mine, project = two
    team.root.rename(tmp_path / "team-moved")
    mine.root.rename(tmp_path / "mine-moved")
    for command in ("recall", "explain"):
        done = cairn(command, FITTING_PROMPT, cwd=project)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"Error: team: {_gone('team', team.root)}; me: {_gone('me', mine.root)}\n"


def test_show_takes_an_id_as_recall_prints_it(two: tuple[VaultRepo, VaultRepo, Path]) -> None:
    """`NAME:ID` copied from recall, explain or the hook names the vault; a card it lacks points at that vault's list."""
    _, _, project = two
    [card] = json.loads(ok("recall", VENV_PROMPT, "--json", cwd=project))["cards"]
    shown = json.loads(ok("show", card["id"], "--json", cwd=project))
    assert (shown["id"], shown["name"]) == (VENV_ID, VENV_NAME)
    assert ok("show", card["id"], cwd=project).startswith(f"{VENV_NAME}\nid: {VENV_ID}    path: cards/{VENV_ID}.md")
    assert json.loads(ok("show", card["id"], "--vault", "me", "--json", cwd=project))["id"] == VENV_ID
    missing = cairn("show", "team:git/no-such-card", cwd=project)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.startswith("Error: no card 'git/no-such-card' at ")
    assert "`cairn list --vault team` shows the cards agents are served" in missing.stderr
    other = cairn("show", card["id"], "--vault", "team", cwd=project)  # another vault named: the id is taken whole
    assert other.returncode == 1 and f"no card {card['id']!r}" in other.stderr


def test_worktree_shows_an_authors_uncommitted_card_the_hook_never_serves(
    two: tuple[VaultRepo, VaultRepo, Path],
) -> None:
    """`--worktree` reads the files being written, in one vault or across the configured ones; the hook and plain
    recall serve the committed served ref only."""
    _, mine, project = two
    mine.write("python/pytest-fixtures", "Pytest fixtures scope", "A session-scoped pytest fixture is built once.")
    prompt = "is a session-scoped pytest fixture built once"

    def ids(*args: str, cwd: Path) -> list[str]:
        return [c["id"] for c in json.loads(ok("recall", prompt, "--json", *args, cwd=cwd))["cards"]]

    assert ids(cwd=mine.root) == [] and ids(cwd=project) == []
    assert ids("--worktree", cwd=mine.root) == ["python/pytest-fixtures"]
    assert ids("--worktree", cwd=project) == ["me:python/pytest-fixtures"]
    explained = json.loads(ok("explain", prompt, "--worktree", "--json", cwd=mine.root))
    assert explained["candidates"][0]["id"] == "python/pytest-fixtures"
    assert explained["candidates"][0]["decision"] == "injected"
    assert json.loads(hook(project, prompt, session="s-w", fmt="json"))["cards"] == []
    both = cairn("recall", prompt, "--worktree", "--ref", "HEAD", cwd=project)
    assert both.returncode == 2 and "give --ref or --worktree, not both" in both.stderr


def test_two_names_of_one_lesson_are_one_key_whatever_their_width_accents_case_or_spacing() -> None:
    """The layered merge gives a lesson once: `serve.lesson_keys` folds a name as it folds a summary (NFKC, case,
    punctuation, spacing). A name typed in full-width letters or with its accents as separate marks is the same
    lesson's name (a fold of the summary alone let the name through unfolded, and no test saw it)."""
    from types import SimpleNamespace
    from typing import Any

    from cairn.hot.serve import lesson_keys

    def keys(name: str, summary: str) -> tuple[str, str]:
        card: Any = SimpleNamespace(name=name, summary=summary)
        return lesson_keys(card)

    assert (
        keys("Ｇｉｔ  Rebase — résume", "one")[0] == keys("git rebase: re\u0301sume", "two")[0] == "git rebase résume"
    )
    assert keys("运维，日志", "one")[1] == keys("other", "ONE.")[1] == "one"
    assert keys("git rebase", "")[0] != keys("git merge", "")[0]
