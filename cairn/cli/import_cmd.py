"""`cairn import`: lessons from CLAUDE.md / AGENTS.md files, or Markdown notes, as new cards, linted before writing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from cairn.cli.common import (
    echo,
    echo_json,
    errors_to_exit,
    json_option,
    open_vault,
    progress_bar,
    vault_option,
)
from cairn.hot.serve import split_tags
from cairn.hot.vault import is_url
from cairn.terminal import clean_line

if TYPE_CHECKING:
    from cairn.cards.importer import ImportReport, Outcome


def _local_src(ctx: click.Context, param: click.Parameter, value: str) -> Path:
    """A URL is not read (import reads local files): say so, and how to get the file, rather than "does not exist".
    An empty one (`"$NOTES"` with NOTES unset) is a usage error: click's Path reads it as the current folder."""
    if not value:
        raise click.BadParameter(
            "is empty (a shell variable that is not set?); give a Markdown file or a folder of them"
        )
    src = Path(value)
    if src.exists():
        return src
    if is_url(value):
        raise click.BadParameter(
            f"{value!r} is a URL; cairn import reads local files: download it first (`curl -fsSLo CLAUDE.md URL`), "
            "then import that file"
        )
    raise click.BadParameter(f"{value!r} does not exist; give a Markdown file or a folder of them")


