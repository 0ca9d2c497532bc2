"""The experience card: Experience Contract v1 parsed from bytes into a frozen, typed record."""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from cairn.cards.visible import invisible_in, strip_invisible
from cairn.finding import Finding
from cairn.hot.serve import split_tags

MAX_CARD_BYTES = 1024 * 1024
STATUSES = ("active", "draft", "retired")
KNOWN_KEYS = frozenset(
    {"name", "summary", "scope", "verified_at", "review_after", "status", "aliases", "not_when", "supersedes", "source"}
)
_LIST_FIELDS = ("scope", "aliases", "not_when", "supersedes")
_DURATION = re.compile(r"^\s*(\d{1,9})\s*(d|w|m|y)\s*$", re.IGNORECASE)  # 9 digits: past any calendar
_DURATION_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
# The one date form of the contract. Python 3.11's date.fromisoformat also reads 20261002 and 2026-W40-5, which
# 3.10's refuses: lint on one machine passed a card the index on another left out.
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# A line of three or more dashes alone, as python-frontmatter's YAML handler detects and splits a frontmatter with it
# (its `YAMLHandler.FM_BOUNDARY`, written out: importing python-frontmatter imports PyYAML, which a command that reads
# a current index never needs).
_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)

# Chinese and Japanese are written without spaces: CJK ideographs, kana, CJK punctuation (not the ideographic space,
# which is whitespace) and fullwidth forms (，；：！？). Hangul is left out: Korean puts spaces between words.
_CJK = (
    "\u2e80-\u2fdf\u3001-\u303f\u3040-\u30ff\u31c0-\u31ef\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\ufe30-\ufe4f\uff01-\uff60\uffe0-\uffe6\U00020000-\U0003134f"
)
# In the frontmatter's source: whitespace between two CJK characters (the second only looked at, so runs overlap).
_CJK_GAP_SOURCE = re.compile(f"(?<=[{_CJK}])[ \t\r\n]+(?=[{_CJK}])")
# In the parsed, whitespace-normalized text: the single space that stands for such a gap.
_CJK_GAP_TEXT = re.compile(f"(?<=[{_CJK}]) (?=[{_CJK}])")


@dataclass(frozen=True, slots=True)
class Card:
    """A card that keeps the contract.

    id: path under `cards/` without `.md` (`git/force-push-loses-commits`).
    path: vault-relative path, `cards/<id>.md`.
    review_after: as written (a date or a duration such as `180d`); `expires_on` is the resolved date.
    extra: frontmatter keys the contract does not name, kept as they were but for invisible characters (`hidden`).
    body_line: the file line on which the body starts.
    hidden: (field, characters) for each field that held invisible characters (zero-width, bidi controls, tag
    characters...; see `cairn.cards.visible`). They are removed from every field above, so nothing that serves a
    card carries them even when lint was skipped; lint's `hidden-text` rule reports them from here.
    """

    id: str
    path: str
    name: str
    summary: str
    body: str = ""
    scope: tuple[str, ...] = ()
    verified_at: dt.date | None = None
    review_after: str | None = None
    expires_on: dt.date | None = None
    status: str = "active"
    aliases: tuple[str, ...] = ()
    not_when: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    body_line: int = 1
    hidden: tuple[tuple[str, str], ...] = ()

    def is_expired(self, today: dt.date) -> bool:
        return self.expires_on is not None and today > self.expires_on

    def to_dict(self) -> dict[str, Any]:
        """The parsed fields as JSON-ready values."""
        return {
            "id": self.id,
            "path": self.path,
            "name": self.name,
            "summary": self.summary,
            "scope": list(self.scope),
            "verified_at": self.verified_at.isoformat() if self.verified_at else None,
            "review_after": self.review_after,
            "expires_on": self.expires_on.isoformat() if self.expires_on else None,
            "status": self.status,
            "aliases": list(self.aliases),
            "not_when": list(self.not_when),
            "supersedes": list(self.supersedes),
            "source": self.source,
            "extra": _jsonable(self.extra),
            "body": self.body,
        }


