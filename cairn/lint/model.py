"""What lint rules work on: the rule record, the file being linted (Target) and the rest of the vault (Context)."""

from __future__ import annotations

import datetime as dt
import html
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from cairn.cards.body import CardBody, read_body
from cairn.cards.card import Card, card_id_from_path, file_key, frontmatter_fences
from cairn.cards.similarity import Profile, name_key, profile, terms
from cairn.cards.visible import fold
from cairn.config import LintSettings
from cairn.finding import ERROR, WARNING, Finding
from cairn.hot.serve import NAME_CHARS, SUMMARY_CHARS, clip

K = TypeVar("K", bound=Hashable)

__all__ = ["ERROR", "WARNING", "CardFacts", "Context", "Field", "Rule", "Target", "field_findings"]

SERVED = ("id", "name", "summary", "aliases", "name+summary")  # what an agent's prompt receives of a card


@dataclass(frozen=True, slots=True)
class Field:
    """One piece of a card as the security rules read it: the decoded value (YAML escapes applied), with invisible
    characters removed and NFKC applied (`cairn.cards.visible.fold`).

    key: `id` (the file name, separators read as spaces), a frontmatter key, `name+summary` (name, summary and
    aliases joined, so an instruction split across them is read whole), `body`, or `file` (the raw file text, for
    what no field holds: YAML comments, a card that breaks the contract). line: the file line it starts on (0 for
    the id). served: whether agents receive it (id, name, summary, aliases).
    """

    key: str
    line: int
    text: str
    starts: tuple[tuple[int, int], ...] = ()  # joined fields: (offset, line) where each part starts

    @property
    def served(self) -> bool:
        return self.key in SERVED

    def line_at(self, offset: int) -> int:
        if self.starts:
            return max((line for start, line in self.starts if start <= offset), default=self.line)
        if self.line == 0:
            return 0
        return self.line + self.text.count("\n", 0, offset)


@dataclass(frozen=True, slots=True)
class CardFacts:
    """What one card file contributes to the vault-wide rules (cached by the file's git blob id).

    name: None when the file breaks the contract (it still exists, so links and supersedes to it hold).
    words: the summary's terms (`cairn.cards.similarity.terms`), for near-duplicate search.
    active: its status is `active` (only an active card's `supersedes` keeps another card from agents).
    """

    path: str
    id: str
    name: str | None = None
    scope: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    words: frozenset[str] = frozenset()
    active: bool = False


