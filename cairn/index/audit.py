"""`cairn audit`: checks that the index, the hook log and the session files are whole and honest.

Each check passes, fails or is skipped (saying why), with details. The index is audited as it is cached (never
rebuilt here): it must open, pass its structure check and its seals, and match the tree of the commit it names. The
seals are not trusted: anything running as the user can read the cache key and re-seal an edited file, so
`served` re-derives every served value (each card's fields and record, its postings and term statistics, the
score bounds, the card count and average lengths, the stored settings) from the committed blobs and cairn.toml at
the index's commit, with the index build's own functions, and reports each difference on its own line.
The hook log must hold hashes and lengths of prompts, never their text, and every card it says it injected must have
existed at the commit it names; session files must parse and name cards that existed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn import gitrepo
from cairn.cards.card import card_id_from_path
from cairn.hot import paths
from cairn.hot.errors import CairnError, IndexCorrupt, IndexMissing
from cairn.hot.index import SECURITY_RULES_VERSION, IndexReader
from cairn.hot.userconfig import leave_withdrawn
from cairn.hot.vault import Vault, shell_word
from cairn.index import build as indexer
from cairn.index import expiry, store
from cairn.index.build import index_file_for

if TYPE_CHECKING:  # gitpython is imported by `cairn.gitrepo` alone (it quiets gitpython's check for git)
    import git

LOG_FILE = "hook.jsonl"
SESSIONS_DIR = "sessions"
MAX_DETAILS = 20

# Keys a log line may carry at any depth; a string anywhere else, or a long one, is treated as possible prompt text.
_SHORT_TEXT_KEYS = frozenset(
    {"time", "format", "session", "prompt_sha256", "commit", "id", "decision", "reason", "name", "ref", "skipped"}
)
# Card ids (`injected` lists, a candidate's `id`) may hold spaces: they are ids, not free text (a long one still is).
_TEXT_LIMITS = {"vault": 4096, "error": 1000, "injected": 1000, "id": 1000}
_SHORT_TEXT = 200
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX_NAME = re.compile(r"\A[0-9a-fA-F]{4,64}\Z")  # a commit id, whole or abbreviated, as a log line names it
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


def audit(
    vault: Vault,
    *,
    require_signed: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Run every check against the vault's cached index and the hook's state folder; `progress(done, total)` over
    the cards the longest check, `served`, reads again from the commit."""
    with gitrepo.open_repo(vault) as repo:
        return _audit(repo, vault, require_signed, progress)