# Undecodable bytes (as surrogates) and control characters: such a name cannot be stored, printed or typed.
MAX_ID_PART_BYTES = 200  # a file name is at most 255 bytes on common file systems, with `.md` and temp affixes
MAX_FOUND_PART_BYTES = 255 - len(".md")  # a card that exists: its name with `.md` fits the file system
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def card_id_from_path(rel_path: str) -> str | None:
    """`cards/git/x.md` -> `git/x`; None for a path that is not a card file."""
    if not rel_path.startswith("cards/") or not rel_path.endswith(".md"):
        return None
    card_id = rel_path[len("cards/") : -len(".md")]
    if any(part in ("", ".", "..") for part in card_id.split("/")):
        return None  # `cards/../x.md`, `cards//x.md`: git's tree can hold such names; no card lives there
    return card_id


# `cards` itself a symlink (or a file) in a commit: git holds no card under it, so the vault serves none.
CARDS_NOT_A_FOLDER = "cards/ must be a folder in the commit, not a symlink or a file; no card is read through it"


def misnamed_card_id(rel_path: str) -> str | None:
    """The id of a file under `cards/` ending in `.MD` or `.Md` (as Windows and macOS tools may write it) had it ended
    in `.md`; None for any other path. No card: the index leaves it out and says so, as lint's card-path does."""
    if rel_path.endswith(".md") or not rel_path.lower().endswith(".md"):
        return None
    return card_id_from_path(rel_path[: -len(".md")] + ".md")


def plain_file_name(card_id: str) -> bool:
    """Whether a card id is UTF-8 text without control characters: a card file named otherwise is no card, whatever
    it holds."""
    return not _BAD_NAME.search(card_id)


def parse_card(rel_path: str, data: bytes) -> tuple[Card | None, list[Finding]]:
    """Parse a card file's bytes; returns the card (None if it breaks the contract) and every finding."""
    card_id = card_id_from_path(rel_path)
    if card_id is None and misnamed_card_id(rel_path) is not None:
        why = "card files end in `.md`, lowercase"
        fix = f"rename it to {rel_path[: -len('.md')]}.md"
        return None, [Finding(rel_path, 0, "card-path", f"not a card: {why}; this file is ignored ({fix})")]
    if card_id is None:
        return None, [Finding(rel_path, 0, "path-outside-cards", "a card is a `.md` file under `cards/`")]
    if not plain_file_name(card_id):
        return None, [
            Finding(
                rel_path,
                0,
                "file-name",
                "the file name is not UTF-8 text or holds control characters; rename it to a `topic/slug.md` name",
            )
        ]
    text, problem = _decode(rel_path, data)
    if text is None:
        return None, [problem] if problem else []
    return _parse_text(rel_path, card_id, text)


def oversize_finding(rel_path: str, size: int) -> Finding:
    """`size` is the file's, or MAX_CARD_BYTES + 1 from a reader that stopped there (lint reads no more)."""
    told = "over 1 MiB" if size == MAX_CARD_BYTES + 1 else f"{size / 1048576:.1f} MiB"
    return Finding(rel_path, 0, "file-size", f"the file is {told}; a card must be under 1 MiB")


def _decode(rel_path: str, data: bytes) -> tuple[str | None, Finding | None]:
    if len(data) > MAX_CARD_BYTES:
        return None, oversize_finding(rel_path, len(data))
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return None, Finding(rel_path, 1, "file-encoding", "the file is UTF-16; save it as UTF-8")
    if data.startswith(b"\x00GITCRYPT\x00"):
        return None, Finding(rel_path, 1, "file-binary", _GIT_CRYPT)
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return None, Finding(rel_path, line, "file-binary", "the file holds NUL bytes; a card is UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, Finding(rel_path, line, "file-encoding", f"byte {exc.start} is not UTF-8; save the file as UTF-8")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return None, Finding(
            rel_path, 0, "file-empty", "the file is empty; a card needs frontmatter with name and summary"
        )
    return text, None


# The working tree shows the card (LFS's filter puts it back), so "no frontmatter" pointed at nothing to fix: what git
# holds, and what the index, review and lint of staged files read, is the pointer.
_LFS_POINTER = (
    "the file git holds is a Git LFS pointer, not the card (a `.gitattributes` sends cards to LFS); keep cards in git: "
    "`git lfs untrack` their pattern, then `git add --renormalize` the cards and commit"
)


# As an LFS pointer: the working tree shows the card (git-crypt's filter decrypts it), so "the file holds NUL bytes"
# pointed at nothing to fix; what git holds is the encrypted file, and agents would be served nothing of it.
_GIT_CRYPT = (
    "the file git holds is encrypted by git-crypt, not the card (a `.gitattributes` sends cards through "
    "`filter=git-crypt`); keep cards out of git-crypt: take cards/ out of that pattern, then `git add --renormalize` "
    "the cards and commit"
)


