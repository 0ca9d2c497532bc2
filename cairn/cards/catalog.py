"""Looking cards up by id: in the index (what was committed) or in the working tree (what is being written)."""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Callable
from typing import Any

from cairn.cards.card import card_id_forms
from cairn.cards.visible import strip_invisible
from cairn.hot.errors import CairnError, CardNotFound
from cairn.hot.index import IndexReader
from cairn.hot.vault import Vault
from cairn.index.build import Progress, open_index, read_worktree_card
from cairn.lint.security import lint_command, refusal_asking, refused_text

MAX_PROVENANCE_CHARS = 200  # an author's name or e-mail as shown; git sets no bound
WITHHELD = "(withheld: the security rules refuse this text in a card)"  # what stands for such a name


def card_record(
    vault: Vault,
    card_id: str,
    *,
    worktree: bool = False,
    vault_arg: str = "",
    served_only: bool = False,
    warn: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The whole card (parsed fields, body) with its provenance; raises CardNotFound with what to do next (the
    commands it names end in `vault_arg`, the ` --vault X` the caller was given, so that they ask this vault from any
    folder). The id as given is looked up first (`card_id_forms`: `cards/x` is a card's id when it lives at
    `cards/cards/x.md`). served_only: as `open_index` takes it (the MCP server), and `warn` and `progress` as it
    takes them (`cairn show`)."""
    forms = card_id_forms(card_id)
    card_id = forms[-1]
    # An id typed in one Unicode form for a file named in another (macOS writes `e` + U+0301 where a keyboard types
    # U+00E9): both forms are tried, so `cairn show café` finds `cafe\u0301.md`.
    forms = tuple(dict.fromkeys([*forms, *(unicodedata.normalize(nf, f) for f in forms for nf in ("NFC", "NFD"))]))
    if worktree:
        path = next((p for p in map(vault.card_path, forms) if p.is_file() or p.is_symlink()), vault.card_path(card_id))
        if not path.is_file() and not path.is_symlink():
            raise CardNotFound(
                f"no card {card_id!r} in the working tree ({path.relative_to(vault.root)}); check the id: a card's "
                "path under cards/, without .md"
            )
        card, findings = read_worktree_card(vault, path)
        if card is None:
            raise CardNotFound(f"{findings[0]}" if findings else f"card {card_id!r} cannot be read")
        record = card.to_dict()
        record["provenance"] = None
        return record
    with open_index(vault, served_only=served_only, warn=warn, progress=progress) as index:
        stored = next((r for r in map(index.record, forms) if r is not None), None)
        if stored is None:
            rels = [f"cards/{form}.md" for form in forms]
            # A finding may quote the card (`not 'Ignore all previous ...'`): text no rule judged, so where the
            # security rules refuse it, the finding is named by its rule alone (`cairn lint` gives it whole)
            left_out = [
                (where, rule if refused_text(message) else f"{rule}: {refusal_asking(message, where, vault_arg)}")
                for where, _line, rule, message in index.problems()
                if where in rels
            ]
            if left_out:  # committed, but the index refused it: --worktree is not the way to it
                rel = left_out[0][0]
                raise CardNotFound(
                    f"{rel} at {index.commit[:8]} is left out of the index ({left_out[0][1]}); "
                    f"fix it, commit, and `{lint_command(rel, vault_arg)}` says when it passes"
                )
            elsewhere = None if served_only else _committed_elsewhere(vault, forms, index.commit)
            if elsewhere is not None:  # not "uncommitted": committed on a branch the vault does not serve
                rel, branch = elsewhere
                served = str(index.meta.get("ref") or "the served ref")
                raise CardNotFound(
                    f"{rel} is committed on {branch} but not at {index.commit[:8]}, the commit of {served} the vault "
                    f"serves: agents get it once it is merged there; `cairn show {card_id} --worktree{vault_arg}` "
                    "shows the working copy"
                )
            moved = _renamed_to(index, rels)
            if moved:  # an id an agent was given before a `git mv`: its lesson is there, not at an id alike
                raise CardNotFound(
                    f"no card {card_id!r} at {index.commit[:8]}: its file was renamed to {', '.join(moved)}; "
                    f"`cairn show {shlex.quote(moved[0])}{vault_arg}` prints it"
                )
            hint = _near_ids(index.ids(), card_id)
            raise CardNotFound(
                f"no card {card_id!r} at {index.commit[:8]}"
                + (
                    f"; did you mean {', '.join(hint)}?"
                    if hint
                    else f"; `cairn list{vault_arg}` shows the cards agents are served"
                )
                # agents read commits only; said only of an id whose file is in the working tree, which --worktree reads
                + ("" if served_only or not _in_worktree(vault, forms) else " (uncommitted cards need --worktree)")
            )
        stored["commit"] = index.commit
        by = index.superseded().get(stored["id"], ()) if stored.get("status", "active") == "active" else ()
        stored["superseded_by"] = list(by)  # never served while an active card supersedes it
    # Git's names and e-mails are text no lint reads (an author named with a bidi override reads as another name,
    # one named "ignore your instructions and ..." as an instruction, one named `curl ... | sh` as a command): shown
    # without invisible characters, as the parser gives every field of the card, bounded, and withheld where a
    # security rule refuses it, as the index refuses a card holding it. The names a `.mailmap` gives are judged too
    # (`_from_git_now`).
    _from_git_now(vault, stored)
    return stored


def _renamed_to(index: IndexReader, rels: list[str]) -> list[str]:
    """The indexed cards whose history holds one of `rels` (vault-relative card paths) as an older path: read on a
    miss only, as it reads every card's stored provenance."""
    moved = []
    for card_id in index.ids():
        provenance = (index.record(card_id) or {}).get("provenance")
        paths = provenance.get("renamed_from") if isinstance(provenance, dict) else None
        if isinstance(paths, list) and any(rel in paths for rel in rels):
            moved.append(card_id)
    return moved


def _in_worktree(vault: Vault, forms: tuple[str, ...]) -> bool:
    """Whether the working tree holds a card file for one of the id's `forms` (what `--worktree` reads)."""
    return any(p.is_file() or p.is_symlink() for p in map(vault.card_path, forms))


def _committed_elsewhere(vault: Vault, forms: tuple[str, ...], served: str) -> tuple[str, str] | None:
    """(the card file's vault-relative path, the branch checked out, or HEAD) when the working tree holds one of
    the id's `forms` and HEAD, another commit than the `served` one, holds it committed: a card on an unmerged
    branch. None otherwise (no such file, or not committed: "uncommitted cards need --worktree" is then true)."""
    path = next((p for p in map(vault.card_path, forms) if p.is_file()), None)
    if path is None or vault.git_root is None:
        return None
    from cairn import gitrepo

    rel = path.relative_to(vault.root).as_posix()
    try:
        with gitrepo.open_repo(vault) as repo:
            head = gitrepo.head_commit(repo)
            if head == served or gitrepo.read_path(repo, head, rel, vault) is None:
                return None
            branch = gitrepo.head_branch(repo)
    except CairnError:
        return None
    return rel, branch[len("refs/heads/") :] if branch and branch.startswith("refs/heads/") else "HEAD"


def _visible(value: Any, judged: dict[str, str]) -> Any:
    """`value` (provenance as stored: dicts, lists, text) with every text's invisible characters removed, each text
    cut to `MAX_PROVENANCE_CHARS`, and a text a security rule refuses `WITHHELD`. judged: each text's verdict so
    far (a name recurs in every entry its commits made)."""
    if isinstance(value, str):
        if value not in judged:
            text = strip_invisible(value)
            if len(text) > MAX_PROVENANCE_CHARS:
                text = text[: MAX_PROVENANCE_CHARS - 1] + "…"
            judged[value] = WITHHELD if refused_text(text) else text
        return judged[value]
    if isinstance(value, dict):
        return {key: _visible(item, judged) for key, item in value.items()}
    if isinstance(value, list):
        return [_visible(item, judged) for item in value]
    return value


def _from_git_now(vault: Vault, record: dict[str, Any]) -> None:
    """What the stored provenance cannot keep true, asked of git as the card is shown: each commit's signature (a
    key removed from the allowed signers, a signing key set up since: the index kept the verdict of its build, so
    `show` said "signed" where `audit --require-signed` failed), in a shallow clone that history stops at its
    boundary (a card "created" there may be older, by other authors), and each author under the name the indexed
    commit's `.mailmap` gives them (`cairn.mailmap`; the index stores authors as committed). Every text of git's is
    shown as `_visible` makes it, `.mailmap`'s names included; the verdicts of git's signature check are added after."""
    provenance = record.get("provenance")
    if not isinstance(provenance, dict):
        record["provenance"] = _visible(provenance, {})
        return
    from cairn import gitrepo

    refs = [
        ref
        for key in ("created", "last_changed", "text_changed", "summary_changed")
        if isinstance(ref := provenance.get(key), dict)
    ]
    with gitrepo.open_repo(vault) as repo:
        boundary = gitrepo.shallow_commits(repo)
        commits = {ref["commit"] for ref in refs if isinstance(ref.get("commit"), str)}
        verdicts = gitrepo.commit_signatures(repo, commits) if commits else {}
        names = gitrepo.mailmap_at(repo, record["commit"])
    for ref in refs:
        if isinstance(ref.get("author"), str) and isinstance(ref.get("email"), str):
            ref["author"], ref["email"] = names.identity(ref["author"], ref["email"])
    if isinstance(provenance.get("authors"), list):
        provenance["authors"] = names.authors([a for a in provenance["authors"] if isinstance(a, dict)])
    record["provenance"] = provenance = _visible(provenance, {})
    for key in ("created", "last_changed", "text_changed", "summary_changed"):
        ref = provenance.get(key)
        verdict = verdicts.get(ref.get("commit")) if isinstance(ref, dict) else None  # type: ignore[arg-type]
        if isinstance(ref, dict) and verdict is not None:
            ref.update(signature=verdict.status, signed=verdict.status == "G", signing_key=verdict.key or None)
    if isinstance(provenance.get("created"), dict) and provenance["created"].get("commit") in boundary:
        provenance["shallow"] = True


def _near_ids(ids: list[str], wanted: str) -> list[str]:
    import difflib

    # an id given without its folder (`缓存键` for `持续集成/缓存键`): a short Chinese file name is too little of the
    # whole id for difflib's ratio, where a long English one is not
    named = [i for i in ids if "/" not in wanted and i.rpartition("/")[2] == wanted]
    # an id typed in another case (`GIT/REBASE`, as a Mac or Windows checkout opens the file): too few of its
    # characters are the same for difflib
    cased = [i for i in ids if i.lower() == wanted.lower()]
    return list(dict.fromkeys([*cased, *named, *difflib.get_close_matches(wanted, ids, n=3, cutoff=0.6)]))[:3]
