"""The ordered rule registry: every lint rule, in the order findings are produced, and selection by id or group."""

from __future__ import annotations

from collections.abc import Iterable

from cairn.hot.errors import CairnError
from cairn.lint.model import Rule
from cairn.lint.rules import (
    body_present,
    card_path,
    contract,
    encoded_payload,
    hidden_text,
    id_text,
    internal_link,
    name_length,
    name_unique,
    near_duplicate,
    prompt_injection,
    remote_code,
    review_expired,
    scope_crowding,
    scope_vocabulary,
    secret,
    status_value,
    summary_length,
    supersedes_missing,
    verified_at_future,
    verified_at_stale,
)

RULES: tuple[Rule, ...] = (
    contract.RULE,
    card_path.RULE,
    name_unique.RULE,
    status_value.RULE,
    name_length.RULE,
    summary_length.RULE,
    body_present.RULE,
    verified_at_future.RULE,
    verified_at_stale.RULE,
    review_expired.RULE,
    scope_vocabulary.RULE,
    scope_crowding.RULE,
    supersedes_missing.RULE,
    internal_link.RULE,
    near_duplicate.RULE,
    id_text.RULE,
    hidden_text.RULE,
    secret.RULE,
    prompt_injection.RULE,
    remote_code.RULE,
    encoded_payload.RULE,
)

ALWAYS = contract.RULE  # a card that breaks the contract can be checked by no other rule, so it is always reported


class UnknownRule(CairnError):
    pass


def names() -> list[str]:
    """Every name `--rules` accepts: rule ids, the contract's ids and group names."""
    found: dict[str, None] = {}
    for rule in RULES:
        found.update(dict.fromkeys((rule.id, *rule.emits, *rule.groups)))
    return sorted(found)


def select(wanted: Iterable[str] | None = None, disabled: Iterable[str] = ()) -> tuple[Rule, ...]:
    """The rules to run, in registry order: those named (by id, emitted id or group; None = all) minus disabled."""
    wanted = [w.strip() for w in wanted] if wanted is not None else None
    disabled = [d.strip() for d in disabled]
    known = set(names())
    unknown = [w for w in [*(wanted or ()), *disabled] if w and w not in known]
    if unknown:
        raise UnknownRule(f"unknown rule {', '.join(map(repr, unknown))}; known: {', '.join(names())}")
    chosen = []
    for rule in RULES:
        keys = {rule.id, *rule.emits, *rule.groups}
        if rule is not ALWAYS and (keys & set(disabled) or (wanted is not None and not keys & set(wanted))):
            continue
        chosen.append(rule)
    return tuple(chosen)
