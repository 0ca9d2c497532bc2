"""`cairn review BASE..HEAD`: what a pull request's cards will do, for the person who reviews it.

The range. `BASE..HEAD` and `BASE...HEAD` mean the same here: the cards HEAD adds, changes or removes since the
merge base of BASE and HEAD, which is what a pull request shows (`git diff BASE...HEAD`). Cards that changed on
BASE after HEAD branched off are not the pull request's doing and are left out. Cairn's workflow checks out the
pull request's own commit (`pull_request.head.sha`), so the review describes the branch as its author pushed it;
only lint also reads the merged result (below). A CI that checks out the merge commit instead gets the base branch
as the merge base, and a review of the merged result. A single revision means `REV..HEAD`.

What it reports, all read from git (never the working tree):
- lint findings on the changed cards, linted as HEAD's tree holds them, in the context of HEAD's whole vault;
  prompt-injection findings are listed first; and, when BASE moved on since HEAD branched off, lint on the cards
  (and cairn.toml) that merging HEAD into BASE makes anew, and on HEAD's changed cards beside BASE's cards in that
  merge (`git merge-tree`, git 2.38 or newer; an older git gets a note that the merge was not linted), and the files
  that merge would conflict on;
- near-duplicates (as lint's near-duplicate rule defines them, `cairn.cards.similarity`) and probable conflicts
  between each changed card and the other cards at HEAD (not the cards BASE gained after HEAD branched off: the
  report says so when BASE moved on);
- provenance: who added and changed each card (in the range, and since it was created);
- routing impact: the vault's eval cases (`evals/*.yaml|yml|jsonl`, as HEAD holds them) run at the merge base
  and at HEAD, each with the cards and cairn.toml of its commit: every case whose injected cards change, every
  negative case that now gets a card, and the metric deltas;
- cards' own questions: each card the range adds or changes, and the cards closest to it, asked its own name, its
  summary's first sentence and its aliases at the merge base and at HEAD (`OwnQuestion`): a card its own question found at the
  base and no longer finds at HEAD (two related cards that now silence each other, which no eval case may cover),
  and a card the range adds or changes that its own name does not find.

It fails (`Review.failed`, exit 1) on a lint error in a changed card or in cairn.toml, and on a negative case that
gets a card at HEAD but did not at the base: a lesson that now reaches prompts it should stay out of is the harm
Cairn exists to prevent. It is blocked (`Review.blocked`, exit 3 when nothing failed) on a change a maintainer must
check because it weakens what judges the pull request itself: see `cairn.review.policy`. Near-duplicates,
conflicts, cards' own questions and other routing changes are for the reviewer to judge.

It shows what an agent would get: every served field whole (the hook serves summaries up to 2,000 characters), each
changed field of a changed card before and after, and invisible characters made visible (`visible`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import stat
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cairn import gitrepo
from cairn.cards import safeyaml, similarity
from cairn.cards.card import (
    CARDS_NOT_A_FOLDER,
    MAX_CARD_BYTES,
    card_id_from_path,
    frontmatter_source,
    parse_card,
    renewal,
)
from cairn.cards.visible import describe, invisible_in
from cairn.config import CONFIG_FILE, Config, config_from_dict, parse_config
from cairn.finding import ERROR, WARNING, Finding
from cairn.hot import gates
from cairn.hot.errors import CairnError, NotAGitRepository
from cairn.hot.index import IndexedCard, IndexReader
from cairn.hot.recall import GATE_REASONS, UNKNOWN_STATUS, admission, rank, recall
from cairn.hot.settings import settings_of
from cairn.hot.vault import CARDS_DIR, Vault
from cairn.index import build as indexer
from cairn.index import provenance
from cairn.lint import lint_files
from cairn.quality.evaluate import MAX_CASES_BYTES, Case, EvalReport, evaluate, load_cases, unknown_expected
from cairn.quality.metrics import metrics_of
from cairn.review import policy
from cairn.review.policy import Blocked, SettingChange

Progress = Callable[[int, int], None]
# `stage(label)`: the progress callback of one stage of the review (indexing each end, comparing, the eval cases)
Stages = Callable[[str], Progress]
EVALS_DIR = "evals"
CASE_SUFFIXES = (".yaml", ".yml", ".jsonl")
PROMPT_INJECTION = "prompt-injection"

# A changed card against other cards (see `_compare`); near-duplicates are `cairn.cards.similarity`'s.
NEIGHBOURS = 12  # cards ranked for the changed card's name and summary that are compared with it
CONFLICT_OVERLAP = 0.5  # share of the shorter summary's terms found in the other
CONFLICT_NAME = 0.8

STATUS_WORDS = {"A": "added", "M": "changed", "R": "renamed", "D": "removed"}

# A card's fields as review compares them, in the contract's order; body is compared but never shown whole.
FIELDS = (
    "name",
    "summary",
    "aliases",
    "not_when",
    "scope",
    "status",
    "supersedes",
    "review_after",
    "verified_at",
    "source",
)
TEXT_FIELDS = ("name", "summary", "aliases", "not_when", "scope", "status", "supersedes", "review_after", "source")
EXIT_FAILED = 1  # an error the author fixes: a lint error, a negative case that now gets a card
EXIT_BLOCKED = 3  # nothing failed, but a change a maintainer must check (cairn.review.policy)


# -- what a reader cannot see ---------------------------------------------------------------------------------------

_TAGS = range(0xE0020, 0xE007F)  # the tag block's ASCII look-alikes: invisible text a model reads


def visible(text: str) -> str:
    """`text` with each invisible character shown as `<U+200B>`; a run of tag characters (invisible ASCII) is
    spelled out as `<hidden tag text: "...">`, so a reviewer reads what a model would."""
    found = invisible_in(text)
    if not found:
        return text
    hidden = dict(found)
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if i not in hidden:
            out.append(ch)
            i += 1
            continue
        run = i
        while run < len(text) and run in hidden and ord(text[run]) in _TAGS:
            run += 1
        if run - i >= 2:
            spelled = "".join(chr(ord(c) - 0xE0000) for c in text[i:run])
            out.append(f'<hidden tag text: "{spelled}">')
            i = run
            continue
        out.append(f"<U+{ord(ch):04X}>")
        i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Hidden:
    """A field of a card at HEAD that holds invisible characters. characters: each one named (`U+200B ZERO WIDTH
    SPACE`); visible: the field's decoded text with them made visible."""

    field: str
    characters: tuple[str, ...]
    visible: str


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field of a card, before (None: the card did not exist) and after (None: it was removed)."""

    field: str
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class RangeCommit:
    commit: str
    author: str
    email: str
    date: str


@dataclass(frozen=True, slots=True)
class CardChange:
    """One card file the range touches. status: added, changed, renamed or removed; ids from the paths. Or a card
    the range does not touch that agents get again (status `revived`): at the base the active cards in
    `was_superseded_by` superseded it, and at HEAD none does (one removed, retired, or its `supersedes` edited).
    left_out: why HEAD's index leaves the card out, as the index says it (`secret: refused: ...`): it is never
    served, whatever its fields say; empty when the index holds it.
    not_served: why recall never admits the card HEAD's index holds, whatever the prompt (`draft`, `retired`,
    `expired on 2026-01-31`, `superseded by ops/x`, an unknown status), as its admission decides; empty when it may
    be served."""

    status: str
    id: str
    path: str
    old_id: str | None = None
    name: str = ""
    summary: str = ""
    old_summary: str | None = None
    commits: tuple[RangeCommit, ...] = ()
    provenance: dict[str, Any] | None = None
    fields: tuple[FieldChange, ...] = ()
    body_changed: bool = False
    hidden: tuple[Hidden, ...] = ()
    was_superseded_by: tuple[str, ...] = ()
    left_out: str = ""
    not_served: str = ""

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
class OwnQuestion:
    """A card's own question (`field`: its name, its summary's first sentence or an alias) asked at the merge base and at
    HEAD, each with the cards and cairn.toml of its commit. base: the cards injected at the base (None: the card is
    not there); head: the cards injected at HEAD; why: why HEAD's recall leaves the card out (the gate and the card
    that stands in its way)."""

    card: str
    field: str  # name | summary | alias
    query: str
    base: tuple[str, ...] | None
    head: tuple[str, ...]
    why: str

    @property
    def kind(self) -> str:
        """`silenced`: its own question found it at the base and does not at HEAD; `not found`: a card the range
        adds or changes that its own name does not find at HEAD."""
        return "silenced" if self.base is not None and self.card in self.base else "not found"


@dataclass(frozen=True, slots=True)
class Routing:
    """The eval cases at the base and at HEAD. note: why routing was not measured, when it was not."""

    files: tuple[str, ...] = ()
    n_cases: int = 0
    base: dict[str, Any] = field(default_factory=dict)
    head: dict[str, Any] = field(default_factory=dict)
    changed: tuple[CaseChange, ...] = ()
    note: str = ""
    # (file, case id, card id) for each case at HEAD expecting a card HEAD's index does not hold (a typo, a card
    # renamed or removed): `cairn eval` and `cairn calibrate` refuse such cases, so review fails them
    unknown: tuple[tuple[str, str, str], ...] = ()
    # the card ids among those that HEAD's tree holds but its index leaves out (a security rule refuses the card, or
    # it breaks the contract): the case's id is right, the card is what to fix
    left_out: frozenset[str] = frozenset()

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
    blocked: tuple[Blocked, ...] = ()
    settings: tuple[SettingChange, ...] = ()
    own: tuple[OwnQuestion, ...] = ()
    own_unasked: int = 0  # cards past `MAX_OWN_CARDS` that were not asked their own questions
    merge_note: str = ""  # why the merge of HEAD into BASE was not linted, when it was not (`_merge_findings`)
    # the commit BASE names; past `base` when BASE moved on after HEAD branched off, and then only lint reads its cards
    base_tip: str = ""

    @property
    def base_moved(self) -> bool:
        return bool(self.base_tip) and self.base_tip != self.base

    @property
    def prompt_injections(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.rule == PROMPT_INJECTION)

    @property
    def lint_errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def n_errors(self) -> int:
        return len(self.lint_errors) + len(self.routing.new_false_injections) + len(self.routing.unknown)

    @property
    def failed(self) -> bool:
        """An error the author must fix (a lint error, a negative case that now gets a card, a case expecting a card
        HEAD does not hold)."""
        return bool(self.n_errors)

    @property
    def exit_code(self) -> int:
        """0 passes; 1 failed (errors, whether or not blocked); 3 blocked for a maintainer and nothing failed."""
        return EXIT_FAILED if self.failed else EXIT_BLOCKED if self.blocked else 0

    @property
    def verdict(self) -> str:
        return "fails" if self.failed else "blocked" if self.blocked else "passes"

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_rev": self.base_rev,
            "head_rev": self.head_rev,
            "base": self.base,
            "base_tip": self.base_tip or None,
            "head": self.head,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "failed": self.failed,
            "errors": self.n_errors,
            "blocked": [dataclasses.asdict(b) for b in self.blocked],
            "cards": [
                {
                    "status": c.status,
                    "id": c.id,
                    "path": c.path,
                    "old_id": c.old_id,
                    "name": c.name,
                    "summary": c.summary,
                    "old_summary": c.old_summary,
                    "fields": [dataclasses.asdict(f) for f in c.fields],
                    "body_changed": c.body_changed,
                    "hidden": [dataclasses.asdict(h) for h in c.hidden],
                    "authors": list(c.authors),
                    "commits": [dataclasses.asdict(rc) for rc in c.commits],
                    "provenance": c.provenance,
                    "was_superseded_by": list(c.was_superseded_by),
                    "left_out": c.left_out or None,
                    "not_served": c.not_served or None,
                }
                for c in self.changes
            ],
            "config_changed": self.config_changed,
            "settings": [dataclasses.asdict(c) for c in self.settings],
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
                "unknown_expected": [
                    {"file": file, "case": case, "card": card} for file, case, card in self.routing.unknown
                ],
            },
            "own_questions": [dict(dataclasses.asdict(q), kind=q.kind) for q in self.own],
            "own_questions_unasked": self.own_unasked,
            "merge_note": self.merge_note or None,
        }


# -- the review ---------------------------------------------------------------------------------------------------


class RangeError(CairnError):
    """The range cannot be reviewed as given (not a range, a revision git does not know, a name two refs hold at
    different commits, a history that does not reach the merge base): a usage error, exit 2, not a failing review
    (exit 1: "the author fixes it"). In CI, a mistyped or unfetched base must not read as cards that fail."""


def parse_range(spec: str) -> tuple[str, str]:
    """`BASE..HEAD`, `BASE...HEAD` or `BASE` (then HEAD is `HEAD`)."""
    spec = spec.strip()
    base, sep, head = spec.partition("...")
    if not sep:
        base, _, head = spec.partition("..")
    base, head = base.strip() or "HEAD", head.strip() or "HEAD"
    if base.startswith("-") or head.startswith("-"):
        raise RangeError(f"{spec!r} is not a range; give BASE..HEAD, e.g. origin/main..HEAD")
    return base, head


def _refuse_ambiguous(repo: Any, rev: str) -> None:
    """A range whose name two refs hold, at different commits, is not reviewed: git takes the first (a tag `main`
    over the branch `main`), so whoever can push a tag chooses the base, and a pull request's own changes then read as
    the base's."""
    refs = gitrepo.refs_named(repo, rev)
    if len(set(refs.values())) > 1:
        raise RangeError(
            f"{rev!r} is ambiguous: {' and '.join(refs)} point at different commits, and git takes the first; give "
            "the one you mean in full"
        )


