"""`cairn.toml`: every setting with its default, read into typed records; a missing file means all defaults.

A mistake in the file is a `VaultConfigError`: one line naming the file, the line, and (for a committed file, which is
what Cairn reads) the commit that holds it and that the fix must be committed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shlex
import stat
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from cairn.atomic import leads_outside, write_atomic
from cairn.hot.errors import CairnError, InvalidConfig, StoredConfigInvalid

CONFIG_FILE = "cairn.toml"
# Git's blobs are read up to a limit (`gitrepo.READ_LIMIT`, what bounds a card): a longer cairn.toml is refused
# whole, by every reader, rather than parsed as far as each one read it.
MAX_CONFIG_BYTES = 1024 * 1024


class VaultConfigError(InvalidConfig):
    """A cairn.toml Cairn cannot read. detail: what is wrong, without the location; line: 1-based, 0 when unknown;
    commit: the commit the file was read from (None for the working tree or the staging area); problems: every
    (line, detail) found, this one first (lint reports each; the message names the first and counts the rest); lint:
    the command that lists each (`asking` names the vault, so that it runs as printed from any folder)."""

    def __init__(
        self,
        detail: str,
        *,
        file: str = CONFIG_FILE,
        line: int = 0,
        commit: str | None = None,
        more: tuple[tuple[int, str], ...] = (),
        lint: str = "cairn lint",
    ) -> None:
        self.detail = detail
        self.file = file
        self.line = line
        self.commit = commit
        self.problems = ((line, detail), *more)
        where = f"{file}:{line}" if line else file
        text = f"{where}: {detail}"
        if more:
            text += f" (and {len(more)} more in {file}; `{lint}` lists each)"
        if commit:
            text += (
                f" (committed in {commit[:8]}: fix it and commit the fix; Cairn reads the commit, not the working tree)"
            )
        super().__init__(text)

    def asking(self, lint: str) -> VaultConfigError:
        """This error, its mistakes listed by `lint` (`cairn lint --vault V`)."""
        more = self.problems[1:]
        return VaultConfigError(self.detail, file=self.file, line=self.line, commit=self.commit, more=more, lint=lint)


def folder_error(commit: str | None = None) -> VaultConfigError:
    """cairn.toml is a folder (in the working tree, the staging area or `commit`): said the same way everywhere."""
    from cairn.hot.vault import MARKER_IS_FOLDER

    return VaultConfigError(MARKER_IS_FOLDER, commit=commit)


# Git records a symlink as the path it names, so a commit holds that path where the settings should be.
CONFIG_IS_SYMLINK = (
    "a symlink, not a file: git records the link, not the settings it names; put a cairn.toml file in its place "
    "(a copy of the one it names)"
)


def symlink_error(commit: str | None = None) -> VaultConfigError:
    """cairn.toml is a symlink (in the working tree, the staging area or `commit`): said the same way everywhere,
    rather than the link's target path read as TOML ("expected '=' after a key")."""
    return VaultConfigError(CONFIG_IS_SYMLINK, commit=commit)


