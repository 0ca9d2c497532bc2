"""`cairn review BASE..HEAD`: what a pull request's cards will do, for the person who reviews it.

The range. `BASE..HEAD` and `BASE...HEAD` mean the same here: the cards HEAD adds, changes or removes since the
merge base of BASE and HEAD, which is what a pull request shows (`git diff BASE...HEAD`). Cards that changed on
BASE after HEAD branched off are not the pull request's doing and are left out. In CI, where the checkout is the
pull request merged into the base branch, the merge base is the base branch itself, so the review describes the
merged result. A single revision means `REV..HEAD`.

What it reports, all read from git (never the working tree):
- lint findings on the changed cards, linted as HEAD's tree holds them, in the context of HEAD's whole vault;
  prompt-injection findings are listed first;
- near-duplicates (as lint's near-duplicate rule defines them, `cairn.cards.similarity`) and probable conflicts
  between each changed card and the other cards at HEAD;
- provenance: who added and changed each card (in the range, and since it was created);
- routing impact: the vault's eval cases (`evals/*.yaml|yml|jsonl`, as HEAD holds them) run at the merge base
  and at HEAD, each with the cards and cairn.toml of its commit: every case whose injected cards change, every
  negative case that now gets a card, and the metric deltas.

It fails (`Review.failed`) on a lint error in a changed card or in cairn.toml, and on a negative case that gets a
card at HEAD but did not at the base: a lesson that now reaches prompts it should stay out of is the harm Cairn
exists to prevent. Near-duplicates, conflicts and other routing changes are for the reviewer to judge.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cairn import gitrepo
from cairn.cards import similarity
from cairn.cards.card import parse_card
from cairn.config import CONFIG_FILE, config_from_dict
from cairn.finding import ERROR, Finding
from cairn.hot.errors import CairnError
from cairn.hot.index import IndexedCard, IndexReader
from cairn.hot.recall import rank
from cairn.hot.vault import CARDS_DIR, Vault
from cairn.index import build as indexer
from cairn.lint import lint_files
from cairn.quality.evaluate import Case, EvalReport, evaluate, load_cases
from cairn.quality.metrics import metrics_of

Progress = Callable[[int, int], None]
EVALS_DIR = "evals"
CASE_SUFFIXES = (".yaml", ".yml", ".jsonl")
PROMPT_INJECTION = "prompt-injection"

# A changed card against other cards (see `_compare`); near-duplicates are `cairn.cards.similarity`'s.
NEIGHBOURS = 12  # cards ranked for the changed card's name and summary that are compared with it
CONFLICT_OVERLAP = 0.5  # share of the shorter summary's terms found in the other
CONFLICT_NAME = 0.8

STATUS_WORDS = {"A": "added", "M": "changed", "R": "renamed", "D": "removed"}


@dataclass(frozen=True, slots=True)
class RangeCommit:
    commit: str
    author: str
    email: str
    date: str


@dataclass(frozen=True, slots=True)
class CardChange:
    """One card file the range touches. status: added, changed, renamed or removed; ids from the paths."""

    status: str
    id: str
    path: str
    old_id: str | None = None
    name: str = ""
    summary: str = ""
    old_summary: str | None = None
    commits: tuple[RangeCommit, ...] = ()
    provenance: dict[str, Any] | None = None

    @property
    def authors(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.author for c in reversed(self.commits)))


@dataclass(frozen=True, slots=True)
class Similar:
    """A changed card and another card at HEAD that is a near-duplicate of it or probably contradicts it.

    why: the reason in words, built from the figures below (rounded to 3 places here, to whole percents in `why`).
    name_similarity, summary_similarity, body_similarity: `cairn.cards.similarity`'s figures (a near-duplicate is
    one of them at `[lint] duplicate_threshold` or more). summary_overlap: the share of the shorter summary's terms
    found in the other (what, with opposing words, makes a conflict).
    """

    kind: str  # near-duplicate | conflict
    card: str
    other: str
    other_name: str
    why: str
    name_similarity: float
    summary_similarity: float
    body_similarity: float
    summary_overlap: float


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case whose injected cards differ between the base and HEAD."""

    file: str
    id: str
    query: str
    slice: str
    expect: tuple[str, ...]
    base: tuple[str, ...]
    head: tuple[str, ...]

    @property
    def kind(self) -> str:
        if not self.expect:
            if self.head and not self.base:
                return "new false injection"
            return "false injection removed" if not self.head else "false injection changed"
        was = any(c in self.expect for c in self.base[:1])
        now = any(c in self.expect for c in self.head[:1])
        if now and not was:
            return "now injected"
        if was and not now:
            return "no longer injected"
        return "injection changed"


