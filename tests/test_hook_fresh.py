"""Freshness: the hook compares the index's commit with the commit the vault serves (`gitrefs.served_ref`, read with
the standard library alone). A stale index serves nothing (one of its cards may be gone, changed or unreviewed), the
log says why, and the index is updated in the background for the next prompt. An index whose vault's cairn.toml
could not be read (meta `config_error`) serves nothing either."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cairn.hot import gitrefs
from cairn.hot.index import IndexReader
from cairn.hot.paths import index_path
from helpers.cachefiles import edit_meta, reseal
from helpers.payloads import log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, make_vault


@pytest.fixture(autouse=True)
def serve_the_vault(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook serves the test's vault, named by CAIRN_VAULT (it never finds one from the agent's folder)."""
    if "vault_repo" in request.fixturenames:
        monkeypatch.setenv("CAIRN_VAULT", str(request.getfixturevalue("vault_repo").root))


def _indexed_commit(root: Path) -> str | None:
    try:
        with IndexReader(index_path(root.resolve())) as index:
            return index.commit
    except Exception:
        return None


def _wait_for_index(root: Path, commit: str, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _indexed_commit(root) == commit:
            return True
        time.sleep(0.2)
    return False


def test_a_stale_index_serves_nothing_says_why_and_is_updated_in_the_background(vault_repo: VaultRepo) -> None:
    old = make_vault(vault_repo)
    vault_repo.write(
        "python/venv-activate",
        "Activate the venv before pip install",
        "pip install outside the virtualenv puts packages in the system python; activate it first.",
    )
    new = vault_repo.commit("A new card")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # no waiting, and nothing of another commit
    entry = log_entries()[-1]
    assert (entry["stale"], entry["commit"], entry["injected"], entry["error"]) == (True, old, [], None)
    (line,) = entry["vaults"]
    assert line["error"] == (
        f"the index is of {old[:12]}, refs/heads/main is at {new[:12]}; serving nothing until it is rebuilt"
    )
    assert _wait_for_index(vault_repo.root, new)
    again = vault_repo.cairn("hook", "--format", "text", input="activate the virtualenv before pip install")
    assert "python/venv-activate" in again.stdout
    assert log_entries()[-1]["stale"] is False


def test_a_reindex_stamp_from_the_future_does_not_hold_the_background_index_off(vault_repo: VaultRepo) -> None:
    """The clock set back after a hook stamped its background index (NTP, a VM restored): the stamp's time is
    ahead of now, and the hook started no index until the clock caught up, serving nothing from the vault."""
    make_vault(vault_repo)
    vault_repo.write("python/venv-activate", "Activate the venv before pip install", "pip install outside a venv")
    new = vault_repo.commit("A new card")
    stamp = index_path(vault_repo.root.resolve()).with_name("index.cairn.reindex")
    stamp.touch()
    ahead = time.time() + 86400
    os.utime(stamp, (ahead, ahead))
    done = vault_repo.cairn("hook", "--format", "text", input="activate the venv before pip install")
    assert (done.returncode, done.stdout) == (0, "")
    assert log_entries()[-1]["stale"] is True
    assert _wait_for_index(vault_repo.root, new)


def test_a_background_index_that_fails_says_why_in_the_next_prompts_log(vault_repo: VaultRepo) -> None:
    """The hook's background `cairn index` fails each time (here a folder where its lock file goes; for an agent
    run as another user, git refusing a repository that user does not own): the log said "building it in the
    background" on every prompt, as if a build were still to come, and never why none came."""
    make_vault(vault_repo)
    index_file = index_path(vault_repo.root.resolve())
    index_file.unlink()
    index_file.with_name("index.cairn.lock").unlink(missing_ok=True)
    index_file.with_name("index.cairn.lock").mkdir()
    stamp = index_file.with_name("index.cairn.reindex")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    first = vault_repo.cairn("hook", "--format", "text", input=prompt)
    assert (first.returncode, first.stdout) == (0, "")
    deadline = time.monotonic() + 60
    while b"Error: " not in stamp.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.2)
    again = vault_repo.cairn("hook", "--format", "text", input=prompt)
    assert (again.returncode, again.stdout) == (0, "")
    (line,) = log_entries()[-1]["vaults"]
    assert line["error"] == (
        "HookInputError: no index for this vault yet; building it in the background (`cairn index`); the last "
        f"background `cairn index` failed: {index_file}.lock is not a regular file (a lock file of Cairn's); remove "
        "it, then run again"
    )