def review(vault: Vault, spec: str, *, today: dt.date | None = None, progress: Stages | None = None) -> Review:
    """Review the cards the range adds, changes or removes (see the module docstring); `progress(label)` gives the
    callback of each long stage."""
    if vault.git_root is None:  # open_repo's own advice, `--worktree`, is no option of review
        raise NotAGitRepository(
            f"{vault.root} is not in a git repository; review compares two commits: run it in a clone of the vault"
        )
    with gitrepo.open_repo(vault) as repo:
        return _review(repo, vault, spec, today, progress)


def _review(repo: Any, vault: Vault, spec: str, today: dt.date | None, stages: Stages | None) -> Review:
    def progress(label: str) -> Progress | None:
        return stages(label) if stages is not None else None

    base_rev, head_rev = parse_range(spec)
    for rev in (base_rev, head_rev):
        _refuse_ambiguous(repo, rev)
    try:
        base_tip = gitrepo.resolve_commit(repo, base_rev)
        head = gitrepo.resolve_commit(repo, head_rev)
    except CairnError as exc:
        raise RangeError(str(exc)) from None
    base = gitrepo.merge_base(repo, base_tip, head)
    if base is None and gitrepo.shallow_commits(repo):
        # A CI checkout's default depth of 1: the merge base is simply not fetched, not missing from history.
        raise RangeError(
            f"this clone is shallow, so git cannot find where {head_rev} branched from {base_rev}; fetch the history "
            "(`git fetch --unshallow`, or `fetch-depth: 0` in actions/checkout), then run the review again"
        )
    if base is None:
        raise RangeError(f"{base_rev} and {head_rev} share no history; nothing to compare")
    cut = gitrepo.shallow_cut(repo, base, head)
    if cut is not None:
        # A CI checkout of a pull request's merge commit a few commits deep: the commit where history stops reads as
        # adding every card, and its author would be credited with the range's cards.
        raise RangeError(
            f"this clone is shallow, and the history of {base_rev}..{head_rev} stops at {cut[:10]}, so review cannot "
            "tell who changed each card; fetch the history (`git fetch --unshallow`, or `fetch-depth: 0` in "
            "actions/checkout), then run the review again"
        )
    day = today or dt.date.today()
    raw_changes = gitrepo.changed_cards(repo, base, head, vault)
    base_config = gitrepo.read_path(repo, base, CONFIG_FILE, vault)
    head_config = gitrepo.read_path(repo, head, CONFIG_FILE, vault)
    config_changed = base_config != head_config
    commits = _range_commits(
        repo,
        vault,
        base,
        head,
        [c.new_path for c in raw_changes if c.new_path],
        [c.old_path for c in raw_changes if c.old_path and c.status == "D"],
    )
    blocked, settings = _config_policy(base_config, head_config)
    blocked += policy.file_blocks(_changed_paths(repo, base, head), vault.prefix)
    with tempfile.TemporaryDirectory(prefix="cairn-review-") as tmp:
        work = Path(tmp)
        snapshot, unwritten = _materialize(repo, vault, head, work / "head")
        # A submodule is no file to lint (lint stopped the review on it: "no such file"); one under a card's name is
        # refused as the index refuses it. Nor is a path with `.` or `..` parts, which holds no card.
        lint_paths = [c.new_path for c in raw_changes if c.new_path and c.status != "D" and c.new_path not in unwritten]
        if config_changed:
            lint_paths.append(CONFIG_FILE)
        removed = [c.old_path for c in raw_changes if c.old_path and c.status in "DR"]  # lint what supersedes them
        linting = progress("review: linting the changed cards")
        findings = (
            lint_files(snapshot, lint_paths, today=today, removed=removed, progress=linting).findings
            if lint_paths or removed
            else ()
        )
        findings += tuple(
            Finding(c.new_path, 0, "path-outside-cards", "a submodule cannot hold cards")
            for c in raw_changes
            if c.new_path in unwritten and card_id_from_path(c.new_path) is not None  # a submodule
        )
        findings += tuple(
            Finding(c.new_path, 0, "file-symlink", CARDS_NOT_A_FOLDER) for c in raw_changes if c.new_path == CARDS_DIR
        )
        findings += tuple(
            Finding(
                c.new_path, 0, "card-path", "not a card: a path with `.` or `..` parts (git fsck refuses it)", WARNING
            )
            for c in raw_changes
            if c.new_path and _dotted(c.new_path)
        )
        findings += _security_at_base(snapshot, lint_paths, base_config, head_config, today)
        merge_note = ""
        if base not in (base_tip, head):  # else merging HEAD makes HEAD's own tree (or nothing)
            merged = gitrepo.merge_result(repo, base_tip, head)
            if isinstance(merged, str):
                merge_note = f"the merge of {head_rev} into {base_rev} was not linted: {merged}"
            else:
                findings += _merge_findings(
                    repo,
                    vault,
                    (base_rev, head_rev),
                    (base_tip, head),
                    merged,
                    work,
                    findings,
                    today,
                    lint_paths,
                    removed,
                )
        findings = tuple(
            sorted(
                set(findings),  # then rule and message: a set's order changes with each run's string hashes
                key=lambda f: (f.rule != PROMPT_INJECTION, f.severity != ERROR, f.path, f.line, f.rule, f.message),
            )
        )
        cards = _CardReader(repo, vault, base, snapshot.root, [c.old_path for c in raw_changes if c.old_path])
        blocked += _eval_policy(repo, vault, base, head, work / "policy")
        for raw in raw_changes:
            if raw.status == "R" and card_id_from_path(raw.new_path or "") is None:
                # Moved to a name that is no card (`x.txt`, `x.MD`): the index skips it, so the lesson is removed.
                blocked += policy.card_blocks(
                    "removed", _card_id(raw.old_path or ""), cards.before(raw.old_path), None, day
                )
                continue
            blocked += policy.card_blocks(
                STATUS_WORDS.get(raw.status, "changed"),
                _card_id(raw.new_path or raw.old_path or ""),
                cards.before(raw.old_path),
                cards.after(raw.new_path if raw.status != "D" else None),
                day,
                lambda target: cards.before(f"{CARDS_DIR}/{target}.md") is not None,
            )
        try:
            # Provenance only of the cards the range touches (a removed card's from the base): the rest is unused.
            gone = {c.old_path for c in raw_changes if c.old_path and c.status == "D"}
            kept = {c.new_path for c in raw_changes if c.new_path and c.status != "D"}
            base_index = indexer.build_commit_index(
                vault, base, work / "base.cairn", progress("review: indexing the base"), provenance_of=gone
            ).index_file
            with IndexReader(base_index) as before:
                superseded_at_base = before.superseded()
            kept |= {f"{CARDS_DIR}/{card_id}.md" for card_id in superseded_at_base}  # those agents may get again
            head_index = indexer.build_commit_index(
                vault, head, work / "head.cairn", progress("review: indexing HEAD"), provenance_of=kept
            ).index_file
        except CairnError as exc:  # an invalid cairn.toml at one end: lint reports it
            changes = tuple(_change(c, None, None, commits, cards) for c in raw_changes if _names_a_card(c))
            routing = Routing(note=f"routing not measured: {exc}")
            partial = Review(
                base_rev, head_rev, base, head, changes, config_changed, findings, (), routing, tuple(blocked), settings
            )
            return dataclasses.replace(partial, merge_note=merge_note, base_tip=base_tip)
        with IndexReader(base_index) as before, IndexReader(head_index) as after:
            left_out = {
                p: f"{rule}: {message.removeprefix('refused: ')}" for p, _line, rule, message in after.problems()
            }
            changes = tuple(
                _change(c, before, after, commits, cards, left_out, day) for c in raw_changes if _names_a_card(c)
            )
            changes += _revived(before, after, changes)
            blocked += _newly_superseded(before, after, changes, blocked)
            blocked += _expired_by_commit_day(before, after, changes, cards, day)
            threshold = config_from_dict(after.config).lint.duplicate_threshold
            bodies = _BodyTerms(snapshot.root)
            compared = [c for c in changes if c.status != "removed"]
            neighbours = _Neighbours(after)
            similar = _similar(
                after, compared, neighbours, bodies, threshold, progress("review: comparing changed cards")
            )
            routing = _routing(
                repo, vault, head, before, after, work / "evals", today, progress("review: eval cases, base and HEAD")
            )
            own, unasked = _own_questions(
                before, after, compared, neighbours, day, progress("review: asking cards their own questions")
            )
    return Review(
        base_rev,
        head_rev,
        base,
        head,
        changes,
        config_changed,
        findings,
        similar,
        routing,
        tuple(blocked),
        settings,
        own,
        unasked,
        merge_note,
        base_tip,
    )