@dataclass(frozen=True, slots=True)
class Routing:
    """The eval cases at the base and at HEAD. note: why routing was not measured, when it was not."""

    files: tuple[str, ...] = ()
    n_cases: int = 0
    base: dict[str, Any] = field(default_factory=dict)
    head: dict[str, Any] = field(default_factory=dict)
    changed: tuple[CaseChange, ...] = ()
    note: str = ""

    @property
    def new_false_injections(self) -> tuple[CaseChange, ...]:
        return tuple(c for c in self.changed if c.kind == "new false injection")


@dataclass(frozen=True, slots=True)
class Review:
    base_rev: str
    head_rev: str
    base: str  # the merge base the range is compared from
    head: str
    changes: tuple[CardChange, ...]
    config_changed: bool
    findings: tuple[Finding, ...]
    similar: tuple[Similar, ...]
    routing: Routing

    @property
    def prompt_injections(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.rule == PROMPT_INJECTION)

    @property
    def lint_errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def failed(self) -> bool:
        return bool(self.lint_errors or self.routing.new_false_injections)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_rev": self.base_rev,
            "head_rev": self.head_rev,
            "base": self.base,
            "head": self.head,
            "failed": self.failed,
            "errors": len(self.lint_errors) + len(self.routing.new_false_injections),
            "cards": [
                {
                    "status": c.status,
                    "id": c.id,
                    "path": c.path,
                    "old_id": c.old_id,
                    "name": c.name,
                    "summary": c.summary,
                    "old_summary": c.old_summary,
                    "authors": list(c.authors),
                    "commits": [dataclasses.asdict(rc) for rc in c.commits],
                    "provenance": c.provenance,
                }
                for c in self.changes
            ],
            "config_changed": self.config_changed,
            "prompt_injection": [f.to_dict() for f in self.prompt_injections],
            "lint": [f.to_dict() for f in self.findings],
            "similar": [dataclasses.asdict(s) for s in self.similar],
            "routing": {
                "files": list(self.routing.files),
                "n_cases": self.routing.n_cases,
                "note": self.routing.note or None,
                "base": self.routing.base,
                "head": self.routing.head,
                "changed": [dict(dataclasses.asdict(c), kind=c.kind) for c in self.routing.changed],
                "new_false_injections": [c.id for c in self.routing.new_false_injections],
            },
        }


# -- the review ---------------------------------------------------------------------------------------------------


def parse_range(spec: str) -> tuple[str, str]:
    """`BASE..HEAD`, `BASE...HEAD` or `BASE` (then HEAD is `HEAD`)."""
    spec = spec.strip()
    base, sep, head = spec.partition("...")
    if not sep:
        base, _, head = spec.partition("..")
    base, head = base.strip() or "HEAD", head.strip() or "HEAD"
    if base.startswith("-") or head.startswith("-"):
        raise CairnError(f"{spec!r} is not a range; give BASE..HEAD, e.g. origin/main..HEAD")
    return base, head