def _audit(
    repo: Any,
    vault: Vault,
    require_signed: bool,
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    state = paths.state_dir()
    target = index_file_for(vault)
    trees = _Trees(repo, vault)
    checks: list[Check] = []
    cache_check, reader = _check_cache(target, vault, repo)
    checks.append(cache_check)
    # Every card's stored record parsed once for the checks that read it (each parse of 10,000 took 0.34 s of CPU);
    # not kept when it fails, so each of those checks fails on a damaged record on its own, as before.
    stored = functools.cache(lambda: _stored_cards(reader) if reader is not None else {})
    index = indexer.index_command(vault)  # audit runs from any folder (`--vault NAME`): the command names the vault
    try:
        if reader is None:
            why = f"the index cannot be read; run `{index}` to rebuild it"
            checks.append(Check("entries", "skip", why))
            checks.append(Check("served", "skip", why))
            checks.append(Check("provenance", "skip", why))
        elif reader.meta.get("config_error"):
            # The served commit's cairn.toml cannot be read: the index holds no card and nothing is served.
            error = str(reader.meta["config_error"])
            checks.append(Check("config", "fail", f"{error}; nothing is served until a fix is committed"))
            why = "the index holds no card while the served commit's cairn.toml cannot be read"
            checks.append(Check("entries", "skip", why))
            checks.append(Check("served", "skip", why))
            checks.append(Check("provenance", "skip", why))
        else:
            checks.append(_readable("entries", index, lambda: _check_entries(reader, trees)))
            checks.append(_readable("served", index, lambda: _check_served(reader, stored(), repo, vault, progress)))
            checks.append(_readable("provenance", index, lambda: _check_provenance(stored(), repo, vault)))
        checks.append(_check_log([state / f"{LOG_FILE}.1", state / LOG_FILE], vault, trees))
        checks.append(_check_sessions(state / SESSIONS_DIR, vault, trees))
        if require_signed:
            if reader is None:
                checks.append(Check("signatures", "fail", "the index cannot be read, so signatures cannot be checked"))
            else:
                checks.append(_readable("signatures", index, lambda: _check_signatures(stored(), repo)))
    finally:
        if reader is not None:
            reader.close()
    return AuditReport(vault.root, target, tuple(checks))


def _readable(name: str, index: str, check: Callable[[], Check]) -> Check:
    """A check of the index's contents, failed when a record it reads is damaged beyond reading (the cache check
    says what; the other checks still run). index: the `cairn index` command of this vault."""
    try:
        return check()
    except IndexCorrupt as exc:
        return Check(name, "fail", f"the index is damaged; run `{index}` to rebuild it", (str(exc),))


# -- the cache ------------------------------------------------------------------------------------------------------


def _check_cache(target: Path, vault: Vault, repo: git.Repo) -> tuple[Check, IndexReader | None]:
    """The file opens, passes its structure check and its seals, and names this vault and a commit it holds. A file
    that opens is returned even when its seals fail, so the other checks can say what differs."""
    index = indexer.index_command(vault)
    try:
        reader = IndexReader(target, unchecked=True)
    except IndexMissing:
        try:
            gitrepo.head_commit(repo)
        except CairnError as exc:  # an unborn HEAD: there is nothing to index yet, and `cairn index` would say so
            return Check("cache", "fail", f"no index at {target}: {exc}, then run `{index}`"), None
        return Check("cache", "fail", f"no index at {target}; run `{index}`"), None
    except IndexCorrupt as exc:
        return Check("cache", "fail", f"the index is damaged; run `{index}` to rebuild it", (str(exc),)), None
    problems: list[str] = []
    try:
        if not reader.meta_sealed():
            problems.append("its settings do not match their seal: altered, or written with another cache key")
        problems.extend(store.verify(reader))
        if reader.meta.get("source") != "commit":
            problems.append(f"the index was built from {reader.meta.get('source')!r}, not from a commit")
        if reader.meta.get("vault_root") != str(vault.root):
            problems.append(f"the index names another vault: {reader.meta.get('vault_root')!r}")
        commit = reader.commit
        n_cards = reader.n_cards
    except (IndexCorrupt, KeyError, ValueError) as exc:
        reader.close()
        return Check("cache", "fail", f"the index is damaged; run `{index}` to rebuild it", (str(exc),)), None
    if not gitrepo.commit_exists(repo, commit):
        reader.close()
        elsewhere = gitrepo.elsewhere_note()
        why = (
            f"the index names commit {commit[:12]}, which git does not find: {elsewhere}, then run this again"
            if elsewhere
            else f"the index names commit {commit[:12]}, which the repository does not hold"
        )
        return Check("cache", "fail", why), None
    if problems:
        why = f"the index was altered or is damaged; run `{index}` to rebuild it"
        return Check("cache", "fail", why, _cap(problems)), reader
    whole = f"index at {commit[:8]} opens, passes its structure check and its seals ({n_cards} cards)"
    rules = reader.meta.get("security_rules")
    if rules != SECURITY_RULES_VERSION:  # the hook serves nothing from it: a card a newer rule refuses may be in it
        summary = (
            f"the index was checked by older security rules ({rules!r}, this Cairn's are {SECURITY_RULES_VERSION!r}), "
            f"so agents get nothing from this vault until it is rebuilt; run `{index}`"
        )
        return Check("cache", "fail", summary, (whole,)), reader
    allowed = reader.meta.get("security_allowed")
    if allowed and leave_withdrawn(str(allowed)):  # the hook serves nothing from it either
        summary = (
            "the index was built while your configuration let the vault switch security rules off "
            f"([security] allow_disabled_rules: {allowed}), and it no longer does, so agents get nothing from this "
            f"vault until it is rebuilt; run `{index}`"
        )
        return Check("cache", "fail", summary, (whole,)), reader
    try:
        ref, served = indexer.served_commit(vault, repo)
    except CairnError as exc:  # the hook serves nothing from a vault whose served ref names no commit
        return Check(
            "cache", "fail", f"the served ref names no commit, so agents get nothing from this vault: {exc}", (whole,)
        ), reader
    if served == commit:
        return Check("cache", "pass", whole), reader
    # The hook serves nothing from an index of another commit than the served ref's (and starts `cairn index`)
    if gitrepo.is_ancestor(repo, commit, served):
        why, fix = "stale", f"run `{index}`"
    else:
        why, fix = (
            "on another history (rewritten?)",
            f"check the new history, then run `{indexer.rebuild_command(vault)}`",
        )
    summary = (
        f"the index is at {commit[:8]} but the served ref {ref} is at {served[:8]}: {why}, so agents get nothing "
        f"from this vault until it is indexed; {fix}"
    )
    return Check("cache", "fail", summary, (whole,)), reader


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


# Each indexed card's sealed values, stored record and provenance, by id (`_stored_cards`).
_Stored = dict[str, tuple[list[Any], Any, Any]]


def _stored_cards(reader: IndexReader) -> _Stored:
    """Each indexed card's sealed values with its stored record and provenance (both None when its cold record
    does not parse), by id, seals not asked (a card whose sealed values do not parse is `verify`'s finding)."""
    out: _Stored = {}
    for values, _seal, _message, cold in reader.sealed_rows():
        if values is None:
            continue
        try:
            record, provenance, _terms = json.loads(cold)
        except (TypeError, ValueError):
            record = provenance = None
        out[str(values[1])] = (values, record, provenance)
    return out


def _stored_provenance(stored: _Stored) -> dict[str, Any]:
    """Each indexed card's stored provenance (None when there is none or it does not parse), by id, from
    `_stored_cards`."""
    return {card_id: values[2] for card_id, values in sorted(stored.items())}


# The served columns of a card row, by their place in `SEALED_CARD_COLUMNS` (the JSON ones decoded).
_SERVED_FIELDS = (
    ("path", 2, False),
    ("blob", 3, False),
    ("name", 4, False),
    ("summary", 5, False),
    ("status", 6, False),
    ("expires_on", 7, False),
    ("scope", 8, True),
    ("not_when", 9, True),
    ("supersedes", 10, True),
)


def _check_served(
    reader: IndexReader,
    stored: _Stored,
    repo: git.Repo,
    vault: Vault,
    progress: Callable[[int, int], None] | None = None,
) -> Check:
    """Every served value re-derived from the commit's blobs and cairn.toml, with the index build's own functions
    (`build._card_entries`, `build._read_entries`, `store.card_postings`), compared one by one with the index's
    (`stored`: its cards, `_stored_cards`)."""
    commit = reader.commit
    short = commit[:8]
    entries = indexer._card_entries(repo, commit, vault)
    try:
        committed = indexer._config_at(repo, commit, vault).to_dict()
    except CairnError as exc:
        return Check("served", "fail", f"cairn.toml at {short} cannot be read to re-derive the index: {exc}")
    # The build's own reading, with the committed settings (never the stored ones: they are what is checked).
    upserts, _ = indexer._read_entries(repo, entries, progress, {"config": json.dumps(committed, ensure_ascii=False)})
    diffs: list[str] = []
    row_ids = {int(v[0][0]): card_id for card_id, v in stored.items()}
    expected_postings: dict[str, dict[int, tuple[int, ...]]] = {}
    lengths_total = [0, 0, 0]
    n_cjk = 0
    for card in sorted(upserts, key=lambda c: c.id):
        lengths, postings = store.card_postings(card)
        lengths_total = [a + b for a, b in zip(lengths_total, lengths, strict=True)]
        n_cjk += store.has_cjk(postings)
        values = stored.get(card.id)
        if values is None:
            diffs.append(f"{card.id}: a valid card at {short}, but not in the index")
            continue
        # Its expiry as the build bounds it, by the day of its last change (the stored provenance: checked apart).
        believed = expiry.believed(dataclasses.replace(card, provenance=values[2]))
        diffs.extend(_field_diffs(believed, values[0], values[1], lengths))
        for term, stats in postings.items():
            expected_postings.setdefault(term, {})[int(values[0][0])] = stats
    expected_ids = {c.id for c in upserts}
    for card_id in sorted(set(stored) - expected_ids):
        diffs.append(f"{card_id}: served by the index, but not a card the files at {short} give")
    diffs.extend(_postings_diffs(reader, expected_postings, row_ids))
    diffs.extend(_order_diffs(reader, row_ids))
    diffs.extend(_meta_diffs(reader, committed, commit, len(upserts), lengths_total, n_cjk))
    if diffs:
        summary = f"{len(diffs)} served value(s) differ from the cards and cairn.toml at {short}"
        return Check("served", "fail", summary, _cap(diffs))
    return Check(
        "served",
        "pass",
        f"every served value of the {len(upserts)} cards, their postings and the settings re-derive from {short}",
    )


def _field_diffs(card: store.CardTerms, values: Any, record: Any, lengths: list[int]) -> list[str]:
    expected = {
        "path": card.path,
        "blob": card.blob,
        "name": card.name,
        "summary": card.summary,
        "status": card.status,
        "expires_on": card.expires_on,
        "scope": list(card.scope),
        "not_when": list(card.not_when),
        "supersedes": list(card.supersedes),
    }
    diffs: list[str] = []
    for name, at, is_json in _SERVED_FIELDS:
        got = values[at]
        if is_json:
            try:
                got = json.loads(got)
            except (TypeError, ValueError):
                pass
        if got != expected[name]:
            diffs.append(f"{card.id}: {name} differs from the committed card ({_both(got, expected[name])})")
    for n, part in enumerate(("name", "summary", "body")):
        if values[11 + n] != lengths[n]:
            diffs.append(f"{card.id}: the {part}'s token count differs ({_both(values[11 + n], lengths[n])})")
    if record is None:
        return [*diffs, f"{card.id}: its stored record does not parse"]
    want = json.loads(json.dumps(card.record, ensure_ascii=False))
    if not isinstance(record, dict):
        return [*diffs, f"{card.id}: its stored record is not a mapping"]
    for key in sorted(set(record) | set(want)):
        if record.get(key) != want.get(key):
            where = key if key not in expected else f"{key} in the stored record"
            diffs.append(
                f"{card.id}: {where} differs from the committed card ({_both(record.get(key), want.get(key))})"
            )
    return diffs


def _postings_diffs(
    reader: IndexReader, expected: dict[str, dict[int, tuple[int, ...]]], row_ids: dict[int, str]
) -> list[str]:
    by_card: dict[str, list[str]] = {}
    bounds: list[str] = []
    seen: set[str] = set()
    for term, df, blob, bound, _seal, _message in reader.term_rows():
        seen.add(term)
        try:
            got = {entry[0]: tuple(entry[1:]) for entry in store._unpack(df, blob)}
        except (ValueError, IndexError, TypeError):
            got = {}
        want = expected.get(term, {})
        for row in sorted(set(got) | set(want)):
            if got.get(row) != want.get(row):
                by_card.setdefault(row_ids.get(row, f"row {row} (no such card)"), []).append(term)
        stats = [v for row in sorted(got) for v in got[row]]
        if got and bytes(bound) != store._frontier(stats):
            bounds.append(f"term {term!r}: its stored score bound is not its postings' bound")
        if df != len(got):
            bounds.append(f"term {term!r}: its stored document frequency {df} is not its {len(got)} postings")
    for term in sorted(set(expected) - seen):
        for row in expected[term]:
            by_card.setdefault(row_ids.get(row, f"row {row}"), []).append(term)
    diffs = [
        f"{card_id}: postings differ from its committed text for {len(terms)} term(s): "
        + ", ".join(repr(t) for t in sorted(terms)[:5])
        + (" ..." if len(terms) > 5 else "")
        for card_id, terms in sorted(by_card.items())
    ]
    return diffs + bounds[:MAX_DETAILS]


def _order_diffs(reader: IndexReader, row_ids: dict[int, str]) -> list[str]:
    """The id order (which of two cards that score alike ranks first) against the stored cards' ids."""
    try:
        order = reader.id_order()
    except IndexCorrupt:
        return ["id order: not the one sealed in the settings"]
    want = {row: place for place, row in enumerate(sorted(row_ids, key=row_ids.__getitem__), 1)}
    got = {row: order[row - 1] for row in range(1, len(order) + 1) if order[row - 1]}
    if got.keys() != want.keys():
        return ["id order: it does not place each card once"]
    wrong = sorted(row_ids[row] for row in want if got[row] != want[row])
    if wrong:
        return [f"id order: {len(wrong)} card(s) out of their ids' order ({', '.join(wrong[:3])})"]
    return []


def _meta_diffs(
    reader: IndexReader, committed: dict[str, Any], commit: str, n: int, lengths_total: list[int], n_cjk: int
) -> list[str]:
    diffs: list[str] = []
    if reader.meta.get("n_cards") != str(n):
        diffs.append(f"settings: n_cards is {reader.meta.get('n_cards')!r}, the commit gives {n} cards")
    if reader.meta.get("n_cjk_cards", str(n_cjk)) != str(n_cjk):  # absent: an index from before the count
        diffs.append(
            f"settings: n_cjk_cards is {reader.meta.get('n_cjk_cards')!r}, the commit gives {n_cjk} cards with CJK terms"
        )
    avg = [round(total / n, 4) if n else 0.0 for total in lengths_total]
    try:
        stored_avg = json.loads(reader.meta.get("avg_lengths", ""))
    except ValueError:
        stored_avg = None
    if stored_avg != avg:
        diffs.append(f"settings: avg_lengths differ ({_both(stored_avg, avg)})")
    try:  # what the next update's averages start from
        stored_totals = json.loads(reader.meta.get("length_totals", ""))
    except ValueError:
        stored_totals = None
    if stored_totals != lengths_total:
        diffs.append(f"settings: length_totals differ ({_both(stored_totals, lengths_total)})")
    want = json.loads(json.dumps(committed, ensure_ascii=False))
    try:
        got = json.loads(reader.meta.get("config", ""))
    except ValueError:
        return [*diffs, "settings: the stored settings do not parse"]
    for key in _flat_diff(got, want, ""):
        diffs.append(
            f"settings: {key} differs from cairn.toml at {commit[:8]} ({_both(_dig(got, key), _dig(want, key))})"
        )
    return diffs


def _flat_diff(got: Any, want: Any, prefix: str) -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        out: list[str] = []
        for key in sorted(set(got) | set(want), key=str):
            out.extend(_flat_diff(got.get(key), want.get(key), f"{prefix}{key}."))
        return out
    return [] if got == want else [prefix.rstrip(".")]


def _dig(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _both(got: Any, want: Any) -> str:
    return f"index: {_short(got)}, commit: {_short(want)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _stored_path(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _check_provenance(stored: _Stored, repo: git.Repo, vault: Vault) -> Check:
    missing = []
    boundary = gitrepo.shallow_commits(repo)
    cut = 0
    for card_id, prov in _stored_provenance(stored).items():
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
                f"may be older; `git -C {shell_word(vault.git_root or vault.root)} fetch --unshallow`, then "
                f"`{indexer.rebuild_command(vault)}`, for the whole history",
            ),
        )
    return Check("provenance", "pass", "every indexed card has its creator, last change and authors")