def _merge_findings(
    repo: Any,
    vault: Vault,
    revs: tuple[str, str],
    commits: tuple[str, str],
    merged: gitrepo.MergeResult,
    work: Path,
    at_head: Collection[Finding],
    today: dt.date | None,
    changed: Collection[str] = (),
    removed: Sequence[str] = (),
) -> tuple[Finding, ...]:
    """Lint on what merging HEAD into BASE makes that neither side holds: two edits, each clean on its side, can merge
    into a card neither holds (a key both add, broken YAML), and a clean merge runs no pre-commit hook, so the index
    would then refuse a card review passed. The cards (and cairn.toml) whose merged blob differs from both sides are
    linted, in the merged vault, each finding naming the merge; so are the range's own changed cards (`changed`, and
    what supersedes the cards it removes): a card clean beside HEAD's cards can break beside BASE's (a name a card
    BASE added holds, a `supersedes` naming a card BASE renamed). And each file of the vault that would conflict."""
    base_rev, head_rev = revs
    merge = f"merging {head_rev} into {base_rev}"
    inside = [p[len(vault.prefix) :] for p in merged.conflicts if p.startswith(vault.prefix)]
    out = [
        Finding(
            path,
            0,
            "merge-conflict",
            f"{merge} conflicts here: merge {base_rev} into the branch, then review it again",
            WARNING,
        )
        for path in inside
    ]
    sides = [{e.path: e.blob for e in gitrepo.card_entries(repo, commit, vault)} for commit in commits]
    paths = [
        e.path
        for e in gitrepo.card_entries(repo, merged.commit, vault)
        if e.path not in inside and all(side.get(e.path) != e.blob for side in sides)
    ]
    config = gitrepo.read_path(repo, merged.commit, CONFIG_FILE, vault)
    if CONFIG_FILE not in inside and all(config != gitrepo.read_path(repo, c, CONFIG_FILE, vault) for c in commits):
        paths.append(CONFIG_FILE)
    anew = set(paths)
    in_merge = {e.path for e in gitrepo.card_entries(repo, merged.commit, vault)}
    if config is not None:
        in_merge.add(CONFIG_FILE)
    paths += [p for p in changed if p in in_merge and p not in inside and p not in anew]
    gone = [p for p in removed if p not in in_merge]
    if not paths and not gone:
        return tuple(out)
    snapshot, unwritten = _materialize(repo, vault, merged.commit, work / "merged")
    seen = {(f.path, f.rule, f.message) for f in at_head}
    for f in lint_files(snapshot, [p for p in paths if p not in unwritten], today=today, removed=gone).findings:
        if f.path not in paths and f.rule != "supersedes-missing":
            continue  # BASE's card linted for what it supersedes: the rest of it is BASE's own, not this merge's
        if (f.path, f.rule, f.message) not in seen:
            where = "text neither side holds" if f.path in anew else f"beside {base_rev}'s cards"
            out.append(dataclasses.replace(f, message=f"after {merge} ({where}): {f.message}"))
    return tuple(out)


