"""`cairn import`: Markdown notes, or the lesson lists of CLAUDE.md / AGENTS.md files, turned into new cards.

A note keeps its whole YAML frontmatter (nested values too); its name comes from the frontmatter (`name`, else
`title`) or the first heading, its summary from the frontmatter or the first paragraph (a sentence or two, at most
300 characters), and the rest is the body. In lesson mode each top-level bullet becomes one card. Existing cards
are never overwritten: a clash is reported and the note is skipped. Files are written atomically; nothing is
committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from markdown_it import MarkdownIt
from markdown_it.token import Token

from cairn.atomic import ensure_inside, write_atomic
from cairn.cards import safeyaml
from cairn.cards.card import check_card_id, parse_card, slugify
from cairn.hot.errors import CairnError, CardExists, InvalidId, RefusedWrite
from cairn.hot.vault import Vault

SUMMARY_MAX_CHARS = 300
NAME_MAX_CHARS = 80
LESSON_FILES = ("claude.md", "agents.md", "gemini.md")
DEFAULT_TOPIC = "imported"
DEFAULT_LESSON_TOPIC = "lessons"

# Statuses of an import: `written` (or `would-write` on a dry run) is success; the others skip the note.
WRITTEN, WOULD_WRITE, EXISTS, DUPLICATE, INVALID = "written", "would-write", "exists", "duplicate", "invalid"


@dataclass(frozen=True, slots=True)
class Planned:
    """One card to write: where it came from (`file` or `file:line`), its id and its text, or why it cannot be."""

    source: str
    card_id: str | None
    text: str | None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    source: str
    card_id: str | None
    path: str | None
    status: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in (WRITTEN, WOULD_WRITE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "id": self.card_id,
            "path": self.path,
            "status": self.status,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class ImportReport:
    dry_run: bool
    outcomes: tuple[Outcome, ...]

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
        }


def import_notes(
    vault: Vault, src: Path, *, dry_run: bool = False, lessons: bool = False, topic: str | None = None
) -> ImportReport:
    """Import a Markdown file or a folder of them into the vault's cards/; see the module docstring."""
    if not src.exists():
        raise CairnError(f"{src} does not exist; give a Markdown file or a folder of them")
    if topic is not None:
        topic = _check_topic(topic)
    cards_dir = vault.cards_dir.resolve()
    if src.resolve() == cards_dir or src.resolve().is_relative_to(cards_dir):
        raise CairnError(f"{src} is inside the vault's cards/; import notes from outside the vault")
    planned: list[Planned] = []
    for file, rel_dir in _source_files(src, lessons, cards_dir):
        shown = str(file)
        try:
            text = file.read_bytes().decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            planned.append(Planned(shown, None, None, "not UTF-8 text"))
            continue
        except OSError as exc:
            planned.append(Planned(shown, None, None, f"cannot read it ({exc.strerror or exc})"))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if lessons:
            planned.extend(plan_lessons(shown, file.name, text, topic))
        else:
            planned.append(plan_note(shown, file.stem, text, topic or _topic_of(rel_dir)))
    return ImportReport(dry_run, tuple(_apply(vault, planned, dry_run)))


# -- planning ------------------------------------------------------------------------------------------------------


def plan_note(source: str, stem: str, text: str, topic: str) -> Planned:
    """One Markdown note as one card."""
    meta, body, problem = _split_frontmatter(text)
    if problem:
        return Planned(source, None, None, problem)
    tokens = _markdown().parse(body)
    lines = body.split("\n")
    drop: list[tuple[int, int]] = []
    name = _text_field(meta, "name") or _text_field(meta, "title")
    if not name:
        heading = _first(tokens, "heading_open")
        if heading is not None:
            name = _plain(tokens[heading + 1])
            drop.extend(_span(tokens[heading]))
    if not name:
        name = stem.replace("-", " ").replace("_", " ").strip()
    summary = _text_field(meta, "summary") or _text_field(meta, "description")
    if not summary:
        para = _first(tokens, "paragraph_open", level=0)
        if para is None:
            return Planned(source, None, None, "no summary in the frontmatter and no paragraph to take one from")
        whole = _flat(tokens[para + 1].content)
        summary = trim_summary(whole)
        if summary == whole:
            drop.extend(_span(tokens[para]))
    rest = "\n".join(line for i, line in enumerate(lines) if not any(a <= i < b for a, b in drop)).strip("\n")
    card_id = f"{topic}/{slugify(stem)}"
    return Planned(source, card_id, _render(name, summary, meta, rest))


