"""Each card's provenance from git history: who created it, who changed it last, every author, the commits that
last changed its text and its summary, and whether those commits are signed.

One `git log --raw -M` pass over `cards/` serves every card: commits are walked newest to oldest, each card's path
is followed back through renames (as `git log --follow` would), and the walk stops at the commit that added it.
The summary's last change is found by comparing the parsed summary across the card's versions in that walk,
newest first, each against the version it was made from (across a merge, along the side that carries it), rather
than with `git blame` on the summary lines: it needs no process per card, and a commit that only re-wraps the YAML
lines does not count as changing what agents are told.

An incremental update walks only the new commits and joins the stored provenance of cards they did not create.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cairn import gitrepo
from cairn.cards.card import card_id_from_path, parse_card
from cairn.hot.vault import Vault
from cairn.index.store import CardTerms
from cairn.mailmap import author_key

if TYPE_CHECKING:  # gitpython is imported by `cairn.gitrepo` alone (it quiets gitpython's check for git)
    import git

# Stored in the index's meta; an index of another format is rebuilt, not joined. 2: authors without an e-mail told
# apart, the root commit's cards and cards fixed after an index given their whole history (1's stored values were not).
# 3: history read children before parents, a summary's change followed along each side of a merge.
# 4: a card added on both sides of a merge, two cards from one file, a side's file kept whole by a merge: each
# version compared with the one it was made from, the last change the newest version holding the card as it is.
# 5: a card's expiry counted from its last change's day when its verified_at is later (`cairn.index.expiry`): an
# index of format 4 may serve such a card past its review date, so it is built again rather than updated.
# 6: that day is the one of the commit that last changed the card's text (`text_changed`), not of a rename that kept
# it: a `git mv` brought an expired card back for another review_after.
FORMAT = "6"

# (provenance, summary) stored for a card id before this update, or None.
BaseLookup = Callable[[str], "tuple[dict[str, Any] | None, str] | None"]


@dataclass(frozen=True, slots=True)
class Version:
    """A card's file as one commit left it; old_blob: as that commit's one parent had it (None: added, or a merge)."""

    commit: gitrepo.LoggedCommit
    path: str
    blob: str
    old_blob: str | None = None


@dataclass(slots=True)
class Lineage:
    """One card followed back from its path at the walked commit.

    versions: newest first. created: the walk reached the commit that added the file (else history before the
    walked range, or a shallow clone's boundary, holds the rest). origin: its path at the oldest walked version.
    whole: walked through the whole history (no range), so nothing stored before is joined to it.
    graph: every walked commit's parents among the commits that touched `cards/` (one mapping shared by the walk's
    lineages), to follow a card back along each side of a merge.
    added: the commits that added it on one side of a merge; its history on that side ends there.
    """

    path: str
    versions: list[Version] = field(default_factory=list)
    created: bool = False
    origin: str = ""
    whole: bool = False
    graph: dict[str, tuple[str, ...]] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)


def walk_history(
    repo: git.Repo, vault: Vault, commit: str, paths: Iterable[str], since: str | None = None
) -> dict[str, Lineage]:
    """Lineages of the card files at `paths` (vault-relative, as they are at `commit`), from one log pass."""
    graph: dict[str, tuple[str, ...]] = {}
    lineages = {path: Lineage(path=path, origin=path, whole=since is None, graph=graph) for path in paths}
    # path at the point reached in the walk -> the lineages that follow it: two cards may both come from one file
    # (renamed on one side of a merge, kept and edited on the other), and each has that file's history
    following: dict[str, list[Lineage]] = {path: [lineage] for path, lineage in lineages.items()}
    for logged in gitrepo.card_log(repo, vault, commit, since):
        graph[logged.commit] = logged.parents
        # Match every change against the paths after this commit before moving any lineage back through it, so a
        # rename a -> b and a new file a in the same commit stay apart.
        moves: list[tuple[gitrepo.FileVersion, Lineage]] = []
        for change in logged.files:
            if change.new_path is None or change.blob is None:
                continue
            for lineage in following.get(change.new_path, ()):
                if not _behind_an_add(lineage, logged.commit):
                    lineage.versions.append(Version(logged, change.new_path, change.blob, change.old_blob))
                    moves.append((change, lineage))
        for change, lineage in moves:
            assert change.new_path is not None
            if change.status == "A" and any(len(v.commit.parents) > 1 for v in lineage.versions):
                # Added on one side of a merge: the other side may have added it too (both sides' authors, the
                # summary one side wrote) or carry it from further back, so the path is still followed there.
                lineage.created = True
                lineage.added.add(logged.commit)
                continue
            here = following.get(change.new_path, [])
            if lineage in here:
                here.remove(lineage)
                if not here:
                    del following[change.new_path]
            if change.status == "A":
                lineage.created = True
            else:
                old = change.old_path or change.new_path
                for path in change.parents or (old,):  # a merge: the file's path on each side it came from
                    there = following.setdefault(path, [])
                    if lineage not in there:
                        there.append(lineage)
                lineage.origin = old
    return lineages


def _behind_an_add(lineage: Lineage, commit: str) -> bool:
    """Whether every line of history from the card's newest version down to `commit` passes a commit that added
    the card (an older file at the same path is another card), once one side of a merge added it."""
    if not lineage.added or not lineage.versions:
        return False
    todo = [lineage.versions[0].commit.commit]
    seen: set[str] = set()
    while todo:
        sha = todo.pop()
        if sha == commit:
            return False
        if sha in seen or sha in lineage.added:
            continue
        seen.add(sha)
        todo.extend(lineage.graph.get(sha, ()))
    return True


def touched_paths(lineages: dict[str, Lineage]) -> set[str]:
    return {path for path, lineage in lineages.items() if lineage.versions}


def attach(
    repo: git.Repo,
    upserts: Sequence[CardTerms],
    lineages: dict[str, Lineage],
    base: BaseLookup | None = None,
) -> list[CardTerms]:
    """The cards with their provenance filled in; `base` gives the stored provenance for incremental updates."""
    summaries = _SummaryReader(repo)
    drafts: list[dict[str, Any] | None] = []
    for terms in upserts:
        lineage = lineages.get(terms.path) or Lineage(path=terms.path, origin=terms.path)
        stored = None
        if base is not None and not lineage.created and not lineage.whole:
            origin_id = card_id_from_path(lineage.origin)
            stored = base(origin_id) if origin_id else None
        drafts.append(_provenance(lineage, terms.summary, terms.blob, summaries, stored))
    wanted = {c["commit"] for d in drafts if d for c in _commit_refs(d) if c.get("signature") is None}
    signatures = gitrepo.commit_signatures(repo, wanted) if wanted else {}
    out: list[CardTerms] = []
    for terms, draft in zip(upserts, drafts, strict=True):
        if draft is not None:
            for ref in _commit_refs(draft):
                if ref.get("signature") is None:
                    sig = signatures.get(ref["commit"], gitrepo.Signature("N"))
                    ref.update(signature=sig.status, signed=sig.status == "G", signing_key=sig.key or None)
        out.append(dataclasses.replace(terms, provenance=draft))
    return out


def _commit_refs(draft: dict[str, Any]) -> list[dict[str, Any]]:
    return [draft[key] for key in ("created", "last_changed", "text_changed", "summary_changed") if draft.get(key)]


def _ref(logged: gitrepo.LoggedCommit) -> dict[str, Any]:
    return {"commit": logged.commit, "author": logged.author, "email": logged.email, "date": logged.date}


def _provenance(
    lineage: Lineage,
    summary: str,
    blob: str,
    summaries: _SummaryReader,
    stored: tuple[dict[str, Any] | None, str] | None,
) -> dict[str, Any] | None:
    base_prov, base_summary = stored if stored else (None, None)
    versions = lineage.versions
    if not versions:
        return dict(base_prov) if base_prov else None
    # The newest version that holds the file as it is now: across a merge that kept one side's file, the other
    # side's later edit (by date) is not what agents read, and a range walked incrementally may not reach it.
    now = next((v for v in versions if v.blob == blob), None)
    if now is None and base_prov and not lineage.created and base_prov.get("last_changed"):
        last = dict(base_prov["last_changed"])
    else:
        last = _ref((now or versions[0]).commit)
    text, text_before = _text_change(versions, blob)
    if text_before and base_prov and not lineage.created and base_prov.get("text_changed"):
        written = dict(base_prov["text_changed"])
    else:
        written = _ref(text.commit) if text else last
    introduced, run_reaches_end = _summary_change(lineage, summary, blob, summaries)
    changed: dict[str, Any] = _ref(introduced.commit)
    if run_reaches_end and base_prov and base_summary == summary and base_prov.get("summary_changed"):
        changed = dict(base_prov["summary_changed"])
    created = _ref(versions[-1].commit)
    if base_prov and not lineage.created and base_prov.get("created"):
        created = dict(base_prov["created"])
    authors = _authors(versions, base_prov["authors"] if base_prov and not lineage.created else [])
    # Older paths, newest first; the origin is the path before the oldest walked rename.
    renamed_from = [v.path for v in versions] + ([lineage.origin] if not lineage.created else [])
    if base_prov and not lineage.created:
        renamed_from += base_prov.get("renamed_from", [])
    return {
        "created": created,
        "last_changed": last,
        "text_changed": written,
        "summary_changed": changed,
        "authors": authors,
        "commits": len({v.commit.commit for v in versions})
        + (int(base_prov.get("commits", 0)) if base_prov and not lineage.created else 0),
        "renamed_from": [p for p in dict.fromkeys(renamed_from) if p != lineage.path],
    }


def _text_change(versions: list[Version], blob: str) -> tuple[Version | None, bool]:
    """The version that gave the card its text as it is (its blob), and whether that text is older than the walked
    versions (an update's range that only moved it). A rename that keeps the bytes, such as `git mv`, changes no
    text, so the version it was moved from is the one; None when no walked version holds the text."""
    changed = next((v for v in versions if v.blob == blob), None)
    if changed is None:
        return None, True
    for version in versions[versions.index(changed) + 1 :]:
        if changed.old_blob != blob:  # this version wrote the text (or added it, or a merge made it)
            break
        if version.blob == blob:  # the older version it was moved from; another side's edit stands between
            changed = version
    return changed, changed.old_blob == blob


def _summary_change(lineage: Lineage, summary: str, blob: str, summaries: _SummaryReader) -> tuple[Version, bool]:
    """The version that gave the card today's summary, and whether the versions carrying it reach the oldest walked.

    The oldest version of the unbroken run that carries it, newest first. Across a merge that rewrote the card, the
    run goes on along the side whose version carries the summary: in date order the other side's versions stand in
    between (a rename merged with a summary edited on a branch credited the edit to the merge)."""
    versions = lineage.versions
    if not any(len(v.commit.parents) > 1 for v in versions):
        # No merge rewrote the card: each version follows the older one that left the file as it found it, the next
        # by date unless a merge kept one side's file whole (the other side's later edits stand between).
        start = next((at for at, v in enumerate(versions) if v.blob == blob), 0)
        changed = reached = versions[start]
        for version in versions[start + 1 :]:
            if reached.old_blob is None:  # added here
                break
            if version.blob != reached.old_blob:
                continue
            reached = version
            said = summaries.summary(version)
            if said is None:  # no card (its frontmatter broken): it tells nothing of the summary, so it is passed
                continue
            if said != summary:
                return changed, False
            changed = version
        return changed, True
    at: dict[str, Version] = {}
    for version in versions:
        at.setdefault(version.commit.commit, version)
    order = {id(v): i for i, v in enumerate(versions)}
    current = versions[0]
    while True:
        earlier = _earlier_versions(current.commit, at, lineage.graph)
        # A version that is no card (conflict markers committed, its frontmatter broken) tells nothing of the
        # summary: the versions it was made from are asked instead.
        unread = [v for v in earlier if summaries.summary(v) is None]
        seen = {v.commit.commit for v in unread}
        while unread:
            for older in _earlier_versions(unread.pop().commit, at, lineage.graph):
                if older.commit.commit not in seen:
                    seen.add(older.commit.commit)
                    (unread if summaries.summary(older) is None else earlier).append(older)
        earlier = [v for v in earlier if summaries.summary(v) is not None]
        if not earlier:
            return current, True
        carrying = [v for v in earlier if summaries.summary(v) == summary]
        if not carrying:
            return current, False
        current = min(carrying, key=lambda v: order[id(v)])  # the newest


def _earlier_versions(
    logged: gitrepo.LoggedCommit, at: dict[str, Version], graph: dict[str, tuple[str, ...]]
) -> list[Version]:
    """The card's nearest versions before `logged`, one for each line of its parents that reaches one."""
    found: list[Version] = []
    seen: set[str] = set()
    todo = list(logged.parents)
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        if sha in at:
            found.append(at[sha])
        else:
            todo.extend(graph.get(sha, ()))  # a commit of other cards: on to its parents; none past the walk
    return found


def _authors(versions: list[Version], earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every author, in the order they first touched the card, with their commit counts."""
    by_key: dict[str, dict[str, Any]] = {}
    for author in earlier:
        by_key[author_key(str(author["name"]), str(author["email"]))] = dict(author)
    seen: set[str] = set()
    for version in reversed(versions):
        logged = version.commit
        if logged.commit in seen:
            continue
        seen.add(logged.commit)
        key = author_key(logged.author, logged.email)
        entry = by_key.setdefault(key, {"name": logged.author, "email": logged.email, "commits": 0})
        entry["commits"] += 1
    return list(by_key.values())


class _SummaryReader:
    """Summaries of old versions, read from their blobs once each."""

    def __init__(self, repo: git.Repo) -> None:
        self._repo = repo
        self._cache: dict[str, str | None] = {}

    def summary(self, version: Version) -> str | None:
        if version.blob not in self._cache:
            try:
                data = gitrepo.read_blob(self._repo, version.blob)
            except (ValueError, OSError):
                data = b""
            card, _ = parse_card(version.path, data) if data else (None, [])
            self._cache[version.blob] = card.summary if card else None
        return self._cache[version.blob]


def describe(ref: dict[str, Any] | None) -> str:
    """One line for a commit reference: short id, date, author and signature."""
    if not ref:
        return "unknown"
    sig = ref.get("signature")
    signed = (
        "signed" if ref.get("signed") else ("unsigned" if sig in (None, "N") else gitrepo.signature_words(str(sig)))
    )
    day = str(ref["date"])[:10] or "(no date)"
    return f"{str(ref['commit'])[:8]} {day} {ref['author']} <{ref['email']}> ({signed})"
