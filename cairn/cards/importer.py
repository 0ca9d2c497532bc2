"""`cairn import`: the lessons of CLAUDE.md / AGENTS.md / GEMINI.md files, or whole Markdown notes, as new cards.

Lesson files (those three names and `.cursorrules`; any file with `lessons=True` or a `section`) are read bullet by
bullet: a top-level bullet that states a lesson becomes one card, and every other bullet is dropped with why (the rule
is in `cards/lessons.py`), so a whole CLAUDE.md never becomes one card. Other Markdown files are notes: one note,
one card, its whole frontmatter kept; the name comes from the frontmatter or the first heading, the summary from
the frontmatter or the first paragraph.

Every card gets the block-style frontmatter `cairn add` writes, a `verified_at` (the note's own, else the source
file's last commit day when it is committed and unchanged, else today), a scope (given, else the note's own, else
for a lesson the slug of its section heading, its words that say lessons left out), and a short ASCII id (`authoring.card_slug`). All of them are linted
together in the vault's context before anything is written, as `cairn add` lints: an error refuses a card, and so
does a warning unless `force`; the others are still written. An existing card is replaced only with `force`, and
only by a card of the same name (a re-import); a different card at the same id gives the new one a `-2` suffix.
Files are written atomically; nothing is committed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from cairn import gitrepo
from cairn.atomic import ensure_inside, write_atomic
from cairn.cards import lessons, safeyaml
from cairn.cards.authoring import (
    card_slug,
    checked_out_card,
    lint_pending,
    render_frontmatter,
    unwritable,
    why_folder_cannot_be_made,
)
from cairn.cards.authoring import today as authoring_today
from cairn.cards.body import read_body
from cairn.cards.card import (
    TOML_FRONTMATTER,
    check_card_id,
    file_key,
    frontmatter_fences,
    parse_card,
    read_date,
    slugify,
)
from cairn.cards.similarity import name_key
from cairn.finding import ERROR, Finding
from cairn.hot.errors import CairnError, CardExists, InvalidId, RefusedWrite
from cairn.hot.vault import Vault
from cairn.terminal import clean_line

SUMMARY_MAX_CHARS = 300
# A lesson file or a note is a few KiB; past this size a file is not one (a log, a dump) and would take minutes.
MAX_SOURCE_BYTES = 4 * 1024 * 1024
# Agents' instruction files: read as lessons, never as one note (a `.cursorrules` became one card named after it,
# its summary "You are an expert in ...").
LESSON_FILES = ("claude.md", "agents.md", "gemini.md", ".cursorrules")
DEFAULT_TOPIC = "imported"
DEFAULT_LESSON_TOPIC = "lessons"

# Statuses of a card: the first four are success (the card is or would be written); the others skip it.
WRITTEN, WOULD_WRITE, REPLACED, WOULD_REPLACE = "written", "would-write", "replaced", "would-replace"
EXISTS, DUPLICATE, REFUSED, INVALID = "exists", "duplicate", "refused", "invalid"
_DONE = (WRITTEN, WOULD_WRITE, REPLACED, WOULD_REPLACE)


@dataclass(frozen=True, slots=True)
class Planned:
    """A card to write, before it has an id: where it came from (`file` or `file:line`), its frontmatter (in the
    order it is written) and body, and the folder and slug its id is made of."""

    source: str
    meta: dict[str, Any]
    body: str
    folder: str
    slug: str

    @property
    def name(self) -> str:
        return str(self.meta["name"])


@dataclass(frozen=True, slots=True)
class Problem:
    """A source that cannot become a card (not UTF-8, bad frontmatter, no summary)."""

    source: str
    message: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """A bullet (or a whole section) that is not a lesson: where, its text (a section: its heading), and why it
    was dropped. kind: `bullet`, `paragraph` or `section`."""

    source: str
    text: str
    why: str
    kind: str = "bullet"

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "kind": self.kind, "text": self.text, "why": self.why}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one card: its id and path (None when it never got one), status, a message when skipped, what
    it holds (name, summary, scope, verified_at) and its lint findings."""

    source: str
    card_id: str | None
    path: str | None
    status: str
    message: str = ""
    name: str = ""
    summary: str = ""
    scope: tuple[str, ...] = ()
    verified_at: str | None = None
    findings: tuple[Finding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status in _DONE

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "id": self.card_id,
            "path": self.path,
            "status": self.status,
            "message": self.message,
            "name": self.name,
            "summary": self.summary,
            "scope": list(self.scope),
            "verified_at": self.verified_at,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True, slots=True)