def plan_lessons(source: str, file_name: str, text: str, topic: str | None) -> list[Planned]:
    """Every top-level bullet of a lesson list (CLAUDE.md / AGENTS.md style) as one card."""
    _meta, body, problem = _split_frontmatter(text)
    if problem:
        return [Planned(source, None, None, problem)]
    offset = text[: len(text) - len(body)].count("\n") if body and text.endswith(body) else 0
    tokens = _markdown().parse(body)
    lines = body.split("\n")
    section: str | None = None
    out: list[Planned] = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            section = _plain(tokens[i + 1])
        span = token.map
        if token.type != "list_item_open" or token.level != 1 or not span:
            continue
        para = _first(tokens, "paragraph_open", start=i + 1, level=token.level + 1)
        line = span[0] + 1 + offset
        where = f"{source}:{line}"
        if para is None or not tokens[para + 1].content.strip():
            out.append(Planned(where, None, None, "the bullet has no text"))
            continue
        inline = tokens[para + 1]
        lead = _bold_lead(inline)
        flat = _flat(re.sub(r"\*\*|__", "", inline.content))
        name = lead or _shorten(_first_clause(_first_sentence(flat)), NAME_MAX_CHARS)
        name = name.rstrip(" :.;,-")
        item_lines = lines[span[0] : span[1]]
        body_text = _dedent_item(item_lines)
        meta = {"source": f"{file_name}:{line}"}
        card_topic = topic or (slugify(section) if section else DEFAULT_LESSON_TOPIC)
        card_id = f"{card_topic}/{slugify(name)}"
        out.append(Planned(where, card_id, _render(name, trim_summary(flat), meta, body_text)))
    return out


def trim_summary(text: str, limit: int = SUMMARY_MAX_CHARS) -> str:
    """A sentence or two of `text`, at most `limit` characters, cut at a word with an ellipsis when needed."""
    text = _flat(text)
    if len(text) <= limit and len(_sentences(text)) <= 2:
        return text
    sentences = _sentences(text)
    summary = sentences[0]
    if len(sentences) > 1 and len(summary) + 1 + len(sentences[1]) <= limit:
        summary = f"{summary} {sentences[1]}"
    return _shorten(summary, limit)


# -- applying ------------------------------------------------------------------------------------------------------


def _apply(vault: Vault, planned: list[Planned], dry_run: bool) -> Iterator[Outcome]:
    seen: set[str] = set()
    for plan in planned:
        if plan.problem or plan.card_id is None or plan.text is None:
            yield Outcome(plan.source, plan.card_id, None, INVALID, plan.problem or "cannot be imported")
            continue
        try:
            card_id = check_card_id(plan.card_id)
        except InvalidId as exc:
            yield Outcome(plan.source, plan.card_id, None, INVALID, str(exc))
            continue
        rel = f"cards/{card_id}.md"
        card, findings = parse_card(rel, plan.text.encode("utf-8"))
        if card is None:
            yield Outcome(plan.source, card_id, rel, INVALID, "; ".join(str(f) for f in findings))
            continue
        target = vault.root / rel
        if card_id in seen:
            yield Outcome(plan.source, card_id, rel, DUPLICATE, f"an earlier note in this import is also {rel}")
            continue
        seen.add(card_id)
        if target.exists() or target.is_symlink():
            yield Outcome(plan.source, card_id, rel, EXISTS, f"{rel} already exists; it was left untouched")
            continue
        try:
            ensure_inside(vault.cards_dir, target)
        except RefusedWrite:
            yield Outcome(plan.source, card_id, rel, INVALID, f"{rel} would be outside cards/ (a symlinked folder?)")
            continue
        if dry_run:
            yield Outcome(plan.source, card_id, rel, WOULD_WRITE)
            continue
        try:
            write_atomic(target, plan.text.encode("utf-8"), overwrite=False)
        except CardExists:
            yield Outcome(plan.source, card_id, rel, EXISTS, f"{rel} already exists; it was left untouched")
            continue
        yield Outcome(plan.source, card_id, rel, WRITTEN)