def _config_policy(base: bytes | None, head: bytes | None) -> tuple[list[Blocked], tuple[SettingChange, ...]]:
    """The blocked cairn.toml changes and every changed setting; nothing when one end cannot be read (lint says why)."""
    if base == head:
        return [], ()
    removed = [policy.config_removed()] if base is not None and head is None else []
    try:
        old, new = (_read_config(data) for data in (base, head))
    except CairnError:
        return removed, ()
    from cairn.lint import registry

    security: dict[str, list[str]] = {}
    for rule in registry.RULES:
        if "security" in rule.groups:
            for name in (rule.id, *rule.emits, *rule.groups):
                security.setdefault(name, []).append(rule.id)
    return removed + policy.config_blocks(old, new, security), tuple(policy.settings_changes(old, new))


def _security_at_base(
    snapshot: Vault, paths: list[str], base: bytes | None, head: bytes | None, today: dt.date | None
) -> tuple[Finding, ...]:
    """The security rules on HEAD's changed cards under the base's lint policy, when the range changes the rules
    cairn.toml switches off: a pull request cannot switch off the rules that judge it (the change is blocked too)."""
    try:
        if not paths or _read_config(base).lint.disable == _read_config(head).lint.disable:
            return ()
    except CairnError:
        pass  # an unreadable end: judge by the base's policy (or the defaults), below
    config = snapshot.root / CONFIG_FILE
    try:
        if base is None:
            config.unlink(missing_ok=True)
        else:
            config.write_bytes(base)
        cards = [p for p in paths if p != CONFIG_FILE]
        return lint_files(snapshot, cards, rules=["security"], today=today).findings if cards else ()
    finally:
        if head is None:
            config.unlink(missing_ok=True)
        else:
            config.write_bytes(head)