class ImportReport:
    dry_run: bool
    outcomes: tuple[Outcome, ...]
    dropped: tuple[Dropped, ...] = ()

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "ok": self.ok,
            "imported": sum(o.ok for o in self.outcomes),
            "skipped": sum(not o.ok for o in self.outcomes),
            "cards": [o.to_dict() for o in self.outcomes],
            "dropped": [d.to_dict() for d in self.dropped],
        }


def import_notes(
    vault: Vault,
    src: Path,
    *,
    dry_run: bool = False,
    lessons_only: bool = False,
    section: str | None = None,
    scope: Sequence[str] = (),
    topic: str | None = None,
    force: bool = False,
    today: dt.date | None = None,
    progress: Callable[[int, int], None] | None = None,
    wrote: Callable[[Outcome], None] | None = None,
) -> ImportReport:
    """Import a Markdown file or a folder of them into the vault's cards/; see the module docstring. `lessons_only`
    reads every file as a lesson list (and a folder's lesson files only); `section` takes that section of each
    lesson file (and implies lesson reading); `topic` is the folder under cards/ (default: the first scope).
    `progress(done, total)` hears of the work done: the files read, then the cards made (each counted once).
    `wrote(outcome)` hears of each card as soon as it is written, so an import stopped midway (Ctrl-C) can say
    which cards it left in the vault."""
    if not src.exists():
        raise CairnError(f"{src} does not exist; give a Markdown file or a folder of them")
    if not src.is_file() and not src.is_dir():
        raise CairnError(f"{src} is not a regular file or a folder; give a Markdown file or a folder of them")
    today = today or authoring_today()
    topic = _check_topic(topic) if topic is not None else None
    scope = tuple(dict.fromkeys(s.strip() for s in scope if s.strip()))
    if not all(_utf8(tag) for tag in scope):  # else every card fails as YAML Cairn wrote itself
        raise CairnError("--scope is not UTF-8 text (a terminal set to another encoding?); give it in UTF-8")
    cards_dir = vault.cards_dir.resolve()
    if src.resolve() == cards_dir or src.resolve().is_relative_to(cards_dir):
        raise CairnError(f"{src} is inside the vault's cards/; import notes from outside the vault")
    as_lessons = lessons_only or section is not None
    planned: list[Planned | Problem] = []
    dropped: list[Dropped] = []
    headings: list[str] = []
    found_section = False
    files = _each_file_once(list(_source_files(src, as_lessons, cards_dir)))
    if not files:  # a folder with nothing to read: the wrong folder, not a successful import of no card
        kind = "CLAUDE.md, AGENTS.md or GEMINI.md" if as_lessons else "Markdown file (.md, .markdown)"
        raise CairnError(
            f"{src} holds no {kind} outside hidden folders; give a Markdown file or a folder of them (nothing was "
            "written)"
        )
    inside = src.resolve() if src.is_dir() else None
    for done, (file, rel_dir) in enumerate(files):
        if progress is not None and done % 25 == 0:
            progress(done, 2 * len(files))
        shown = str(file)
        if inside is not None and file.is_symlink() and not file.resolve().is_relative_to(inside):
            # A notes folder (a cloned repository) must not bring a file from elsewhere (`creds.md -> ~/.aws/...`)
            # into the vault, where it would be committed and shared; name the file itself to import it.
            planned.append(Problem(shown, f"a symlink to a file outside {src}; not read (import that file by name)"))
            continue
        try:
            if file.stat().st_size > MAX_SOURCE_BYTES:  # never read (or parse) a huge file whole
                size = file.stat().st_size / 1048576
                limit = MAX_SOURCE_BYTES // 1048576
                planned.append(
                    Problem(shown, f"the file is {size:.1f} MiB; Cairn imports files under {limit} MiB; split it")
                )
                continue
            text = file.read_bytes().decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            planned.append(Problem(shown, "not UTF-8 text; save it as UTF-8 and import it again"))
            continue
        except OSError as exc:
            planned.append(Problem(shown, f"cannot read it ({exc.strerror or exc})"))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        day = _file_day(file, today)
        if as_lessons or file.name.lower() in LESSON_FILES:
            # The card's `source`: the file's path inside SRC, on one line whatever its folders are called.
            label = clean_line("/".join((*rel_dir, file.name))).replace("\u2028", "?").replace("\u2029", "?")
            read = plan_lessons(shown, label, text, day, section=section, scope=scope, topic=topic)
            planned.extend(read.planned)
            dropped.extend(read.dropped)
            headings.extend(h for h in read.headings if h not in headings)
            found_section = found_section or read.found_section
        else:
            folder = topic or (slugify(scope[0]) if scope else _topic_of(rel_dir))
            planned.append(plan_note(shown, file.stem, text, day, scope=scope, folder=folder))
    if section is not None and not found_section:
        listed = ", ".join(f'"{h}"' for h in headings[:12]) or "none"
        raise CairnError(f'no section "{section}" in {src}; its sections: {listed} (nothing was written)')
    made = None
    if progress is not None:  # the second half of the bar: the cards, however many the files held

        def made(done: int) -> None:
            progress(len(files) + round(done * len(files) / max(len(planned), 1)), 2 * len(files))

    outcomes = _apply(vault, planned, dry_run=dry_run, force=force, today=today, progress=made, wrote=wrote)
    if progress is not None:
        progress(2 * len(files), 2 * len(files))
    return ImportReport(dry_run, tuple(outcomes), tuple(dropped))