@click.command("import")
@click.argument("src", type=click.Path(), callback=_local_src)
@click.option("--section", default=None, help="Take only the lessons of this section (its heading; implies --lessons).")
@click.option(
    "--scope",
    default=None,
    help="Comma-separated scope tags for every card (default: a lesson's section heading as a slug; a note's own).",
)
@click.option(
    "--topic",
    default=None,
    help="Put the cards under cards/TOPIC/ (default: the first scope; else a note's folder inside SRC, "
    "`imported` or `lessons`).",
)
@click.option(
    "--lessons",
    is_flag=True,
    help="Read every file as a lesson list, not only CLAUDE.md / AGENTS.md / GEMINI.md / .cursorrules.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be written and what is dropped; write nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Write cards lint only warns about, and replace a card at the same path (one of the same name at another "
    "path is left untouched).",
)
@vault_option
@json_option
@errors_to_exit
def import_(
    src: Path,
    section: str | None,
    scope: str | None,
    topic: str | None,
    lessons: bool,
    dry_run: bool,
    force: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Turn the lessons of a CLAUDE.md / AGENTS.md / GEMINI.md, or Markdown notes, into new cards. Never
    overwrites without --force; does not commit.

    A lesson states a situation and its consequence or fix, with a reason or a failure: "X happens when Y; do Z".
    In a lesson file each top-level bullet is judged on its own, and kept when the words outside its code spans
    (at least three) give a reason (because, otherwise, so that, to avoid, 因为, 否则...) or a failure (fails,
    breaks, flaky, silently, lost, rejected, stale, error, 失败, 导致, 丢失...). Dropped, each with a line saying
    why: commands (a code span or shell line), instructions and style rules with no reason ("Use black and ruff",
    "Prefer X", "Never commit to main"), statements with no failure, and whole sections whose heading names
    reference material (Commands, Setup, Usage, Code style, Conventions, Project structure, Dependencies...) unless
    --section names one; paragraphs are listed as dropped too (lessons are read from bullets). So a CLAUDE.md is
    read as lessons by default and never becomes one card. Other Markdown files are notes: one note, one card, its
    frontmatter kept. --dry-run prints one line per card (path, scope, name, summary) and per drop.

    Each card gets block-style frontmatter with its name, summary, scope (--scope, else the slug of the lesson's
    section heading without its words that say lessons: "Git gotchas" gives git, "Gotchas" none), verified_at (the source file's last commit day when it is committed and unchanged, else
    today; never a day after today) and source (file:line), and a short id: an ASCII slug of the name of at most 60 characters; a name with
    no Latin letters gets its script and a hash (zh-3f9a2c); a clash with another card adds -2.

    Every card is linted with `cairn lint`'s rules in the vault's context before anything is written: an error
    refuses that card (its findings shown), and so does a warning unless --force; the other cards are still
    written, and the command exits 1 when any card was refused or skipped.

    \b
    Examples:
      cairn import ~/src/app/CLAUDE.md --dry-run
      cairn import ~/src/app/CLAUDE.md --section "Gotchas" --scope app
      cairn import ~/notes/postgres --topic databases
    """
    from cairn.cards import importer

    if topic is not None and (topic.startswith(("/", "~")) or ".." in topic.replace("\\", "/").split("/")):
        raise click.BadParameter(
            f"{topic!r} is not a folder under cards/; give one such as databases or git/hooks", param_hint="'--topic'"
        )
    vault = open_vault(vault_path)
    tags = split_tags(scope or "")
    written: list[Outcome] = []
    try:
        with progress_bar("import") as progress:
            report = importer.import_notes(
                vault,
                src,
                dry_run=dry_run,
                lessons_only=lessons,
                section=section,
                scope=tags,
                topic=topic,
                force=force,
                progress=progress,
                wrote=written.append,
            )
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the cards already written stay; say which, then stop as usual
        _stopped(written)
        raise
    from cairn import gitrepo

    written_paths = {o.path for o in report.outcomes if o.ok and o.path}
    ignored = None if report.dry_run else gitrepo.ignored_cards_note(vault, written_paths)
    if as_json:
        echo_json({**report.to_dict(), "ignored": ignored})
    else:
        _render(report)
        if ignored is not None:  # "then commit" would commit none of them
            echo(f"Note: {ignored}.", err=True)
    if not report.ok:
        raise SystemExit(1)


_VERBS = {"written": "wrote", "would-write": "would write", "replaced": "replaced", "would-replace": "would replace"}


def _render(report: ImportReport) -> None:
    """One line per card and per dropped bullet or section, in source order: cards and drops on stdout; refused
    and skipped cards on stderr, after their lint findings. Then a count."""
    from cairn.cards.importer import Dropped

    items: list[Outcome | Dropped] = [*report.outcomes, *report.dropped]
    files: dict[str, int] = {}
    for item in items:
        files.setdefault(_where(item.source)[0], len(files))
    items.sort(key=lambda item: (files[_where(item.source)[0]], _where(item.source)[1]))
    for item in items:
        if isinstance(item, Dropped):
            what = f'"{item.text}"' if item.kind == "bullet" else f'{item.kind} "{item.text}"'
            echo(clean_line(f"{item.source}: dropped {what}: {item.why}"))
            continue
        outcome = item
        for finding in outcome.findings:
            echo(clean_line(str(finding)), err=True)
        if outcome.ok:
            scope = ", ".join(outcome.scope) or "none"
            echo(
                clean_line(
                    f"{outcome.source}: {_VERBS[outcome.status]} {outcome.path} | scope: {scope} | "
                    f"name: {outcome.name} | summary: {outcome.summary}"
                )
            )
        elif outcome.status == "refused":
            echo(clean_line(f"{outcome.source}: refused {outcome.path}: {outcome.message}"), err=True)
        else:
            echo(clean_line(f"{outcome.source}: skipped ({outcome.status}): {outcome.message}"), err=True)
    done = sum(o.ok for o in report.outcomes)
    skipped = len(report.outcomes) - done
    verb = "Would import" if report.dry_run else "Imported"
    tail = "" if report.dry_run or not done else " Review them, then commit."
    echo(f"{verb} {done} card(s); dropped {len(report.dropped)} (not lessons); skipped {skipped}.{tail}")


def _stopped(written: list[Outcome]) -> None:
    """What an import stopped midway left in the vault: the cards it wrote (each whole: writes are atomic)."""
    echo("", err=True)  # the newline closes the terminal's ^C echo
    for o in written:
        echo(clean_line(f"{o.source}: {_VERBS[o.status]} {o.path}"), err=True)
    if written:
        echo(
            f"Stopped after writing {len(written)} card(s), listed above; no other card was written. Review them, "
            "then commit them or remove them.",
            err=True,
        )
    else:
        echo("Stopped before writing any card.", err=True)


def _where(source: str) -> tuple[str, int]:
    """`file:line` as (file, line); a whole file as (file, 0)."""
    path, _, line = source.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (source, 0)