TOML_FRONTMATTER = "TOML (+++) frontmatter is not supported; use YAML between `---` lines"


def _parse_text(rel_path: str, card_id: str, text: str) -> tuple[Card | None, list[Finding]]:
    opening, closing = frontmatter_fences(text)
    if opening is None:
        what = (
            TOML_FRONTMATTER
            if text.startswith("+++")
            else _LFS_POINTER
            if text.startswith("version https://git-lfs.github.com/spec/")
            else ("no frontmatter; start the file with a `---` line, then name and summary, then `---`")
        )
        return None, [Finding(rel_path, 1, "frontmatter-missing", what)]
    if closing is None:
        return None, [Finding(rel_path, 1, "frontmatter-parse", "the frontmatter has no closing `---` line")]
    fm_text, body = text[opening.end() : closing.start()], text[closing.end() :]
    # fm_text starts with the newline that ends the opening `---` line, or the last of the blank lines after it: the
    # fence takes those in (its `\s*`), so the frontmatter's first line is found where fm_text starts
    fm_offset = text.count("\n", 0, opening.end()) + 1
    import yaml  # a card is parsed: not on the way of a command that reads a current index (`list`, `recall`)

    from cairn.cards import safeyaml

    try:
        meta = safeyaml.load(fm_text)
    except safeyaml.YamlRejected as exc:
        return None, [Finding(rel_path, fm_offset + exc.line, "frontmatter-parse", str(exc))]
    except yaml.YAMLError as exc:
        if wide := _fullwidth_colon(rel_path, fm_text, fm_offset):
            return None, [wide]
        mark = getattr(exc, "problem_mark", None)
        line = fm_offset + mark.line if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        lines = fm_text.split("\n")
        if mark is not None and mark.line < len(lines) and _TAB_INDENT.match(lines[mark.line]):
            problem = "the line is indented with a tab; YAML indents with spaces"  # YAML said "found character..."
        return None, [Finding(rel_path, line, "frontmatter-parse", f"the frontmatter is not valid YAML: {problem}")]
    if not isinstance(meta, dict):
        if wide := _fullwidth_colon(rel_path, fm_text, fm_offset):
            return None, [wide]
        kind = "empty" if meta is None else f"a {type(meta).__name__}"
        return None, [Finding(rel_path, 1, "frontmatter-mapping", f"the frontmatter is {kind}; it must be a mapping")]
    # where the body starts, from the text's end (the split's body is its end): a search for the body's text found a
    # body that opens with `---` in the closing `---` line, and put its findings on that line
    body_start = len(text) - len(body.lstrip("\n"))
    body = body.strip("\n")
    closing_line = fm_offset + fm_text.count("\n")
    body_line = text.count("\n", 0, body_start) + 1 if body.strip() else closing_line + 1
    return _build(rel_path, card_id, meta, fm_text, body, body_line, fm_offset)


def frontmatter_source(text: str) -> str | None:
    """The YAML source of a card's frontmatter (newlines normalised) as the parser splits it: from the opening line
    of dashes to the next line of dashes alone; None when the text opens with none or none closes it."""
    opening, closing = frontmatter_fences(text)
    return text[opening.end() : closing.start()] if opening and closing else None


def frontmatter_fences(text: str) -> tuple[re.Match[str] | None, re.Match[str] | None]:
    """The opening and closing lines of dashes of a card's frontmatter, None for each that is not there (no closing
    line without an opening one). The opening line starts the text; the closing one is the next line of three or more
    dashes alone (`---x: 1` is a YAML key, not the end). The one place that says where a frontmatter ends: lint once
    found its end elsewhere than the parser did, and an instruction after a `---x: 1` line passed its security rules.
    """
    opening = _FENCE.match(text)
    return opening, _FENCE.search(text, opening.end()) if opening else None


_TAB_INDENT = re.compile(r" *\t")


# `name：` typed with a Chinese or Japanese input method: YAML reads the line as text, and its error names the line after
# it ("mapping values are not allowed", "could not find expected ':'"), or the closing `---`.
_FULLWIDTH_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\uff1a", re.MULTILINE)