# -- planning ------------------------------------------------------------------------------------------------------


def plan_note(
    source: str, stem: str, text: str, day: dt.date, *, scope: Sequence[str] = (), folder: str = DEFAULT_TOPIC
) -> Planned | Problem:
    """One Markdown note as one card, its frontmatter kept whole."""
    meta, body, problem = _split_frontmatter(text)
    if problem:
        return Problem(source, problem)
    tokens = _markdown().parse(body)
    lines = body.split("\n")
    drop: list[tuple[int, int]] = []
    taken: list[tuple[int, int]] = []  # the paragraph the summary was taken from
    name = _text_field(meta, "name") or _text_field(meta, "title")
    if not name:
        heading = _first(tokens, "heading_open")
        if heading is not None:
            name = _plain(tokens[heading + 1])
            drop.extend(_span(tokens[heading]))
    if not name:
        name = stem.replace("-", " ").replace("_", " ").strip()
        if not name.isascii() and not _utf8(name):  # undecodable bytes, held as surrogates
            return Problem(
                source,
                "the file name is not UTF-8 text, and the note has no `name:` or heading to be named by; "
                "rename the file or give it a name",
            )
    summary = _text_field(meta, "summary") or _text_field(meta, "description")
    if not summary:
        para = _first(tokens, "paragraph_open", level=0)
        if para is None:
            return Problem(source, "no summary in the frontmatter and no paragraph to take one from")
        whole = lessons.flat(tokens[para + 1].content)
        summary = trim_summary(whole)
        if summary == whole:
            taken = _span(tokens[para])
    rest = _lines_outside(lines, [*drop, *taken])
    # A note of one paragraph is the whole lesson, so the body too, with or without a heading left above it (a note
    # named by its `title:` keeps its heading): else body-present refused the card as holding "only headings".
    if taken and not read_body(rest).has_content:
        rest = _lines_outside(lines, drop)
    own_scope = meta.get("scope")
    head: dict[str, Any] = {"name": name, "summary": summary}
    if scope:
        head["scope"] = list(scope)
    elif own_scope:
        head["scope"] = own_scope
    own = meta.get("verified_at")
    head["verified_at"] = read_date(own) or own or day  # a note's own date that is no date is kept, for lint to name
    head.update((k, v) for k, v in meta.items() if k not in head)
    return Planned(source, head, rest, folder, card_slug(stem))


@dataclass(frozen=True, slots=True)
class LessonRead:
    """What a lesson file gave: cards to write, what was dropped, its section headings, and whether the asked-for
    section was found."""

    planned: list[Planned | Problem]
    dropped: list[Dropped]
    headings: list[str]
    found_section: bool


