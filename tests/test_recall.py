"""Recall: admission (status, expiry, supersedes, scope, not_when, session), the three gates, and the commands."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from cairn.hot import recall as recall_module
from cairn.hot.recall import Result, rank, recall
from cairn.hot.settings import settings_of
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from helpers.vaults import VaultRepo

if TYPE_CHECKING:
    from cairn.hot.index import IndexedCard

FIXTURE = Path(__file__).parent / "fixtures" / "recall_vault"
LONG = (
    "Before you touch any files, read the README first. Question from a teammate: {} "
    "Don't change anything yet, just explain."
)


@pytest.fixture
def fixture_vault(vault_repo: VaultRepo) -> VaultRepo:
    shutil.copytree(FIXTURE / "cards", vault_repo.root / "cards", dirs_exist_ok=True)
    vault_repo.commit("fixture cards")
    return vault_repo


def _recall(repo: VaultRepo, query: str, **kwargs: object) -> Result:
    vault = find_vault(repo.root)
    with indexer.open_index(vault) as index:
        return recall(index, query, **kwargs)  # type: ignore[arg-type]


def _reasons(result: Result) -> dict[str, str | None]:
    return {c.card.id: c.reason for c in result.candidates}


def test_english_query_injects_the_fitting_card(fixture_vault: VaultRepo) -> None:
    result = _recall(
        fixture_vault, "git rejects my push after a rebase; can I use git push --force on a shared branch?"
    )
    assert [c.card.id for c in result.injected] == ["git/force-push-safely"]
    assert not result.abstained


def test_chinese_query_injects_the_fitting_card(fixture_vault: VaultRepo) -> None:
    result = _recall(fixture_vault, "切换分支之前怎么暂存未提交的修改？")
    assert [c.card.id for c in result.injected] == ["zh/git-stash"]


def test_mixed_query_injects_the_fitting_card(fixture_vault: VaultRepo) -> None:
    result = _recall(fixture_vault, "git stash 切换分支 暂存修改")
    assert [c.card.id for c in result.injected] == ["zh/git-stash"]


def test_off_topic_query_abstains(fixture_vault: VaultRepo) -> None:
    result = _recall(fixture_vault, "How do I center a div with CSS grid?")
    assert result.abstained and result.injected == ()


def test_long_agent_prompt_neither_dilutes_nor_false_injects(fixture_vault: VaultRepo) -> None:
    question = "why does datetime.utcnow() give a naive datetime that is treated as local time?"
    short = _recall(fixture_vault, question)
    long = _recall(fixture_vault, LONG.format(question))
    assert [c.card.id for c in long.injected] == [c.card.id for c in short.injected] == ["python/utcnow-naive"]
    assert long.injected[0].coverage >= 0.8 * short.injected[0].coverage
    assert _recall(fixture_vault, LONG.format("how do I center a div with CSS grid?")).abstained


def test_expired_card_is_rejected(fixture_vault: VaultRepo) -> None:
    result = _recall(fixture_vault, "python setup.py install deprecated pip install")
    assert _reasons(result)["python/setup-py-install"] == "expired"
    assert result.abstained


def test_expiry_depends_on_the_day(fixture_vault: VaultRepo) -> None:
    import datetime as dt

    result = _recall(fixture_vault, "python setup.py install deprecated pip install", today=dt.date(2020, 1, 15))
    assert [c.card.id for c in result.injected] == ["python/setup-py-install"]


def test_a_card_is_served_on_its_review_due_day_and_refused_the_day_after(fixture_vault: VaultRepo) -> None:
    # verified 2020-01-01, review_after 30d: due 2020-01-31. Kills the mutant `expires_on <= today_iso`.
    import datetime as dt

    query = "python setup.py install deprecated pip install"
    due_day = _recall(fixture_vault, query, today=dt.date(2020, 1, 31))
    assert [c.card.id for c in due_day.injected] == ["python/setup-py-install"]
    day_after = _recall(fixture_vault, query, today=dt.date(2020, 2, 1))
    assert _reasons(day_after)["python/setup-py-install"] == "expired"


def test_superseded_card_is_rejected_and_gives_way(fixture_vault: VaultRepo) -> None:
    result = _recall(fixture_vault, "git push --force after rebasing a shared branch")
    assert _reasons(result)["git/force-push-plain"] == "superseded"
    assert [c.card.id for c in result.injected] == ["git/force-push-safely"]


def test_draft_and_retired_cards_are_never_injected(fixture_vault: VaultRepo) -> None:
    draft = _recall(fixture_vault, "git rebase -i --autosquash fixup commits")
    assert _reasons(draft)["git/rebase-draft"] == "draft"
    retired = _recall(fixture_vault, "retry a timed-out POST request creates the order twice, idempotency key")
    assert _reasons(retired)["http/retry-idempotency"] == "retired"
    assert all(c.card.id != "http/retry-idempotency" for c in retired.injected)


def test_not_when_rejects(fixture_vault: VaultRepo) -> None:
    docker = "stop waits ten seconds: SIGTERM not forwarded by the shell form CMD"
    assert [c.card.id for c in _recall(fixture_vault, "docker " + docker).injected] == ["docker/sigterm-shell-form"]
    result = _recall(fixture_vault, "podman " + docker)
    assert _reasons(result)["docker/sigterm-shell-form"] == "not_when"
    assert result.abstained


def test_a_not_when_word_is_found_in_the_prompt_as_recall_reads_the_prompt(fixture_vault: VaultRepo) -> None:
    """Bug fixed: the prompt and the card's `not_when` words were only lowered, while recall's tokens read full-width
    letters as ASCII: `ｐｏｄｍａｎ` found the Docker card by its other words and passed its `not_when: [podman]`; so did
    a card's accented word a prompt wrote with its accents as separate marks (macOS), `STRASSE` for `Straße`, and
    `tearoom` for a card's full-width `ｔｅａｒｏｏｍ`. Both are read NFKC and case-folded (`recall.caseless`)."""
    docker = "stop waits ten seconds: SIGTERM not forwarded by the shell form CMD"
    result = _recall(fixture_vault, "ｐｏｄｍａｎ " + docker)
    assert _reasons(result)["docker/sigterm-shell-form"] == "not_when"
    assert result.abstained
    fixture_vault.write(
        "misc/cafe",
        "The café kettle trips the fuse",
        "The kettle trips the fuse on the Straße side.",
        not_when=["café", "Straße", "ｔｅａｒｏｏｍ"],
    )
    fixture_vault.commit("accented not_when")
    for said in ("cafe\u0301", "CAFÉ", "STRASSE", "Tearoom", "ＴＥＡＲＯＯＭ"):
        result = _recall(fixture_vault, f"the kettle trips the fuse in the {said}")
        assert _reasons(result)["misc/cafe"] == "not_when", said
    assert _reasons(_recall(fixture_vault, "the kettle trips the fuse in the office"))["misc/cafe"] is None