def review(vault: Vault, spec: str, *, today: dt.date | None = None, progress: Progress | None = None) -> Review:
    """Review the cards the range adds, changes or removes (see the module docstring)."""
    repo = gitrepo.open_repo(vault)
    base_rev, head_rev = parse_range(spec)
    base_tip = gitrepo.resolve_commit(repo, base_rev)
    head = gitrepo.resolve_commit(repo, head_rev)
    base = gitrepo.merge_base(repo, base_tip, head)
    if base is None:
        raise CairnError(f"{base_rev} and {head_rev} share no history; nothing to compare")
    raw_changes = gitrepo.changed_cards(repo, base, head, vault)
    config_changed = gitrepo.read_path(repo, base, CONFIG_FILE, vault) != gitrepo.read_path(
        repo, head, CONFIG_FILE, vault
    )
    commits = _range_commits(repo, vault, base, head)
    with tempfile.TemporaryDirectory(prefix="cairn-review-") as tmp:
        work = Path(tmp)
        snapshot = _materialize(repo, vault, head, work / "head")
        lint_paths = [c.new_path for c in raw_changes if c.new_path and c.status != "D"]
        if config_changed:
            lint_paths.append(CONFIG_FILE)
        findings = lint_files(snapshot, lint_paths, today=today).findings if lint_paths else ()
        findings = tuple(sorted(findings, key=lambda f: (f.rule != PROMPT_INJECTION, f.severity != ERROR, f.path)))
        try:
            base_index = indexer.build_commit_index(vault, base, work / "base.sqlite").index_file
            head_index = indexer.build_commit_index(vault, head, work / "head.sqlite").index_file
        except CairnError as exc:  # an invalid cairn.toml at one end: lint reports it
            changes = tuple(_change(c, None, None, commits) for c in raw_changes)
            routing = Routing(note=f"routing not measured: {exc}")
            return Review(base_rev, head_rev, base, head, changes, config_changed, findings, (), routing)
        with IndexReader(base_index) as before, IndexReader(head_index) as after:
            changes = tuple(_change(c, before, after, commits) for c in raw_changes)
            threshold = config_from_dict(after.config).lint.duplicate_threshold
            bodies = _BodyTerms(snapshot.root)
            similar = _similar(after, [c for c in changes if c.status != "removed"], bodies, threshold)
            routing = _routing(repo, vault, head, before, after, work / "evals", today, progress)
    return Review(base_rev, head_rev, base, head, changes, config_changed, findings, similar, routing)


def _range_commits(repo: Any, vault: Vault, base: str, head: str) -> dict[str, list[RangeCommit]]:
    """The commits in base..head that touched each card path (as the path is after the commit), newest first."""
    out: dict[str, list[RangeCommit]] = {}
    for logged in gitrepo.card_log(repo, vault, head, since=base):
        ref = RangeCommit(logged.commit, logged.author, logged.email, logged.date)
        for file in logged.files:
            for path in {file.new_path, file.old_path} - {None}:
                assert path is not None
                out.setdefault(path, []).append(ref)
    return out


def _change(
    raw: gitrepo.Change,
    before: IndexReader | None,
    after: IndexReader | None,
    commits: dict[str, list[RangeCommit]],
) -> CardChange:
    path = raw.new_path or raw.old_path or ""
    card_id = _card_id(path)
    old_id = _card_id(raw.old_path) if raw.old_path else None
    old = before.card_by_id(old_id) if before is not None and old_id else None
    new = after.card_by_id(card_id) if after is not None and raw.status != "D" else None
    record = None
    if raw.status == "D":
        record = before.record(card_id) if before is not None else None
    elif after is not None:
        record = after.record(card_id)
    touched = [*commits.get(path, []), *(commits.get(raw.old_path, []) if raw.old_path else [])]
    unique = tuple(dict.fromkeys(touched))
    shown = new or old
    return CardChange(
        status=STATUS_WORDS.get(raw.status, "changed"),
        id=card_id,
        path=path,
        old_id=old_id if raw.status == "R" else None,
        name=shown.name if shown else "",
        summary=shown.summary if shown else "",
        old_summary=old.summary if old is not None and new is not None and old.summary != new.summary else None,
        commits=unique,
        provenance=(record or {}).get("provenance"),
    )


def _card_id(path: str) -> str:
    rel = path[len(CARDS_DIR) + 1 :] if path.startswith(CARDS_DIR + "/") else path
    return rel[:-3] if rel.endswith(".md") else rel


def _materialize(repo: Any, vault: Vault, commit: str, root: Path) -> Vault:
    """HEAD's cards/ and cairn.toml written to a folder, so lint reads the commit and not the working tree."""
    entries = gitrepo.card_entries(repo, commit, vault)
    config = gitrepo.read_path(repo, commit, CONFIG_FILE, vault)
    regular = [e for e in entries if e.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE)]
    links = [e for e in entries if e.mode == gitrepo.SYMLINK_MODE]
    data = gitrepo.read_blobs(repo, vault, [e.blob for e in regular + links])
    (root / CARDS_DIR).mkdir(parents=True)
    for entry in regular + links:
        target = root / entry.path
        if not os.path.normpath(target).startswith(str(root) + os.sep):
            continue  # git never stores such paths; refuse them anyway
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == gitrepo.SYMLINK_MODE:
            os.symlink(data.get(entry.blob, b"missing").decode("utf-8", "replace"), target)
        else:
            target.write_bytes(data.get(entry.blob, b""))
    if config is not None:
        (root / CONFIG_FILE).write_bytes(config)
    return Vault(root=root, git_root=None, prefix="")


