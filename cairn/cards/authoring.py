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
from cairn.hot.errors import CairnError, CardExists, InvalidCard, RefusedWrite
from cairn.hot.vault import Vault


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


@dataclass(frozen=True, slots=True)
class NewCard:
    name: str
    summary: str
    scope: tuple[str, ...] = ()
    card_id: str | None = None
    body: str = ""
    status: str = "active"
    verified_at: dt.date | None = None


def render_card(card: NewCard) -> str:
    meta: dict[str, object] = {"name": card.name, "summary": card.summary}
    if card.scope:
        meta["scope"] = list(card.scope)
    meta["verified_at"] = card.verified_at or dt.date.today()  # a YAML date, unquoted
    if card.status != "active":
        meta["status"] = card.status
    head = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=100).strip()
    body = card.body.strip() or f"# {card.name}\n\n{card.summary}"
    return f"---\n{head}\n---\n\n{body}\n"


def add_card(vault: Vault, card: NewCard) -> Path:
    """Write `cards/<id>.md` atomically; never overwrites, never commits. Returns the path written."""
    card_id = check_card_id(card.card_id) if card.card_id else slugify(card.name)
    rel = f"cards/{card_id}.md"
    text = render_card(card)
    parsed, findings = parse_card(rel, text.encode("utf-8"))
    if parsed is None:
        raise InvalidCard("; ".join(f.message for f in findings))
    target = vault.root / rel
    if target.exists() or target.is_symlink():
        raise CardExists(f"{rel} already exists; choose another --id (the file was left untouched)")
    try:
        ensure_inside(vault.cards_dir, target)
    except RefusedWrite:
        raise RefusedWrite(f"{rel} would be written outside the vault's cards/ folder (a symlinked folder?)") from None
    write_atomic(target, text.encode("utf-8"), overwrite=False)
    return target


__all__ = ["NewCard", "add_card", "init_vault", "template_dir", "render_card", "CardExists"]