def _check_signatures(stored: _Stored, repo: git.Repo) -> Check:
    last: dict[str, str] = {}
    problems: list[str] = []
    for card_id, provenance in _stored_provenance(stored).items():
        prov = provenance if isinstance(provenance, dict) else {}
        last_changed = prov.get("last_changed")
        commit = last_changed.get("commit") if isinstance(last_changed, dict) else None
        if commit:
            last[card_id] = commit
        else:
            problems.append(f"{card_id}: its last commit is unknown")
    # Verified now, with the repository's current keys, rather than trusting what the index recorded.
    verdicts = gitrepo.commit_signatures(repo, set(last.values()))
    for card_id, commit in sorted(last.items()):
        verdict = verdicts.get(commit, gitrepo.Signature("N"))
        if verdict.status != "G":
            words = gitrepo.signature_words(verdict.status)
            what = "is not signed" if verdict.status == "N" else f"has no good signature ({words})"
            problems.append(f"{card_id}: last commit {commit[:8]} {what}")
    if problems:
        return Check("signatures", "fail", f"{len(problems)} card(s) lack a good signature", _cap(problems))
    return Check("signatures", "pass", f"the last commit of every card ({len(last)}) carries a good signature")


# -- the hook log and session files ----------------------------------------------------------------------------------