def _fullwidth_colon(rel_path: str, fm_text: str, fm_offset: int) -> Finding | None:
    match = _FULLWIDTH_KEY.search(fm_text)
    if match is None:
        return None
    key = match.group(1)
    return Finding(
        rel_path,
        fm_offset + fm_text.count("\n", 0, match.start()),
        "frontmatter-parse",
        f"the frontmatter is not valid YAML: '{key}' is followed by a full-width colon (：); YAML needs an ASCII "
        f"colon and a space: `{key}: `",
    )


def _build(
    rel_path: str, card_id: str, meta: dict[Any, Any], fm_text: str, body: str, body_line: int, fm_offset: int
) -> tuple[Card | None, list[Finding]]:
    findings: list[Finding] = []

    def line_of(key: str) -> int:
        match = re.search(rf"^{re.escape(key)}\s*:", fm_text, re.MULTILINE)
        return fm_offset + fm_text.count("\n", 0, match.start()) if match else 1

    def fail(key: str, rule: str, message: str) -> None:
        findings.append(Finding(rel_path, line_of(key), rule, message))

    texts: dict[str, str] = {}
    for key in ("name", "summary"):
        value = meta.get(key)
        if value is None:
            fail(key, "required-field", f"'{key}' is {'empty' if key in meta else 'missing'}")
        elif not isinstance(value, str):
            fail(key, "field-type", f"'{key}' must be text, not {_kind(value)}")
        elif not strip_invisible(value).strip():  # only invisible characters: empty once they are removed
            fail(key, "required-field", f"'{key}' is empty")
        else:
            texts[key] = join_cjk_line_breaks(" ".join(value.split()), _value_source(fm_text, key))

    lists: dict[str, tuple[str, ...]] = {}
    for key in _LIST_FIELDS:
        value = meta.get(key)
        if value is None:
            lists[key] = ()
        elif not isinstance(value, list):
            fail(key, "field-type", f"'{key}' must be a list such as [a, b], not {_kind(value)}")
        elif not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            fail(key, "field-type", f"'{key}' must be a list of words")
        else:
            lists[key] = tuple(str(v).strip() for v in value if str(v).strip())

    verified_at: dt.date | None = None
    if meta.get("verified_at") is not None:
        verified_at = read_date(meta["verified_at"])
        if verified_at is None:
            fail(
                "verified_at",
                "field-type",
                f"'verified_at' must be a date such as 2026-10-02, not {meta['verified_at']!r}",
            )

    review_after: str | None = None
    expires_on: dt.date | None = None
    raw_review = meta.get("review_after")
    if raw_review is not None:
        as_date = read_date(raw_review)
        duration = _DURATION.match(raw_review) if isinstance(raw_review, str) else None
        if as_date is not None:
            review_after, expires_on = as_date.isoformat(), as_date
        elif duration is not None:
            review_after = raw_review.strip()
            if verified_at is not None:
                expires_on = review_due(verified_at, review_after)
        else:
            fail(
                "review_after",
                "field-type",
                f"'review_after' must be a date or a duration such as 180d, not {raw_review!r}",
            )

    status = meta.get("status", "active")
    if status is None:
        status = "active"
    if not isinstance(status, str):
        fail("status", "field-type", f"'status' must be one of {', '.join(STATUSES)}")
        status = "active"

    source = meta.get("source")
    if source is not None and not isinstance(source, str):
        fail("source", "field-type", f"'source' must be text, not {_kind(source)}")

    if findings:
        return None, findings
    hidden: list[tuple[str, str]] = []

    def shown(key: str, value: str) -> str:
        found = invisible_in(value)
        if not found:
            return value
        hidden.append((key, "".join(dict.fromkeys(ch for _, ch in found))))
        return " ".join(strip_invisible(value).split()) if key in ("name", "summary") else strip_invisible(value)

    def shown_list(key: str) -> tuple[str, ...]:
        # one line each, as name and summary: an item is shown and injected on a line of its own
        items = tuple(v for v in (" ".join(shown(key, item).split()) for item in lists[key]) if v)
        if key == "scope":  # `[k8s，docker]` (a Chinese input method's comma) is two tags, as `--scope` reads it
            items = tuple(tag for item in items for tag in split_tags(item))
        return items

    extra: dict[str, Any] = {}
    for key, value in meta.items():
        if key in KNOWN_KEYS:
            continue
        chars: list[str] = []
        name = _visible_nested(str(key), chars)
        extra[name] = _visible_nested(value, chars)
        if chars:  # MCP `show` and `cairn show --json` give these fields whole
            hidden.append((name, "".join(dict.fromkeys(chars))))

    card = Card(
        id=card_id,
        path=rel_path,
        name=shown("name", texts["name"]),
        summary=shown("summary", texts["summary"]),
        body=shown("body", body),
        scope=shown_list("scope"),
        verified_at=verified_at,
        review_after=review_after,
        expires_on=expires_on,
        status=shown("status", status).strip().lower(),
        aliases=shown_list("aliases"),
        not_when=shown_list("not_when"),
        supersedes=shown_list("supersedes"),
        source=" ".join(shown("source", source).split()) if source is not None else None,
        extra=extra,
        body_line=body_line,
        hidden=tuple(hidden),
    )
    return card, []


