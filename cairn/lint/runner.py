"""Running the rules: over the whole vault or over some files in the context of the whole vault."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from cairn.cards.card import CARDS_NOT_A_FOLDER, Card, card_id_from_path, parse_card
from cairn.cards.similarity import terms
from cairn.cards.visible import strip_invisible
from cairn.config import CONFIG_FILE, LintSettings, VaultConfigError, line_of_key, parse_config
from cairn.finding import ERROR, WARNING, Finding
from cairn.hot.errors import CairnError, InvalidConfig
from cairn.hot.serve import split_tags
from cairn.hot.vault import CARDS_DIR, Vault
from cairn.lint import registry, security
from cairn.lint.facts import vault_facts
from cairn.lint.model import Context, Rule, Target
from cairn.lint.snapshot import FILE, STAGED, SUBMODULE, SYMLINK, Snapshot, read_capped

# What a config-invalid finding adds: lint goes on with the default policy, but index and recall refuse the file.
DEFAULTS_USED = "; lint used the defaults, but a vault whose cairn.toml is invalid serves no card until it is fixed"
# What a config-invalid finding about `[sanitize] patterns` adds: only `cairn sanitize` reads them (no card's lint does).
SANITIZE_REFUSES = "; `cairn sanitize` refuses it"


@dataclass(frozen=True, slots=True)
class LintReport:
    """What lint found. files: how many files were checked; source: `worktree` or `staged`."""

    findings: tuple[Finding, ...]
    files: int
    source: str

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]


def lint_vault(
    vault: Vault,
    *,
    rules: Iterable[str] | None = None,
    source: str = "worktree",
    today: dt.date | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LintReport:
    """Lint every file under the vault's `cards/` (and its `cairn.toml`); `progress(done, total)` after each 100
    files and the last."""
    return _lint(vault, None, rules, source, today, progress=progress)


def lint_files(
    vault: Vault,
    rel_paths: Sequence[str],
    *,
    rules: Iterable[str] | None = None,
    source: str = "worktree",
    today: dt.date | None = None,
    pending: Mapping[str, bytes] | None = None,
    removed: Sequence[str] = (),
    commit: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LintReport:
    """Lint some vault-relative files in the context of the whole vault (uniqueness, links, duplicates).

    Given `cairn.toml`, it is checked and every card is linted by the rules that read it. `pending` holds files not
    written yet (path -> bytes), read as if they were in the vault (`cairn add` lints a card before writing it).
    `removed`: card files the change deletes (`cairn review` passes its deletions; from git's staging area they are
    found by comparing with HEAD, and in `pre-commit run --from-ref --to-ref` with the range's merge base): the cards
    that supersede them are linted too, so pre-commit, review and a whole-vault `cairn lint` give one verdict on a
    deletion. `commit`, with source `commit`: the commit whose tree
    (cards and `cairn.toml`) is the vault. `progress(done, total)` as `lint_vault` gives it.
    """
    return _lint(vault, list(rel_paths), rules, source, today, pending, removed, progress, commit)


def _lint(
    vault: Vault,
    rel_paths: list[str] | None,
    wanted: Iterable[str] | None,
    source: str,
    today: dt.date | None,
    pending: Mapping[str, bytes] | None = None,
    removed: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    commit: str | None = None,
) -> LintReport:
    with Snapshot(vault, source, commit) as snapshot:
        return _lint_snapshot(snapshot, vault, rel_paths, wanted, today, pending, removed, progress)


def _lint_snapshot(
    snapshot: Snapshot,
    vault: Vault,
    rel_paths: list[str] | None,
    wanted: Iterable[str] | None,
    today: dt.date | None,
    pending: Mapping[str, bytes] | None,
    removed: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
) -> LintReport:
    for rel, data in (pending or {}).items():
        snapshot.add_pending(rel, data)
    findings: list[Finding] = []
    try:
        if snapshot.config_error is not None:
            raise snapshot.config_error
        config = parse_config(snapshot.config_text)
    except InvalidConfig as exc:
        problems = getattr(exc, "problems", ((0, str(exc)),))  # cairn.config.VaultConfigError: every mistake
        findings.extend(
            Finding(CONFIG_FILE, line, "config-invalid", f"{detail}{DEFAULTS_USED}", ERROR) for line, detail in problems
        )
        config = parse_config(None)
    known = set(registry.names())
    no_effect = [  # (key, what is wrong) of each entry of a [lint] list that can have no effect
        (
            "disable",
            f"[lint] disable names '{entry}', which is no rule or group (`cairn lint --list-rules` lists them); "
            "it was ignored",
        )
        for entry in config.lint.disable
        if entry.strip() and entry.strip() not in known
    ]
    no_effect += [
        (
            "scopes",
            f"[lint] scopes names {entry!r}, which no card's scope tag can match (a tag is not empty, has no "
            "invisible characters and single spaces between its words): remove it or write it as a card would",
        )
        for entry in config.lint.scopes
        if not _matchable(entry)
    ]
    findings.extend(
        Finding(CONFIG_FILE, line_of_key(snapshot.config_text, key), "config-invalid", detail, ERROR)
        for key, detail in no_effect
    )
    if config.sanitize.patterns:  # `cairn sanitize` refuses the file over one; lint and pre-commit said nothing
        from cairn.cards.sanitize import rules_for

        try:
            rules_for(config.sanitize, snapshot.config_text)
        except VaultConfigError as exc:
            detail = f"{exc.detail}{SANITIZE_REFUSES}"
            findings.append(Finding(CONFIG_FILE, exc.line, "config-invalid", detail, ERROR))
    disable, ignored = security.effective_disable(e for e in config.lint.disable if e.strip() in known)
    if rel_paths is None or CONFIG_FILE in rel_paths:  # said where cairn.toml is checked, not on every card
        line = line_of_key(snapshot.config_text, "disable")
        findings.extend(security.ignored_warning(CONFIG_FILE, entry, still, line) for entry, still in ignored)
        findings.extend(_context_clamped(config.hook.max_context_chars, snapshot.config_text))
        findings.extend(_renamed_settings(snapshot.config_text))
    rules = registry.select(wanted, disable)
    settings: LintSettings = config.lint
    facts = vault_facts(snapshot)
    bodies: dict[str, frozenset[str]] = {}  # each card's body is read at most once per run
    # each card file of the snapshot is parsed at most once per run: near-duplicate asks for the bodies of cards
    # linted before or after the one it checks, which a lint of every card parsed twice
    parsed: dict[str, tuple[Card | None, list[Finding]]] = {}

    def body_terms(ids: list[str]) -> dict[str, frozenset[str]]:
        bodies.update(_body_terms(snapshot, [i for i in ids if i not in bodies], parsed))
        return {i: bodies[i] for i in ids}

    context = Context(settings, today or dt.date.today(), facts, body_terms)

    every = sorted(snapshot.files)
    plan: dict[str, tuple[Rule, ...]] = {}
    if rel_paths is None:
        plan = dict.fromkeys(every, rules)
    else:
        if CONFIG_FILE in rel_paths:
            config_rules = tuple(r for r in rules if r.reads_config or r is registry.ALWAYS)
            plan.update(dict.fromkeys(every, config_rules))
        for rel in dict.fromkeys(rel_paths):
            if rel != CONFIG_FILE:
                plan[rel] = rules
        # A card naming a removed card in `supersedes` now names no card: lint it too. `gone` is almost always
        # empty, and the ids are read once (a set of every id built per card made one card's lint 1 s slower).
        gone = {card_id_from_path(p) for p in (*removed, *snapshot.removed_cards())} - {None} - set(facts)
        if gone:
            for card in facts.values():
                if gone.intersection(card.supersedes):
                    plan.setdefault(card.path, rules)
    for done, (rel, chosen) in enumerate(plan.items()):
        if progress and done % 100 == 0:
            progress(done, len(plan))
        target = _target(vault, snapshot, rel, parsed)
        for rule in chosen:
            findings.extend(rule.run(target, context))
    if progress and plan:
        progress(len(plan), len(plan))
    findings = sorted(set(findings), key=lambda f: (f.path, f.line, f.rule, f.message))
    return LintReport(tuple(findings), len(plan), snapshot.source)


def _context_clamped(chars: int, config_text: str | None) -> list[Finding]:
    """A warning for `[hook] max_context_chars` outside what the hook keeps to: it reads the nearest bound, so the
    hook drops cards `cairn recall` shows (below it) or keeps what the setting would cut (above)."""
    from cairn.hot.hook import CONTEXT_HARD_LIMIT, CONTEXT_MIN

    if CONTEXT_MIN <= chars <= CONTEXT_HARD_LIMIT:
        return []
    used = min(max(chars, CONTEXT_MIN), CONTEXT_HARD_LIMIT)
    return [
        Finding(
            CONFIG_FILE,
            line_of_key(config_text, "max_context_chars"),
            "config-clamped",
            f"[hook] max_context_chars = {chars} is outside the {CONTEXT_MIN}-{CONTEXT_HARD_LIMIT} characters the "
            f"hook keeps to; it uses {used}: set a value in that range",
            WARNING,
        )
    ]


def _renamed_settings(config_text: str | None) -> list[Finding]:
    """A warning for each setting cairn.toml gives under an old name (`config.RENAMED`): still read, until the release
    the CHANGELOG names, with nothing said before it stops."""
    from cairn.config import RENAMED, toml_loads

    try:
        data = toml_loads(config_text or "")
    except ValueError:  # not TOML: said by the config checks
        return []
    findings = []
    for old, (section, new) in RENAMED.items():
        table = data.get(section)
        if isinstance(table, dict) and old in table:
            findings.append(
                Finding(
                    CONFIG_FILE,
                    line_of_key(config_text, old),
                    "config-renamed",
                    f"[{section}] {old} is the old name of {new}, read until Cairn 0.3 and then ignored: rename it "
                    f"`{new}`",
                    WARNING,
                )
            )
    return findings


def _matchable(entry: str) -> bool:
    """Whether a card's scope tag can match `entry` of `[lint] scopes`: a card's tags are read with invisible
    characters left out and their spaces folded (`cairn.cards.card`), the vocabulary's as given."""
    tags = split_tags(entry)
    return bool(tags) and tags == split_tags(" ".join(strip_invisible(entry).split()))


def _target(vault: Vault, snapshot: Snapshot, rel: str, parsed: dict[str, tuple[Card | None, list[Finding]]]) -> Target:
    """Read and parse one file: from the snapshot, else (a file the staging area does not hold) the working tree.
    `parsed`: the snapshot's card files parsed so far in this run, by path; this one is added."""
    file = snapshot.files.get(rel)
    if file is not None and file.kind == SUBMODULE and rel == "cards/.git":
        why = (
            "cards/ holds a .git folder: git and other tools may take cards/ for a repository of its own, and a "
            "`git add` there for the vault's; remove cards/.git"
        )
        return Target(rel, None, None, (Finding(rel, 0, "path-outside-cards", why),))
    if file is not None and file.kind == SUBMODULE:  # as the index refuses it
        return Target(rel, None, None, (Finding(rel, 0, "path-outside-cards", "a submodule cannot hold cards"),))
    disk = vault.root / rel
    if rel == CARDS_DIR and (file is not None or disk.is_symlink() or disk.is_file()):  # as the index says of it
        return Target(rel, None, None, (Finding(rel, 0, "file-symlink", CARDS_NOT_A_FOLDER),))
    if file is not None and file.kind == SYMLINK:
        return Target(
            rel, None, None, (Finding(rel, 0, "file-symlink", "a card must be a regular file, not a symlink"),)
        )
    data = snapshot.read(rel) if file is not None and file.kind == FILE else None
    in_snapshot = data is not None
    if data is None:
        if disk.is_symlink():
            return Target(
                rel, None, None, (Finding(rel, 0, "file-symlink", "a card must be a regular file, not a symlink"),)
            )
        if not disk.resolve().is_relative_to(vault.root.resolve()):  # a symlinked folder on the way out
            why = "a card must be a regular file in the vault, not reached through a symlinked folder"
            return Target(rel, None, None, (Finding(rel, 0, "file-symlink", why),))
        if not disk.is_file():
            where = "git's staging area" if snapshot.source == STAGED else "folder"
            raise CairnError(f"{rel}: no such file in the vault's {where}")
        data = read_capped(disk, disk.stat().st_size)
    if rel.startswith("cards/") and card_id_from_path(rel) is None:
        return Target(rel, _text(data), None, ())  # not a card: card-path says so
    known = parsed.get(rel) if in_snapshot else None
    card, contract = known if known is not None else parse_card(rel, data)
    if in_snapshot:
        parsed[rel] = (card, contract)
    return Target(rel, _text(data), card, tuple(contract))


def _text(data: bytes) -> str | None:
    """The text rules search, normalised as the parser normalises it (so line numbers agree)."""
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _body_terms(
    snapshot: Snapshot, ids: list[str], parsed: dict[str, tuple[Card | None, list[Finding]]]
) -> dict[str, frozenset[str]]:
    """Terms of some cards' bodies, read in one batch (near-duplicate compares bodies of a few candidates); the
    cards not in `parsed` yet are parsed and added."""
    if not ids:
        return {}
    files = {card_id: snapshot.files.get(f"cards/{card_id}.md") for card_id in ids}
    unread = [f.blob for f in files.values() if f is not None and f.kind == FILE and f.path not in parsed]
    contents = snapshot.read_blobs(unread)
    out: dict[str, frozenset[str]] = {}
    for card_id, file in files.items():
        card: Card | None = None
        if file is not None and file.path in parsed:
            card = parsed[file.path][0]
        elif file is not None and file.blob in contents:
            parsed[file.path] = parse_card(file.path, contents[file.blob])
            card = parsed[file.path][0]
        out[card_id] = terms(card.body) if card is not None else frozenset()
    return out