def test_a_vault_with_no_commit_yet_says_so_and_starts_no_background_index(vault_repo: VaultRepo) -> None:
    """Bug fixed: a configured vault whose repository has no commit yet (`git init`, cards written, none committed)
    logged "no index for this vault yet; building it in the background" and started a `cairn index` that could only
    fail so; the log now says what `cairn index` and `cairn doctor` say: commit the cards first."""
    vault_repo.write("git/x", "Rebase lesson", "git pull --rebase after force-push drops local commits")
    vault_repo.write_raw("cairn.toml", "")
    index_file = index_path(vault_repo.root.resolve())
    done = vault_repo.cairn("hook", "--format", "text", input="git pull --rebase after a force-push")
    assert (done.returncode, done.stdout) == (0, "")
    (line,) = log_entries()[-1]["vaults"]
    root = vault_repo.root
    assert line["error"] == (
        "HookInputError: the vault has no commits yet on refs/heads/main; commit your cards first "
        f"(`cd {root} && git add cards && git commit -m 'First cards'`); serving nothing from this vault"
    )
    assert not index_file.with_name("index.cairn.reindex").exists()  # no background `cairn index` was started


def test_a_removed_card_is_never_served_from_the_old_index(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("rm", "-q", f"cards/{REBASE_ID}.md")
    removed = vault_repo.commit("Revert the rebase card")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    first = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert first.stdout == ""  # the old index still holds the card: not served
    assert _wait_for_index(vault_repo.root, removed)
    again = vault_repo.cairn("hook", "--format", "text", input=prompt)
    assert REBASE_ID not in again.stdout
    assert log_entries()[-1]["stale"] is False


def test_a_card_committed_only_on_a_feature_branch_is_not_served(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "feature")
    vault_repo.write("python/venv-activate", "Activate the venv before pip install", "pip install outside a venv")
    vault_repo.commit("Unreviewed card")
    indexed = vault_repo.invoke("index")  # an author indexes the branch they are on
    assert indexed.returncode == 0, indexed.stderr
    for n in range(2):
        done = vault_repo.cairn("hook", "--format", "text", input="activate the venv before pip install")
        assert "python/venv-activate" not in done.stdout, n
        time.sleep(0.5 * n)
    (line,) = log_entries()[-1]["vaults"]
    assert line["ref"] == "refs/heads/main"


def test_an_index_whose_config_could_not_be_read_serves_nothing(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.write_raw("cairn.toml", '[recall]\nmax_cards = "three"\n')
    vault_repo.commit("A bad cairn.toml")
    built = vault_repo.invoke("index")
    assert built.returncode == 1
    with IndexReader(index_path(vault_repo.root.resolve())) as index:
        problem = index.meta["config_error"]
    assert problem.startswith("cairn.toml:2")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert (done.returncode, done.stdout) == (0, "")
    entry = log_entries()[-1]
    assert entry["injected"] == [] and entry["candidates"] == []
    assert entry["vaults"][0]["error"] == f"the vault's cairn.toml cannot be read; serving nothing: {problem}"[:1000]


def test_no_index_is_built_in_the_background(vault_repo: VaultRepo) -> None:
    vault_repo.write("git/x", "Rebase lesson", "git pull --rebase after force-push drops local commits")
    vault_repo.write_raw("cairn.toml", "")
    commit = vault_repo.commit()
    assert vault_repo.cairn("hook", "--format", "text", input="rebase force-push").stdout == ""
    assert _wait_for_index(vault_repo.root, commit)


def test_the_background_index_never_runs_a_cairn_package_from_the_vault(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """The background `cairn index` runs in the vault: a `cairn/` package committed there (an untrusted clone) must
    not be what it imports (`python -m cairn` would run it: the current folder comes first on sys.path)."""
    marker = tmp_path / "planted-code-ran"
    planted = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\ndef main(*args):\n    return 0\n"
    vault_repo.write("git/x", "Rebase lesson", "git pull --rebase after force-push drops local commits")
    vault_repo.write_raw("cairn.toml", "")
    for rel in ("cairn/__init__.py", "cairn/__main__.py", "cairn/cli.py"):
        vault_repo.write_raw(rel, planted)
    commit = vault_repo.commit()
    assert vault_repo.cairn("hook", "--format", "text", input="rebase force-push").stdout == ""
    assert _wait_for_index(vault_repo.root, commit)  # the real Cairn indexed it
    assert not marker.exists()


# -- gitrefs against real repositories -------------------------------------------------------------------------


def test_head_on_a_branch_with_loose_and_packed_refs(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/b", "n", "s")
    first = vault_repo.commit()
    assert gitrefs.head_commit(vault_repo.root) == first
    vault_repo.git("pack-refs", "--all", "--prune")
    assert not (vault_repo.root / ".git" / "refs" / "heads" / "main").exists()
    assert gitrefs.head_commit(vault_repo.root) == first
    vault_repo.write("a/c", "n", "s")
    second = vault_repo.commit()  # a loose ref again, newer than packed-refs
    assert gitrefs.head_commit(vault_repo.root) == second


def test_detached_head_and_unborn_branch(vault_repo: VaultRepo) -> None:
    assert gitrefs.head_commit(vault_repo.root) is None  # no commit yet
    vault_repo.write("a/b", "n", "s")
    first = vault_repo.commit()
    vault_repo.write("a/c", "n", "s")
    vault_repo.commit()
    vault_repo.git("checkout", "-q", "--detach", first)
    assert gitrefs.head_commit(vault_repo.root) == first


def test_worktree_with_a_dot_git_file(vault_repo: VaultRepo, tmp_path: Path) -> None:
    vault_repo.write("a/b", "n", "s")
    vault_repo.commit()
    other = tmp_path / "wt"
    vault_repo.git("worktree", "add", "-q", "-b", "side", str(other))
    assert (other / ".git").is_file()
    (other / "cards" / "a" / "new.md").write_text("---\nname: x\nsummary: y\n---\n")
    vault_repo.git("-C", str(other), "add", "-A")
    vault_repo.git("-C", str(other), "commit", "-q", "-m", "side")
    side = vault_repo.git("-C", str(other), "rev-parse", "HEAD")
    assert gitrefs.head_commit(other) == side
    vault_repo.git("pack-refs", "--all", "--prune")
    assert gitrefs.head_commit(other) == side
    assert gitrefs.head_commit(vault_repo.root) == vault_repo.git("rev-parse", "HEAD")


@pytest.mark.parametrize("content", [b"", b"ref: refs/heads/../../../etc/passwd\n", b"garbage\n", b"\xff\xfe"])
def test_damaged_head_reads_as_unknown(vault_repo: VaultRepo, content: bytes) -> None:
    vault_repo.write("a/b", "n", "s")
    vault_repo.commit()
    (vault_repo.root / ".git" / "HEAD").write_bytes(content)
    assert gitrefs.head_commit(vault_repo.root) is None


def test_not_a_repository(tmp_path: Path) -> None:
    assert gitrefs.head_commit(tmp_path) is None
    (tmp_path / ".git").write_text("gitdir: /nonexistent/place\n")
    assert gitrefs.head_commit(tmp_path) is None
    assert os.listdir(tmp_path) == [".git"]


def _edit_meta(target: Path, key: str, value: str) -> None:
    """Change one meta value as a writer with the cache key would (re-sealed)."""
    edit_meta(target, **{key: value})
    reseal(target)


def _rebuilt(target: Path, key: str, old: str, seconds: float = 60) -> bool:
    """Whether the index at `target` is rebuilt (its meta `key` no longer `old`) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with IndexReader(target) as index:
            if index.meta.get(key) != old:
                return True
        time.sleep(0.2)
    return False


def test_an_index_from_another_cairn_version_is_served_and_refreshed(vault_repo: VaultRepo) -> None:
    """Defaults live in the stored config: after an upgrade the hook serves the old index (built from the commit
    served) and refreshes it."""
    make_vault(vault_repo)
    target = index_path(vault_repo.root.resolve())
    _edit_meta(target, "cairn_version", "0.0.1")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    done = vault_repo.cairn(
        "hook", "--format", "claude-code", input=payload_for("claude-code", prompt, vault_repo.root)
    )
    assert done.returncode == 0 and REBASE_ID in done.stdout
    assert log_entries()[-1]["stale"] is True
    assert _rebuilt(target, "cairn_version", "0.0.1")


def test_an_index_built_under_a_withdrawn_security_leave_serves_nothing(vault_repo: VaultRepo) -> None:
    """A vault that switched a security rule off with the user's `[security] allow_disabled_rules` may hold a card
    the rule refuses: once the user withdraws that leave, the hook serves nothing from the index built under it,
    saying why, though its commit is the one served."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[security]\nallow_disabled_rules = ["secret"]\n')
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    make_vault(vault_repo)
    prompt = "git pull --rebase dropped my local commits after a force-push"
    payload = payload_for("claude-code", prompt, vault_repo.root)
    assert REBASE_ID in vault_repo.cairn("hook", "--format", "claude-code", input=payload).stdout  # the leave given
    config.write_text("")  # the leave withdrawn
    payload = payload_for("claude-code", prompt, vault_repo.root, "another-session")  # not a card given before
    done = vault_repo.cairn("hook", "--format", "claude-code", input=payload)
    assert (done.returncode, done.stdout) == (0, "")
    entry = log_entries()[-1]
    assert entry["stale"] is True and entry["injected"] == []
    assert "allow_disabled_rules), and it no longer does" in str(entry["vaults"][0]["error"])


def test_cairn_index_after_the_leave_is_withdrawn_refuses_the_card_it_let_in(vault_repo: VaultRepo) -> None:
    """The card a withdrawn leave let in is read again by the next `cairn index`, though its commit and blob are
    the ones indexed: an update that re-read only the changed cards kept it in the index the hook serves."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[security]\nallow_disabled_rules = ["secret"]\n')
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    make_vault(vault_repo)
    vault_repo.write(
        REBASE_ID,
        "Pull --rebase drops local commits after a force-push",
        "If the shared branch was force-pushed, git pull --rebase can silently drop your local commits.",
        "Before you pull, check the deploy key: export AWS_ACCESS_KEY_ID=AKIAZ7Q2M4R8T6W1Y3U5",
        scope=["git"],
    )
    vault_repo.commit("The card holds a key")
    assert vault_repo.invoke("index").returncode == 0
    prompt = "git pull --rebase dropped my local commits after a force-push"
    payload = payload_for("claude-code", prompt, vault_repo.root)
    assert REBASE_ID in vault_repo.cairn("hook", "--format", "claude-code", input=payload).stdout  # the leave given
    config.write_text("")  # the leave withdrawn
    indexed = vault_repo.cairn("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert any(p["path"] == f"cards/{REBASE_ID}.md" for p in json.loads(indexed.stdout)["problems"])
    payload = payload_for("claude-code", prompt, vault_repo.root, "another-session")
    done = vault_repo.cairn("hook", "--format", "claude-code", input=payload)
    assert done.returncode == 0 and REBASE_ID not in done.stdout
    assert log_entries()[-1]["vaults"][0]["error"] is None


def test_an_index_checked_by_older_security_rules_serves_nothing_until_rebuilt(vault_repo: VaultRepo) -> None:
    """After an upgrade that adds a security rule, the old index may hold a card the new rule refuses: the hook
    serves nothing from it (it does not wait for the rebuild) and rebuilds it, and the rebuilt index serves again."""
    make_vault(vault_repo)
    target = index_path(vault_repo.root.resolve())
    _edit_meta(target, "security_rules", "4")
    prompt = "git pull --rebase dropped my local commits after a force-push"
    payload = payload_for("claude-code", prompt, vault_repo.root)
    done = vault_repo.cairn("hook", "--format", "claude-code", input=payload)
    assert (done.returncode, done.stdout) == (0, "")
    entry = log_entries()[-1]
    assert entry["stale"] is True and entry["injected"] == []
    assert "older security rules" in str(entry["vaults"][0]["error"])
    assert _rebuilt(target, "security_rules", "4")
    done = vault_repo.cairn("hook", "--format", "claude-code", input=payload)
    assert done.returncode == 0 and REBASE_ID in done.stdout
