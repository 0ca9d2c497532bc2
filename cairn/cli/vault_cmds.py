"""Commands that make and read a vault: init, add, index, show."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cairn.cards import authoring, catalog
from cairn.cards.card import slugify
from cairn.cli.common import echo, echo_json, errors_to_exit, json_option, open_vault, progress_bar, vault_option
from cairn.hot.errors import CairnError
from cairn.hot.vault import find_vault
from cairn.index import build as indexer
from cairn.terminal import clean_line


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@errors_to_exit
def init(path: Path) -> None:
    """Create a vault at PATH from the template, `git init` it, commit and index it.

    \b
    Example:
      cairn init ~/team-lessons && cd ~/team-lessons && pre-commit install
    """
    commit = authoring.init_vault(path)
    # Index right away, so the agent hook has something to serve on its very first prompt.
    report = indexer.build_index(find_vault(path))
    echo(f"Created a vault at {path} (commit {commit[:8]}) and indexed its {report.n_cards} example cards.")
    echo("Next: `cairn install claude-code` (or codex, gemini), then write cards with `cairn add` and commit them.")


def _split_scope(value: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (value or "").split(",") if s.strip())


@click.command()
@click.option("--name", default=None, help="The card's title; unique in the vault (asked for when missing).")
@click.option("--summary", default=None, help="One or two sentences: the text an agent gets (asked for when missing).")
@click.option("--scope", default=None, help="Comma-separated tags, e.g. git,ci.")
@click.option("--id", "card_id", default=None, help="topic/slug (default: a slug of the name).")
@click.option("--body", default=None, help="The whole lesson in Markdown.")
@click.option(
    "--body-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Read the body from a file."
)
@click.option("--draft", is_flag=True, help="Write it with status: draft (never injected).")
@click.option("--interactive", "-i", is_flag=True, help="Ask for missing fields even when stdin is not a terminal.")
@vault_option
@errors_to_exit
def add(
    name: str | None,
    summary: str | None,
    scope: str | None,
    card_id: str | None,
    body: str | None,
    body_file: Path | None,
    draft: bool,
    interactive: bool,
    vault_path: str | None,
) -> None:
    """Write a new card to cards/<id>.md, from flags or by asking. Never overwrites; does not commit.

    \b
    Examples:
      cairn add --name "Force-push drops rebased commits" \\
        --summary "After a force-push, compare with git reflog before git pull --rebase." \\
        --scope git --id git/force-push-rebase
      cairn add            (in a terminal: asks for the name, summary, scope and id)
    """
    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    vault = open_vault(vault_path)
    if name is None or summary is None:
        if not (interactive or sys.stdin.isatty()):
            raise click.UsageError("give --name and --summary (or run `cairn add` in a terminal to be asked)")
        name = name or click.prompt("Name (the situation, in a few words)").strip()
        summary = summary or click.prompt("Summary (what an agent should know or do, one or two sentences)").strip()
        if scope is None:
            scope = click.prompt("Scope tags, comma-separated", default="", show_default=False)
        if card_id is None:
            card_id = click.prompt("Id (topic/slug)", default=slugify(name)) or None
    text = body_file.read_text("utf-8") if body_file else (body or "")
    new = authoring.NewCard(
        name=name,
        summary=summary,
        scope=_split_scope(scope),
        card_id=card_id,
        body=text,
        status="draft" if draft else "active",
    )
    target = authoring.add_card(vault, new)
    rel = target.relative_to(vault.root).as_posix()
    echo(f"Wrote {rel}.")
    echo(f"Next: review it, then `git add {rel} && git commit` so agents can get it.")


@click.command()
@click.option("--rebuild", is_flag=True, help="Ignore the cached index and build it again from scratch.")
@click.option("--worktree", is_flag=True, help="Index uncommitted files too (for authors; the hook never uses it).")
@vault_option
@json_option
@errors_to_exit
def index(rebuild: bool, worktree: bool, vault_path: str | None, as_json: bool) -> None:
    """Build or update the index for the vault's HEAD (incrementally from the cached commit).

    \b
    Example:
      cairn index --vault ~/team-lessons
    """
    vault = open_vault(vault_path)
    with progress_bar("Indexing cards") as progress:
        if worktree:
            report = indexer.build_worktree_index(vault, progress=progress)
        else:
            report = indexer.build_index(vault, rebuild=rebuild, progress=progress)
    if as_json:
        echo_json(
            {
                "index": str(report.index_file),
                "commit": report.commit,
                "previous_commit": report.previous_commit,
                "mode": report.mode,
                "cards": report.n_cards,
                "read": report.read,
                "changed": list(report.changed_ids),
                "problems": [f.to_dict() for f in report.problems],
                "seconds": report.seconds,
            }
        )
    else:
        where = "working tree" if worktree else report.commit[:8]
        if report.mode == "unchanged":
            echo(f"Index is up to date at {where}: {report.n_cards} cards.")
        elif report.mode == "incremental":
            echo(
                f"Updated the index {report.previous_commit[:8] if report.previous_commit else ''} -> {where}: "
                f"re-read {report.read} card file(s), {report.n_cards} cards ({report.seconds:.2f}s)."
            )
        else:
            echo(f"Indexed {report.n_cards} cards at {where} ({report.seconds:.2f}s).")
        for finding in report.problems:
            echo(clean_line(f"{finding}  (left out of the index)"), err=True)
        if report.problems:
            echo(f"{len(report.problems)} card file(s) left out; fix them (see `cairn lint`) and commit.", err=True)


@click.command()
@click.argument("card_id", metavar="ID")
@click.option("--worktree", is_flag=True, help="Read the file in the working tree instead of the indexed commit.")
@vault_option
@json_option
@errors_to_exit
def show(card_id: str, worktree: bool, vault_path: str | None, as_json: bool) -> None:
    """Print the whole card ID with its provenance.

    \b
    Example:
      cairn show git/force-push-rebase
      cairn show git/force-push-rebase --json
    """
    vault = open_vault(vault_path)
    record = catalog.card_record(vault, card_id, worktree=worktree)
    if as_json:
        echo_json(record)
        return
    echo(render_card_text(record))


def render_card_text(record: dict[str, object]) -> str:
    lines = [f"{record['name']}", f"id: {record['id']}    path: {record['path']}    status: {record['status']}"]
    if record.get("scope"):
        lines.append(f"scope: {', '.join(record['scope'])}")  # type: ignore[arg-type]
    if record.get("verified_at"):
        extra = f"    expires: {record['expires_on']}" if record.get("expires_on") else ""
        lines.append(f"verified: {record['verified_at']}{extra}")
    for key in ("aliases", "not_when", "supersedes"):
        if record.get(key):
            lines.append(f"{key}: {', '.join(record[key])}")  # type: ignore[arg-type]
    if record.get("source"):
        lines.append(f"source: {record['source']}")
    lines += ["", f"summary: {record['summary']}", "", str(record.get("body") or "")]
    provenance = record.get("provenance")
    if isinstance(provenance, dict) and provenance:
        lines += ["", *_provenance_lines(provenance)]
    return "\n".join(lines).rstrip() + "\n"


def _provenance_lines(provenance: dict[str, Any]) -> list[str]:
    from cairn.index.provenance import describe

    authors = ", ".join(
        f"{a['name']} <{a['email']}> ({a['commits']} commit{'s' if a['commits'] != 1 else ''})"
        for a in provenance.get("authors") or []
    )
    lines = [
        "provenance:",
        f"  created:         {describe(provenance.get('created'))}",
        f"  last changed:    {describe(provenance.get('last_changed'))}",
        f"  summary changed: {describe(provenance.get('summary_changed'))}",
        f"  authors:         {authors or 'unknown'}",
    ]
    if provenance.get("renamed_from"):
        lines.append(f"  renamed from:    {', '.join(provenance['renamed_from'])}")
    if provenance.get("shallow"):
        lines.append(
            "  note: this clone is shallow, so history stops at the created commit; the card may be older and have "
            "other authors (`git fetch --unshallow` for the whole history, then `cairn index --rebuild`)"
        )
    return lines


__all__ = ["init", "add", "index", "show", "CairnError"]