def _read_config(data: bytes | None) -> Config:
    return parse_config(data.decode("utf-8", "replace") if data is not None else None)


def _changed_paths(repo: Any, base: str, head: str) -> list[str]:
    """Every file the range adds, changes or removes, as repository paths (a move is its two paths)."""
    out = repo.git.diff("--name-only", "-z", "--no-renames", base, head, stdout_as_string=False)
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _case_files(repo: Any, vault: Vault, commit: str) -> dict[str, str]:
    """The eval cases files at a commit: vault path -> blob."""
    return {
        e.path: e.blob
        for e in gitrepo.folder_entries(repo, commit, vault, EVALS_DIR)
        if e.path.lower().endswith(CASE_SUFFIXES) and e.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE)
    }


def _eval_policy(repo: Any, vault: Vault, base: str, head: str, folder: Path) -> list[Blocked]:
    """Cases files deleted or moved, negative cases removed or changed (cases that cannot be read are skipped:
    HEAD's are reported by the routing impact, a broken base has nothing to weaken)."""
    base_files, head_files = _case_files(repo, vault, base), _case_files(repo, vault, head)
    if base_files == head_files:
        return []
    data = gitrepo.read_blobs(repo, vault, [*base_files.values(), *head_files.values()], limit=MAX_CASES_BYTES)
    folder.mkdir(parents=True, exist_ok=True)

    def cases(files: dict[str, str], broken: dict[str, str]) -> list[Case]:
        out: list[Case] = []
        for n, (path, blob) in enumerate(sorted(files.items())):
            local = folder / f"{len(list(folder.iterdir()))}-{n}{Path(path).suffix.lower()}"
            local.write_bytes(data.get(blob, b""))
            try:
                out += load_cases(local)
            except CairnError as exc:
                broken[path] = str(exc).replace(str(local), path)
        return out

    # A file HEAD breaks is one block, not each negative case of its base "removed" (what the routing impact, which
    # says why it is broken, cannot say when an invalid cairn.toml stops it); one broken at the base too is no change
    broken: dict[str, str] = {}
    head_cases = cases(head_files, broken)
    was_broken: dict[str, str] = {}
    cases({path: base_files[path] for path in broken if path in base_files}, was_broken)
    unreadable = {path: why for path, why in broken.items() if path in base_files and path not in was_broken}
    kept = {path: blob for path, blob in base_files.items() if path in head_files and path not in broken}
    return policy.eval_blocks(base_files, head_files, cases(kept, {}), head_cases, unreadable)


class _CardReader:
    """Cards as parsed from their blobs: at the base (read from git) and at HEAD (from the materialized snapshot)."""

    def __init__(self, repo: Any, vault: Vault, base: str, head_root: Path, wanted: Collection[str] = ()) -> None:
        """wanted: the base's card paths the review will ask for (the range's old paths), read in one git call."""
        self.repo, self.vault, self.base, self.head_root = repo, vault, base, head_root
        self._wanted = frozenset(wanted)
        self._base_entries: dict[str, gitrepo.TreeEntry] | None = None
        self._base_blobs: dict[str, bytes] = {}
        self._before: dict[str, dict[str, Any] | None] = {}
        self._after: dict[str, dict[str, Any] | None] = {}

    def before(self, path: str | None) -> dict[str, Any] | None:
        """A card file as the base holds it, parsed once. The base's tree is listed once, with each blob's size, and
        the wanted cards' blobs are read in one `git cat-file --batch`: a git request per card made a large pull
        request's review take seconds more."""
        if path is None:
            return None
        if path not in self._before:
            if self._base_entries is None:
                self._base_entries = {e.path: e for e in gitrepo.card_entries(self.repo, self.base, self.vault)}
                blobs = [e.blob for p, e in self._base_entries.items() if p in self._wanted and self._readable(e)]
                self._base_blobs = gitrepo.read_small_blobs(self.repo, blobs)
            entry = self._base_entries.get(path)
            if entry is None or not self._readable(entry):
                self._before[path] = None
            else:
                data = self._base_blobs.get(entry.blob)
                if data is None:
                    data = gitrepo.read_blob(self.repo, entry.blob, size=entry.size)
                self._before[path] = self._parsed(path, data)
        return self._before[path]

    @staticmethod
    def _readable(entry: gitrepo.TreeEntry) -> bool:
        """A regular file within the card limit: a huge blob under cards/ is never read whole (it is no card
        either); a symlink or submodule is no card."""
        card = entry.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE)
        return card and 0 <= entry.size <= MAX_CARD_BYTES

    def after(self, path: str | None) -> dict[str, Any] | None:
        """A card file as HEAD holds it, parsed once (policy and the card's change both read it)."""
        if path is None:
            return None
        if path not in self._after:
            self._after[path] = self._parsed(path, self._head_bytes(path))
        return self._after[path]

    def _head_bytes(self, path: str) -> bytes | None:
        """A card file's bytes at HEAD, when it is a regular file within the card limit. A symlinked card is
        materialized as the symlink it is: followed, it read a file of the reviewer's machine (its fields then shown
        in the review, a CI comment) or never ended (`/dev/zero`); the index refuses it, and lint says so."""
        file = self.head_root / path
        try:
            info = file.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CARD_BYTES:
                return None
            return file.read_bytes()
        except OSError:
            return None

    def hidden(self, path: str | None) -> tuple[Hidden, ...]:
        """HEAD's text fields that hold invisible characters, read from the frontmatter as decoded."""
        data = self._head_bytes(path) if path is not None else None
        if data is None:
            return ()
        raw = _frontmatter(data)
        out = []
        for key in TEXT_FIELDS:
            value = raw.get(key)
            items = value if isinstance(value, list) else [value]
            texts = [v for v in items if isinstance(v, str)]
            found = [ch for text in texts for _, ch in invisible_in(text)]
            if found:
                shown = visible(", ".join(texts)) if isinstance(value, list) else visible(texts[0])
                out.append(Hidden(key, tuple(describe(ch) for ch in dict.fromkeys(found)), shown))
        return tuple(out)

    @staticmethod
    def _parsed(path: str, data: bytes | None) -> dict[str, Any] | None:
        if data is None:
            return None
        card, _ = parse_card(path, data)
        return card.to_dict() if card is not None else None