# -- near-duplicates and conflicts ------------------------------------------------------------------------------

# Pairs of words that say opposite things; a pair counts when each card uses its word and not the other's.
_OPPOSITES: tuple[tuple[str, str, str, str], ...] = tuple(
    (a, pa, b, pb)
    for a, pa, b, pb in (
        ("never", r"\bnever\b", "always", r"\balways\b"),
        ("don't", r"\b(?:don'?t|do not)\b", "always", r"\balways\b"),
        ("don't", r"\b(?:don'?t|do not)\b", "must", r"\bmust\b(?!\s*not|n'?t)"),
        ("never", r"\bnever\b", "must", r"\bmust\b(?!\s*not|n'?t)"),
        ("must not", r"\b(?:must\s*not|mustn'?t)\b", "must", r"\bmust\b(?!\s*not|n'?t)"),
        ("should not", r"\b(?:should\s*not|shouldn'?t)\b", "should", r"\bshould\b(?!\s*not|n'?t)"),
        ("avoid", r"\bavoid", "prefer", r"\bprefer"),
        ("avoid", r"\bavoid", "always", r"\balways\b"),
        ("disable", r"\bdisabl", "enable", r"\benabl"),
        ("unsafe", r"\bunsafe\b", "safe", r"\bsafe\b"),
        ("deprecated", r"\bdeprecated\b", "recommended", r"\brecommended\b"),
        ("不要", "不要|别", "务必", "务必|必须|总是"),
        ("禁止", "禁止", "允许", "允许"),
        ("避免", "避免", "推荐", "推荐|建议使用"),
    )
)


def _opposition(text: str, other: str) -> str | None:
    """How two texts oppose each other (`"never" vs "always"`), or None."""
    t, o = text.lower(), other.lower()
    for a, pa, b, pb in _OPPOSITES:
        for (x, px), (y, py), first, second in (((a, pa), (b, pb), t, o), ((b, pb), (a, pa), t, o)):
            if (
                re.search(px, first)
                and not re.search(px, second)
                and re.search(py, second)
                and not re.search(py, first)
            ):
                return f'"{x}" against "{y}"'
    return None