def plan_lessons(
    source: str,
    file_name: str,
    text: str,
    day: dt.date,
    *,
    section: str | None = None,
    scope: Sequence[str] = (),
    topic: str | None = None,
) -> LessonRead:
    """The lessons of a CLAUDE.md / AGENTS.md style file: each top-level bullet that states a lesson, one card."""
    _meta, body, problem = _split_frontmatter(text)
    if problem:
        return LessonRead([Problem(source, problem)], [], [], False)
    offset = text[: len(text) - len(body)].count("\n") if body and text.endswith(body) else 0
    tokens = _markdown().parse(body)
    lines = body.split("\n")
    # Sections are the document's own headings: one inside a quote or a list item (`> ## Note`) opens none.
    titled = sum(1 for t in tokens if t.type == "heading_open" and t.level == 0 and t.tag == "h1") == 1
    stack: list[tuple[int, str, int]] = []  # (level, heading, line) of the headings around the current block
    headings: list[str] = []
    out: list[Planned | Problem] = []
    dropped: list[Dropped] = []
    skipped_sections: dict[int, tuple[int, int]] = {}  # heading line -> (its index in dropped, bullets in it)
    found = False
    wanted = _section_key(section) if section is not None else None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            level = int(token.tag[1:])
            heading = _plain(tokens[i + 1])
            stack = [h for h in stack if h[0] < level]
            asked = wanted is not None and _section_key(heading) == wanted
            found = found or asked
            # A document's one H1 is its title, not a section, unless --section names it: then the section it heads
            # is the whole document (it found it, and gave nothing from it, with "Would import 0 card(s)").
            if not (titled and level == 1) or asked:
                stack.append((level, heading, (token.map[0] if token.map else 0) + 1 + offset))
                headings.append(heading)
            continue
        paragraph = token.type == "paragraph_open" and token.level == 0
        if not (paragraph or (token.type == "list_item_open" and token.level == 1)) or not token.map:
            continue
        where = f"{source}:{token.map[0] + 1 + offset}"
        if wanted is not None:
            named = [h for h in stack if _section_key(h[1]) == wanted]
            if not named:
                continue
            home = named[-1][1]
        else:
            reference = next((h for h in stack if lessons.is_reference_section(h[1])), None)
            if reference is not None:
                if not paragraph:
                    at, count = skipped_sections.get(reference[2], (len(dropped), 0))
                    if count == 0:
                        dropped.append(Dropped(f"{source}:{reference[2]}", reference[1], "", "section"))
                    skipped_sections[reference[2]] = (at, count + 1)
                continue
            home = stack[-1][1] if stack else ""
        if paragraph:
            excerpt = lessons.shorten(lessons.flat(tokens[i + 1].content), 60)
            dropped.append(Dropped(where, excerpt, "a paragraph; lessons are read from top-level bullets", "paragraph"))
            continue
        inline = tokens[i + 2] if tokens[i + 1].type == "paragraph_open" else None  # an item opens with its text
        content = _TASK_BOX.sub("", inline.content) if inline is not None else ""
        verdict = lessons.judge(content)
        flat = lessons.flat(re.sub(r"\*\*|__", "", content))
        if inline is None and tokens[i + 1].type == "html_block":  # `- <!-- note --> text`: its line is raw HTML
            flat = lessons.flat(tokens[i + 1].content)
            if _COMMENT.sub("", flat).strip():
                verdict = lessons.Verdict(False, _OPENS_WITH_HTML)
        if not verdict.lesson or inline is None:
            dropped.append(Dropped(where, lessons.shorten(flat, 60), verdict.why))
            continue
        name = lessons.lesson_name(flat, _bold_lead(inline))
        tags = tuple(scope) or _heading_scope(home)
        meta: dict[str, Any] = {"name": name, "summary": trim_summary(flat)}
        if tags:
            meta["scope"] = list(tags)
        meta["verified_at"] = day
        meta["source"] = f"{file_name}:{where.rsplit(':', 1)[1]}"
        folder = topic or (slugify(tags[0]) if tags else DEFAULT_LESSON_TOPIC)
        body = _dedent_item(lines[token.map[0] : token.map[1]])
        out.append(Planned(where, meta, body, folder, card_slug(name)))
    for at, count in skipped_sections.values():
        heading = dropped[at].text
        why = (
            f"the section's heading names instructions, not lessons ({count} bullet{'s' if count != 1 else ''}; "
            f'--section "{heading}" takes it)'
        )
        dropped[at] = Dropped(dropped[at].source, heading, why, "section")
    return LessonRead(out, dropped, headings, found)