def _check_log(log_files: list[Path], vault: Vault, trees: _Trees) -> Check:
    """The log and its rotated predecessor (`hook.jsonl.1`), line by line. Each is read only as the hook writes it: a
    link or anything else in its place (`hot.open_private` refuses them) is not the hook's log, and one at
    hook.jsonl means the prompts since went unlogged."""
    problems: list[str] = []
    present: list[Path] = []
    for log_file in log_files:
        try:
            mode = log_file.lstat().st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISREG(mode):
            present.append(log_file)
            continue
        kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
        effect = "the hook logs no prompt while it is there" if log_file == log_files[-1] else "not the hook's log"
        problems.append(
            f"{log_file.name}: {kind}, which the hook never writes through ({effect}); move {log_file} away"
        )
    if not present and not problems:
        return Check("log", "pass", f"no hook log at {log_files[-1]} (the hook has not run)")
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
            injections.extend((where, commit, ids) for commit, ids in _logged_injections(entry, vault))
    unverifiable: list[str] = []
    trees.prefetch([(commit, ids) for _, commit, ids in injections])
    for where, commit, ids in injections:
        if isinstance(commit, str) and _HEX_NAME.match(commit) and not trees.has_commit(commit):
            # History rewritten, or a shallow clone: nothing says the injection was wrong, only that it cannot be
            # checked here. Reported, not failed (the session check gives the same verdict).
            unverifiable.append(f"{where}: {_gone(commit)}")
            continue
        problems.extend(f"{where}: {p}" for p in trees.missing_cards(commit, ids))
    if problems:
        summary = f"{len(problems)} problem(s) in {n_lines} log line(s)" + _unchecked(unverifiable, "line(s)")
        return Check("log", "fail", summary, _cap(problems + unverifiable))
    summary = (
        f"{n_lines} log line(s) parse and hold hashes and lengths only; "
        f"{sum(len(ids) for _, _, ids in injections)} injection(s) of this vault's cards existed at their commits"
    )
    if unverifiable:
        summary = (
            f"{n_lines} log line(s) parse and hold hashes and lengths only; the injections checked existed at their "
            "commits" + _unchecked(unverifiable, "line(s)")
        )
    return Check("log", "pass", summary, _cap(unverifiable))