# -- helpers -------------------------------------------------------------------------------------------------------


def _source_files(src: Path, lessons: bool, cards_dir: Path) -> Iterator[tuple[Path, tuple[str, ...]]]:
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
        if lessons and file.name.lower() not in LESSON_FILES:
            continue
        if not lessons and file.suffix.lower() not in (".md", ".markdown"):
            continue
        yield file, rel.parts[:-1]


def _topic_of(rel_dir: tuple[str, ...]) -> str:
    return "/".join(slugify(part) for part in rel_dir) if rel_dir else DEFAULT_TOPIC


def _check_topic(topic: str) -> str:
    parts = [slugify(p) for p in topic.strip().strip("/").split("/") if p.strip()]
    if not parts:
        raise CairnError(f"--topic {topic!r} is empty; give a folder name such as `git`")
    return "/".join(parts)


def _split_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    handler = YAMLHandler()
    if not handler.detect(text):
        return {}, text, None
    try:
        fm_text, body = handler.split(text)
    except ValueError:
        return {}, text, "the frontmatter has no closing `---` line"
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


def _text_field(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return _flat(value) if isinstance(value, str) and value.strip() else None


def _render(name: str, summary: str, meta: dict[str, Any], body: str) -> str:
    head: dict[str, Any] = {"name": name, "summary": summary}
    head.update((k, v) for k, v in meta.items() if k not in ("name", "summary"))
    dumped = yaml.safe_dump(head, allow_unicode=True, sort_keys=False, width=100, default_flow_style=None).strip()
    return f"---\n{dumped}\n---\n\n{body.strip()}\n" if body.strip() else f"---\n{dumped}\n---\n"


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _first(tokens: list[Token], kind: str, start: int = 0, level: int | None = None) -> int | None:
    for i in range(start, len(tokens)):
        if tokens[i].type == kind and (level is None or tokens[i].level == level):
            return i
    return None


def _span(token: Token) -> list[tuple[int, int]]:
    """The source lines a block token covers, as [(start, end)], or [] when unknown."""
    return [(token.map[0], token.map[1])] if token.map else []


def _plain(inline: Token) -> str:
    """An inline token's text without Markdown markup."""
    parts = [c.content for c in inline.children or [] if c.type in ("text", "code_inline", "softbreak")]
    return _flat(" ".join(parts) if parts else inline.content)


def _bold_lead(inline: Token) -> str | None:
    """`**Never force-push main**: ...` -> `Never force-push main`."""
    children = [c for c in inline.children or [] if not (c.type == "text" and not c.content)]
    if not children or children[0].type != "strong_open":
        return None
    end = next((i for i, c in enumerate(children) if c.type == "strong_close"), None)
    if end is None:
        return None
    return _flat("".join(c.content for c in children[1:end])) or None


def _dedent_item(lines: list[str]) -> str:
    if not lines:
        return ""
    first = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", lines[0])
    indent = len(lines[0]) - len(lines[0].lstrip()) + (len(lines[0].lstrip()) - len(first.lstrip()))
    rest = [line[indent:] if line[:indent].strip() == "" else line.lstrip() for line in lines[1:]]
    return "\n".join([first, *rest]).strip()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])", text) if s]


def _first_sentence(text: str) -> str:
    sentences = _sentences(text)
    return sentences[0] if sentences else text


def _first_clause(sentence: str) -> str:
    """A long sentence's first clause (up to `;`, `:` or a dash) when that leaves a few words to name it by."""
    if len(sentence) <= 60:
        return sentence
    clause = re.split(r"\s*(?:;|:\s|\s[-–—]\s)", sentence, maxsplit=1)[0]
    return clause if len(clause.split()) >= 3 else sentence


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"
