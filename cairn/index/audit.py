"""`cairn audit`: checks that the index, the hook log and the session files are whole and honest.

Each check passes or fails with details. The index is audited as it is cached (never rebuilt here): it must open,
pass SQLite's check and its own checksum, and match the tree of the commit it names. The hook log must hold
hashes and lengths of prompts, never their text, and every card it says it injected must have existed at the
commit it names; session files must parse and name cards that existed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from cairn import gitrepo
from cairn.cards.card import card_id_from_path
from cairn.hot import paths
from cairn.hot.errors import CairnError, IndexCorrupt, IndexMissing
from cairn.hot.index import IndexReader
from cairn.hot.vault import Vault
from cairn.index import store
from cairn.index.build import index_file_for

LOG_FILE = "hook.jsonl"
SESSIONS_DIR = "sessions"
MAX_DETAILS = 20

# Keys a log line may carry at any depth; a string anywhere else, or a long one, is treated as possible prompt text.
_SHORT_TEXT_KEYS = frozenset({"time", "format", "session", "prompt_sha256", "commit", "id", "decision", "reason"})
_TEXT_LIMITS = {"vault": 4096, "error": 1000}
_SHORT_TEXT = 200
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
# Required keys and their types; the prompt's hash and length are null when the hook failed before reading it.
_LOG_TYPES: dict[str, tuple[type, ...]] = {
    "time": (str,),
    "prompt_sha256": (str, type(None)),
    "prompt_len": (int, type(None)),
    "candidates": (list,),
    "injected": (list,),
}


@dataclass(frozen=True, slots=True)
class Check:
    """One audit check. status: `pass`, `fail` or `skip` (could not run; says why)."""

    name: str
    status: str
    summary: str
    details: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "summary": self.summary, "details": list(self.details)}


@dataclass(frozen=True, slots=True)
class AuditReport:
    vault: Path
    index_file: Path
    checks: tuple[Check, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(check.status != "fail" for check in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "vault": str(self.vault),
            "index": str(self.index_file),
            "checks": [check.to_dict() for check in self.checks],
        }


def audit(vault: Vault, *, require_signed: bool = False, state_dir: Path | None = None) -> AuditReport:
    """Run every check against the vault's cached index and the hook's state folder."""
    repo = gitrepo.open_repo(vault)
    state = state_dir or paths.state_dir()
    target = index_file_for(vault)
    trees = _Trees(repo, vault)
    checks: list[Check] = []
    cache_check, reader = _check_cache(target, vault, repo)
    checks.append(cache_check)
    try:
        if reader is None:
            why = "the index cannot be read; run `cairn index` to rebuild it"
            checks.append(Check("entries", "skip", why))
            checks.append(Check("provenance", "skip", why))
        else:
            checks.append(_check_entries(reader, trees))
            checks.append(_check_provenance(reader, repo))
        checks.append(_check_log([state / f"{LOG_FILE}.1", state / LOG_FILE], vault, trees))
        checks.append(_check_sessions(state / SESSIONS_DIR, vault, trees))
        if require_signed:
            if reader is None:
                checks.append(Check("signatures", "fail", "the index cannot be read, so signatures cannot be checked"))
            else:
                checks.append(_check_signatures(reader, repo))
    finally:
        if reader is not None:
            reader.close()
    return AuditReport(vault.root, target, tuple(checks))


# -- the cache ------------------------------------------------------------------------------------------------------


def _check_cache(target: Path, vault: Vault, repo: git.Repo) -> tuple[Check, IndexReader | None]:
    try:
        reader = IndexReader(target)
    except IndexMissing:
        try:
            gitrepo.head_commit(repo)
        except CairnError as exc:  # an unborn HEAD: there is nothing to index yet, and `cairn index` would say so
            return Check("cache", "fail", f"no index at {target}: {exc}, then run `cairn index`"), None
        return Check("cache", "fail", f"no index at {target}; run `cairn index`"), None
    except IndexCorrupt as exc:
        return Check("cache", "fail", "the index is damaged; run `cairn index` to rebuild it", (str(exc),)), None
    problems: list[str] = []
    try:
        if not reader.integrity_ok():
            problems.append("SQLite's quick_check failed")
        if not store.checksum_holds(reader):
            problems.append("the checksum over (id, path, blob) of every card does not hold: the file was altered")
        if reader.meta.get("source") != "commit":
            problems.append(f"the index was built from {reader.meta.get('source')!r}, not from a commit")
        if reader.meta.get("vault_root") != str(vault.root):
            problems.append(f"the index names another vault: {reader.meta.get('vault_root')!r}")
        commit = reader.commit
    except (IndexCorrupt, KeyError, ValueError) as exc:
        reader.close()
        return Check("cache", "fail", "the index is damaged; run `cairn index` to rebuild it", (str(exc),)), None
    if problems:
        reader.close()
        return Check("cache", "fail", "the index is damaged; run `cairn index` to rebuild it", tuple(problems)), None
    if not gitrepo.commit_exists(repo, commit):
        reader.close()
        return Check("cache", "fail", f"the index names commit {commit[:12]}, which the repository does not hold"), None
    details: tuple[str, ...] = ()
    try:
        head = gitrepo.head_commit(repo)
        if head != commit:
            details = (f"the index is at {commit[:8]} and HEAD at {head[:8]}; `cairn index` brings it up to date",)
    except CairnError:
        pass
    summary = f"index at {commit[:8]} opens, passes SQLite's check and its checksum ({reader.n_cards} cards)"
    return Check("cache", "pass", summary, details), reader


def _check_entries(reader: IndexReader, trees: _Trees) -> Check:
    commit = reader.commit
    tree = trees.blobs(commit)
    problems: list[str] = []
    indexed = reader.entries()
    for card_id, path, blob in indexed:
        if card_id_from_path(path) != card_id:
            problems.append(f"{card_id}: indexed under path {path}, which is not cards/{card_id}.md")
        elif path not in tree:
            problems.append(f"{card_id}: indexed, but {path} is not in the tree at {commit[:8]}")
        elif tree[path] != blob:
            problems.append(f"{card_id}: indexed blob {blob[:12]} differs from {tree[path][:12]} at {commit[:8]}")
    covered = {path for _, path, _ in indexed} | {path for path, *_ in reader.problems()}
    for path in sorted(set(tree) - covered):
        if _stored_path(path) in covered:  # a name with undecodable bytes is stored readable (see indexer)
            continue
        problems.append(f"{path}: in the tree at {commit[:8]} but neither indexed nor reported as a problem")
    if problems:
        return Check(
            "entries", "fail", f"{len(problems)} card(s) do not match the tree at {commit[:8]}", _cap(problems)
        )
    return Check("entries", "pass", f"all {len(indexed)} indexed cards match the files at {commit[:8]}")


def _stored_path(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _check_provenance(reader: IndexReader, repo: git.Repo) -> Check:
    missing = []
    boundary = gitrepo.shallow_commits(repo)
    cut = 0
    for card_id in reader.ids():
        record = reader.record(card_id) or {}
        prov = record.get("provenance")
        if not isinstance(prov, dict) or not prov.get("created") or not prov.get("last_changed"):
            missing.append(f"{card_id}: no provenance (creator and last change) in the index")
        elif isinstance(prov["created"], dict) and prov["created"].get("commit") in boundary:
            cut += 1
    if missing:
        return Check("provenance", "fail", f"{len(missing)} card(s) have no provenance", _cap(missing))
    if cut:
        return Check(
            "provenance",
            "pass",
            "every indexed card has its creator, last change and authors",
            (
                f"this clone is shallow: for {cut} card(s) history stops at the clone's boundary, so their creator "
                "may be older; `git fetch --unshallow`, then `cairn index --rebuild`, for the whole history",
            ),
        )
    return Check("provenance", "pass", "every indexed card has its creator, last change and authors")


def _check_signatures(reader: IndexReader, repo: git.Repo) -> Check:
    last: dict[str, str] = {}
    problems: list[str] = []
    for card_id in reader.ids():
        prov = (reader.record(card_id) or {}).get("provenance") or {}
        commit = (prov.get("last_changed") or {}).get("commit")
        if commit:
            last[card_id] = commit
        else:
            problems.append(f"{card_id}: its last commit is unknown")
    # Verified now, with the repository's current keys, rather than trusting what the index recorded.
    verdicts = gitrepo.commit_signatures(repo, set(last.values()))
    for card_id, commit in sorted(last.items()):
        verdict = verdicts.get(commit, gitrepo.Signature("N"))
        if verdict.status != "G":
            what = "not signed" if verdict.status == "N" else f"signature status {verdict.status}, not good"
            problems.append(f"{card_id}: last commit {commit[:8]} is {what}")
    if problems:
        return Check("signatures", "fail", f"{len(problems)} card(s) lack a good signature", _cap(problems))
    return Check("signatures", "pass", f"the last commit of every card ({len(last)}) carries a good signature")


# -- the hook log and session files ----------------------------------------------------------------------------------


def _check_log(log_files: list[Path], vault: Vault, trees: _Trees) -> Check:
    """The log and its rotated predecessor (`hook.jsonl.1`), line by line."""
    present = [f for f in log_files if f.is_file()]
    if not present:
        return Check("log", "pass", f"no hook log at {log_files[-1]} (the hook has not run)")
    problems: list[str] = []
    injections: list[tuple[str, str | None, list[Any]]] = []
    n_lines = 0
    for log_file in present:
        for number, line in _lines(log_file):
            n_lines += 1
            where = f"{log_file.name}:{number}"
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: not JSON ({exc.msg})")
                continue
            if not isinstance(entry, dict):
                problems.append(f"{where}: not a JSON object")
                continue
            problems.extend(f"{where}: {p}" for p in _log_line_problems(entry))
            injected = entry.get("injected")
            if _same_vault(entry.get("vault"), vault) and isinstance(injected, list) and injected:
                injections.append((where, entry.get("commit"), injected))
    unverifiable: list[str] = []
    for where, commit, ids in injections:
        if isinstance(commit, str) and commit and not trees.has_commit(commit):
            # History rewritten, or a shallow clone: nothing says the injection was wrong, only that it cannot be
            # checked here. Reported, not failed.
            unverifiable.append(f"{where}: commit {commit[:12]} is not in this repository; its cards cannot be checked")
            continue
        problems.extend(f"{where}: {p}" for p in trees.missing_cards(commit, ids))
    if problems:
        return Check(
            "log", "fail", f"{len(problems)} problem(s) in {n_lines} log line(s)", _cap(problems + unverifiable)
        )
    summary = (
        f"{n_lines} log line(s) parse and hold hashes and lengths only; "
        f"{sum(len(ids) for _, _, ids in injections)} injection(s) of this vault's cards existed at their commits"
    )
    if unverifiable:
        summary = (
            f"{n_lines} log line(s) parse and hold hashes and lengths only; the injections checked existed at their "
            f"commits; {len(unverifiable)} line(s) name commits this repository no longer has (not checked)"
        )
    return Check("log", "pass", summary, _cap(unverifiable))


def _log_line_problems(entry: dict[str, Any]) -> list[str]:
    problems = []
    for key, kinds in _LOG_TYPES.items():
        if key not in entry:
            problems.append(f"missing {key!r}")
        elif not isinstance(entry[key], kinds) or isinstance(entry[key], bool):
            problems.append(f"{key!r} has the wrong type")
    digest = entry.get("prompt_sha256")
    if isinstance(digest, str) and not _HEX64.match(digest):
        problems.append("'prompt_sha256' is not a sha256 hex digest (is it the prompt itself?)")
    session = entry.get("session")
    if session is not None and not (isinstance(session, str) and _HEX32.match(session)):
        problems.append("'session' is not a hashed session id")
    problems.extend(_free_text(entry, ""))
    return problems


def _free_text(value: Any, key: str) -> Iterator[str]:
    """Keys naming a prompt, and text that could be one: long, or free text under a key the format does not name."""
    if isinstance(value, dict):
        for k, v in value.items():
            name = str(k)
            if "prompt" in name.lower() and name not in ("prompt_sha256", "prompt_len"):
                yield f"key {name!r} carries prompt text; the log must hold only its hash and length"
            else:
                yield from _free_text(v, name)
    elif isinstance(value, list):
        for item in value:
            yield from _free_text(item, key)
    elif isinstance(value, str):
        limit = _TEXT_LIMITS.get(key, _SHORT_TEXT)
        if len(value) > limit:
            yield f"{key!r} holds {len(value)} characters of text; the log must hold hashes and lengths only"
        elif key not in _SHORT_TEXT_KEYS and key not in _TEXT_LIMITS and len(value.split()) > 3:
            yield f"{key!r} holds free text; the log must hold hashes and lengths only"


def _check_sessions(folder: Path, vault: Vault, trees: _Trees) -> Check:
    if not folder.is_dir():
        return Check("sessions", "pass", "no session files (the hook has not run)")
    problems: list[str] = []
    files = sorted(folder.glob("*.json"))
    n_ours = 0
    for file in files:
        try:
            data = json.loads(file.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{file.name}: does not parse ({exc})")
            continue
        shape = _session_problems(file, data)
        if shape:
            problems.extend(f"{file.name}: {p}" for p in shape)
            continue
        if not _same_vault(data["vault"], vault):
            continue
        n_ours += 1
        for card_id, seen in sorted(data["injected"].items()):
            problems.extend(f"{file.name}: {p}" for p in trees.missing_cards(seen["commit"], [card_id]))
    if problems:
        return Check("sessions", "fail", f"{len(problems)} problem(s) in {len(files)} session file(s)", _cap(problems))
    return Check("sessions", "pass", f"{len(files)} session file(s) parse; {n_ours} of this vault name existing cards")


def _session_problems(file: Path, data: Any) -> list[str]:
    if not isinstance(data, dict):
        return ["not a JSON object"]
    problems = []
    if data.get("session") != file.stem:
        problems.append("'session' does not match the file name")
    if not isinstance(data.get("vault"), str):
        problems.append("'vault' is missing")
    injected = data.get("injected")
    if not isinstance(injected, dict):
        problems.append("'injected' is not a mapping of card ids")
    else:
        for card_id, seen in injected.items():
            if not isinstance(seen, dict) or not isinstance(seen.get("commit"), str):
                problems.append(f"injected card {card_id!r} has no commit")
    problems.extend(_free_text({k: v for k, v in data.items() if k != "injected"}, ""))
    return problems


# -- helpers --------------------------------------------------------------------------------------------------------


class _Trees:
    """Card files per commit, listed once each."""

    def __init__(self, repo: git.Repo, vault: Vault) -> None:
        self._repo = repo
        self._vault = vault
        self._blobs: dict[str, dict[str, str]] = {}

    def blobs(self, commit: str) -> dict[str, str]:
        if commit not in self._blobs:
            entries = gitrepo.card_entries(self._repo, commit, self._vault)
            self._blobs[commit] = {e.path: e.blob for e in entries if card_id_from_path(e.path) is not None}
        return self._blobs[commit]

    def has_commit(self, commit: str) -> bool:
        return gitrepo.commit_exists(self._repo, commit)

    def missing_cards(self, commit: Any, ids: list[Any]) -> list[str]:
        if not isinstance(commit, str) or not commit:
            return [f"injected {', '.join(map(str, ids))} without naming a commit"]
        if not gitrepo.commit_exists(self._repo, commit):
            return [f"commit {commit[:12]} is not in the repository, so its cards cannot be checked"]
        tree = self.blobs(gitrepo.resolve_commit(self._repo, commit))
        return [
            f"card {card_id!r} did not exist at {commit[:8]}"
            for card_id in ids
            if not isinstance(card_id, str) or f"cards/{card_id}.md" not in tree
        ]


def _same_vault(value: Any, vault: Vault) -> bool:
    if not isinstance(value, str) or not value:
        return False
    return os.path.realpath(value) == os.path.realpath(vault.root)


def _lines(file: Path) -> Iterator[tuple[int, str]]:
    with open(file, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line


def _cap(items: list[str]) -> tuple[str, ...]:
    if len(items) <= MAX_DETAILS:
        return tuple(items)
    return (*items[:MAX_DETAILS], f"... and {len(items) - MAX_DETAILS} more")