class _BodyTerms:
    """The terms of cards' bodies, read from HEAD's cards as `_materialize` wrote them (once per card)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: dict[str, frozenset[str] | None] = {}

    def __call__(self, card: IndexedCard) -> frozenset[str] | None:
        if card.id not in self.seen:
            try:
                parsed, _ = parse_card(card.path, (self.root / card.path).read_bytes())
            except OSError:
                parsed = None
            self.seen[card.id] = similarity.terms(parsed.body) if parsed is not None else None
        return self.seen[card.id]


def _similar(
    index: IndexReader,
    changed: Sequence[CardChange],
    bodies: Callable[[IndexedCard], frozenset[str] | None],
    threshold: float,
) -> tuple[Similar, ...]:
    """Each changed card against its lexical neighbours at HEAD (the cards recall ranks for its name and summary)."""
    found: dict[frozenset[str], Similar] = {}
    for change in changed:
        card = index.card_by_id(change.id)
        if card is None:
            continue
        rows = [row for row, _ in rank(index, f"{card.name} {card.summary}")[: NEIGHBOURS + 1] if row != card.row]
        for other in index.cards(rows[:NEIGHBOURS]).values():
            pair = frozenset((card.id, other.id))
            if pair in found or other.id in card.supersedes or card.id in other.supersedes:
                continue
            hit = _compare(card, other, bodies, threshold)
            if hit is not None:
                found[pair] = hit
    return tuple(sorted(found.values(), key=lambda s: (s.kind != "conflict", s.card, s.other)))


def _compare(
    card: IndexedCard,
    other: IndexedCard,
    bodies: Callable[[IndexedCard], frozenset[str] | None],
    threshold: float,
) -> Similar | None:
    mine = similarity.profile(card.name, card.scope, card.summary, bodies(card))
    theirs = similarity.profile(other.name, other.scope, other.summary, bodies(other))
    alike = similarity.likeness(mine, theirs)
    common = mine.summary & theirs.summary
    overlap = len(common) / min(len(mine.summary), len(theirs.summary)) if mine.summary and theirs.summary else 0.0
    same_scope = similarity.shares_scope(mine.scope, theirs.scope)
    opposed = _opposition(f"{card.name}. {card.summary}", f"{other.name}. {other.summary}")
    if mine.scope and theirs.scope:
        scope_note = "same scope" if same_scope else "different scopes"
    else:
        scope_note = "neither has a scope" if same_scope else "one has no scope"

    def similar(kind: str, why: str) -> Similar:
        figures = (alike.name, alike.summary, alike.body, overlap)
        return Similar(kind, card.id, other.id, other.name, why, *(round(f, 3) for f in figures))

    if opposed and (overlap >= CONFLICT_OVERLAP or (same_scope and alike.name >= CONFLICT_NAME)):
        return similar(
            "conflict",
            f"{overlap:.0%} of the shorter summary's words are in the other, names {alike.name:.0%} alike, "
            f"{scope_note}; opposing words: {opposed}",
        )
    duplicate = alike.duplicate(threshold)
    if duplicate is not None:
        return similar("near-duplicate", f"{similarity.describe(*duplicate)} ({scope_note})")
    return None


# -- routing impact ---------------------------------------------------------------------------------------------


def _routing(
    repo: Any,
    vault: Vault,
    head: str,
    before: IndexReader,
    after: IndexReader,
    folder: Path,
    today: dt.date | None,
    progress: Progress | None,
) -> Routing:
    entries = [
        e
        for e in gitrepo.folder_entries(repo, head, vault, EVALS_DIR)
        if e.path.lower().endswith(CASE_SUFFIXES) and e.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE)
    ]
    if not entries:
        return Routing(note=f"no eval cases at HEAD ({EVALS_DIR}/*.yaml or *.jsonl); routing impact not measured")
    data = gitrepo.read_blobs(repo, vault, [e.blob for e in entries])
    loaded: list[tuple[str, list[Case]]] = []
    folder.mkdir(parents=True, exist_ok=True)
    for n, entry in enumerate(entries):
        local = folder / f"{n}{Path(entry.path).suffix.lower()}"
        local.write_bytes(data.get(entry.blob, b""))
        try:
            cases = load_cases(local)
        except CairnError as exc:
            raise CairnError(str(exc).replace(str(local), entry.path)) from None
        loaded.append((entry.path, cases))
    all_cases = [case for _, cases in loaded for case in cases]
    total = 2 * len(all_cases)
    day = today or dt.date.today()
    reports: list[tuple[str, EvalReport, EvalReport]] = []
    done = 0
    for path, cases in loaded:
        old = evaluate(before, cases, today=day, progress=_offset(progress, done, total))
        new = evaluate(after, cases, today=day, progress=_offset(progress, done + len(cases), total))
        done += 2 * len(cases)
        reports.append((path, old, new))
    changed = [
        CaseChange(path, a.case.id, a.case.query, a.case.slice, a.case.expect, a.injected, b.injected)
        for path, old, new in reports
        for a, b in zip(old.outcomes, new.outcomes, strict=True)
        if a.injected != b.injected
    ]
    # every cases file pooled, as one `cairn eval --json` over them all would measure them
    base_all = metrics_of(o.scored for _, old, _ in reports for o in old.outcomes).eval_dict()
    head_all = metrics_of(o.scored for _, _, new in reports for o in new.outcomes).eval_dict()
    return Routing(
        files=tuple(path for path, _ in loaded),
        n_cases=len(all_cases),
        base=base_all,
        head=head_all,
        changed=tuple(sorted(changed, key=lambda c: (c.kind != "new false injection", c.file, c.id))),
    )


def _offset(progress: Progress | None, offset: int, total: int) -> Progress | None:
    """A progress callback for one part of a longer job."""
    if progress is None:
        return None
    report = progress
    return lambda done, _part: report(offset + done, total)