def _frontmatter(data: bytes) -> dict[str, Any]:
    """A card's frontmatter as YAML decodes it, before the card parser cleans any field ({} when unreadable)."""
    text = data.decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    source = frontmatter_source(text)  # as the parser reads it: a `----` line opened it, a `...` line did not end it
    if source is None:
        return {}
    try:
        loaded = safeyaml.load(source)
    except (ValueError, yaml.YAMLError):  # the card parser reports why; here it means nothing to show
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _range_commits(
    repo: Any, vault: Vault, base: str, head: str, at_head: Collection[str], gone: Collection[str] = ()
) -> dict[str, list[RangeCommit]]:
    """The commits in base..head that touched each card path (as the path is after the commit), newest first; for
    each card path at HEAD in `at_head`, every commit of its history in the range, followed back through renames (a
    card added and then moved, or moved twice, was written under a path that is neither end of the range's diff);
    for each path of the base in `gone` (a card the range removes), every commit that touched it, followed forward
    through renames (a card moved and then deleted was deleted under its new path, by someone the review left out)."""
    out: dict[str, list[RangeCommit]] = {}
    logged_commits = gitrepo.card_log(repo, vault, head, since=base)
    # Each author under the name the base's `.mailmap` gives them: never the range's own, which could credit its
    # commits to someone else
    names = gitrepo.mailmap_at(repo, base)

    def ref_of(c: gitrepo.LoggedCommit) -> RangeCommit:
        return RangeCommit(c.commit, *names.identity(c.author, c.email), c.date)

    refs = [ref_of(c) for c in logged_commits]
    for logged, ref in zip(logged_commits, refs, strict=True):
        for file in logged.files:
            for path in {file.new_path, file.old_path} - {None}:
                assert path is not None
                out.setdefault(path, []).append(ref)
    for path, lineage in provenance.walk_history(repo, vault, head, at_head, since=base).items():
        walked = [ref_of(v.commit) for v in lineage.versions]
        out[path] = list(dict.fromkeys([*walked, *out.get(path, [])]))
    for path in gone:
        paths, found = {path}, []
        for logged, ref in zip(reversed(logged_commits), reversed(refs), strict=True):  # parents before children
            files = [f for f in logged.files if f.old_path in paths or f.new_path in paths]
            paths.update(f.new_path for f in files if f.status == "R" and f.new_path)
            if files:
                found.append(ref)
        out[path] = found[::-1]
    return out


def _names_a_card(raw: gitrepo.Change) -> bool:
    """Whether a change under cards/ is a card's: a file no card is before or after (`notes.txt`, an image) is lint's
    (`card-path`), not a card added, changed or removed. A card moved to such a name stays: it is removed."""
    return any(card_id_from_path(p) is not None for p in (raw.old_path, raw.new_path) if p)


def _revived(before: IndexReader, after: IndexReader, changes: tuple[CardChange, ...]) -> tuple[CardChange, ...]:
    """The cards the range does not touch that agents get again: superseded at the base by an active card, and by
    none at HEAD. Their text is what review must show (a removed or retired superseder, or a `supersedes` entry
    dropped, put an old lesson back in front of agents while review listed only the card that changed)."""
    touched = {c.id for c in changes}
    now = after.superseded()
    out = []
    for card_id, by in sorted(before.superseded().items()):
        if card_id in touched or card_id in now:
            continue
        card = after.card_by_id(card_id)
        if card is None or card.status != "active":
            continue
        record = after.record(card_id) or {}
        out.append(
            CardChange(
                status="revived",
                id=card_id,
                path=f"{CARDS_DIR}/{card_id}.md",
                name=card.name,
                summary=card.summary,
                provenance=record.get("provenance"),
                was_superseded_by=by,
            )
        )
    return tuple(out)


def _newly_superseded(
    before: IndexReader, after: IndexReader, changes: Sequence[CardChange], blocked: Collection[Blocked]
) -> list[Blocked]:
    """The cards agents got at the base (under their old id, when the range moves them) that an active card
    supersedes at HEAD, each superseder not already blocked by `policy.card_blocks`: what no `supersedes` edit says,
    such as a card moved to an id a superseding card's dangling entry names, or a superseding card the base's index
    refused (a secret) made one it holds."""
    was, now = before.superseded(), after.superseded()
    moved = {c.id: c.old_id for c in changes if c.status == "renamed" and c.old_id}
    out = []
    for target, superseders in sorted(now.items()):
        old_id = moved.get(target, target)
        card, old = after.card_by_id(target), before.card_by_id(old_id)
        if card is None or card.status != "active" or old is None or old.status != "active" or old_id in was:
            continue
        if old_id != target:
            out.append(policy.renamed_into_superseded(old_id, target, superseders))
            continue
        out += [b for b in (policy.supersedes(by, target) for by in superseders) if b not in blocked]
    return out


def _expired_by_commit_day(
    before: IndexReader, after: IndexReader, changes: Sequence[CardChange], cards: _CardReader, today: dt.date
) -> list[Blocked]:
    """The cards agents got at the base that HEAD's index holds expired while their fields do not say so (what
    `policy.card_blocks` reads): a `verified_at` later than the day of the commit, which the index counts from."""
    day = today.isoformat()
    out = []
    for change in changes:
        if change.status not in ("changed", "renamed"):
            continue
        card, old = after.card_by_id(change.id), before.card_by_id(change.old_id or change.id)
        if card is None or old is None or card.status != "active" or old.status != "active":
            continue
        if not card.expires_on or card.expires_on >= day or (old.expires_on and old.expires_on < day):
            continue
        written = (cards.after(change.path) or {}).get("expires_on")
        if written and written < day:
            continue  # the fields say it: card_blocks blocked it
        out.append(policy.expired_by_commit_day(change.id, card.expires_on))
    return out


def _change(
    raw: gitrepo.Change,
    before: IndexReader | None,
    after: IndexReader | None,
    commits: dict[str, list[RangeCommit]],
    cards: _CardReader,
    left_out: Mapping[str, str] | None = None,
    today: dt.date | None = None,
) -> CardChange:
    path = raw.new_path or raw.old_path or ""
    card_id = _card_id(path)
    old_id = _card_id(raw.old_path) if raw.old_path else None
    record = None
    if raw.status == "D":
        record = before.record(card_id) if before is not None else None
    elif after is not None:
        record = after.record(card_id)
    touched = [*commits.get(path, []), *(commits.get(raw.old_path, []) if raw.old_path else [])]
    unique = tuple(dict.fromkeys(touched))
    old = cards.before(raw.old_path)
    new = cards.after(raw.new_path) if raw.status != "D" else None
    shown = new or old or {}
    fields: list[FieldChange] = []
    if new is not None:
        for key in FIELDS:
            a, b = (old or {}).get(key), new.get(key)
            if old is None and b in (None, [], ""):
                continue
            if a != b:
                fields.append(FieldChange(key, a, b))
    old_summary = old.get("summary") if old is not None and new is not None else None
    return CardChange(
        status=STATUS_WORDS.get(raw.status, "changed"),
        id=card_id,
        path=path,
        old_id=old_id if raw.status == "R" else None,
        name=shown.get("name", ""),
        summary=shown.get("summary", ""),
        old_summary=old_summary if old_summary != shown.get("summary") else None,
        commits=unique,
        provenance=(record or {}).get("provenance"),
        fields=tuple(fields),
        body_changed=old is not None and new is not None and old.get("body") != new.get("body"),
        hidden=cards.hidden(raw.new_path) if raw.status != "D" else (),
        left_out=(left_out or {}).get(raw.new_path or "", "") if raw.status != "D" else "",
        not_served=_not_served(after.card_by_id(card_id), today, new) if after and today and raw.status != "D" else "",
    )