def _unchecked(unverifiable: list[str], what: str) -> str:
    """The clause a check's summary ends with for the lines it lists but could not check (a commit gone): without it
    a failed check said "1 problem(s)" above two lines, the second no problem at all."""
    if not unverifiable:
        return ""
    return f"; {len(unverifiable)} {what} name commits this repository no longer has (not checked)"


def _gone(commit: str) -> str:
    """Why a commit a log line or session names cannot be checked: gone (history rewritten, a shallow clone), or not
    found because git's environment has it read the commits from another folder (`gitrepo.elsewhere_note`)."""
    elsewhere = gitrepo.elsewhere_note()
    why = f"{elsewhere}, then run this again" if elsewhere else "history rewritten, or a shallow clone"
    return f"commit {commit[:12]} is not in this repository ({why}); its cards cannot be checked"


def _logged_injections(entry: dict[str, Any], vault: Vault) -> list[tuple[Any, list[Any]]]:
    """(commit, ids) this vault gave in one log line: from each of its `vaults` parts (bare ids), else from the
    line's own vault, commit and injected (a line written for one vault given by path, or by an older Cairn)."""
    parts = entry.get("vaults")
    if isinstance(parts, list) and parts:
        return [
            (part.get("commit"), part["injected"])
            for part in parts
            if isinstance(part, dict)
            and _same_vault(part.get("vault"), vault)
            and isinstance(part.get("injected"), list)
            and part["injected"]
        ]
    injected = entry.get("injected")
    if _same_vault(entry.get("vault"), vault) and isinstance(injected, list) and injected:
        return [(entry.get("commit"), injected)]
    return []


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
    parts = entry.get("vaults")
    if isinstance(parts, list) and parts and isinstance(entry.get("injected"), list):
        # The line's own list is every part's, each id as the agent was shown it (`name:id` for a named vault); the
        # parts are what the injection check reads, so a card in one list alone was not checked.
        given = [
            f"{part['name']}:{card_id}" if isinstance(part.get("name"), str) else card_id
            for part in parts
            if isinstance(part, dict) and isinstance(part.get("injected"), list)
            for card_id in part["injected"]
        ]
        if sorted(map(str, given)) != sorted(map(str, entry["injected"])):
            problems.append("'injected' does not list the cards its vaults' parts gave")
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
        if os.path.lexists(folder):  # the hook cannot make its folder: it serves every prompt without a session
            why = (
                f"{folder} is not a folder, so the hook keeps no session and may inject a card again in the same "
                f"session; move {folder} away (the hook makes a new one)"
            )
            return Check("sessions", "fail", why)
        return Check("sessions", "pass", "no session files (the hook has not run)")
    problems: list[str] = []
    unverifiable: list[str] = []
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
        ours = {
            card_id: seen
            for card_id, seen in data["injected"].items()
            if _same_vault(seen.get("vault", data["vault"]), vault)  # each card names its vault (layered vaults)
        }
        if not ours:
            continue
        n_ours += 1
        for card_id, seen in sorted(ours.items()):
            commit = seen["commit"]
            if _HEX_NAME.match(commit) and not trees.has_commit(commit):
                unverifiable.append(f"{file.name}: {_gone(commit)}")  # as the log check says it
                continue
            problems.extend(
                f"{file.name}: {p}" for p in trees.missing_cards(commit, [_bare_id(card_id, trees, commit)])
            )
    if problems:
        summary = f"{len(problems)} problem(s) in {len(files)} session file(s)" + _unchecked(unverifiable, "card(s)")
        return Check("sessions", "fail", summary, _cap(problems + unverifiable))
    summary = f"{len(files)} session file(s) parse; {n_ours} of this vault name existing cards"
    summary += _unchecked(unverifiable, "card(s)")
    return Check("sessions", "pass", summary, _cap(unverifiable))


