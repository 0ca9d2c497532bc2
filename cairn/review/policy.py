"""What a pull request may not do on its author's word: the changes `cairn review` blocks for a maintainer.

A vault's protections live in the vault: its gates and lint policy in `cairn.toml`, its negative eval cases in
`evals/`, its safety cards in `cards/`, and the hooks and workflows that run Cairn in `.pre-commit-config.yaml`,
`.github/` and `hooks/`. A pull request can change all of them, and the checks it would weaken are the ones that
judge it. So review does not weigh such a change: it blocks it, says why, and says what a maintainer must check.

Blocked (each a `Blocked` with the reason in one line):
- gates: cairn.toml deleted or moved (the hook serves no vault without it); `[recall]` min_lead, min_coverage,
  min_margin, min_evidence, min_confidence or unknown_weight lowered, max_cards or instruction_weight raised (agents'
  everyday words then weigh more toward the evidence floor and coverage), semantic turned off (its veto keeps out
  cards a prompt does not mean, and review's eval figures, lexical, do not show it gone); `[hook]` max_context_chars
  raised;
- lint policy: `[lint] disable` gains a rule or group (security rules named as such), a `[lint]` limit loosened
  (summary_max_chars, max_age_days, max_scope_share, max_scopes_per_card, duplicate_threshold raised,
  crowding_min_cards raised, the scope vocabulary emptied); `[sanitize]` patterns or internal domains removed;
- evals: a cases file under `evals/` deleted or moved; a negative case (expect: []) removed, turned positive or
  given another query;
- cards: a card removed, retired or set to draft, expired by a new review_after or verified_at (or by a commit dated
  before its verified_at, from which the index counts review_after), given new `not_when` words, or
  superseded by a new `supersedes` entry, by a draft or retired card made active, by a card the base's index left out
  (a security rule refused it) that it now holds, or by being moved to an id an active card's `supersedes` already
  names (each silences a lesson for every agent, or for every prompt with a word);
- files that run code or decide what runs: `.pre-commit-config.yaml`, `.pre-commit-hooks.yaml`, `.github/`, the
  other forges' pipelines (`.gitlab-ci.yml`, `.gitlab/`, `.gitea/`, `.forgejo/`), `CODEOWNERS`, `hooks/`,
  `.githooks/`, `.husky/`, lefthook's and mise's files, agent settings (`.claude/`, `.codex/`, `.gemini/`,
  `.cursor/`, `.mcp.json`) and instructions (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md`, `.cursorrules`, anywhere),
  editor and container tasks (`.vscode/`, `.devcontainer/`), `.envrc`, `.gitattributes` (it can hide a file's
  diff) and `.gitmodules`;
  in any letter case (a checkout on macOS or Windows reads `.Claude/` as `.claude/`), and a folder's name itself (a
  symlink `.claude` to another folder);
- the repository's `.mailmap`: once merged, `cairn show` and the next reviews credit commits to the names it gives, so
  a line can put a trusted teammate's name on a stranger's cards.

Not blocked, shown to the reviewer: ranking weights, a stricter setting, a new scope in the vocabulary, a card's
changed `scope` or aliases (its field changes are listed whole, and the routing impact shows cases it no longer
gets), new cards and new eval cases.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cairn.config import Config
from cairn.quality.evaluate import Case

CONFIG = "cairn.toml"


@dataclass(frozen=True, slots=True)
class Blocked:
    """One change a maintainer must check. kind: gates, lint-policy, evals, cards or files; path: the file (repository
    path for files outside the vault); reason: what the change does, one line; check: what the maintainer checks."""

    kind: str
    path: str
    reason: str
    check: str


@dataclass(frozen=True, slots=True)
class SettingChange:
    """One cairn.toml setting that differs: `section.key`, as the base and HEAD read it (defaults filled in)."""

    setting: str
    base: Any
    head: Any


# -- cairn.toml ---------------------------------------------------------------------------------------------------

# (section, key) -> the direction that weakens it: "down" (lowering it lets more through) or "up".
_WEAKER: dict[tuple[str, str], str] = {
    ("recall", "min_lead"): "down",
    ("recall", "min_coverage"): "down",
    ("recall", "min_margin"): "down",
    ("recall", "min_evidence"): "down",
    ("recall", "min_confidence"): "down",
    ("recall", "max_cards"): "up",
    ("recall", "unknown_weight"): "down",  # words no card holds count less against coverage: a weaker coverage gate
    # agent instruction words ("fix", "readme", "check") weigh more toward the evidence floor and coverage: weaker gates
    ("recall", "instruction_weight"): "up",
    ("hook", "max_context_chars"): "up",
    ("lint", "summary_max_chars"): "up",
    ("lint", "max_age_days"): "up",
    ("lint", "max_scope_share"): "up",
    ("lint", "max_scopes_per_card"): "up",
    ("lint", "duplicate_threshold"): "up",
    ("lint", "crowding_min_cards"): "up",
}
_GATE_CHECK = (
    "weaker gates inject cards into more prompts; check the eval figures below and that evals/ still holds the "
    "negative cases, and merge only if the team chose these values"
)
_LINT_CHECK = "the lint policy judges this very pull request; merge only if the team chose to loosen it"
_CONTEXT_CHECK = (
    "more card text reaches the agent with every prompt a card is injected into; merge only if the team chose this "
    "budget"
)


def settings_changes(base: Config, head: Config) -> list[SettingChange]:
    """Every setting whose value differs between the two configurations, in file order."""
    before, after = base.to_dict(), head.to_dict()
    out = []
    for section, values in after.items():
        for key, value in values.items():
            old = before.get(section, {}).get(key)
            if old != value:
                out.append(SettingChange(f"{section}.{key}", old, value))
    return out


def config_blocks(base: Config, head: Config, security_rules: Mapping[str, Sequence[str]]) -> list[Blocked]:
    """The weakening changes between two readings of cairn.toml. security_rules: each lint name (rule id, emitted
    id or group) that switches off a security rule -> the security rule ids it switches off."""
    out: list[Blocked] = []
    for change in settings_changes(base, head):
        section, key = change.setting.split(".", 1)
        way = _WEAKER.get((section, key))
        if way is not None and isinstance(change.base, (int, float)) and isinstance(change.head, (int, float)):
            weaker = change.head < change.base if way == "down" else change.head > change.base
            if weaker:
                verb = "lowers" if way == "down" else "raises"
                kind = "lint-policy" if section == "lint" else "gates"
                check = {"lint": _LINT_CHECK, "hook": _CONTEXT_CHECK}.get(section, _GATE_CHECK)
                reason = f"{CONFIG} {verb} [{section}] {key} from {_num(change.base)} to {_num(change.head)}"
                out.append(Blocked(kind, CONFIG, reason, check))
    if base.recall.semantic and not head.recall.semantic:
        out.append(
            Blocked(
                "gates",
                CONFIG,
                f"{CONFIG} turns off [recall] semantic: the semantic veto no longer keeps out cards a prompt does not mean "
                "(the eval figures below are lexical and do not show it)",
                _GATE_CHECK,
            )
        )
    # entries as lint reads them (`security.effective_disable`): " secret" switches the secret rule off
    old_off = {name.strip() for name in base.lint.disable}
    new_off = list(dict.fromkeys(name.strip() for name in head.lint.disable))
    added = [name for name in new_off if name not in old_off]
    if added:
        security = sorted({rule for name in added for rule in security_rules.get(name, ())})
        what = ", ".join(added)
        if security:
            out.append(
                Blocked(
                    "lint-policy",
                    CONFIG,
                    f"{CONFIG} disables security lint rules in [lint] disable: {what} (switches off "
                    f"{', '.join(security)})",
                    "a vault's own cairn.toml must not switch security rules off: a pull request could then carry "
                    "injection or secrets past lint; a vault of security lessons allows them in a user or "
                    "organisation setting instead",
                )
            )
        else:
            out.append(
                Blocked("lint-policy", CONFIG, f"{CONFIG} disables lint rules in [lint] disable: {what}", _LINT_CHECK)
            )
    if base.lint.scopes and not head.lint.scopes:
        out.append(Blocked("lint-policy", CONFIG, f"{CONFIG} empties the [lint] scopes vocabulary", _LINT_CHECK))
    for key in ("patterns", "internal_domains"):
        gone = [v for v in getattr(base.sanitize, key) if v not in getattr(head.sanitize, key)]
        if gone:
            out.append(
                Blocked(
                    "lint-policy",
                    CONFIG,
                    f"{CONFIG} removes [sanitize] {key}: {', '.join(gone)}",
                    "`cairn sanitize` redacts less from the lessons teammates import; merge only if that is intended",
                )
            )
    return out


def config_removed() -> Blocked:
    """cairn.toml deleted or moved: the prompt hook serves no folder without it, so every card goes silent."""
    return Blocked(
        "gates",
        CONFIG,
        f"removes {CONFIG} (deleted or moved): the prompt hook serves no vault without it, so agents get none of its "
        "cards",
        "merge only if the team means to stop serving this vault; otherwise keep cairn.toml where it was",
    )


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- eval cases ---------------------------------------------------------------------------------------------------


def eval_blocks(
    base_files: Mapping[str, str],
    head_files: Mapping[str, str],
    base_cases: Iterable[Case],
    head_cases: Iterable[Case],
    unreadable: Mapping[str, str] | None = None,
) -> list[Blocked]:
    """Cases files deleted, moved or made unreadable (path -> blob at each end; unreadable: path -> why HEAD's
    cannot be read), and negative cases removed or changed."""
    out: list[Blocked] = [
        Blocked(
            "evals",
            path,
            f"breaks the eval cases file {path}, so none of its cases run ({why})",
            "the eval cases are what shows a change lets cards into prompts they should stay out of; merge only "
            "once the file reads again",
        )
        for path, why in (unreadable or {}).items()
    ]
    head_by_blob = {blob: path for path, blob in head_files.items() if path not in base_files}
    for path, blob in base_files.items():
        if path in head_files:
            continue
        moved = head_by_blob.get(blob)
        reason = f"moves the eval cases file {path} to {moved}" if moved else f"deletes the eval cases file {path}"
        out.append(
            Blocked(
                "evals",
                path,
                reason,
                "the eval cases are what shows a change lets cards into prompts they should stay out of; keep them "
                "where they were unless the team moved them on purpose",
            )
        )
    head = {c.id: c for c in head_cases}
    check = (
        "a negative case keeps cards out of prompts they do not fit; remove or change one only when the team "
        "agrees it was wrong"
    )
    for case in base_cases:
        if case.positive:
            continue
        now = head.get(case.id)
        if now is None:
            out.append(Blocked("evals", case.id, f"removes the negative eval case {case.id}", check))
        elif now.positive:
            expected = ", ".join(now.expect)
            out.append(
                Blocked("evals", case.id, f"turns the negative eval case {case.id} positive ({expected})", check)
            )
        elif now.query != case.query:
            out.append(Blocked("evals", case.id, f"changes the query of the negative eval case {case.id}", check))
    return out


# -- cards --------------------------------------------------------------------------------------------------------

_SILENCE_CHECK = (
    "agents stop getting this lesson; check that the team agreed it is wrong or replaced, and that it is not a "
    "safety lesson an attacker wants gone"
)


def card_blocks(
    status: str,
    card_id: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    today: dt.date,
    was_card: Callable[[str], bool] = lambda card_id: True,
) -> list[Blocked]:
    """A card change that silences a lesson. before/after: the card's record at the base and HEAD (None: absent).
    was_card: whether an id named a card at the base (a `supersedes` entry naming none silences nothing: a typo, or
    an id in another case or Unicode form than the card's, which the hook matches exactly)."""
    path = f"cards/{card_id}.md"
    if status == "removed" and before is not None and before.get("status", "active") == "active":
        return [Blocked("cards", path, f"removes the card {card_id}", _SILENCE_CHECK)]
    out: list[Blocked] = []
    if after is None:
        return out
    was_active = before is not None and before.get("status", "active") == "active"
    now = after.get("status", "active")
    if was_active and now != "active":
        verb = "retires" if now == "retired" else f"sets to {now}"
        out.append(Blocked("cards", path, f"{verb} the card {card_id} (status was active, now {now})", _SILENCE_CHECK))
    if was_active and now == "active" and before is not None:
        old_end, new_end = _date(before.get("expires_on")), _date(after.get("expires_on"))
        if new_end is not None and today > new_end and not (old_end is not None and today > old_end):
            out.append(
                Blocked(
                    "cards",
                    path,
                    f"expires the card {card_id} ({_dates_moved(before, after)}: past since {new_end.isoformat()})",
                    _SILENCE_CHECK,
                )
            )
    if was_active and before is not None:
        old_nw = set(before.get("not_when") or ())
        added = [w for w in after.get("not_when") or () if w not in old_nw]
        if added:
            out.append(
                Blocked(
                    "cards",
                    path,
                    f"adds not_when to the card {card_id}: {', '.join(added)} (a prompt that says one never gets it)",
                    "a broad not_when silences a lesson as surely as retiring it; check that each word names a "
                    "situation the lesson does not fit",
                )
            )
    old_sup = set(before.get("supersedes") or ()) if before is not None else set()
    if not was_active and now == "active":
        old_sup = set()  # a draft or retired card made active: only an active card supersedes, so each entry now does
    out += [
        supersedes(card_id, target)
        for target in after.get("supersedes") or ()
        if target not in old_sup and was_card(target)
    ]
    return out


def supersedes(card_id: str, target: str) -> Blocked:
    """The card `card_id` now supersedes the card `target`, which agents got: they stop getting it."""
    return Blocked(
        "cards",
        f"cards/{card_id}.md",
        f"the card {card_id} supersedes {target}: {target} is no longer injected",
        f"agents get {card_id} instead of {target}; check that it says the same or better, and not the opposite",
    )


def renamed_into_superseded(old_id: str, card_id: str, superseders: Sequence[str]) -> Blocked:
    """A card moved to an id that active cards already supersede: no `supersedes` list changed, yet agents stop
    getting it."""
    by = ", ".join(superseders)
    return Blocked(
        "cards",
        f"cards/{card_id}.md",
        f"moves the card {old_id} to {card_id}, an id {by} supersedes: {card_id} is no longer injected",
        _SILENCE_CHECK,
    )


def expired_by_commit_day(card_id: str, expires_on: str) -> Blocked:
    """A card whose `verified_at` is later than the day its commit gives: the index counts `review_after` from the
    commit's day (`cairn.index.expiry`), a date the committer sets, so a backdated commit expires it unseen."""
    return Blocked(
        "cards",
        f"cards/{card_id}.md",
        f"expires the card {card_id} (its verified_at is later than the day its commit gives, so the index counts "
        f"review_after from that day: past since {expires_on})",
        _SILENCE_CHECK,
    )


def _dates_moved(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What moved a card's review date: each of verified_at and review_after that changed, as it was and is (an
    older verified_at under the same `review_after: 365d` expires a card as surely as a nearer date does)."""
    keys = [key for key in ("verified_at", "review_after") if before.get(key) != after.get(key)] or ["review_after"]
    return "; ".join(f"{key} was {before.get(key) or 'unset'}, now {after.get(key) or 'unset'}" for key in keys)


def _date(value: object) -> dt.date | None:
    try:
        return dt.date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


# -- files that run code -----------------------------------------------------------------------------------------

_RUNS_FILES = {
    ".pre-commit-config.yaml": "pre-commit runs the commands it names on every teammate's next commit",
    ".pre-commit-hooks.yaml": "it defines hooks that pre-commit runs for whoever uses this repository",
    ".envrc": "direnv runs it in every teammate's shell that enters the folder",
    ".gitattributes": "it can hide a file's changes from the pull request's diff (-diff, linguist-generated)",
    ".gitmodules": "it points the repository at other repositories' code",
    ".gitlab-ci.yml": "GitLab runs the pipeline it defines (it decides whether review runs)",
    "codeowners": "it names who must approve changes (GitHub reads it at the top, in docs/ and in .github/)",
    ".mcp.json": "it names MCP servers, commands an agent working in this repository starts",
    "claude.md": "every agent working in this repository reads it as instructions",
    "agents.md": "every agent working in this repository reads it as instructions",
    "gemini.md": "every agent working in this repository reads it as instructions",
    ".cursorrules": "every agent working in this repository reads it as instructions",
}
# Every name lefthook reads its configuration from (lefthook.dev/configuration: each format, with or without a dot,
# and the `-local` file merged over it); a name anywhere covers `.config/lefthook.yml` too. Only `.yml` was named:
# a `lefthook.yaml` or `lefthook.toml` that runs code on every teammate's commit passed review.
_RUNS_FILES.update(
    {
        f"{dot}lefthook{local}.{ext}": "lefthook installs the git hooks it names on teammates' machines"
        for dot in ("", ".")
        for local in ("", "-local")
        for ext in ("yml", "yaml", "toml", "json", "jsonc")
    }
)
_MISE_WHY = "mise runs its hooks and tasks in every teammate's shell that enters the folder"


def _mise_config(path: str) -> bool:
    """Whether mise reads `path` (folded to lower case) as configuration (mise.jdx.dev/configuration): a TOML file
    named mise or rtx, with or without a dot and with any `.local` or environment part (`mise.local.toml`,
    `.mise.staging.toml`), or any TOML file in a folder named mise (`.config/mise/config.toml`, `mise/config.toml`,
    `.mise/conf.d/x.toml`). Only `mise.toml` and `.mise.toml` were named: the other names run the same hooks."""
    if not path.endswith(".toml"):
        return False
    *folders, name = path.split("/")
    stem = name.removeprefix(".").split(".", 1)[0]
    return stem in ("mise", "rtx") or any(folder in ("mise", ".mise") for folder in folders)


_RUNS_FOLDERS = {
    ".github": "it holds the workflows (they run with the repository's token and decide whether review runs) and CODEOWNERS",
    ".gitea": "it holds Gitea's workflows, which run like GitHub's and decide whether review runs",
    ".forgejo": "it holds Forgejo's workflows, which run like GitHub's and decide whether review runs",
    ".gitlab": "it holds GitLab's CODEOWNERS and the templates its pipelines include",
    "hooks": "git hook scripts run on teammates' machines",
    ".githooks": "git hook scripts run on teammates' machines",
    ".husky": "git hook scripts run on teammates' machines",
    ".lefthook": "lefthook runs the scripts in it as git hooks on teammates' machines (its `source_dir`)",
    ".lefthook-local": "lefthook runs the scripts in it as git hooks on teammates' machines (its `source_dir_local`)",
    ".claude": "agent settings can add hooks and commands that agents run in this repository",
    ".codex": "agent settings can add hooks and commands that agents run in this repository",
    ".gemini": "agent settings can add hooks and commands that agents run in this repository",
    ".vscode": "editor tasks and settings can run commands when the folder is opened",
    ".devcontainer": "a dev container definition runs commands when the container is built",
    ".cursor": "agent settings and rules, which agents working in this repository follow",
}
_FILE_CHECK = "read the whole diff of this file: it runs code or decides what runs, outside what Cairn lints"
MAILMAP = ".mailmap"  # at the repository's top only: git and `cairn.mailmap` read no other
_MAILMAP_WHY = (
    "it renames commit authors: once merged, cairn show and the next reviews credit commits to the names it gives"
)
_MAILMAP_CHECK = (
    "each line must map a teammate's own old name or e-mail to their current one, and credit no one with commits "
    "someone else made"
)


def file_blocks(paths: Iterable[str], vault_prefix: str) -> list[Blocked]:
    """Files the range touches (repository paths) that run code: at the repository's or the vault's top for
    folders, anywhere for the named files. Names are compared without case: a checkout on macOS or Windows reads
    `.Claude/settings.json` as `.claude/settings.json`. A folder's own name counts too: `.claude` made a symlink to
    another folder gives the agent that folder's settings."""
    out: list[Blocked] = []
    for path in paths:
        folded = path.lower()
        name = folded.rsplit("/", 1)[-1]
        why = _RUNS_FILES.get(name) or (_MISE_WHY if _mise_config(folded) else None)
        if name.endswith(".md") and folded.startswith(f"{vault_prefix.lower()}cards/"):
            why = None  # a card with such an id (cards/tools/claude.md): reviewed as a card, every field shown whole
        if why is None:
            for top in {"", vault_prefix.lower()}:
                if not folded.startswith(top):
                    continue
                first = folded[len(top) :].split("/", 1)[0]
                if first in _RUNS_FOLDERS:
                    why = _RUNS_FOLDERS[first]
                    break
        if why is not None:
            out.append(Blocked("files", path, f"touches {path}: {why}", _FILE_CHECK))
        elif folded == MAILMAP:
            out.append(Blocked("files", path, f"touches {path}: {_MAILMAP_WHY}", _MAILMAP_CHECK))
    return out