def _not_served(card: IndexedCard | None, today: dt.date, fields: Mapping[str, Any] | None = None) -> str:
    """Why recall's admission refuses `card` for every prompt, in words; empty when some prompt may get it. fields:
    the card as parsed, whose own review date the index does not believe when its commit is dated before its
    verified_at (`cairn.index.expiry`)."""
    if card is None:
        return ""
    reason = admission(card, today.isoformat(), set(), "", ())
    if reason in ("draft", "retired"):
        return f"status {reason}: agents get active cards only"
    if reason == UNKNOWN_STATUS:
        return f"status {card.status!r} is none of active, draft, retired"
    if reason == "expired":
        if card.superseded_by:  # a new review date would not serve it: the card superseding it keeps it out too
            return (
                f"its review date {card.expires_on} has passed, and it is superseded by {', '.join(card.superseded_by)}: "
                "a later review date would not serve it"
            )
        if fields is not None and fields.get("expires_on") not in (None, card.expires_on):
            return (
                f"its review date {card.expires_on} has passed, counted from its commit's day: its verified_at, "
                f"{fields.get('verified_at')}, is later than that commit; commit the card again with a true date"
            )
        return f"its review date {card.expires_on} has passed: {renewal((fields or {}).get('review_after'))}"
    if reason == "superseded":
        return f"superseded by {', '.join(card.superseded_by)}"
    return ""


def _card_id(path: str) -> str:
    rel = path[len(CARDS_DIR) + 1 :] if path.startswith(CARDS_DIR + "/") else path
    return rel[:-3] if rel.endswith(".md") else rel


def _dotted(path: str) -> bool:
    return any(part in ("", ".", "..") for part in path.split("/"))


def _materialize(repo: Any, vault: Vault, commit: str, root: Path) -> tuple[Vault, frozenset[str]]:
    """HEAD's cards/ and cairn.toml written to a folder, so lint reads the commit and not the working tree; and the
    paths not written: the submodules under cards/ and the paths with `.` or `..` parts (no card)."""
    entries = gitrepo.card_entries(repo, commit, vault)
    config = gitrepo.read_path(repo, commit, CONFIG_FILE, vault)
    regular = [e for e in entries if e.mode not in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE)]
    links = [e for e in entries if e.mode == gitrepo.SYMLINK_MODE]
    data = gitrepo.read_blobs(repo, vault, [e.blob for e in regular + links])
    (root / CARDS_DIR).mkdir(parents=True)
    for entry in regular + links:
        if entry.path == CARDS_DIR:
            continue  # `cards` itself a symlink or a file: no card is read through it (the index refuses it too)
        if _dotted(entry.path):
            # `git mktree` stores such paths; written, `cards/x/../y.md` would replace the card `cards/y.md` with
            # other text, which review would show and lint. No card lives there: the index reads none either.
            continue
        target = root / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == gitrepo.SYMLINK_MODE:
            os.symlink(data.get(entry.blob, b"missing").decode("utf-8", "replace"), target)
        else:
            target.write_bytes(data.get(entry.blob, b""))
    if config is not None and gitrepo.holds_symlink(repo, commit, CONFIG_FILE, vault):
        os.symlink("symlink", root / CONFIG_FILE)  # never followed: lint names a symlink there as the index does
    elif config is not None:
        (root / CONFIG_FILE).write_bytes(config)
    elif gitrepo.holds_folder(repo, commit, CONFIG_FILE, vault):
        (root / CONFIG_FILE).mkdir()  # lint names a folder there as it does in a working tree
    unwritten = frozenset(
        e.path for e in entries if e.mode == gitrepo.SUBMODULE_MODE or _dotted(e.path) or e.path == CARDS_DIR
    )
    return Vault(root=root, git_root=None, prefix=""), unwritten


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
        self.profiles: dict[str, similarity.Profile] = {}

    def __call__(self, card: IndexedCard) -> frozenset[str] | None:
        if card.id not in self.seen:
            try:
                parsed, _ = parse_card(card.path, (self.root / card.path).read_bytes())
            except OSError:
                parsed = None
            self.seen[card.id] = similarity.terms(parsed.body) if parsed is not None else None
        return self.seen[card.id]

    def profile(self, card: IndexedCard) -> similarity.Profile:
        """The card's near-duplicate profile, made once: a card is in a dozen pairs or more, and making it for
        each pair (tokenizing its summary again) was a fifth of comparing a bulk import's cards."""
        if card.id not in self.profiles:
            self.profiles[card.id] = similarity.profile(card.name, card.scope, card.summary, self(card))
        return self.profiles[card.id]


class _Neighbours:
    """Each card's `NEIGHBOURS` closest cards at HEAD (the cards recall ranks for its name and summary), ranked once
    per card: near-duplicates and own questions both read them, and ranking each changed card twice made half of a
    bulk import's review."""

    def __init__(self, index: IndexReader) -> None:
        self.index = index
        self.seen: dict[str, tuple[IndexedCard, ...]] = {}

    def __call__(self, card: IndexedCard) -> tuple[IndexedCard, ...]:
        if card.id not in self.seen:
            ranked = rank(self.index, f"{card.name} {card.summary}", depth=NEIGHBOURS + 1)
            rows = [row for row, _ in ranked if row != card.row]
            self.seen[card.id] = tuple(self.index.cards(rows[:NEIGHBOURS]).values())
        return self.seen[card.id]