def worktree_config_text(vault_root: Path) -> str | None:
    """The working tree's cairn.toml (None when there is none; a folder or a symlink in its place is a
    VaultConfigError, not the defaults or the file it names). Read as lint and the index read a commit's: a byte that
    is not UTF-8 (a Latin-1 comment) is replaced, not a crash of `cairn index --worktree`."""
    path = vault_root / CONFIG_FILE
    if path.is_symlink():
        raise symlink_error()
    if path.is_dir():
        raise folder_error()
    return path.read_text("utf-8", "replace") if path.is_file() else None


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """Ranking and the three gates. `cairn calibrate --write` fits the gate thresholds."""

    max_cards: int = 3
    k1: float = 1.2
    b: float = 0.75
    weight_summary: float = 3.0
    weight_name: float = 2.0
    weight_body: float = 1.0
    # Query weighting (see cairn.hot.recall): agent instruction words count for this share of their IDF; words the
    # vault never uses weigh this share of a one-card word, in the coverage gate only.
    instruction_weight: float = 0.25
    unknown_weight: float = 1.0
    # The three gates (cairn.hot.gates), each a ratio in [0, 1]: min_lead is the lead gate, the card's score over the
    # next card's as a share of the query's best possible score (called min_score before 0.2; still read until 0.3).
    # Shipped values (round 3, with the prompt's salience and related cards injected together): fitted on the three
    # dev suites at FIR <= 4% on every suite and slice; fitting on any two gives the same point for stackfaq-en and
    # tldr-en held out. See benchmarks/RESULTS.md, "Round 3".
    min_lead: float = 0.24
    min_coverage: float = 0.38
    min_margin: float = 0.275
    # The evidence floor (cairn.hot.gates): the prompt's words a card matches must weigh at least this many words
    # found in one card of the vault (instruction words at their discount); 0 turns it off. It keeps one or two
    # everyday words ("continue", "run the tests", "push") from injecting the card that happens to hold them, which
    # the three shares above cannot see. Fitted on follow-up prompts (benchmarks/suites/followups, its "fit" half)
    # asked of the fittable suites' vaults: benchmarks/RESULTS.md, "Round 15".
    min_evidence: float = 1.3
    # The confidence gate (cairn.hot.confidence): the estimated chance the first cards are right that recall needs
    # to inject them; 0 turns it off (the three gates above alone decide). See benchmarks/RESULTS.md, round 3.
    min_confidence: float = 0.0
    # The optional semantic channel (pip install 'cairn-lessons[semantic]', then `cairn index`): false turns it off.
    semantic: bool = True


@dataclass(frozen=True, slots=True)
class LintSettings:
    """Policy for `cairn lint` and the pre-commit hooks."""

    summary_max_chars: int = 300
    max_age_days: int = 365
    scopes: tuple[str, ...] = ()
    max_scope_share: float = 0.5
    max_scopes_per_card: int = 6
    duplicate_threshold: float = 0.8
    # Scope shares mean little in a small vault: crowding is checked from this many cards on.
    crowding_min_cards: int = 20
    # Rule ids (or groups) this vault switches off, e.g. ["scope-crowding"].
    disable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SanitizeSettings:
    """Extra redaction for `cairn sanitize`: regular expressions and internal domain suffixes."""

    patterns: tuple[str, ...] = ()
    internal_domains: tuple[str, ...] = (".internal", ".corp", ".lan", ".local")


@dataclass(frozen=True, slots=True)
class HookSettings:
    max_context_chars: int = 9000
    session_ttl_days: int = 14


@dataclass(frozen=True, slots=True)
class Config:
    recall: RecallSettings = field(default_factory=RecallSettings)
    lint: LintSettings = field(default_factory=LintSettings)
    sanitize: SanitizeSettings = field(default_factory=SanitizeSettings)
    hook: HookSettings = field(default_factory=HookSettings)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SECTIONS: dict[str, type[Any]] = {
    "recall": RecallSettings,
    "lint": LintSettings,
    "sanitize": SanitizeSettings,
    "hook": HookSettings,
}