def join_cjk_line_breaks(text: str, source: str) -> str:
    """`text` (a field's parsed value, whitespace runs made single spaces) with the spaces that stand for a line
    break of the source between two CJK characters removed: YAML folds a line break into a space (`>-`, plain and
    quoted scalars) and Cairn makes every other whitespace a space, but Chinese and Japanese take none there, so
    `27)，` at a line's end and `或者` on the next read `27)，或者`, not `27)， 或者`. A space typed between CJK
    characters on one line stays. `source` is the raw text of the field's value: its gaps between CJK characters,
    in order, are matched with the text's spaces between CJK characters; when the two counts differ (escapes in a
    quoted scalar, say), the text is returned as it is, since which space came from a line break is not known."""
    if "\n" not in source:
        return text
    spaces = [m.start() for m in _CJK_GAP_TEXT.finditer(text)]
    gaps = ["\n" in m.group() for m in _CJK_GAP_SOURCE.finditer(source)]
    if not spaces or len(spaces) != len(gaps) or not any(gaps):
        return text
    drop = {at for at, line_break in zip(spaces, gaps, strict=True) if line_break}
    return "".join(ch for i, ch in enumerate(text) if i not in drop)


def _value_source(fm_text: str, key: str) -> str:
    """The raw frontmatter text of a top-level key's value: from after `key:` to the next line that starts in the
    first column (the next key, a comment, the end)."""
    match = re.search(rf"^{re.escape(key)}\s*:", fm_text, re.MULTILINE)
    if match is None:
        return ""
    end = re.compile(r"^\S", re.MULTILINE).search(fm_text, match.end())
    return fm_text[match.end() : end.start() if end else len(fm_text)]


def review_due(verified_at: dt.date, review_after: str) -> dt.date | None:
    """The day a card verified on `verified_at` falls due for `review_after`: that date when it is one, else the
    duration (`180d`, `6m`, ...) after `verified_at`; None when `review_after` is neither."""
    as_date = read_date(review_after)
    if as_date is not None:
        return as_date
    duration = _DURATION.match(review_after)
    if duration is None:
        return None
    days = int(duration.group(1)) * _DURATION_DAYS[duration.group(2).lower()]
    room = (dt.date.max - verified_at).days  # past the calendar's last day: it never expires
    return verified_at + dt.timedelta(days=days) if days <= room else dt.date.max


def review_date_fixed(review_after: Any) -> bool:
    """Whether `review_after` is a date: the review date itself, which a new verified_at does not move (a duration
    counts from verified_at)."""
    return read_date(review_after) is not None


def renewal(review_after: Any) -> str:
    """What serves a card again once its review date has passed, in words."""
    if review_date_fixed(review_after):
        return "check it, then set review_after to a later date"
    return "check it, then update verified_at"


