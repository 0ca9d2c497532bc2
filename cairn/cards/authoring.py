"""Writing vaults and cards: `cairn init` lays down the template, `cairn add` writes one new card."""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from cairn import gitrepo
from cairn.atomic import ensure_inside, write_atomic
from cairn.cards.card import check_card_id, parse_card, slugify
from cairn.finding import ERROR, Finding
from cairn.hot.errors import CairnError, CardExists, InvalidCard, RefusedWrite
from cairn.hot.vault import Vault
from cairn.lint.runner import lint_files


def template_dir() -> Path:
    """The bundled vault template (package data, so a plain `pip install` has it)."""
    return Path(str(resources.files("cairn") / "templates" / "vault"))


def init_vault(path: Path) -> str:
    """Copy the template into a new or empty folder, `git init` it and make the first commit; returns the commit."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise CairnError(f"{path} is not empty; choose a new folder (nothing was written)")
    path.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template_dir(), path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    repo = gitrepo.init_repo(path)
    return gitrepo.commit_all(repo, "Start a Cairn vault from the template")


STATUSES = ("active", "draft", "retired")


@dataclass(frozen=True, slots=True)
class NewCard:
    """A card to write. review_after: a YYYY-MM-DD date or a duration such as `180d`, as the contract reads it."""

    name: str
    summary: str
    scope: tuple[str, ...] = ()
    card_id: str | None = None
    body: str = ""
    status: str = "active"
    verified_at: dt.date | None = None
    review_after: str | None = None
    aliases: tuple[str, ...] = ()
    not_when: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    source: str | None = None


@dataclass(frozen=True, slots=True)
class PendingCard:
    """A new card rendered and linted in the context of the vault, not written yet."""

    rel_path: str
    text: str
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != ERROR]


class LintRefused(RefusedWrite):
    """`cairn add` found lint errors, or warnings without --force; nothing was written."""


def render_card(card: NewCard) -> str:
    """The card's file: block-style YAML frontmatter in the contract's order, then the body (empty when none)."""
    meta: dict[str, object] = {"name": card.name, "summary": card.summary}
    if card.scope:
        meta["scope"] = list(card.scope)
    meta["verified_at"] = card.verified_at or dt.date.today()  # a YAML date, unquoted
    if card.review_after:
        as_date = _date_or_none(card.review_after)
        meta["review_after"] = as_date or card.review_after.strip()
    if card.status != "active":
        meta["status"] = card.status
    for key, values in (("aliases", card.aliases), ("not_when", card.not_when), ("supersedes", card.supersedes)):
        if values:
            meta[key] = list(values)
    if card.source:
        meta["source"] = card.source
    head = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=100, default_flow_style=False).strip()
    body = card.body.strip()
    return f"---\n{head}\n---\n" + (f"\n{body}\n" if body else "")


def _date_or_none(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        return None


def resolve_card_id(card: NewCard) -> str:
    """The id to write: `--id` as given when it has a folder; else its slug goes under the first scope's folder
    (`<scope>/<slug of the name>` without an id); with neither a folder nor a scope, at the top of `cards/`."""
    folder = slugify(card.scope[0]) if card.scope else ""
    if card.card_id:
        card_id = check_card_id(card.card_id)
        if "/" in card_id or not folder:
            return card_id
        return check_card_id(f"{folder}/{card_id}")
    slug = slugify(card.name)
    return check_card_id(f"{folder}/{slug}" if folder else slug)


def prepare_card(vault: Vault, card: NewCard, *, today: dt.date | None = None) -> PendingCard:
    """Render a new card and lint it as `cairn lint` would with the card in the vault (so name-unique and
    near-duplicate see the other cards). Raises when the id is taken or points outside `cards/`."""
    rel = f"cards/{resolve_card_id(card)}.md"
    text = render_card(card)
    data = text.encode("utf-8")
    parsed, findings = parse_card(rel, data)
    if parsed is None:
        raise InvalidCard("; ".join(f.message for f in findings))
    target = vault.root / rel
    if target.exists() or target.is_symlink():
        raise CardExists(f"{rel} already exists; choose another --id (the file was left untouched)")
    try:
        ensure_inside(vault.cards_dir, target)
    except RefusedWrite:
        raise RefusedWrite(f"{rel} would be written outside the vault's cards/ folder (a symlinked folder?)") from None
    report = lint_files(vault, [rel], today=today, pending={rel: data})
    return PendingCard(rel, text, tuple(f for f in report.findings if f.path == rel))


def write_card(vault: Vault, pending: PendingCard, *, force: bool = False) -> Path:
    """Write a prepared card atomically; never overwrites, never commits. Lint errors refuse it, and warnings
    unless `force`. Returns the path written."""
    errors, warnings = pending.errors, pending.warnings
    if errors:
        raise LintRefused(f"{pending.rel_path} was not written: {_count(errors, 'lint error')}; fix the card")
    if warnings and not force:
        raise LintRefused(
            f"{pending.rel_path} was not written: {_count(warnings, 'lint warning')}; "
            "fix the card, or pass --force to write it anyway"
        )
    target = vault.root / pending.rel_path
    ensure_inside(vault.cards_dir, target)
    write_atomic(target, pending.text.encode("utf-8"), overwrite=False)
    return target


def add_card(vault: Vault, card: NewCard, *, force: bool = False) -> Path:
    """Prepare, lint and write a new card (see `prepare_card` and `write_card`). Returns the path written."""
    return write_card(vault, prepare_card(vault, card), force=force)


def _count(findings: list[Finding], word: str) -> str:
    rules = ", ".join(sorted({f.rule for f in findings}))
    return f"{len(findings)} {word}{'' if len(findings) == 1 else 's'} ({rules})"


__all__ = [
    "CardExists",
    "LintRefused",
    "NewCard",
    "PendingCard",
    "add_card",
    "init_vault",
    "prepare_card",
    "render_card",
    "resolve_card_id",
    "template_dir",
    "write_card",
]