def parse_config(text: str | None, source: str = CONFIG_FILE, *, commit: str | None = None) -> Config:
    """Read `cairn.toml` text (None = no file); unknown sections and keys are errors, so typos surface.

    source: the file's name in messages; commit: the commit the text was read from, if any (see VaultConfigError).
    """
    if text is not None:
        text = text.removeprefix("\ufeff")  # a byte order mark (Windows editors write one): unseen, tomllib refuses it
    if text is None or not text.strip():
        return Config()
    if len(text.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
        raise VaultConfigError(
            "the file is over 1 MiB; a vault's settings are a few lines: cut it down (long comments too)",
            file=source,
            commit=commit,
        )
    if "\0" in text:  # "invalid statement at column 1" said nothing of why: an editor saved it as UTF-16
        raise VaultConfigError(
            "the file holds NUL bytes (saved as UTF-16?); save it as UTF-8",
            file=source,
            line=text[: text.index("\0")].count("\n") + 1,
            commit=commit,
        )
    try:
        data = toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError
        detail, line = _toml_error(str(exc))
        line = line or len(text.splitlines())  # `at end of document`
        raise VaultConfigError(detail, file=source, line=line, commit=commit) from None
    sections: dict[str, Any] = {}
    found: list[tuple[int, str]] = []  # every mistake, so that one `cairn lint` shows them all
    for name, table in data.items():
        if name not in _SECTIONS and not isinstance(table, dict):  # `bogus = 1` above every [section]
            mistakes = [_Mistake(f"{name} is outside every section; settings go under one of: {', '.join(_SECTIONS)}")]
        elif name not in _SECTIONS:
            mistakes = [_Mistake(f"unknown section [{name}]; known: {', '.join(_SECTIONS)}")]
        elif not isinstance(table, dict):
            mistakes = [_Mistake(f"[{name}] must be a table")]
        else:
            values, mistakes = _read_section(_SECTIONS[name], name, table)
            sections[name] = _SECTIONS[name](**values)
        found.extend((_line_of(text, name, m.key), str(m)) for m in mistakes)
    if found:
        # in the file's order; a mistake whose line is not known (0) last
        (line, detail), *more = sorted(found, key=lambda item: item[0] or sys.maxsize)
        raise VaultConfigError(detail, file=source, line=line, commit=commit, more=tuple(more))
    return Config(**sections)


class _Mistake(Exception):
    """A setting's mistake, before its location is known. key: the key it is about, None for the whole section."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def toml_loads(text: str) -> dict[str, Any]:
    """TOML text as a table: tomllib, or tomli before Python 3.11; raises ValueError (TOMLDecodeError) when it is
    not TOML."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(text)


def _toml_error(message: str) -> tuple[str, int]:
    """tomllib's `Invalid value (at line 6, column 13)` as (`invalid value at column 13`, 6)."""
    found = _TOML_AT.search(message)
    what = message[: found.start()] if found else message.replace(" (at end of document)", " at the end of the file")
    if what[1:2].islower():  # `Invalid value` -> `invalid value`; an acronym keeps its capitals
        what = what[:1].lower() + what[1:]
    if found is None:
        return f"not valid TOML: {what}", 0
    return f"not valid TOML: {what} at column {found.group(2)}", int(found.group(1))


def _line_of(text: str, section: str, key: str | None) -> int:
    """The 1-based line of `[section]` (or of `key` in it); 0 when the file spells it in a way not looked for
    (dotted keys, inline tables)."""
    in_section = False
    header_line = 0
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line) if not _ARRAY_HEADER.match(line) else None
        if header:
            in_section = header.group(1).strip().strip("\"'") == section
            if in_section and not header_line:
                header_line = number
            continue
        if in_section and key is not None:
            match = _KEY_LINE.match(line)
            if match and match.group(2) == key:
                return number
        if not header_line and key is None and re.match(rf"^\s*{re.escape(section)}\s*=", line):
            return number
    return header_line


def line_of_key(config_text: str | None, key: str) -> int:
    """The line of `key =` in cairn.toml (0 when it is not found: written as a dotted key, say); `disable`, `scopes`,
    `patterns` and `max_context_chars` are keys of one section each."""
    for number, line in enumerate((config_text or "").splitlines(), 1):
        if line.strip().startswith(key) and line.split("=", 1)[0].strip() == key:
            return number
    return 0


def config_from_dict(data: dict[str, Any]) -> Config:
    """Rebuild a Config from `Config.to_dict()` output (as stored in the index)."""
    try:
        return Config(**{name: _section(cls, name, data.get(name, {})) for name, cls in _SECTIONS.items()})
    except _Mistake as exc:
        raise StoredConfigInvalid(str(exc)) from None


# Settings renamed in a release, old name -> (section, new name): still read, until the release CHANGELOG names.
RENAMED = {"min_score": ("recall", "min_lead")}


def _section(cls: type[Any], name: str, table: dict[str, Any]) -> Any:
    """The section's record; its first mistake raised."""
    values, mistakes = _read_section(cls, name, table)
    if mistakes:
        raise mistakes[0]
    return cls(**values)


def _read_section(cls: type[Any], name: str, table: dict[str, Any]) -> tuple[dict[str, Any], list[_Mistake]]:
    """The section's valid values by key, and a mistake for each key that is not valid (left out of the values)."""
    values: dict[str, Any] = {}
    mistakes: list[_Mistake] = []
    known, defaults = [f.name for f in fields(cls)], cls()
    table, renamed = _renamed(name, table)
    mistakes.extend(renamed)
    for key, value in table.items():
        try:
            values[key] = _value(name, key, value, known, defaults)
        except _Mistake as exc:
            mistakes.append(exc)
    return values, mistakes