@dataclass(frozen=True)
class Target:
    """A file being linted.

    path: vault-relative (`cards/git/x.md`). text: the decoded text (newlines normalised as the parser sees them),
    None when the bytes are not text. card: the parsed card, None when it breaks the contract; contract: the
    parser's findings.
    """

    path: str
    text: str | None
    card: Card | None
    contract: tuple[Finding, ...]

    def line_of(self, key: str) -> int:
        """The line of a frontmatter key (1 when it is not written, e.g. a default). Looked for once per key, and in
        the frontmatter's reach only: a key written quoted is not found, and searching a 1 MiB body for each of
        thousands of such keys kept lint and the index busy for minutes on one card."""
        if self.text is None:
            return 1
        found = self._key_lines.get(key)
        if found is None:
            from cairn.cards.safeyaml import MAX_FRONTMATTER_BYTES  # PyYAML: `cairn show`'s security rules need none

            head = self.text[: MAX_FRONTMATTER_BYTES + len("---\n")]  # a longer frontmatter breaks the contract
            match = re.search(rf"^{re.escape(key)}\s*:", head, re.MULTILINE)
            found = self._key_lines[key] = head.count("\n", 0, match.start()) + 1 if match else 1
        return found

    @cached_property
    def _key_lines(self) -> dict[str, int]:
        return {}

    def line_at(self, offset: int) -> int:
        return (self.text or "").count("\n", 0, offset) + 1

    @cached_property
    def body(self) -> CardBody:
        return read_body(self.card.body if self.card else "")

    def _joined(self, card: Card, read: Callable[[str], str]) -> Field:
        """Name, summary and aliases as one text, so an instruction split across them is read whole."""
        parts = [(card.name, self.line_of("name")), (card.summary, self.line_of("summary"))]
        parts += [(alias, self.line_of("aliases")) for alias in card.aliases]
        starts, texts, at = [], [], 0
        for text, line in parts:
            folded = read(text)
            starts.append((at, line))
            texts.append(folded)
            at += len(folded) + 1
        return Field("name+summary", parts[0][1], " ".join(texts), tuple(starts))

    @property
    def _reads_as_written(self) -> bool:
        """Whether the decoded fields are the file's text as written: an ASCII file whose frontmatter holds no
        backslash (no YAML escape), no single-quoted scalar (`''`), no tag (`!!binary` decodes base64 into text the
        file does not hold, wrapped so that no line of it is a blob), and from which the parser removed nothing."""
        text = self.text
        if text is None or self.card is None or self.card.hidden or not text.isascii():
            return False
        front = self.front
        return "\\" not in front and "''" not in front and "!" not in front

    @cached_property
    def front(self) -> str:
        """The file's text up to its closing `---` line, found as the parser finds it (a line such as `---x: 1` is a
        YAML key, not the end), or the whole text when there is none."""
        text = self.text or ""
        _, closing = frontmatter_fences(text)
        return text[: closing.start() if closing else len(text)]

    @cached_property
    def fields(self) -> tuple[Field, ...]:
        """The card as the security rules read it (see Field): served fields first, the raw file last."""
        out: list[Field] = []
        card_id = card_id_from_path(self.path)
        if card_id is not None:
            out.append(Field("id", 0, fold(card_id.replace("/", " / ").replace("-", " ").replace("_", " "))))
        card = self.card
        if card is not None and self._reads_as_written:
            # ASCII, no escapes, nothing removed: every field is the file's own text (YAML only folds its lines),
            # so the file and the joined name, summary and aliases are all there is to read.
            out.append(self._joined(card, lambda text: text))
        elif card is not None:
            out.append(Field("name", self.line_of("name"), fold(card.name)))
            out.append(Field("summary", self.line_of("summary"), fold(card.summary)))
            out.extend(Field("aliases", self.line_of("aliases"), fold(a)) for a in card.aliases)
            out.append(self._joined(card, fold))
            for key in ("not_when", "scope", "supersedes"):
                out.extend(Field(key, self.line_of(key), fold(v)) for v in getattr(card, key))
            if card.source:
                out.append(Field("source", self.line_of("source"), fold(card.source)))
            # any text parses as a status (status-value is policy, which keeps no card out), and show gives it
            out.append(Field("status", self.line_of("status"), fold(card.status)))
            for key, value in card.extra.items():
                # the key is text `cairn show --json` and MCP `show` give too, decoded (`"\u0406gnore ...": 1`)
                out.extend(Field(key, self.line_of(key), fold(v)) for v in (key, *_strings(value)))
            if card.body:
                out.append(Field("body", card.body_line, fold(card.body)))
        if card is not None:
            # The hook and MCP serve a long name or summary cut (`serve.clip`): a cut can end a word early
            # (`| shellcheck` served as `| sh…`), so the cut text is judged too.
            for key, value, limit in (("name", card.name, NAME_CHARS), ("summary", card.summary, SUMMARY_CHARS)):
                if len(value) > limit:
                    out.append(Field(key, self.line_of(key), fold(clip(value, limit))))
        if self.text:
            out.append(Field("file", 1, fold(self.text)))
        return tuple(out)


def decoded_references(text: str) -> str | None:
    """The text with its HTML character references decoded (`&#73;gnore`, `Ig&shy;nore`), as a model reads them,
    then folded as every field is; None when that changes nothing."""
    if "&" not in text:
        return None
    decoded = fold(html.unescape(text))
    return decoded if decoded != text else None


