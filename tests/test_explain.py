"""`cairn explain`: golden outputs on the fixture vault (set CAIRN_UPDATE_GOLDEN=1 to rewrite them on purpose)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers.vaults import VaultRepo, write_drafts, write_filler_cards

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "explain"
QUERIES = {
    "injected-en": ("git rejects my push after a rebase; can I use git push --force on our shared branch?", ()),
    "injected-zh": ("切换分支之前怎么暂存未提交的修改？", ()),
    "abstained-off-topic": ("How do I center a div with CSS grid?", ()),
    "rejected-expired": ("python setup.py install deprecated pip install", ()),
    "rejected-scope": ("git push --force after rebasing a shared branch", ("--scope", "python")),
    "rejected-not-when": ("podman stop waits ten seconds: SIGTERM not forwarded by the shell form CMD", ()),
}


@pytest.fixture
def fixture_vault(vault_repo: VaultRepo) -> VaultRepo:
    shutil.copytree(FIXTURES / "recall_vault" / "cards", vault_repo.root / "cards", dirs_exist_ok=True)
    vault_repo.commit("fixture cards")
    return vault_repo


def _golden(name: str, suffix: str, actual: str) -> str:
    path = GOLDEN / f"{name}.{suffix}"
    if os.environ.get("CAIRN_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_explain_json_matches_golden(fixture_vault: VaultRepo, name: str) -> None:
    query, extra = QUERIES[name]
    done = fixture_vault.invoke("explain", query, "--json", *extra)
    assert done.returncode == 0, done.stderr
    data, golden = json.loads(done.stdout), json.loads(_golden(name, "json", done.stdout))
    # the commit read, as `recall --json` names it (a commit id the golden file cannot hold)
    assert data.pop("commit") == fixture_vault.git("rev-parse", "HEAD")
    golden.pop("commit", None)  # one CAIRN_UPDATE_GOLDEN wrote
    assert data == golden


@pytest.mark.parametrize("name", ["injected-en", "rejected-scope"])
def test_explain_text_matches_golden(fixture_vault: VaultRepo, name: str) -> None:
    query, extra = QUERIES[name]
    done = fixture_vault.invoke("explain", query, *extra)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _golden(name, "txt", done.stdout)


def test_explain_rows_carry_every_gate_value_and_threshold(fixture_vault: VaultRepo) -> None:
    query, _ = QUERIES["injected-en"]
    rows = json.loads(fixture_vault.invoke("explain", query, "--json").stdout)["candidates"]
    gated = [r for r in rows if r["gates"] is not None]
    assert gated and all(set(r["gates"]) == {"lead", "coverage", "margin", "score", "evidence"} for r in gated)
    assert all(r["gates"]["score"] == r["gates"]["lead"] for r in gated)  # the old name, kept until 0.3
    assert all(set(g) == {"value", "threshold"} for r in gated for g in r["gates"].values())
    assert all(r["gates"]["evidence"]["threshold"] == 1.3 for r in gated)  # the shipped evidence floor
    injected = next(r for r in gated if r["decision"] == "injected")
    assert injected["gates"]["evidence"]["value"] >= 1.3
    assert {r["decision"] for r in rows} <= {"injected", "rejected"}
    assert [r["id"] for r in rows if r["decision"] == "injected"] == ["git/force-push-safely"]
    assert next(r for r in rows if r["id"] == "git/force-push-plain")["reason"] == "superseded"


def test_explain_lists_admission_rejections_beyond_the_top_20(vault_repo: VaultRepo) -> None:
    for n in range(25):
        vault_repo.write(f"t/card-{n:02}", f"Kestrel falcon note {n}", "Kestrel falcon " + "filler " * n)
    vault_repo.write("t/retired", "Kestrel", "Kestrel falcon " + "filler " * 40, status="retired")
    vault_repo.commit()
    rows = json.loads(vault_repo.invoke("explain", "kestrel falcon", "--json").stdout)["candidates"]
    assert len([r for r in rows if r["gates"] is not None]) == 20
    assert any(r["id"] == "t/retired" and r["reason"] == "retired" and r["rank"] > 20 for r in rows)


def test_explain_says_the_similarity_is_a_z_score(vault_repo: VaultRepo) -> None:
    """The semantic channel gives recall z-scores over the vault's cards (4.2 and -0.3, not cosines in [-1, 1]);
    explain's terms line names the figure, so a reader does not take 4.23 for a broken cosine."""
    from cairn.cli.recall_cmds import explain_rows, render_explain
    from cairn.hot.recall import recall
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from helpers.payloads import FITTING_PROMPT
    from helpers.vaults import REBASE_ID, make_vault

    make_vault(vault_repo)
    with indexer.open_index(find_vault(vault_repo.root)) as index:
        result = recall(index, FITTING_PROMPT, examine_all=True, semantic={REBASE_ID: 4.2268})
    rows = explain_rows(result)
    assert rows[0]["id"] == REBASE_ID and rows[0]["similarity"] == 4.2268
    text = render_explain(result, rows)
    assert "similarity 4.23 (z-score over the vault's cards)" in text