def _value(name: str, key: str, value: Any, known: list[str], defaults: Any) -> Any:
    """One setting's value as its record holds it; a `_Mistake` when it is not valid. known: the section's keys;
    defaults: its record with every default."""
    if key not in known:
        raise _Mistake(f"unknown key '{key}' in [{name}]; known: {', '.join(known)}", key)
    default = getattr(defaults, key)
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _Mistake(f"[{name}] {key} must be a list of strings", key)
        value = tuple(value)
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            raise _Mistake(f"[{name}] {key} must be true or false", key)
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Mistake(f"[{name}] {key} must be a number", key)
        if isinstance(value, int) and abs(value) > sys.float_info.max:  # TOML reads 400 digits; float() overflows
            raise _Mistake(f"[{name}] {key} is too large a number", key)
        if not math.isfinite(value):
            raise _Mistake(f"[{name}] {key} must be a finite number, not {value}", key)
        value = float(value)
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Mistake(f"[{name}] {key} must be a whole number", key)
    if (name, key) in _RANGES:
        low, high = _RANGES[name, key]
        if value < low or (high is not None and value > high):
            span = f"between {low:g} and {high:g}" if high is not None else f"{low:g} or more"
            shown = value if isinstance(value, int) else f"{value:g}"
            raise _Mistake(f"[{name}] {key} must be {span}, not {shown}", key)
    return value


# The values each number may take (low, high; None: no upper bound). Outside them a setting is a mistake, not a
# policy: a NaN, negative or out-of-range gate passes every card (and `cairn review`'s weaker-gate check, which
# compares numbers), a day count beyond a date's range breaks the commands that add it to a date.
_MAX_DAYS = 36500  # 100 years; to switch the staleness check off, name verified-at-stale in [lint] disable
_MAX_WEIGHT = 100
_RANGES: dict[tuple[str, str], tuple[float, float | None]] = {
    ("recall", "max_cards"): (1, None),
    # Ranking numbers far past any use: `weight_summary = 1e308` made every score and lead infinite (the card went in
    # whatever the gates), `k1 = 1e308` made recall abstain on every prompt.
    ("recall", "k1"): (0, _MAX_WEIGHT),
    ("recall", "b"): (0, 1),
    ("recall", "weight_summary"): (0, _MAX_WEIGHT),
    ("recall", "weight_name"): (0, _MAX_WEIGHT),
    ("recall", "weight_body"): (0, _MAX_WEIGHT),
    ("recall", "instruction_weight"): (0, 1),  # a share of a word's weight
    ("recall", "unknown_weight"): (0, 1),
    ("recall", "min_lead"): (0, 1),
    ("recall", "min_coverage"): (0, 1),
    ("recall", "min_margin"): (0, 1),
    ("recall", "min_evidence"): (0, _MAX_WEIGHT),
    ("recall", "min_confidence"): (0, 1),
    ("lint", "summary_max_chars"): (1, None),
    ("lint", "max_age_days"): (1, _MAX_DAYS),
    ("lint", "max_scope_share"): (0, 1),
    ("lint", "max_scopes_per_card"): (1, None),
    ("lint", "duplicate_threshold"): (0, 1),
    ("lint", "crowding_min_cards"): (0, None),
    ("hook", "max_context_chars"): (1, None),
    ("hook", "session_ttl_days"): (1, _MAX_DAYS),
}


def _renamed(section: str, table: dict[str, Any]) -> tuple[dict[str, Any], list[_Mistake]]:
    """The table with old setting names read as their new names, and a mistake for each old name given beside its
    new one (the new one is kept)."""
    out = dict(table)
    mistakes: list[_Mistake] = []
    for old, (where, new) in RENAMED.items():
        if where != section or old not in out:
            continue
        if new in out:
            mistakes.append(_Mistake(f"[{section}] has both {old} and {new}; keep {new} ({old} is its old name)", old))
            del out[old]
            continue
        out[new] = out.pop(old)
    return out, mistakes


# -- writing ------------------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\s*([^\]\[]+?)\s*\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9_-]+)(\s*=\s*)([^#\r\n]*?)(\s*(?:#.*)?)(\r?\n)?$")


