"""packed-refs at scale: the hook resolves the served ref on every prompt, so a repository of many refs (tags, pull
requests' refs) must cost it a few small reads of packed-refs, not the whole file, and a file of any size must still
name the ref, as git itself does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cairn.hot import gitrefs
from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, make_vault

HEADER = "# pack-refs with: peeled fully-peeled sorted \n"


def _bytes_read() -> int:
    """What this process has read through read(2)-like calls so far (Linux's /proc/self/io `rchar`)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _pack(root: Path, refs: dict[str, str], peeled: dict[str, str] | None = None) -> int:
    """Write `refs` (name -> object id) as git's sorted packed-refs (peeled tags' `^` lines after them); its size."""
    lines = [HEADER]
    for name in sorted(refs, key=lambda n: n.encode()):
        lines.append(f"{refs[name]} {name}\n")
        if peeled and name in peeled:
            lines.append(f"^{peeled[name]}\n")
    data = "".join(lines).encode()
    (root / ".git" / "packed-refs").write_bytes(data)
    return len(data)


def test_refs_packed_by_git_resolve_as_git_resolves_them(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/b", "n", "s")
    first = vault_repo.commit()
    vault_repo.git("tag", "-a", "-m", "reviewed", "v1")
    vault_repo.write("a/c", "n", "s")
    second = vault_repo.commit()
    # names that sort next to each other and to the served ones, branches and tags, annotated (peeled) and not
    names = ["ma", "mai", "main-2", "mainline", "maim", "m/ain", "feature/x", "zz", "a", "v1.0", "v10"]
    for n, name in enumerate(names):
        vault_repo.git("branch", name, first if n % 2 else second)
    for n in range(300):
        vault_repo.git("update-ref", f"refs/pull/{n}/head", first if n % 3 else second)
    vault_repo.git("tag", "-a", "-m", "later", "v2")
    vault_repo.git("tag", "light", first)
    vault_repo.git("pack-refs", "--all", "--prune")
    packed = (vault_repo.root / ".git" / "packed-refs").read_text()
    assert (
        "sorted" in packed.splitlines()[0] and "^" in packed and not (vault_repo.root / ".git/refs/heads/main").exists()
    )
    assert gitrefs.served_ref(vault_repo.root) == ("refs/heads/main", second)
    for name in [*names, "main", "v1", "v2", "light", "refs/pull/0/head", "refs/pull/299/head", "refs/pull/150/head"]:
        want = vault_repo.git("rev-parse", f"{name}^{{commit}}")
        ref, commit = gitrefs.served_ref(vault_repo.root, name)
        assert commit == want, (name, ref)
    for absent in ["m", "mainz", "refs/pull/300/head", "refs/pull/1", "0", "~"]:
        assert gitrefs.served_ref(vault_repo.root, absent)[1] is None, absent


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="counts the bytes read with Linux's /proc/self/io")
def test_a_hundred_thousand_packed_refs_cost_a_few_small_reads(vault_repo: VaultRepo) -> None:
    vault_repo.write("a/b", "n", "s")
    commit = vault_repo.commit()
    tag = vault_repo.git("rev-parse", "HEAD^{tree}")  # any other object id: the peeled line must be the one read
    refs = {f"refs/tags/t{n:06d}": tag for n in range(100_000)} | {"refs/heads/main": commit}
    size = _pack(vault_repo.root, refs, peeled={"refs/tags/t077777": commit})
    (vault_repo.root / ".git" / "refs" / "heads" / "main").unlink()
    assert vault_repo.git("rev-parse", "main") == commit  # git reads the file as written
    for configured, expected in [(None, commit), ("main", commit), ("t077777", commit), ("t000001", tag)]:
        before = _bytes_read()
        assert gitrefs.served_ref(vault_repo.root, configured)[1] == expected
        read = _bytes_read() - before
        assert read < 200_000 < size, (configured, read)  # was the whole file each time, up to five times a prompt


def test_the_hook_serves_a_vault_whose_packed_refs_is_over_64_mib(vault_repo: VaultRepo) -> None:
    commit = make_vault(vault_repo)
    # 1,150,000 refs before refs/heads/main (a repository that keeps every pull request's refs): 69 MB
    refs = {f"refs/heads/a{n:07d}": commit for n in range(1_150_000)} | {"refs/heads/main": commit}
    assert _pack(vault_repo.root, refs) > 1 << 26
    (vault_repo.root / ".git" / "refs" / "heads" / "main").unlink()
    assert vault_repo.git("rev-parse", "main") == commit
    done = vault_repo.cairn(
        "hook",
        "--format",
        "claude-code",
        input=payload_for("claude-code", FITTING_PROMPT, vault_repo.root),
        env={"CAIRN_VAULT": str(vault_repo.root)},
    )
    assert done.returncode == 0, done.stderr
    entry = log_entries()[-1]
    assert entry["error"] is None and entry["stale"] is False, entry  # was: "cannot read the commit of refs/heads/main"
    assert entry["commit"] == commit and entry["injected"] == [REBASE_ID]
    assert REBASE_ID in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