PERCENT_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def unpercent(match: re.Match[str]) -> str:
    """The characters a run of percent-escapes (`PERCENT_ESCAPES`) spells, when they are printable text (`%02d` is
    a format, not a control character); else the run as written."""
    try:
        decoded = bytes.fromhex(match.group().replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return match.group()
    return decoded if decoded.isprintable() else match.group()


def decoded_percent(text: str) -> str | None:
    """The text with its percent-escapes decoded (`%7C` for `|`, `%69nstall`), as a model reads a URL's or a
    command's, then folded as every field is; None when that changes nothing."""
    if "%" not in text:
        return None
    decoded = PERCENT_ESCAPES.sub(unpercent, text)
    return fold(decoded) if decoded != text else None


def needle_masks(
    patterns: Iterable[tuple[K, Sequence[Sequence[str]]]],
) -> tuple[dict[K, dict[str, int]], tuple[int, ...]]:
    """Needles as bits, for rules that test a text's needles once before their patterns run: each group of each
    pattern's needles (one of which any match holds) is one bit. Returns, per kind of needle (how a rule looks for
    it: in the lowercased text or as written), each needle's mask (the bits of the groups it is in), and each
    pattern's mask: a pattern can match a text only when the text's needles set every bit of it."""
    kinds: dict[K, dict[str, int]] = {}
    masks: list[int] = []
    bit = 1
    for kind, groups in patterns:
        needles = kinds.setdefault(kind, {})
        masks.append(0)
        for group in groups:
            for needle in group:
                needles[needle] = needles.get(needle, 0) | bit
            masks[-1] |= bit
            bit <<= 1
    return kinds, tuple(masks)


def _strings(value: object) -> Iterator[str]:
    """The text values in a frontmatter value, at any depth (the parser refuses one nested deeper than
    `safeyaml.MAX_DEPTH`): `cairn show --json` and MCP `show` give an extra key whole."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Context:
    """The vault around the targets: every card file's facts, the settings and today's date.

    Aggregates (names, scope counts, word postings) are computed once, on first use, for all targets.
    """

    def __init__(
        self,
        settings: LintSettings,
        today: dt.date,
        cards: dict[str, CardFacts],
        body_terms: Callable[[list[str]], dict[str, frozenset[str]]],
    ) -> None:
        self.settings = settings
        self.today = today
        self.cards = cards  # id -> facts, every `.md` file under cards/
        self.body_terms = body_terms  # ids -> terms of their bodies, read on demand
        self._profiles: dict[str, Profile] = {}

    @cached_property
    def ids_by_name(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for facts in self.cards.values():
            if facts.name is not None:
                out.setdefault(name_key(facts.name), []).append(facts.id)
        return out

    @cached_property
    def ids_by_file(self) -> dict[str, list[str]]:
        """Ids by the one file each names on a file system that ignores case and composes accents (macOS's,
        Windows'; `core.ignorecase`): two ids under one key are one file there, and a clone keeps only one card."""
        out: dict[str, list[str]] = {}
        for card_id in self.cards:
            out.setdefault(file_key(card_id), []).append(card_id)
        return out

    @cached_property
    def scope_counts(self) -> Counter[str]:
        return Counter(s.lower() for facts in self.cards.values() for s in set(facts.scope))

    @cached_property
    def n_parsed(self) -> int:
        return sum(1 for facts in self.cards.values() if facts.name is not None)

    @cached_property
    def postings(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for facts in self.cards.values():
            for word in facts.words | terms(facts.name or ""):
                out.setdefault(word, []).append(facts.id)
        return out

    def profile(self, card_id: str) -> Profile:
        """A parsed card's profile for near-duplicate comparison, without its body (made once per card)."""
        found = self._profiles.get(card_id)
        if found is None:
            facts = self.cards[card_id]
            found = self._profiles[card_id] = profile(facts.name or "", facts.scope, facts.words)
        return found

    @cached_property
    def superseded_by(self) -> dict[str, tuple[str, ...]]:
        """Per card id, the active cards whose `supersedes` names it, as the index works it out: agents never get it."""
        out: dict[str, tuple[str, ...]] = {}
        for facts in self.cards.values():
            if facts.active:
                for old in facts.supersedes:
                    out[old] = out.get(old, ()) + (facts.id,)
        return out

    @cached_property
    def superseded_pairs(self) -> set[frozenset[str]]:
        return {frozenset((f.id, old)) for f in self.cards.values() for old in f.supersedes}


Check = Callable[[Target, Context], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class Rule:
    """One lint rule.

    id: the rule id printed in findings. groups: names `--rules` also accepts (`scope`, `verified-at`, ...).
    emits: other rule ids this rule's findings carry (the contract rule reports the parser's ids).
    needs_card: run only on files that keep the contract (a parsed Card).
    reads_config: a change to `cairn.toml` can change its findings on any card.
    """

    id: str
    severity: str
    groups: tuple[str, ...]
    doc: str
    check: Check
    emits: tuple[str, ...] = ()
    needs_card: bool = True
    reads_config: bool = False

    def at(self, target: Target, line: int, message: str) -> Finding:
        return Finding(target.path, line, self.id, message, self.severity)

    def run(self, target: Target, context: Context) -> Iterator[Finding]:
        if self.needs_card and target.card is None:
            return
        yield from self.check(target, context)

    @property
    def security(self) -> bool:
        """A security rule: a vault's own cairn.toml cannot disable it, and the index refuses cards it fails."""
        return "security" in self.groups


def field_findings(rule: Rule, target: Target, found: Iterable[tuple[Field, int, str]]) -> list[Finding]:
    """Findings from (field, offset, message) hits, each said once: the raw file's hit (the exact line) over a
    field's, a field's over the joined name and summary's (the same text, read again)."""
    hits = list(found)
    in_file = {message for field, _, message in hits if field.key == "file"}
    in_fields = {message for field, _, message in hits if field.key not in ("file", "name+summary")}
    out: list[Finding] = []
    for field, offset, message in hits:
        if field.key == "file" or (field.key == "name+summary" and message not in in_file | in_fields):
            pass
        elif field.key == "name+summary" or (message in in_file and field.key != "id"):
            continue
        out.append(Finding(target.path, field.line_at(offset), rule.id, message, rule.severity))
    return out