def _similar(
    index: IndexReader,
    changed: Sequence[CardChange],
    neighbours: Callable[[IndexedCard], Sequence[IndexedCard]],
    bodies: _BodyTerms,
    threshold: float,
    progress: Progress | None = None,
) -> tuple[Similar, ...]:
    """Each changed card against its lexical neighbours at HEAD (the cards recall ranks for its name and summary)."""
    found: dict[frozenset[str], Similar] = {}
    for done, change in enumerate(changed):
        if progress and done % 25 == 0:
            progress(done, len(changed))
        card = index.card_by_id(change.id)
        if card is None:
            continue
        for other in neighbours(card):
            pair = frozenset((card.id, other.id))
            if pair in found or other.id in card.supersedes or card.id in other.supersedes:
                continue
            hit = _compare(card, other, bodies, threshold)
            if hit is not None:
                found[pair] = hit
    if progress and changed:
        progress(len(changed), len(changed))
    return tuple(sorted(found.values(), key=lambda s: (s.kind != "conflict", s.card, s.other)))


def _compare(
    card: IndexedCard,
    other: IndexedCard,
    bodies: _BodyTerms,
    threshold: float,
) -> Similar | None:
    mine, theirs = bodies.profile(card), bodies.profile(other)
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
            f"{overlap:.0%} of the shorter summary's words are in the other (summary_overlap), names "
            f"{alike.name:.0%} alike (name_similarity), {scope_note}; opposing words: {opposed}",
        )
    duplicate = alike.duplicate(threshold)
    if duplicate is not None:
        key, value = duplicate
        return similar("near-duplicate", f"{similarity.describe(key, value)} ({key}_similarity; {scope_note})")
    return None


# -- cards' own questions -------------------------------------------------------------------------------------

MAX_OWN_CARDS = 400  # cards asked their own questions in one review (a bulk import changes thousands)
MAX_OWN_ALIASES = 12  # a card's aliases asked, in its order


def _own_questions(
    before: IndexReader,
    after: IndexReader,
    changed: Sequence[CardChange],
    neighbours: Callable[[IndexedCard], Sequence[IndexedCard]],
    today: dt.date,
    progress: Progress | None = None,
) -> tuple[tuple[OwnQuestion, ...], int]:
    """The changed cards and their closest cards at HEAD (`NEIGHBOURS` each, as `_similar` finds them), each asked
    its name, its summary's first sentence and its aliases at the base and at HEAD: what no eval case may cover, such as a new
    card beside which an old one no longer stands clear enough to be injected for its own name. And how many cards
    past `MAX_OWN_CARDS` were not asked (the changed cards come first, in id order, then their neighbours)."""
    ids = {c.id for c in changed}
    asked: dict[str, None] = dict.fromkeys(sorted(ids))
    for card_id in sorted(ids):
        card = after.card_by_id(card_id)
        if card is None:
            continue
        for other in neighbours(card):
            asked.setdefault(other.id)
    base_settings, head_settings = settings_of(before), settings_of(after)
    found: list[OwnQuestion] = []
    to_ask = list(asked)[:MAX_OWN_CARDS]
    for done, card_id in enumerate(to_ask):
        if progress and done % 25 == 0:
            progress(done, len(to_ask))
        card = after.card_by_id(card_id)
        if card is None:
            continue
        at_base = before.card_by_id(card_id) is not None
        questions = [("name", card.name), ("summary", first_sentence(card.summary))]
        aliases = (after.record(card_id) or {}).get("aliases") or []
        questions += [("alias", str(alias)) for alias in aliases[:MAX_OWN_ALIASES]]
        for field_name, query in dict.fromkeys(questions):
            if not query or (field_name != "name" and query == card.name):
                continue
            head = recall(after, query, today=today, settings=head_settings)
            injected = tuple(c.card.id for c in head.injected)
            if card_id in injected:
                continue
            ranked = [c for c in head.candidates if c.reason in GATE_REASONS]
            refused = next((c for c in head.candidates if c.card.id == card_id), None)
            if refused is not None and refused.reason not in GATE_REASONS:
                continue  # retired, superseded, expired, a draft, out of scope: left out on purpose
            base: tuple[str, ...] | None = None
            if at_base:
                base = tuple(c.card.id for c in recall(before, query, today=today, settings=base_settings).injected)
            if (base is not None and card_id in base) or (card_id in ids and field_name == "name"):
                found.append(OwnQuestion(card_id, field_name, query, base, injected, _why(refused, ranked, injected)))
    if progress and to_ask:
        progress(len(to_ask), len(to_ask))
    ordered = tuple(sorted(found, key=lambda q: (q.kind != "silenced", q.card, q.field)))
    return ordered, max(0, len(asked) - MAX_OWN_CARDS)


def first_sentence(text: str, limit: int = 300) -> str:
    """The text up to its first sentence end (`. `, `? `, `! ` or a CJK full stop), at most `limit` characters."""
    match = re.search(r"[.?!](?=\s)|[。？！]", text)
    return (text[: match.end()] if match else text)[:limit].strip()


def _why(refused: Any, ranked: Sequence[Any], injected: tuple[str, ...]) -> str:
    """The gate that refused the card and the card it was measured against: the one below it for the lead and the
    margin (the card it does not stand clear of), the one above it that blocks it."""
    if refused is None:
        why = "not among the cards ranked"
    else:
        why = str(refused.reason or "over the limit")
        place = next((i for i, c in enumerate(ranked) if c is refused), None)
        if refused.blocked_by:
            why += f" (below {refused.blocked_by}, which is refused)"
        elif refused.reason in (gates.SMALL_LEAD, gates.SMALL_MARGIN) and place is not None and place + 1 < len(ranked):
            why += f" (too close to {ranked[place + 1].card.id}: lead {refused.lead:.2f}, margin {refused.margin:.2f})"
        elif place:
            why += f" (ranked {place + 1}, after {ranked[0].card.id})"
    return why + (f"; HEAD injects {', '.join(injected)}" if injected else "; HEAD injects nothing")


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
    data = gitrepo.read_blobs(repo, vault, [e.blob for e in entries], limit=MAX_CASES_BYTES)
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
    unknown = tuple((path, case.id, card) for path, cases in loaded for case, card in unknown_expected(after, cases))
    refused = {where for where, _line, _rule, _message in after.problems()} if unknown else set()
    # every cases file pooled, as one `cairn eval --json` over them all would measure them
    base_all = metrics_of(o.scored for _, old, _ in reports for o in old.outcomes).eval_dict()
    head_all = metrics_of(o.scored for _, _, new in reports for o in new.outcomes).eval_dict()
    return Routing(
        files=tuple(path for path, _ in loaded),
        n_cases=len(all_cases),
        base=base_all,
        head=head_all,
        changed=tuple(sorted(changed, key=lambda c: (c.kind != "new false injection", c.file, c.id))),
        unknown=unknown,
        left_out=frozenset(card for _, _, card in unknown if f"{CARDS_DIR}/{card}.md" in refused),
    )


def _offset(progress: Progress | None, offset: int, total: int) -> Progress | None:
    """A progress callback for one part of a longer job."""
    if progress is None:
        return None
    report = progress
    return lambda done, _part: report(offset + done, total)