def read_date(value: Any) -> dt.date | None:
    """A field's value as the card format's date: a date (YAML's unquoted `2026-10-02`) or text `YYYY-MM-DD`; None
    for anything else. Only that form: Python 3.11's `date.fromisoformat` also reads `20261002` and `2026-W40-5`,
    3.10's does not, and a card must mean the same on every version."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "text"
    return f"a {type(value).__name__}"


def _visible_nested(value: Any, chars: list[str]) -> Any:
    """An extra field's value with the invisible characters of every text in it (keys too) removed, and added to
    `chars`; bytes (`!!binary`) as the text they are shown as, a set (`!!set`) as the list of its items in order
    (JSON has no set: one in a card broke every index write and `cairn show --json`), and `.nan` or `.inf` as the
    text YAML spells them with (JSON has no such number: `NaN` in `cairn show --json` is refused by strict readers,
    JavaScript's among them)."""
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=lambda item: (type(item).__name__, str(item)))
    if isinstance(value, float) and not math.isfinite(value):
        return _yaml_float(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        found = invisible_in(value)
        if not found:
            return value
        chars.extend(ch for _, ch in found)
        return strip_invisible(value)
    if isinstance(value, dict):
        return {_visible_nested(k, chars): _visible_nested(v, chars) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_visible_nested(v, chars) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no Infinity or NaN
        return _yaml_float(value)
    return value


def _yaml_float(value: float) -> str:
    """A number JSON has not (`.nan`, `.inf`, `-.inf`), as YAML spells it."""
    return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"


def check_card_id(card_id: str, *, max_part_bytes: int = MAX_ID_PART_BYTES) -> str:
    """Return a card id if it names a path inside `cards/`; raise InvalidId for traversal and absolute paths, a
    `.git` folder, and for a part over `max_part_bytes` (a card to write leaves room for `.md` and a temporary
    name's affixes)."""
    from cairn.hot.errors import InvalidId

    cleaned = card_id.strip()
    if cleaned.endswith(".md"):
        cleaned = cleaned[:-3]
    if cleaned.startswith("cards/"):
        cleaned = cleaned[len("cards/") :]
    parts = cleaned.split("/")
    bad = (
        not cleaned
        or "\0" in cleaned
        or "\\" in cleaned
        or cleaned.startswith("/")
        or (len(cleaned) > 1 and cleaned[1] == ":")
        or any(part in ("", ".", "..") for part in parts)
        # a folder git never tracks (`.git` in any case, and the names NTFS and HFS+ read as it, which git refuses
        # everywhere by default): a card there could never be committed
        or any(part.rstrip(". ").lower() in (".git", "git~1") for part in parts[:-1])
        or _BAD_NAME.search(cleaned) is not None
        or any(len(part.encode("utf-8", "surrogatepass")) > max_part_bytes for part in parts)
    )
    if bad:
        shown = card_id if len(card_id) <= 80 else card_id[:80] + "..."
        raise InvalidId(f"{shown!r} is not a card id; ids look like `topic/slug` (`cairn list` shows the cards' ids)")
    return cleaned


def file_key(card_id: str) -> str:
    """The card id as a case-insensitive, Unicode-normalising file system (macOS, Windows) tells files apart."""
    return unicodedata.normalize("NFC", card_id.lower())


def card_id_forms(card_id: str) -> tuple[str, ...]:
    """The ids a card id as a user or an agent gives it may name, the literal one first: the id as given (a card at
    `cards/cards/x.md` has the id `cards/x`, one at `cards/x.md.md` the id `x.md`, and recall serves them so), then
    `check_card_id`'s, without a `cards/` prefix and a `.md` suffix (a path given for an id). InvalidId as
    `check_card_id` raises it, for a card that may exist: a part up to the file system's limit, which lint, the index
    and the hook take (a 72-character Chinese name is 216 bytes)."""
    short = check_card_id(card_id, max_part_bytes=MAX_FOUND_PART_BYTES)
    whole = card_id.strip()
    return (whole, short) if whole != short else (short,)


def nfd_spelling(text: str) -> str:
    """What the NFD spelling of `text` (as macOS names files) does, said for a reader: a Korean name is its Hangul
    syllables taken apart into letters (jamo), which no accent is."""
    if any("\u1100" <= ch <= "\u11ff" for ch in text):
        return "spells its Hangul syllables as separate letters (jamo)"
    return "spells its accents as separate marks"


def slugify(text: str, max_length: int = 60) -> str:
    """A lowercase slug for a file name: words (any script) joined by hyphens. The text is read NFKC first: a name
    macOS wrote with its accents as separate marks (`e` + U+0301) was cut at each (`re-sume` for `résumé`), and one
    in full-width letters or with a ligature (`ｆｕｌｌ`, `ﬁle`), which recall reads as `full` and `file`, was kept
    so."""
    slug = re.sub(r"[^\w]+", "-", unicodedata.normalize("NFKC", text).lower(), flags=re.UNICODE).strip("-_")
    slug = re.sub(r"-{2,}", "-", slug)
    return slug[:max_length].rstrip("-") or "card"