def trim_summary(text: str, limit: int = SUMMARY_MAX_CHARS) -> str:
    """A sentence or two of `text`, at most `limit` characters, cut at a word with an ellipsis when needed."""
    text = lessons.flat(text)
    found = lessons.sentences(text)
    if len(text) <= limit and len(found) <= 2:
        return text
    summary = found[0] if found else text
    if len(found) > 1 and len(summary) + 1 + len(found[1]) <= limit:
        joiner = "" if summary.endswith(("。", "！", "？")) else " "
        summary = f"{summary}{joiner}{found[1]}"
    return _shorten_chars(summary, limit)


# -- applying ------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Card:
    plan: Planned
    card_id: str
    rel: str
    text: str
    replaces: bool
    findings: tuple[Finding, ...] = ()


def _apply(
    vault: Vault,
    planned: list[Planned | Problem],
    *,
    dry_run: bool,
    force: bool,
    today: dt.date,
    progress: Callable[[int], None] | None = None,
    wrote: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    outcomes: dict[int, Outcome] = {}
    cards: dict[int, _Card] = {}
    taken: set[str] = set()
    names: dict[str, str] = {}
    for n, plan in enumerate(planned):
        if progress is not None and n % 25 == 0:
            progress(n)
        if isinstance(plan, Problem):
            outcomes[n] = Outcome(plan.source, None, None, INVALID, plan.message)
            continue
        described = _described(plan)
        earlier = names.get(name_key(plan.name))
        if earlier is not None:
            message = f"{earlier} has the same name; one card per name"
            outcomes[n] = Outcome(plan.source, None, None, DUPLICATE, message, **described)
            continue
        names[name_key(plan.name)] = plan.source
        try:
            card_id, replaces = _free_id(vault, f"{plan.folder}/{plan.slug}", plan.name, taken)
        except InvalidId as exc:
            outcomes[n] = Outcome(plan.source, None, None, INVALID, str(exc), **described)
            continue
        rel = f"cards/{card_id}.md"
        try:
            ensure_inside(vault.cards_dir, vault.root / rel)
        except RefusedWrite:
            message = f"{rel} would be outside cards/ (a symlinked folder?)"
            outcomes[n] = Outcome(plan.source, card_id, rel, INVALID, message, **described)
            continue
        blocking = why_folder_cannot_be_made(vault, rel)
        if blocking is not None:
            message = f"{blocking}, so {rel} cannot be written; choose another --topic"
            outcomes[n] = Outcome(plan.source, card_id, rel, INVALID, message, **described)
            continue
        taken.add(card_id)
        if replaces and not force:
            message = f"{rel} already exists with this name; it was left untouched (--force replaces it)"
            outcomes[n] = Outcome(plan.source, card_id, rel, EXISTS, message, **described)
            continue
        text = render_frontmatter(plan.meta, plan.body)
        parsed, findings = parse_card(rel, text.encode("utf-8"))
        if parsed is None:
            message = "; ".join(f.message for f in findings)
            outcomes[n] = Outcome(plan.source, card_id, rel, INVALID, message, **described)
            continue
        cards[n] = _Card(plan, card_id, rel, text, replaces)
    _lint(vault, cards, today=today)
    encodings = {} if dry_run else gitrepo.working_tree_encodings(vault, [c.rel for c in cards.values()])
    for n, card in cards.items():
        with _interrupts_held():  # a card written is a card named: a Ctrl-C between the two left one unnamed
            outcomes[n] = _write(vault, card, dry_run=dry_run, force=force, encodings=encodings)
            if wrote is not None and outcomes[n].status in (WRITTEN, REPLACED):
                wrote(outcomes[n])
    return [outcomes[n] for n in sorted(outcomes)]


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends (then delivered, as KeyboardInterrupt or the handler's exit):
    what it writes and what it says it wrote stay one step. Where signals cannot be held (not the main thread, no
    `pthread_sigmask`), the block runs as it is."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _lint(vault: Vault, cards: dict[int, _Card], *, today: dt.date) -> None:
    """Lint the cards together in the vault's context; a second pass without the cards lint errors refuse, so a card
    is not refused for resembling one that will not be written. (Cards only warnings refuse stay in it: two
    near-duplicate bullets must not each pass once the other is left out.)"""
    pending = dict(cards)
    for _ in range(2):
        found = lint_pending(vault, {c.rel: c.text.encode("utf-8") for c in pending.values()}, today=today)
        for card in pending.values():
            card.findings = found[card.rel]
        refused = {n for n, c in pending.items() if any(f.severity == ERROR for f in c.findings)}
        if not refused or len(refused) == len(pending):
            return
        pending = {n: c for n, c in pending.items() if n not in refused}


def _write(vault: Vault, card: _Card, *, dry_run: bool, force: bool, encodings: dict[str, str | None]) -> Outcome:
    described = _described(card.plan)
    errors = [f for f in card.findings if f.severity == ERROR]
    warnings = [f for f in card.findings if f.severity != ERROR]
    base = (card.plan.source, card.card_id, card.rel)
    if errors and all(f.rule == "name-unique" for f in errors):
        # The lesson is in the vault already, at another path (imported before, then moved): nothing to fix.
        where = errors[0].message.split(";")[0].removeprefix("the name is also used by ")
        message = f"{where} already has this name (imported before?); it was left untouched"
        return Outcome(*base, EXISTS, message, findings=card.findings, **described)
    if errors:
        message = f"{_count(errors, 'lint error')}; fix the source and import again"
        return Outcome(*base, REFUSED, message, findings=card.findings, **described)
    if warnings and not force and all(_crowds_its_scope(f) for f in warnings):
        # The share of a scope across the vault: a lesson file of one tool's lessons refused every card for it, and
        # no edit of a lesson fixes it.
        message = (
            f"{_count(warnings, 'lint warning')}: its scope would be on most of the vault's cards; pass --force to "
            'write it anyway, or, for a vault about one tool, add disable = ["scope-crowding"] under [lint] in '
            "cairn.toml"
        )
        return Outcome(*base, REFUSED, message, findings=card.findings, **described)
    if warnings and not force:
        message = f"{_count(warnings, 'lint warning')}; fix the source, or pass --force to write it anyway"
        return Outcome(*base, REFUSED, message, findings=card.findings, **described)
    if dry_run:
        return Outcome(*base, WOULD_REPLACE if card.replaces else WOULD_WRITE, findings=card.findings, **described)
    try:
        data = checked_out_card(vault, card.rel, card.text, encodings)
    except CairnError as exc:  # a working-tree-encoding that cannot hold its text: this card, not the ones after it
        return Outcome(*base, INVALID, str(exc), findings=card.findings, **described)
    try:
        write_atomic(vault.root / card.rel, data, overwrite=card.replaces)
    except CardExists:
        message = f"{card.rel} appeared while importing; it was left untouched"
        return Outcome(*base, EXISTS, message, findings=card.findings, **described)
    except OSError as exc:  # a folder made read-only, a full disk: this card, not the cards after it
        return Outcome(*base, INVALID, unwritable(card.rel, exc), findings=card.findings, **described)
    return Outcome(*base, REPLACED if card.replaces else WRITTEN, findings=card.findings, **described)


def _crowds_its_scope(finding: Finding) -> bool:
    """Whether `finding` is scope-crowding's share of a scope across the vault (`scope 'python' is on 31 of 32
    cards`), not its card's own number of scopes."""
    return finding.rule == "scope-crowding" and finding.message.startswith("scope '")


def _free_id(vault: Vault, wanted: str, name: str, taken: set[str]) -> tuple[str, bool]:
    """The id to write at: `wanted`, or `wanted-2`, `-3`... past ids this import took and existing cards of
    another name (or symlinks, never replaced); (id, True) when a card of the same name is there (a re-import)."""
    base = check_card_id(wanted)
    card_id, n = base, 2
    while True:
        if card_id not in taken:
            target = vault.root / "cards" / f"{card_id}.md"
            if not (target.exists() or target.is_symlink() or _named_alike(target)):
                return card_id, False
            if not target.is_symlink() and _name_at(vault, target, f"cards/{card_id}.md") == name_key(name):
                return card_id, True
        card_id = check_card_id(f"{base}-{n}")
        n += 1


def _named_alike(target: Path) -> bool:
    """Whether another file beside `target` differs from its name in case or Unicode form alone: on macOS and
    Windows they are one file, so a clone there would keep one of the two cards (lint's card-path refused it)."""
    try:
        names = os.listdir(target.parent)
    except OSError:
        return False
    key = file_key(target.name)
    return any(name != target.name and file_key(name) == key for name in names)


def _name_at(vault: Vault, path: Path, rel: str) -> str | None:
    """The name of the card at `path` (name_key), read as git stores it (`gitrepo.stored_text`: one checked out in
    UTF-16 is that card); None when it is no card."""
    try:
        card, _ = parse_card(rel, gitrepo.stored_text(vault, rel, path.read_bytes()))
    except OSError:
        return None
    return name_key(card.name) if card is not None else None


def _described(plan: Planned) -> dict[str, Any]:
    scope = plan.meta.get("scope")
    tags = tuple(str(s) for s in scope) if isinstance(scope, list) else ()
    verified = plan.meta.get("verified_at")
    return {
        "name": plan.name,
        "summary": str(plan.meta["summary"]),
        "scope": tags,
        "verified_at": str(verified) if verified is not None else None,
    }


def _count(findings: list[Finding], word: str) -> str:
    rules = ", ".join(sorted({f.rule for f in findings}))
    return f"{len(findings)} {word}{'' if len(findings) == 1 else 's'} ({rules})"


# -- helpers -------------------------------------------------------------------------------------------------------


def _file_day(file: Path, today: dt.date) -> dt.date:
    """The source file's last commit day when it is committed and unchanged, else today; never after today: a
    commit dated ahead (a wrong clock, a time zone where tomorrow has begun) gave a verified_at that lint's
    verified-at-future refused, and the import with it, for a date the user cannot fix in the source."""
    day = gitrepo.last_commit_day(file)
    try:
        return min(dt.date.fromisoformat(day), today) if day else today
    except ValueError:
        return today


def _section_key(heading: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", heading.casefold()).split())


def _heading_scope(heading: str) -> tuple[str, ...]:
    """A section heading as a scope tag: the slug of its Latin words (`Git & CI` -> `git-ci`) but those that only say
    lessons (`Git gotchas` -> `git`); none for a heading with no Latin letters (a scope tag is something an agent
    declares, so it stays ASCII), or with nothing else (`Gotchas`, `Known issues`, as `踩坑`: no agent works on
    "gotchas", and a vault's scope vocabulary refuses it)."""
    heading = lessons.without_lesson_words(heading)
    if not heading or not re.search(r"[A-Za-z]", heading):
        return ()
    words = re.findall(r"[a-z0-9]+", heading.lower())
    return ("-".join(words)[:40].strip("-"),) if words else ()


def _source_files(src: Path, lessons_only: bool, cards_dir: Path) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """Markdown files under src (hidden folders and the vault's own cards skipped), with their folder parts."""
    if src.is_file():
        yield src, ()
        return
    for file in sorted(src.rglob("*")):
        rel = file.relative_to(src)
        if any(part.startswith(".") for part in rel.parts) or not file.is_file():
            continue
        if file.resolve().is_relative_to(cards_dir):
            continue
        if lessons_only and file.name.lower() not in LESSON_FILES:
            continue
        if not lessons_only and file.suffix.lower() not in (".md", ".markdown"):
            continue
        yield file, rel.parts[:-1]


def _each_file_once(files: list[tuple[Path, tuple[str, ...]]]) -> list[tuple[Path, tuple[str, ...]]]:
    """`files` with a file a folder reaches twice read once, by its own name rather than a symlink's: a project's
    AGENTS.md linked to its CLAUDE.md gave each lesson twice, the cards naming the link and every one skipped once more
    as a duplicate."""
    chosen: dict[Path, tuple[Path, tuple[str, ...]]] = {}
    for item in files:
        key = item[0].resolve()
        if key not in chosen or (chosen[key][0].is_symlink() and not item[0].is_symlink()):
            chosen[key] = item
    return [item for item in files if chosen[item[0].resolve()] is item]


def _topic_of(rel_dir: tuple[str, ...]) -> str:
    return "/".join(slugify(part) for part in rel_dir) if rel_dir else DEFAULT_TOPIC


def _check_topic(topic: str) -> str:
    parts = [slugify(p) for p in topic.strip().strip("/").split("/") if p.strip()]
    if not parts:
        raise CairnError(f"--topic {topic!r} is empty; give a folder name such as `git`")
    return "/".join(parts)


def _split_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    opening, closing = frontmatter_fences(text)
    if opening is None:
        # a Hugo note's TOML frontmatter read as Markdown was the card's summary, `+++ title = "..." +++` and all
        return {}, text, TOML_FRONTMATTER if text.startswith("+++") else None
    if closing is None:
        return {}, text, "the frontmatter has no closing `---` line"
    fm_text, body = text[opening.end() : closing.start()], text[closing.end() :]
    try:
        meta = safeyaml.load(fm_text)
    except (safeyaml.YamlRejected, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, body, f"the frontmatter is not valid YAML: {first}"
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return {}, body, "the frontmatter is not a mapping"
    return meta, body.lstrip("\n"), None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text_field(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return lessons.flat(value) if isinstance(value, str) and value.strip() else None


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_OPENS_WITH_HTML = (
    "the bullet opens with HTML (a comment or a tag), which Markdown reads as raw HTML, not as its text; delete the "
    "HTML from the bullet, then import again"
)


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _first(tokens: list[Token], kind: str, start: int = 0, level: int | None = None) -> int | None:
    for i in range(start, len(tokens)):
        if tokens[i].type == kind and (level is None or tokens[i].level == level):
            return i
    return None


def _lines_outside(lines: list[str], spans: list[tuple[int, int]]) -> str:
    """The text of `lines` outside the (start, end) spans given, with no run of blank lines where one was."""
    rest = "\n".join(line for i, line in enumerate(lines) if not any(a <= i < b for a, b in spans)).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", rest)


def _span(token: Token) -> list[tuple[int, int]]:
    """The source lines a block token covers, as [(start, end)], or [] when unknown."""
    return [(token.map[0], token.map[1])] if token.map else []


def _plain(inline: Token) -> str:
    """An inline token's text without Markdown markup."""
    parts = [c.content for c in inline.children or [] if c.type in ("text", "code_inline", "softbreak")]
    return lessons.flat(" ".join(parts) if parts else inline.content)


# A task list's box (`- [ ] ...`, `- [x] ...`): not part of what the lesson says.
_TASK_BOX = re.compile(r"^\[[ xX]\][ \t]+")


def _bold_lead(inline: Token) -> str | None:
    """`**Never force-push main**: ...` -> `Never force-push main` (after a task list's box or emoji, if any)."""
    children = [c for c in inline.children or [] if not (c.type == "text" and not _TASK_BOX.sub("", c.content))]
    if children and children[0].type == "text" and not lessons.unadorned(_TASK_BOX.sub("", children[0].content)):
        children = children[1:]  # `🚨 **pnpm hoisting**: ...`
    if not children or children[0].type != "strong_open":
        return None
    end = next((i for i, c in enumerate(children) if c.type == "strong_close"), None)
    if end is None:
        return None
    return lessons.flat("".join(c.content for c in children[1:end])) or None


def _dedent_item(lines: list[str]) -> str:
    if not lines:
        return ""
    first = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", lines[0])
    indent = len(lines[0]) - len(lines[0].lstrip()) + (len(lines[0].lstrip()) - len(first.lstrip()))
    rest = [line[indent:] if line[:indent].strip() == "" else line.lstrip() for line in lines[1:]]
    return "\n".join([first, *rest]).strip()


def _shorten_chars(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-，；：") + "…"