@pytest.mark.parametrize(
    ("word", "text", "found"),
    [
        ("go", "in my django view", False),  # bug fixed: `go` inside "django" kept a Python card from a Django prompt
        ("go", "we are going to ship", False),
        ("js", "parse the json body", False),
        ("go", "a go service", True),
        ("go", "go: the build fails", True),
        ("js", "upgrade node.js to 22", True),
        ("go", "go_test.go fails", True),
        ("go", "the go-kit logger", True),
        ("go", "go", True),
        ("sqlite", "sqlite3 locks the file", False),
        ("windows server", "on windows server 2019", True),
        ("windows server", "on windows servers", False),
        ("c++", "a c++ build", True),
        ("微服务", "我们的微服务架构", True),
        ("k8s", "the k8s, docker and go clusters", True),
        ("Podman", "podman build fails", True),  # the card's spelling, found in any case
    ],
)
def test_a_not_when_word_is_found_as_a_word_not_inside_another(word: str, text: str, found: bool) -> None:
    card = cast("IndexedCard", SimpleNamespace(not_when=("mercurial", " " + word + " ")))  # all it reads
    assert recall_module.not_when_found(card, text.lower()) == (word if found else None)


def test_scope_rejects_disjoint_cards_only_when_declared(fixture_vault: VaultRepo) -> None:
    query = "git push --force after rebasing a shared branch"
    scoped = _recall(fixture_vault, query, scope=["python"])
    assert _reasons(scoped)["git/force-push-safely"] == "out_of_scope"
    assert scoped.abstained
    assert [c.card.id for c in _recall(fixture_vault, query, scope=["git", "ci"]).injected] == ["git/force-push-safely"]


def test_already_injected_card_is_rejected(fixture_vault: VaultRepo) -> None:
    query = "git push --force after rebasing a shared branch"
    result = _recall(fixture_vault, query, already_injected={"git/force-push-safely"})
    assert _reasons(result)["git/force-push-safely"] == "already_injected"
    assert result.abstained