def write_recall_settings(vault_root: Path, values: dict[str, float]) -> Path:
    """Set numeric keys of cairn.toml's [recall] table, leaving every other line as it is (see set_recall_keys).

    The result is parsed before it is written (atomically), and must hold exactly the new values and every other
    setting unchanged; otherwise nothing is written and the error says what to set by hand.
    """
    path = vault_root / CONFIG_FILE
    mode = 0o644
    if path.is_symlink() and leads_outside(path, vault_root) is not None:
        # Read through, the file it points to (any TOML of the machine's: a token's) was copied into the vault
        raise CairnError(
            f"{path} is a symlink to {os.readlink(path)}, outside the vault; nothing was written: make cairn.toml a "
            "file of the vault's own, then run this again"
        )
    if path.exists() and not path.is_file():
        raise CairnError(f"{path} is not a file; move it away, then run this again (nothing was written)")
    if path.is_file() and not path.is_symlink():  # a link is replaced by a file: nothing is written where it points
        # Kept as its owner set it: a file made read-only (`chmod 444`) is refused, as `cairn install` refuses a
        # settings file (the atomic rename needs only the folder's permission, and root may write any file)
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o222 == 0:
            raise CairnError(
                f"{path} is read-only (mode {mode:o}); nothing was written: make it writable "
                f"(`chmod u+w {shlex.quote(str(path))}`) and run this again, or edit it by hand"
            )
    try:
        old_text = path.read_bytes().decode("utf-8") if path.is_file() else ""  # as it is: \r\n kept
    except UnicodeDecodeError:
        raise CairnError(f"{path} is not UTF-8; save it as UTF-8, then run this again (nothing was written)") from None
    try:
        before = parse_config(old_text)
    except InvalidConfig as exc:
        raise CairnError(f"{exc}; fix it before Cairn writes to it") from None
    new_text = set_recall_keys(old_text, values)
    changes: dict[str, Any] = dict(values)
    wanted = dataclasses.replace(before, recall=dataclasses.replace(before.recall, **changes))
    try:
        after: Config | None = parse_config(new_text)
    except InvalidConfig:  # the edit made the file invalid (a [recall] given as dotted keys or an inline table)
        after = None
    if after != wanted:
        inline = ", ".join(f"{key} = {_number(value)}" for key, value in values.items())
        raise CairnError(f"{path}: could not edit the [recall] table safely; set {inline} by hand")
    write_atomic(path, new_text.encode("utf-8"), overwrite=True, mode=mode)
    return path


def set_recall_keys(text: str, values: dict[str, float]) -> str:
    """The TOML text with `values` set in its [recall] table, every other line kept as it is.

    Existing keys keep their line (and any comment after the value), a key under its old name (RENAMED) too, renamed;
    missing keys are added after the table's last key; a missing [recall] table is appended.
    """
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    start = end = None
    for n, line in enumerate(lines):
        line = line.removeprefix("\ufeff")  # the first line's byte order mark (kept: only `line` is read past it)
        header = _HEADER.match(line) if not _ARRAY_HEADER.match(line) else None
        if start is None and header and header.group(1).strip() == "recall":
            start = n
        elif start is not None and (header or _ARRAY_HEADER.match(line)):
            end = n
            break
    rendered = {key: f"{key} = {_number(value)}" for key, value in values.items()}
    if start is None:
        tail = "" if not text or text.endswith(("\n", "\r")) else newline
        block = newline.join(["[recall]", *rendered.values()]) + newline
        return text + tail + (newline if text.strip() else "") + block
    end = len(lines) if end is None else end
    last_key = start
    for n in range(start + 1, end):
        match = _KEY_LINE.match(lines[n])
        if not match:
            continue
        last_key = n
        key = match.group(2)
        if RENAMED.get(key, ("", ""))[0] == "recall":  # an old name (min_score): its line takes the new one
            key = RENAMED[key][1]
        if key in values:
            indent, eq, comment, eol = match.group(1), match.group(3), match.group(5), match.group(6) or ""
            lines[n] = f"{indent}{key}{eq}{_number(values[key])}{comment}{eol}"
            rendered.pop(key)
    if rendered:
        if not lines[last_key].endswith(("\n", "\r")):
            lines[last_key] += newline
        lines[last_key + 1 : last_key + 1] = [line + newline for line in rendered.values()]
    return "".join(lines)


def _number(value: float) -> str:
    return repr(round(float(value), 6))