def test_explain_names_an_unknown_status_not_draft(vault_repo: VaultRepo) -> None:
    """A status that is none of active, draft, retired (a typo) is refused as what it is, in lint's words: it was
    shown as `draft`, which sent the author looking for a draft they never wrote."""
    vault_repo.write("t/typo", "Kestrel falcon", "Kestrel falcon nests on cliffs.", status="activ")
    vault_repo.write("t/draft", "Kestrel falcon draft", "Kestrel falcon draft note.", status="draft")
    vault_repo.commit()
    done = vault_repo.cairn("explain", "kestrel falcon", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in json.loads(done.stdout)["candidates"]}
    assert rows["t/typo"]["reason"] == "unknown_status" and rows["t/typo"]["status"] == "activ"
    assert rows["t/draft"]["reason"] == "draft" and "status" not in rows["t/draft"]
    text = vault_repo.cairn("explain", "kestrel falcon").stdout
    typo_line = next(line for line in text.splitlines() if line.endswith("t/typo"))
    assert "unknown status 'activ'" in typo_line and "draft" not in typo_line
    lint = vault_repo.cairn("lint").stdout
    finding = "status 'activ' is not one of active, draft, retired; only active cards are injected"
    assert finding in lint and finding in text


def test_explain_of_a_scope_the_configured_vault_does_not_serve_says_why(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn recall --scope git` in a vault configured to serve only `docker` cards says "`cairn explain
    QUERY` shows why", and `cairn explain` printed nothing at all on stdout (only a warning on stderr)."""
    from helpers.vaults import make_vault, run_cairn

    make_vault(vault_repo)
    added = run_cairn("vault", "add", str(vault_repo.root), "--name", "team", "--scope", "docker", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    done = vault_repo.cairn("explain", "git pull --rebase after a force-push", "--scope", "git")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Abstained: no card is asked; the scope asked shares no tag with the scopes")
    assert "configured to serve only cards of scope docker" in done.stderr
    data = json.loads(vault_repo.cairn("explain", "git pull", "--scope", "git", "--json").stdout)
    assert (data["abstained"], data["skipped"]) == (True, "scope")


def test_explain_does_not_call_injected_a_card_the_hooks_context_limit_leaves_out(vault_repo: VaultRepo) -> None:
    """Under a `[hook] max_context_chars` whose block holds no card, `cairn explain` printed "Injected: ID" above
    the row that said the card was rejected `context_limit` (its JSON and `cairn recall` gave nothing)."""
    detail = "the reflog keeps the dropped commits for ninety days, so recover them before they expire " * 9
    vault_repo.write("git/reflog", "Recover commits dropped by a rebase", detail)
    vault_repo.write_raw("cairn.toml", "[lint]\nsummary_max_chars = 1000\n[hook]\nmax_context_chars = 1200\n")
    vault_repo.commit("A card no block of 1,200 characters holds")
    prompt = "recover commits dropped by a rebase from the reflog"
    assert json.loads(vault_repo.cairn("explain", "--json", prompt).stdout)["injected"] == []
    lines = vault_repo.cairn("explain", prompt).stdout.splitlines()
    assert lines[1] == "Injected: none: the agent's context block (`[hook] max_context_chars`) holds none of them."
    assert lines[4].split()[-3:] == ["rejected", "context_limit", "git/reflog"]


def test_explain_names_the_not_when_word_the_prompt_contains(vault_repo: VaultRepo) -> None:
    """A card refused for `not_when` said only `not_when`: explain names the word and what to do. The word must be a
    word of the prompt: `go` inside "django" kept a Python card from a Django prompt (bug fixed)."""
    vault_repo.write(
        "python/mutable-default",
        "Mutable default arguments are shared between calls",
        "A list used as a default argument is created once and shared by every call; default to None instead.",
        not_when=["callable", "go"],
    )
    vault_repo.write("git/reflog", "Recover commits lost in a rebase", "git reflog lists where HEAD was.")
    vault_repo.commit()
    django = "in my django view the list default argument keeps items from previous calls"
    rows = json.loads(vault_repo.invoke("explain", django, "--json").stdout)["candidates"]
    assert (rows[0]["id"], rows[0]["reason"], rows[0].get("not_when")) == ("python/mutable-default", None, None)
    prompt = "in my go handler the list default argument keeps items from previous calls"
    rows = json.loads(vault_repo.invoke("explain", prompt, "--json").stdout)["candidates"]
    assert (rows[0]["reason"], rows[0]["not_when"]) == ("not_when", "go")
    lines = vault_repo.invoke("explain", prompt).stdout.splitlines()
    row = next(n for n, line in enumerate(lines) if line.endswith("python/mutable-default"))
    assert "not_when 'go'" in lines[row]
    assert lines[row + 1].strip().startswith("not_when 'go' is in the prompt: a card never goes")
    vault_repo.write(
        "zh/utc", "数据库里的时间要存 UTC", "服务器和数据库在不同时区时，时间戳会错乱。", not_when=["微服务"]
    )
    vault_repo.commit()
    zh = vault_repo.invoke("explain", "我们的微服务架构里数据库的时间戳错乱了").stdout  # no spaces: no word to name
    assert "not_when '微服务' is in the prompt: a card never goes" in zh


def test_explain_says_the_scope_it_was_asked_with_from_cairn_scope(fixture_vault: VaultRepo) -> None:
    """With `$CAIRN_SCOPE` set in the shell and no --scope, cards were refused `out_of_scope` and nothing said which
    scope was asked, nor where it came from; without one, no scope line."""
    query, _ = QUERIES["rejected-scope"]
    lines = fixture_vault.invoke("explain", query, env={"CAIRN_SCOPE": "python"}).stdout.splitlines()
    assert lines[1] == (
        "Scope asked: python (from $CAIRN_SCOPE); a card scoped to other tags only is refused (out_of_scope)."
    )
    assert any(line.split()[-2:] == ["out_of_scope", "git/force-push-safely"] for line in lines)
    plain = fixture_vault.invoke("explain", query, env={"CAIRN_SCOPE": ""}).stdout
    assert "Scope asked" not in plain


def test_explain_gives_an_expired_cards_review_date_and_what_to_bump(fixture_vault: VaultRepo) -> None:
    """A card refused `expired` said only `expired`: not when it expired, nor that verified_at (re-checked) brings
    it back; following the hint, the card is injected again."""
    query, _ = QUERIES["rejected-expired"]
    rows = json.loads(fixture_vault.invoke("explain", query, "--json").stdout)["candidates"]
    assert (rows[0]["reason"], rows[0]["expires_on"]) == ("expired", "2020-01-31")
    lines = fixture_vault.invoke("explain", query).stdout.splitlines()
    row = next(n for n, line in enumerate(lines) if line.endswith("python/setup-py-install"))
    assert lines[row + 1].strip() == (
        "its review date 2020-01-31 (review_after) has passed; once someone re-checks the lesson, bump verified_at "
        "(and review_after when it is a date) and commit"
    )
    card = fixture_vault.root / "cards" / "python" / "setup-py-install.md"
    text = card.read_text(encoding="utf-8")
    card.write_text(text.replace("verified_at: 2020-01-01", f"verified_at: {dt.date.today().isoformat()}"))
    fixture_vault.commit("re-checked")
    again = json.loads(fixture_vault.invoke("explain", query, "--json").stdout)
    assert again["injected"] == ["python/setup-py-install"]


def test_explain_does_not_tell_a_superseded_expired_card_to_renew(fixture_vault: VaultRepo) -> None:
    """Bug fixed: a card refused `expired` that an active card also supersedes was told to bump verified_at, which
    would not serve it: the superseding card keeps it out too (itself past its review date or not). `--json` gives
    the superseding cards as `superseded_by`, and the hint says a later review date would not serve it."""
    fixture_vault.write(
        "python/pip-install-dot",
        "Install a package with pip install .",
        "Build and install a package with `pip install .`; `python setup.py install` is deprecated.",
        scope=["python"],
        verified_at="2020-01-01",
        review_after="30d",
        supersedes=["python/setup-py-install"],
    )
    fixture_vault.commit("pip install . supersedes setup.py install")
    query, _ = QUERIES["rejected-expired"]
    rows = {r["id"]: r for r in json.loads(fixture_vault.invoke("explain", query, "--json").stdout)["candidates"]}
    old = rows["python/setup-py-install"]
    assert (old["reason"], old["expires_on"], old["superseded_by"]) == (
        "expired",
        "2020-01-31",
        ["python/pip-install-dot"],
    )
    assert "superseded_by" not in rows["python/pip-install-dot"]  # expired, superseded by none: renewing serves it
    lines = fixture_vault.invoke("explain", query).stdout.splitlines()
    row = next(n for n, line in enumerate(lines) if line.endswith("python/setup-py-install"))
    assert lines[row + 1].strip() == (
        "its review date 2020-01-31 (review_after) has passed, and it is superseded by python/pip-install-dot: a "
        "later review date would not serve it"
    )
    row = next(n for n, line in enumerate(lines) if line.endswith("python/pip-install-dot"))
    assert "once someone re-checks the lesson, bump verified_at" in lines[row + 1]


def test_explain_lists_the_prompts_words_not_the_stems_recall_matches(vault_repo: VaultRepo) -> None:
    """Issue 16's item 6, for an author: explain listed the terms a card matched and lacks as recall stems them
    (`spr` for Spring, `sav` for saving), which no one can type into a card's aliases as shown."""
    vault_repo.write(
        "java/boot-devtools-restart",
        "Spring Boot devtools restarts the app on every file save",
        "With spring-boot-devtools on the classpath, saving any file restarts the application; exclude static files.",
        scope=["java"],
    )
    vault_repo.write(
        "git/lfs", "Large files belong in Git LFS", "Track large binaries with git lfs before the first commit."
    )
    vault_repo.commit("Two cards")
    done = vault_repo.invoke("explain", "Spring reloads after saving a template, and the session is lost")
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("matched:")]
    assert lines and "spring" in lines[0] and "saving" in lines[0], done.stdout
    assert not {"spr", "sav"} & {word.strip(",;") for word in " ".join(lines).split()}, lines
    data = json.loads(vault_repo.invoke("explain", "--json", "Spring reloads after saving a template").stdout)
    assert "spr" in data["candidates"][0]["matched"]  # the JSON keeps the terms recall matched


def test_explain_shows_the_injected_card_ranked_below_twenty_drafts(vault_repo: VaultRepo) -> None:
    """`cairn explain` kept its first 20 candidates and the cards refused at admission: a card injected below 20
    drafts of its lesson (which outscore it) was named under "Injected:" and had no row, its gate values unseen."""
    write_drafts(vault_repo, 22)
    vault_repo.write(
        "k8s/drain",
        "Node drain with zorblax quuxfrob flimflam enabled loses pods in the scheduler",
        "When the flimflam controller is on, zorblax quuxfrob drains evict pods the scheduler cannot place again; "
        "cordon the node and wait for the controller before you drain it.",
        scope=["k8s"],
    )
    write_filler_cards(vault_repo, 200)
    vault_repo.commit("drafts of one lesson")
    data = json.loads(vault_repo.invoke("explain", "zorblax quuxfrob flimflam", "--json").stdout)
    assert data["injected"] == ["k8s/drain"]
    row = next(r for r in data["candidates"] if r["id"] == "k8s/drain")
    assert (row["rank"], row["decision"]) == (23, "injected") and row["gates"] is not None
    text = vault_repo.invoke("explain", "zorblax quuxfrob flimflam").stdout
    assert any(line.split()[-1:] == ["k8s/drain"] and "injected" in line for line in text.splitlines()), text


def test_explain_help_says_it_lists_every_card_refused_at_admission(vault_repo: VaultRepo) -> None:
    """`cairn explain --help` said it listed the cards refused "before" the 20 it details: it lists every card
    refused at admission, a draft ranked below 20 judged cards too."""
    for i in range(22):
        vault_repo.write(f"k8s/lesson-{i:02d}", f"Zorblax quuxfrob lesson {i:02d}", f"Zorblax quuxfrob flimflam {i}.")
    vault_repo.write("k8s/old-note", "Zorblax old note", "Zorblax note.", status="draft")
    vault_repo.commit("lessons and a draft")
    rows = json.loads(vault_repo.invoke("explain", "--json", "zorblax quuxfrob flimflam lesson").stdout)["candidates"]
    [draft] = [row for row in rows if row["id"] == "k8s/old-note"]
    assert draft["reason"] == "draft" and draft["rank"] > 20
    assert sum(row["gates"] is not None for row in rows) == 20
    help_text = " ".join(vault_repo.invoke("explain", "--help").stdout.split())
    assert "every card refused at admission" in help_text and "refused before them" not in help_text


def test_explain_shows_an_identifiers_parts_as_the_parts_the_card_matched(vault_repo: VaultRepo) -> None:
    """Bug fixed: explain's term lists showed each part of a split identifier as the whole identifier (`GitHub` ->
    github, git, hub printed `matched: github, github, github`), so a card that holds only `git` (which the prompt
    also says alone) was shown matching `github`, a word it never uses. A stem is still shown as the prompt's word."""
    vault_repo.write("t/cron", "Cron runs in UTC on GitHub Actions", "GitHub Actions cron schedules run in UTC.")
    vault_repo.write("t/push", "Rebased branches need a lease", "After rebasing, git push with a lease.")
    vault_repo.commit()
    query = "git push after rebasing on GitHub"
    text = vault_repo.cairn("explain", query).stdout
    lines = text.splitlines()
    terms = {lines[i - 1].split()[-1]: line.strip() for i, line in enumerate(lines) if "matched:" in line}
    assert terms["t/push"].startswith("matched: git, push, rebasing"), text
    assert "github" not in terms["t/push"], text
    assert terms["t/cron"].count("github") == 1 and "hub" in terms["t/cron"], text


def test_explain_says_a_card_under_a_gate_went_in_with_its_group(vault_repo: VaultRepo) -> None:
    """Bug fixed: a card injected with related cards that fit about as well (`recall._group`) showed a lead under
    the threshold explain prints, `injected` and an empty reason, as if the gates had been skipped. It says `group`
    now, in the text and as `"group": true` in --json, and `cairn recall` gives the same cards."""
    vault_repo.write("t/cron", "Cron runs in UTC on GitHub Actions", "GitHub Actions cron schedules run in UTC.")
    vault_repo.write("t/push", "Rebased branches need a lease", "After rebasing, git push with a lease.")
    vault_repo.commit()
    query = "git push after rebasing on GitHub"
    rows = {r["id"]: r for r in json.loads(vault_repo.cairn("explain", query, "--json").stdout)["candidates"]}
    push = rows["t/push"]
    assert push["decision"] == "injected" and push["gates"]["lead"]["value"] < push["gates"]["lead"]["threshold"]
    assert push["group"] is True and "group" not in rows["t/cron"]
    text = vault_repo.cairn("explain", query).stdout
    line = next(line for line in text.splitlines() if line.endswith("  t/push"))
    assert "injected  group" in line, text
    assert "one of related cards that fit about as well" in text
    given = json.loads(vault_repo.cairn("recall", query, "--json").stdout)
    assert sorted(c["id"] for c in given["cards"]) == ["t/cron", "t/push"]