def test_rejected_candidate_never_takes_a_slot(fixture_vault: VaultRepo) -> None:
    # The superseded card scores above the admissible one: decided over the whole pool, it is skipped.
    result = _recall(fixture_vault, "git push --force after rebasing a shared branch")
    ranked = [c.card.id for c in result.candidates]
    assert ranked.index("git/force-push-plain") < ranked.index("git/force-push-safely")
    assert [c.card.id for c in result.injected] == ["git/force-push-safely"]


def test_a_card_below_one_refused_for_margin_is_never_injected_alone(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the first candidate rejected for a small margin used to let the second one in. Since issue 16
    two cards that fit alike and stand clear of the rest inject together (`recall._group`); the second alone, never."""
    monkeypatch.setattr(recall_module, "PHRASE_SCALE", 1.0)  # the gates alone (the two cards share rare phrases)
    text = "Cache the pip wheel directory between CI runs, keyed on the lockfile hash."
    vault_repo.write("ci/a", "Cache pip wheels in CI", text)
    vault_repo.write("ci/b", "Cache pip wheels in CI runs", text)
    vault_repo.write("ci/c", "Flaky network in CI", "Retry downloads in CI when the network is flaky.")
    vault_repo.commit()
    vault = find_vault(vault_repo.root)
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(settings_of(index), min_lead=0.0, min_coverage=0.5, min_margin=0.3)
        result = recall(index, "cache pip wheel directory CI runs lockfile hash", settings=settings)
    first, second = result.candidates[0], result.candidates[1]
    assert first.margin < 0.3 and second.margin >= 0.3
    assert [c.card.id for c in result.injected] == [first.card.id, second.card.id]
    with indexer.open_index(vault) as index:  # card 3 as close as card 2: the pair no longer stands clear
        settings = dataclasses.replace(settings, min_margin=0.99)
        result = recall(index, "cache pip wheel directory CI runs lockfile hash", settings=settings)
    first, second = result.candidates[0], result.candidates[1]
    assert first.reason == "small_margin" and second.reason == "small_margin"
    assert result.abstained


def test_at_most_max_cards_are_injected(vault_repo: VaultRepo) -> None:
    for n, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo"]):
        vault_repo.write(f"t/{word}", f"Zebra quagga okapi {word}", f"Zebra quagga okapi {word} " + "x " * n)
    vault_repo.commit()
    vault = find_vault(vault_repo.root)
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(
            settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0, min_evidence=0.0
        )
        result = recall(index, "zebra quagga okapi", settings=settings)
    assert len(result.injected) == 3
    assert [c.reason for c in result.candidates[3:]] == ["over_limit", "over_limit"]


def test_rank_is_plain_bm25f_order(fixture_vault: VaultRepo) -> None:
    vault = find_vault(fixture_vault.root)
    with indexer.open_index(vault) as index:
        ranked = rank(index, "git push --force after rebasing a shared branch")
        full = recall(index, "git push --force after rebasing a shared branch", examine_all=True)
    assert [row for row, _ in ranked] == [c.card.row for c in full.candidates]
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def test_recall_command_json(fixture_vault: VaultRepo) -> None:
    done = fixture_vault.invoke("recall", "git push --force after rebasing a shared branch", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["abstained"] is False
    assert [set(c) for c in data["cards"]] == [{"id", "name", "summary", "path", "score", "file"}]
    assert data["cards"][0]["id"] == "git/force-push-safely"
    assert data["cards"][0]["path"] == "cards/git/force-push-safely.md"
    assert data["cards"][0]["file"] == str(fixture_vault.root.resolve() / "cards/git/force-push-safely.md")


def test_recall_json_names_the_commit_its_answer_was_read_from(fixture_vault: VaultRepo) -> None:
    """Bug fixed: `cairn recall --json` named no commit, where `cairn eval --json` and `cairn list --json` name the
    one they read; a script could not tell which commit's cards it was given, or that nothing fit."""
    head = fixture_vault.git("rev-parse", "HEAD")
    for query in ("git push --force after rebasing a shared branch", "How do I center a div with CSS grid?"):
        done = fixture_vault.invoke("recall", "--json", query)
        assert done.returncode == 0 and json.loads(done.stdout)["commit"] == head, done


def test_recall_command_abstains_in_text(fixture_vault: VaultRepo) -> None:
    done = fixture_vault.invoke("recall", "How do I center a div with CSS grid?")
    assert done.returncode == 0 and "abstained" in done.stdout


def test_recall_scope_from_the_environment(fixture_vault: VaultRepo) -> None:
    query = "git push --force after rebasing a shared branch"
    done = fixture_vault.invoke("recall", query, "--json", env={"CAIRN_SCOPE": "python, docker"})
    assert json.loads(done.stdout)["cards"] == []
    done = fixture_vault.invoke("recall", query, "--json", "--scope", "git", env={"CAIRN_SCOPE": "python"})
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["git/force-push-safely"]
    # A Chinese keyboard's commas separate tags too (`python，git` was one tag, so no card met it)
    for tags in ("python，git", "python、git"):
        done = fixture_vault.invoke("recall", query, "--json", env={"CAIRN_SCOPE": tags})
        assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["git/force-push-safely"], tags


def test_a_scope_typed_in_full_width_letters_is_the_cards_scope(fixture_vault: VaultRepo) -> None:
    """Bug fixed: scope tags were compared as typed, so `--scope ｇｉｔ` or `$CAIRN_SCOPE` in the full-width letters a
    Chinese or Japanese input method types refused every `git` card as out of scope and listed none, and a card's
    `scope: [ｋｉｔｃｈｅｎ]` met no `--scope kitchen`. Both are read NFKC now, as recall's tokens read them."""
    query = "git push --force after rebasing a shared branch"
    done = fixture_vault.invoke("recall", query, "--json", "--scope", "ｇｉｔ")
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["git/force-push-safely"]
    done = fixture_vault.invoke("recall", query, "--json", env={"CAIRN_SCOPE": "ｐｙｔｈｏｎ，ｇｉｔ"})
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["git/force-push-safely"]
    listed = fixture_vault.invoke("list", "--scope", "ＧＩＴ").stdout
    assert "git/force-push-safely" in listed, listed
    fixture_vault.write("misc/kettle", "The kettle trips the fuse", "Kettles trip the fuse.", scope=["ｋｉｔｃｈｅｎ"])
    fixture_vault.commit("a full-width scope")
    done = fixture_vault.invoke("recall", "the kettle trips the fuse", "--json", "--scope", "kitchen")
    assert [c["id"] for c in json.loads(done.stdout)["cards"]] == ["misc/kettle"]
    assert "misc/kettle" in fixture_vault.invoke("list", "--scope", "kitchen").stdout


def test_session_gets_each_card_once(fixture_vault: VaultRepo) -> None:
    query = "git push --force after rebasing a shared branch"
    first = json.loads(fixture_vault.invoke("recall", query, "--json", "--session", "s-1").stdout)
    again = json.loads(fixture_vault.invoke("recall", query, "--json", "--session", "s-1").stdout)
    other = json.loads(fixture_vault.invoke("recall", query, "--json", "--session", "s-2").stdout)
    assert [c["id"] for c in first["cards"]] == ["git/force-push-safely"]
    assert first["already_injected"] == []
    head = fixture_vault.git("rev-parse", "HEAD")
    assert again == {"cards": [], "abstained": True, "commit": head, "already_injected": ["git/force-push-safely"]}
    assert [c["id"] for c in other["cards"]] == ["git/force-push-safely"]


def test_an_empty_session_is_refused_not_shared(fixture_vault: VaultRepo) -> None:
    """Bug fixed: `--session "$SESSION"` with SESSION unset recorded every recall in one session named "" (the hook
    and MCP take an empty id as none), and the second said "No card fits this prompt" of a card that fits."""
    query = "git push --force after rebasing a shared branch"
    for blank in ("", "  "):
        done = fixture_vault.cairn("recall", query, "--session", blank)
        assert done.returncode == 2 and done.stdout == ""
        assert "--session" in done.stderr and "is empty (a shell variable that is not set?)" in done.stderr
    again = fixture_vault.invoke("recall", query, "--json")
    assert [c["id"] for c in json.loads(again.stdout)["cards"]] == ["git/force-push-safely"]


def test_a_session_is_not_given_the_cards_of_another_ref_or_the_working_tree(fixture_vault: VaultRepo) -> None:
    """Bug fixed: `cairn recall --ref BRANCH --session S` (or `--worktree`) recorded the branch's card in the agent's
    session, which the hook shares: the reviewed card of that id was then refused to the agent as already given.
    The two are refused together (exit 2) and the session is left as it was."""
    query = "git push --force after rebasing a shared branch"
    for where in (("--ref", "HEAD"), ("--worktree",)):
        done = fixture_vault.cairn("recall", query, "--session", "s-1", *where)
        assert done.returncode == 2 and done.stdout == "", done.stdout
        assert f"--session records what an agent was given, and {where[0]} reads cards no agent" in done.stderr
    served = json.loads(fixture_vault.invoke("recall", query, "--json", "--session", "s-1").stdout)
    assert [c["id"] for c in served["cards"]] == ["git/force-push-safely"]


def test_the_explain_an_abstaining_recall_suggests_reads_the_cards_it_read(fixture_vault: VaultRepo) -> None:
    """Bug fixed: `cairn recall --worktree PROMPT` (the help's example for an uncommitted card) abstained with "`cairn
    explain QUERY` shows why"; run as printed, explain read the served ref, where the uncommitted card is not."""
    fixture_vault.write(
        "misc/draft", "Zebra fences need paint", "Paint zebra fences every spring.", not_when=["garden"]
    )
    query = "zebra fences need paint in my garden"  # refused (not_when): explain lists it, recall abstains
    done = fixture_vault.invoke("recall", "--worktree", "--scope", "misc", query)
    assert done.stdout == (
        "No card fits this prompt (recall abstained). `cairn explain --scope misc --worktree QUERY` shows why.\n"
    )
    explain = done.stdout.split("`")[1].removeprefix("cairn ").split()
    shown = fixture_vault.invoke(*explain[:-1], query)
    assert shown.returncode == 0 and "misc/draft" in shown.stdout, shown.stdout


def test_recall_text_tells_already_given_from_nothing_fits(fixture_vault: VaultRepo) -> None:
    query = "git push --force after rebasing a shared branch"
    first = fixture_vault.invoke("recall", query, "--session", "s-1")
    assert "[git/force-push-safely]" in first.stdout
    assert "Already given" not in first.stdout
    again = fixture_vault.invoke("recall", query, "--session", "s-1")
    assert (again.returncode, again.stdout) == (
        0,
        "Already given in this session: git/force-push-safely (no other card fits this prompt).\n",
    )
    # The card the session got ranks for this prompt but would not fit it (small lead): nothing is "already given".
    weak = "rebasing my feature branch"
    unrelated = fixture_vault.invoke("recall", weak, "--session", "s-1")
    assert unrelated.stdout == "No card fits this prompt (recall abstained). `cairn explain QUERY` shows why.\n"
    as_json = json.loads(fixture_vault.invoke("recall", weak, "--json", "--session", "s-1").stdout)
    head = fixture_vault.git("rev-parse", "HEAD")
    assert as_json == {"cards": [], "abstained": True, "commit": head, "already_injected": []}
    reasons = _reasons(_recall(fixture_vault, weak, already_injected={"git/force-push-safely"}))
    assert reasons["git/force-push-safely"] == "already_injected"


def test_recall_text_lists_already_given_after_the_new_cards(vault_repo: VaultRepo) -> None:
    vault_repo.write("db/pool", "Connection pool exhausted", "Raise the pool size or release connections.")
    vault_repo.write("shell/quote", "Quote shell variables", "Unquoted variables split on spaces.")
    vault_repo.write_raw("cairn.toml", "[recall]\nmin_lead = 0.0\nmin_coverage = 0.0\nmin_margin = 0.0\n")
    vault_repo.commit()
    assert "[db/pool]" in vault_repo.invoke("recall", "connection pool exhausted", "--session", "s-1").stdout
    both = vault_repo.invoke("recall", "connection pool exhausted, quote shell variables", "--session", "s-1")
    lines = both.stdout.splitlines()
    assert lines[0].startswith("1. Quote shell variables  [shell/quote]")
    assert lines[1:] == [
        "   Unquoted variables split on spaces.",
        "   cards/shell/quote.md",
        "Already given in this session: db/pool",
    ]


def test_recall_and_explain_refuse_a_vault_the_prompt_hook_refuses_with_its_line(
    tmp_path: Path, vault_repo: VaultRepo
) -> None:
    """Bug fixed: `cairn recall --vault PATH` (and `explain`) of a folder with no cairn.toml gave its cards, as what
    an agent would get, while the prompt hook served nothing from it. Both now refuse it with the line the hook logs,
    as they refuse a vault whose cards/ left the work tree."""
    vault_repo.write("shell/quote", "Quote shell variables", "Unquoted variables split on spaces.")
    vault_repo.commit()  # no cairn.toml
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    for cards_gone in (False, True):  # first no cairn.toml; then cairn.toml back, its cards/ gone from the work tree
        if cards_gone:
            shutil.rmtree(vault_repo.root / "cards")
        refusal = vault_repo.hook_refusal()
        for command in ("recall", "explain"):
            done = vault_repo.cairn(command, "--vault", str(vault_repo.root), "quote shell variables", cwd=elsewhere)
            assert (done.returncode, done.stdout) == (1, ""), command
            said = done.stderr.removeprefix("Error: ").removesuffix("\n")
            assert done.stderr == f"Error: {said}\n" and vault_repo.same_refusal(said, refusal), (command, done.stderr)
        (vault_repo.root / "cairn.toml").write_text("", encoding="utf-8")


def test_the_refusal_of_a_vault_with_no_cairn_toml_gives_a_fix_that_runs_as_printed(
    tmp_path: Path, vault_repo: VaultRepo
) -> None:
    """Bug fixed: the hook's refusal of a vault with no cairn.toml said "`cairn init` writes one", and `cairn init`
    refuses the vault's folder, which is not empty. The command it gives now makes the marker and commits it, and
    the vault is served."""
    vault_repo.write("shell/quote", "Quote shell variables", "Unquoted variables split on spaces.")
    vault_repo.commit()  # no cairn.toml
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    refused = vault_repo.cairn("recall", "--vault", str(vault_repo.root), "quote shell variables", cwd=elsewhere)
    said = refused.stderr.removeprefix("Error: ").removesuffix("\n")
    assert vault_repo.same_refusal(said, vault_repo.hook_refusal())  # the hook's line, whole (the log may cut it)
    [command] = re.findall(r"\(`([^`]+)`\)$", said)
    fixed = subprocess.run(command, shell=True, cwd=elsewhere, capture_output=True, text=True, check=False)
    assert fixed.returncode == 0, fixed.stderr
    assert vault_repo.git("status", "--porcelain") == ""
    done = vault_repo.cairn("recall", "--vault", str(vault_repo.root), "quote shell variables", cwd=elsewhere)
    assert done.returncode == 0 and "[shell/quote]" in done.stdout, done


def test_recall_of_a_vault_asked_from_outside_it_names_its_files_and_a_show_that_opens_it(
    tmp_path: Path, vault_repo: VaultRepo
) -> None:
    """Bug fixed: `cairn recall --vault NAME` run from another folder printed the card's path relative to the vault
    (`cards/shell/quote.md`, no such file there) and, for a card whose file is not the served one, `cairn show ID`,
    which run there opened no vault ("no vault here") or another one. Now the path is the vault's file and the
    command names the vault, as the hook's block does for an agent working outside it."""
    vault_repo.write_raw("cairn.toml", "")  # a vault named by --vault is asked as the hook serves one: marked
    vault_repo.write("shell/quote", "Quote shell variables", "Unquoted variables split on spaces.")
    vault_repo.commit()
    (vault_repo.root / "cards" / "shell" / "quote.md").unlink()  # not committed: the served card is unchanged
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    done = vault_repo.cairn("recall", "--vault", str(vault_repo.root), "quote shell variables", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[2]
    show = f"cairn show shell/quote --vault {vault_repo.root}"
    assert line == (
        f"   {vault_repo.root / 'cards' / 'shell' / 'quote.md'} (no such file in the working tree: `{show}` reads "
        "the card)"
    )
    shown = vault_repo.cairn(*show.split()[1:], cwd=elsewhere)
    assert shown.returncode == 0 and "Quote shell variables" in shown.stdout, shown.stderr
    inside = vault_repo.cairn("recall", "quote shell variables").stdout.splitlines()[2]
    assert (
        inside == "   cards/shell/quote.md (no such file in the working tree: `cairn show shell/quote` reads the card)"
    )


def test_recall_outside_a_vault_is_one_error_line(tmp_path: Path, vault_repo: VaultRepo) -> None:
    done = vault_repo.invoke("recall", "anything", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("Error: ")


def test_score_gate_is_the_lead_over_the_query_and_does_not_grow_in_a_small_vault(vault_repo: VaultRepo) -> None:
    """A card that is the only one sharing one word of a longer question has a large margin (nothing follows it)
    but a small lead: the question's other words, even those no card uses, count in the denominator."""
    vault_repo.write("db/pool", "Connection pool exhausted", "Raise the pool size or release connections.")
    vault_repo.write("shell/quote", "Quote shell variables", "Unquoted variables split on spaces.")
    vault_repo.commit()
    vault = find_vault(vault_repo.root)
    with indexer.open_index(vault) as index:
        open_ = dataclasses.replace(settings_of(index), min_lead=0.0, min_coverage=0.0, min_margin=0.0)
        weak = recall(index, "pool noodles watermelon sunscreen towels umbrella", settings=open_)
        strong = recall(index, "connection pool exhausted", settings=open_)
        shipped = recall(index, "pool noodles watermelon sunscreen towels umbrella")
    top = weak.candidates[0]
    assert top.card.id == "db/pool" and top.margin == 1.0  # alone: the relative margin says nothing
    assert top.lead < 0.21 <= strong.candidates[0].lead
    assert shipped.abstained and shipped.candidates[0].reason == "small_lead"


def test_cjk_pairs_the_vault_lacks_count_half_for_coverage(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/stash", "切换分支前暂存修改", "用 git stash 暂存未提交的修改，再切换分支。")
    vault_repo.commit()
    vault = find_vault(vault_repo.root)
    with indexer.open_index(vault) as index:
        settings = settings_of(index)
        alone = recall(index, "暂存", settings=settings).candidates[0]
        padded = recall(index, "暂存 火星探测器轨道", settings=settings).candidates[0]
    # 火星探测器轨道: six pairs no card uses, each counting half a one-card word; before, they counted nothing
    assert alone.coverage == 1.0
    assert 0.0 < padded.coverage < 0.5


@pytest.mark.parametrize(
    "args",
    [
        ("recall", "git push --force rejected after a rebase"),
        ("explain", "git push --force rejected after a rebase"),
        ("list",),
        ("show", "__FIRST__"),
        ("eval", "--cases", "__CASES__"),
    ],
)
def test_commands_that_build_the_index_first_show_it_on_a_terminal(
    fixture_vault: VaultRepo, args: tuple[str, ...]
) -> None:
    """Bug fixed: recall, explain, list, show and eval build a missing index (or bring it up to date) before they
    answer, and showed nothing on a terminal meanwhile (12 s for a 10,000-card vault); they draw `cairn index`'s bar
    now, ended before the answer starts, and draw nothing where no terminal reads them."""
    from cairn.hot.paths import index_file
    from helpers.cli import run_on_terminal

    first = sorted((fixture_vault.root / "cards").rglob("*.md"))[0].relative_to(fixture_vault.root / "cards")
    shutil.copy(FIXTURE / "cases.yaml", fixture_vault.root / "cases.yaml")
    args = tuple({"__FIRST__": first.with_suffix("").as_posix(), "__CASES__": "cases.yaml"}.get(a, a) for a in args)
    shutil.rmtree(Path(index_file(str(fixture_vault.root))).parent, ignore_errors=True)
    wide = {"COLUMNS": "400"}  # room for the whole label: the temp folder's path is long
    code, drawn = run_on_terminal(args, fixture_vault.root, env=wide)
    assert code in (0, 1), drawn  # eval exits 1 when a case fails
    bar = re.search(rb"Indexing " + re.escape(str(fixture_vault.root).encode()) + rb".*?  (\d+)/\1\b[^\n]*\n", drawn)
    assert bar, drawn
    assert drawn[bar.end() :].strip(), drawn  # the answer follows, on a line of its own
    shutil.rmtree(Path(index_file(str(fixture_vault.root))).parent)
    piped = fixture_vault.cairn(*args)
    assert "Indexing" not in piped.stderr and "Indexing" not in piped.stdout, piped
    code, drawn = run_on_terminal(args, fixture_vault.root, env=wide)  # the index is current: nothing to draw
    assert b"Indexing" not in drawn, drawn


@pytest.mark.parametrize("width", [40, 80])
def test_the_index_bar_stays_on_one_line_of_a_narrow_terminal(fixture_vault: VaultRepo, width: int) -> None:
    """Bug fixed: the bar's line was its label, click's 36-column bar and the count: `Indexing /home/alice/team-lessons`
    passed 80 columns, the terminal wrapped it, and each redraw (a carriage return) started a row of its own, which
    left a trail of half-drawn bars above the answer. The bar now narrows, and a label with no room is cut."""
    from cairn.hot.paths import index_file
    from helpers.cli import run_on_terminal

    shutil.rmtree(Path(index_file(str(fixture_vault.root))).parent, ignore_errors=True)
    code, drawn = run_on_terminal(("list",), fixture_vault.root, env={"COLUMNS": str(width)})
    assert code == 0, drawn
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode())
    bars = [row for row in re.split(r"[\r\n]", text) if "  [" in row and "/" in row]
    assert bars, drawn
    assert all(len(row.rstrip()) < width for row in bars), bars


@pytest.mark.parametrize("width", [30, 40])
def test_the_bar_with_its_time_left_fits_a_very_narrow_terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """Bug fixed: on a terminal too narrow for a 10-column bar beside the count and the time left (30 columns, 2,000
    cards), the line was `…  [##########]  1000/2000  00:00:01`, 36 columns: it wrapped and each redraw left a row
    behind. The bar now gives up columns too, down to one."""
    from cairn.cli.common import _bar_layout
    from cairn.terminal import columns

    monkeypatch.setenv("COLUMNS", str(width))
    label, bar = _bar_layout("Indexing cards", 2000)
    drawn = f"{label}  [{'#' * bar}]  1000/2000  00:00:01"  # click's widest line: the time left shows after a while
    assert bar >= 1
    assert columns(drawn) < width, drawn


def test_each_gate_passes_at_its_threshold_and_refuses_below_it() -> None:
    # A value equal to `min_lead`, `min_coverage` or `min_margin` passes; just below, that gate refuses. Kills the
    # mutants `<=` in `gates.failed_gate` and a dropped coverage check.
    from cairn.config import Config
    from cairn.hot import gates

    s = Config().recall
    at = (s.min_lead, s.min_coverage, s.min_margin)
    assert gates.failed_gate(*at, s) is None
    below = 1e-9
    assert gates.failed_gate(s.min_lead - below, s.min_coverage, s.min_margin, s) == gates.SMALL_LEAD
    assert gates.failed_gate(s.min_lead, s.min_coverage - below, s.min_margin, s) == gates.LOW_COVERAGE
    assert gates.failed_gate(s.min_lead, s.min_coverage, s.min_margin - below, s) == gates.SMALL_MARGIN


def test_full_width_letters_and_half_width_katakana_meet_their_usual_forms(fixture_vault: VaultRepo) -> None:
    """Bug fixed: full-width ASCII (`ｄｏｃｋｅｒ`, which a Japanese or Chinese input method types) and half-width
    katakana (`ﾃｽﾄ`) gave no token at all, in a card or a prompt: neither met the card that says them the usual way."""
    fixture_vault.write(
        "ja/parallel-tests",
        "CIのテストが並列実行で落ちる",
        "テストが同じ一時ディレクトリを共有すると並列実行で落ちる。テストごとに tmp_path を使う。",
    )
    fixture_vault.commit("A Japanese lesson")
    half = _recall(fixture_vault, "CIのﾃｽﾄが並列実行で落ちるのはなぜ？")
    assert [c.card.id for c in half.injected] == ["ja/parallel-tests"]
    assert {"テス", "スト"} <= set(half.injected[0].matched)  # the half-width word met the card's
    wide = _recall(
        fixture_vault,
        "ｓｔｏｐ ｗａｉｔｓ ｔｅｎ ｓｅｃｏｎｄｓ： ＳＩＧＴＥＲＭ ｎｏｔ ｆｏｒｗａｒｄｅｄ ｂｙ ｔｈｅ ｓｈｅｌｌ ｆｏｒｍ ＣＭＤ",
    )
    assert [c.card.id for c in wide.injected] == ["docker/sigterm-shell-form"]


def test_accents_typed_as_separate_marks_and_ligatures_meet_their_composed_forms(fixture_vault: VaultRepo) -> None:
    """Bug fixed: an accent typed as a separate mark (NFD, as macOS may send it) cut a word where the composed letter
    does not (`verrouillé` gave `verrouille`, the composed spelling `verrouill`), and a ligature (`ﬁchier`) gave no
    word at all: a card and a prompt that spell a word the two ways did not meet, on either side."""
    import unicodedata

    name = "Le déploiement échoue quand le ﬁchier de configuration est verrouillé"
    fixture_vault.write(
        "fr/deploiement-verrouille",
        unicodedata.normalize("NFD", name),
        unicodedata.normalize("NFD", "Un autre processus garde le verrou : attendre qu'il se termine."),
    )
    fixture_vault.commit("A French lesson written on macOS")
    for form in ("NFC", "NFD"):
        prompt = unicodedata.normalize(form, "Pourquoi le déploiement échoue quand le fichier est verrouillé ?")
        result = _recall(fixture_vault, prompt)
        assert [c.card.id for c in result.injected] == ["fr/deploiement-verrouille"]
        assert {"verrouill", "fichier", "ploiement"} <= set(result.injected[0].matched)