def _bare_id(shown: str, trees: _Trees, commit: str) -> str:
    """A session's card id as the vault knows it: a configured vault's cards are shown as `name:id`."""
    if ":" in shown and not trees.holds(commit, shown):
        return shown.split(":", 1)[1]
    return shown


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
    """Card files per commit, listed once each; each commit a log line or session names is asked of git once (a
    hook log of tens of thousands of lines names a handful of commits: a git process per line made audit take
    minutes)."""

    def __init__(self, repo: git.Repo, vault: Vault) -> None:
        self._repo = repo
        self._vault = vault
        self._blobs: dict[str, dict[str, str]] = {}
        self._commits: dict[str, str | None] = {}  # as named -> the commit git resolves it to, None when it has none
        self._files: dict[tuple[str, str], bool] = {}  # (commit, card path) -> whether a card file is there

    def prefetch(self, named: list[tuple[Any, list[Any]]]) -> None:
        """Resolve the commits and find the cards that (commit, ids) pairs name, in two git processes: a log of
        thousands of served commits took four git processes per commit (5,000 commits: most of a minute)."""
        commits = {c for c, _ in named if isinstance(c, str) and _HEX_NAME.match(c) and c not in self._commits}
        ordered = sorted(commits)
        found = gitrepo.object_types(self._repo, [f"{c}^{{commit}}" for c in ordered])
        for commit in ordered:
            self._commits[commit] = found[f"{commit}^{{commit}}"][0] or None
        wanted: dict[str, tuple[str, str]] = {}
        for commit, ids in named:
            resolved = self._commits.get(commit) if isinstance(commit, str) else None
            if resolved is None:
                continue
            for card_id in ids:
                path = f"cards/{card_id}.md" if isinstance(card_id, str) else ""
                if path and card_id_from_path(path) == card_id and (resolved, path) not in self._files:
                    wanted[f"{resolved}:{self._vault.prefix}{path}"] = (resolved, path)
        found = gitrepo.object_types(self._repo, list(wanted))
        for name, key in wanted.items():
            if name in found:  # else a name git cannot be asked in a batch: `blobs` lists the tree
                self._files[key] = found[name][1] == "blob"

    def blobs(self, commit: str) -> dict[str, str]:
        if commit not in self._blobs:
            entries = gitrepo.card_entries(self._repo, commit, self._vault)
            self._blobs[commit] = {e.path: e.blob for e in entries if card_id_from_path(e.path) is not None}
        return self._blobs[commit]

    def _resolved(self, commit: str) -> str | None:
        if commit not in self._commits:
            found = None
            if gitrepo.commit_exists(self._repo, commit):
                try:
                    found = gitrepo.resolve_commit(self._repo, commit)
                except CairnError:
                    pass
            self._commits[commit] = found
        return self._commits[commit]

    def has_commit(self, commit: str) -> bool:
        return self._resolved(commit) is not None

    def _has_file(self, resolved: str, path: str) -> bool:
        known = self._files.get((resolved, path))
        return known if known is not None else path in self.blobs(resolved)

    def holds(self, commit: str, card_id: str) -> bool:
        resolved = self._resolved(commit)
        return resolved is not None and self._has_file(resolved, f"cards/{card_id}.md")

    def missing_cards(self, commit: Any, ids: list[Any]) -> list[str]:
        if not isinstance(commit, str) or not commit:
            return [f"injected {', '.join(map(str, ids))} without naming a commit"]
        if not _HEX_NAME.match(commit):  # the hook names the commit's id: `HEAD` or `main` is another commit by now
            return [f"injected {', '.join(map(str, ids))} at {commit[:40]!r}, not a commit id, so it cannot be checked"]
        resolved = self._resolved(commit)
        if resolved is None:
            return [f"commit {commit[:12]} is not in the repository, so its cards cannot be checked"]
        return [
            f"card {card_id!r} did not exist at {commit[:8]}"
            for card_id in ids
            if not isinstance(card_id, str) or not self._has_file(resolved, f"cards/{card_id}.md")
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
