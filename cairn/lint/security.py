"""The security rules outside a pull request's reach, and one card checked as the index checks it.

A vault's own `cairn.toml` may disable policy rules, but not security rules (the `security` group): a pull request
could otherwise switch them off together with the card they would catch. Only the user's configuration may allow
it, rule by rule (`[security] allow_disabled_rules`, read by `cairn.hot.userconfig`). The index runs the same
security rules on every card at the commit it indexes and refuses the cards they fail (`refusals`), so a card
committed with `--no-verify` or pushed past CI is never served.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cairn.cards.card import Card
from cairn.config import LintSettings
from cairn.finding import ERROR, WARNING, Finding
from cairn.hot.errors import CairnError
from cairn.hot.index import SECURITY_RULES_VERSION

if TYPE_CHECKING:
    from cairn.lint.model import Rule

SECURITY = "security"
DISABLE_IGNORED = "security-disable"  # the warning's rule id


def security_rules() -> tuple[Rule, ...]:
    from cairn.lint import registry  # the whole registry: only when a card is checked or a rule disabled

    return tuple(rule for rule in registry.RULES if rule.security)


def allowed_to_disable() -> frozenset[str]:
    """The rule ids (or `security`) the user's configuration allows a vault to disable; none when it cannot be
    read (a broken user configuration relaxes nothing)."""
    try:
        from cairn.hot.userconfig import allowed_disabled_rules

        return frozenset(allowed_disabled_rules())
    except (CairnError, OSError, ValueError):
        return frozenset()


def effective_disable(
    disable: Iterable[str], allowed: frozenset[str] | None = None
) -> tuple[tuple[str, ...], list[tuple[str, tuple[str, ...]]]]:
    """What a vault's `[lint] disable` really disables: its entries, with the security rules the user does not
    allow taken out; and the entries ignored that way, each with the security rule ids that still run."""
    allowed = allowed_to_disable() if allowed is None else allowed
    kept: list[str] = []
    ignored: list[tuple[str, tuple[str, ...]]] = []
    for entry in (e.strip() for e in disable):
        hit = [r.id for r in security_rules() if entry in (r.id, *r.emits, *r.groups)]
        if not hit or entry in allowed or SECURITY in allowed and entry == SECURITY:
            kept.append(entry)
            continue
        permitted = [rule_id for rule_id in hit if rule_id in allowed or SECURITY in allowed]
        kept.extend(permitted)
        still = tuple(rule_id for rule_id in hit if rule_id not in permitted)
        if still:  # all of them permitted (the user allows `security`): the entry is kept whole, nothing ignored
            ignored.append((entry, still))
    return tuple(kept), ignored


def switched_off(disable: Iterable[str], allowed: frozenset[str] | None = None) -> tuple[str, ...]:
    """The ids of the security rules a vault's `[lint] disable` really switches off (`effective_disable`), sorted:
    what `refusals` skips, so an index records it and is rebuilt when it changes."""
    kept, _ = effective_disable(disable, allowed)
    disabled = set(kept)
    if not disabled:  # most vaults: a current index is then checked without loading the rules
        return ()
    return tuple(sorted(rule.id for rule in security_rules() if disabled & {rule.id, *rule.emits, *rule.groups}))


def ignored_warning(config_file: str, entry: str, still: tuple[str, ...], line: int = 0) -> Finding:
    """The warning for a `[lint] disable` entry (at `line` of the vault's `config_file`) that names security rules
    the user's configuration does not allow; it names the user's configuration file this process reads."""
    from cairn.hot.userconfig import config_file as user_config_file

    return Finding(
        config_file,
        line,
        DISABLE_IGNORED,
        f"[lint] disable names '{entry}', but a vault's cairn.toml cannot turn off security rules "
        f"({', '.join(still)} still run); only the user's own configuration can allow it "
        f"([security] allow_disabled_rules in {user_config_file()})",
        WARNING,
    )


# Stored in the index: a change of the security rules makes the next `cairn index` re-read every card, and the hook
# serve nothing from an index the old rules checked until it is rebuilt. Change it in cairn/hot/index.py.
VERSION = SECURITY_RULES_VERSION


def refused_text(text: str) -> str | None:
    """What the security rules refuse in a text no card holds (git's author names and e-mails, a card's former
    paths: `cairn show` and MCP `show` give them beside a card), read as a card's served name is read: the first
    refusal's rule and message, or None when they refuse nothing."""
    from cairn.lint.model import Context, Target

    card = Card(id="provenance", path="cards/provenance.md", name=text, summary="")
    target = Target(card.path, None, card, ())
    context = Context(LintSettings(), dt.date.today(), {}, lambda ids: {})
    for rule in security_rules():
        for finding in rule.run(target, context):
            if finding.severity == ERROR:
                return f"{finding.rule}: {finding.message}"
    return None


def refusals(
    rel_path: str, data: bytes, card: Card, disable: Iterable[str] = (), *, off: tuple[str, ...] | None = None
) -> list[Finding]:
    """The security errors that keep a parsed card out of the index (the rules lint runs, as lint reads the card;
    `disable`: the vault's `[lint] disable`, which counts only where the user allows it; or `off`, the rules it
    switches off, when the caller has worked them out once for many cards): one finding, the first, its message
    starting with `refused:` and counting the others, so `cairn index` says one line per card."""
    from cairn.lint.model import Context, Target

    skipped = set(switched_off(disable) if off is None else off)
    text = data.decode("utf-8", "replace").removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    target = Target(rel_path, text, card, ())
    context = Context(LintSettings(), dt.date.today(), {}, lambda ids: {})
    out: list[Finding] = []
    for rule in security_rules():
        if rule.id in skipped:
            continue
        out.extend(f for f in rule.run(target, context) if f.severity == ERROR)
    if not out:
        return []
    first, *more = sorted(set(out), key=lambda f: (f.line, f.rule, f.message))
    also = f" (and {len(more)} more: `{lint_command(rel_path)}`)" if more else ""
    return [Finding(first.path, first.line, first.rule, f"refused: {first.message}{also}")]


def lint_command(rel_path: str, vault_arg: str = "") -> str:
    """`cairn lint PATH` for one card, `vault_arg` (` --vault X`) asking the vault from any folder."""
    return f"cairn lint {shlex.quote(rel_path)}{vault_arg}"


def refusal_asking(message: str, rel_path: str, vault_arg: str) -> str:
    """A refusal's message as the index stores it (`refusals` wrote it once for every reader), its `cairn lint PATH`
    given the ` --vault X` the user named: run as printed from another folder, the bare one finds no such file."""
    return message.replace(f"`{lint_command(rel_path)}`", f"`{lint_command(rel_path, vault_arg)}`")
