"""Commands about where cards come from and where they go: audit, sanitize (import is in import_cmd.py)."""

from __future__ import annotations

from pathlib import Path

import click

from cairn.cli.common import (
    Folder,
    echo,
    echo_json,
    errors_to_exit,
    folder_given,
    json_option,
    open_vault,
    progress_bar,
    vault_option,
)
from cairn.index import build as indexer
from cairn.terminal import clean_line


@click.command()
@click.option("--require-signed", is_flag=True, help="Also fail unless every card's last commit is signed (G).")
@vault_option
@json_option
@errors_to_exit
def audit(require_signed: bool, vault_path: str | None, as_json: bool) -> None:
    """Check the cached index, the hook log and session files; exit 1 if any check fails.

    \b
    Checks: the cache opens, its seals hold and it is at the served ref's
    commit (the hook serves nothing from a stale one); every indexed card matches
    its file at the indexed commit and nothing indexed is missing from the tree;
    every served value (fields, postings, settings) re-derives from the commit;
    every card has provenance; hook log lines parse and hold no prompt text;
    every card the log says was injected existed at its commit; session files
    parse and name existing cards; with --require-signed, every card's last
    commit carries a good signature. A damaged cache is rebuilt by `cairn index`.

    \b
    Example:
      cairn audit --vault ~/team-lessons
      cairn audit --require-signed --json
    """
    from cairn.index.audit import audit as run_audit

    vault = open_vault(vault_path)
    with progress_bar("audit: re-reading the cards") as progress:
        report = run_audit(vault, require_signed=require_signed, progress=progress)
    failed = report.failed
    if as_json:
        echo_json(report.to_dict())
    else:
        for check in report.checks:
            echo(f"{check.status.upper():4} {check.name}: {check.summary}")
            for detail in check.details:
                echo(f"     {clean_line(detail)}")
        if not failed:
            echo(f"Audit passed: {len(report.checks)} checks.")
    if failed:  # with --json too: exit 1 always says why on stderr
        names = ", ".join(check.name for check in failed)
        echo(f"Audit failed: {len(failed)} of {len(report.checks)} checks failed ({names}).", err=True)
    if not report.ok:
        raise SystemExit(1)


@click.command()
@click.option(
    "--out",
    "out",
    required=True,
    type=Folder(),
    callback=folder_given,
    help="Folder for the redacted copy; outside the vault, new or empty (or an earlier copy, with --force).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an earlier copy in --out (a folder holding only .cairn-sanitized and cards/); no other folder.",
)
@vault_option
@json_option
@errors_to_exit
def sanitize(out: Path, force: bool, vault_path: str | None, as_json: bool) -> None:
    """Write a copy of the committed cards with secrets and identifying details redacted.

    \b
    Redacts private keys, cloud keys, tokens and secret values, e-mail
    addresses, user names in home paths, internal host names and IP addresses;
    add patterns and internal domains in cairn.toml:
      [sanitize]
      patterns = ["ACME-[0-9]+"]
      internal_domains = [".corp.example.com"]

    Not redacted: people's names, user names outside home paths and host
    names outside the internal domains; read the copy before you share it.

    The copy is cards/ and a .cairn-sanitized file that marks it as one (no
    git history, so no commit authors; no cairn.toml or evals/); --force
    replaces only such a folder, never one holding anything else.

    \b
    Example:
      cairn sanitize --out /tmp/lessons-to-share
      cairn sanitize --out /tmp/lessons-to-share --force   # refresh it
    """
    from cairn.cards.sanitize import sanitize_vault

    vault = open_vault(vault_path)
    settings = indexer.config_of(vault).sanitize
    text = indexer.config_source(vault)[0]  # read again for the line of a bad pattern: settings are parsed records
    with progress_bar("sanitize") as progress:
        report = sanitize_vault(
            vault,
            out,
            settings,
            force=force,
            notice=lambda step: echo(f"Note: {step}.", err=True),
            progress=progress,
            config_text=text,
        )
    if as_json:
        echo_json(report.to_dict())
        return
    for file in report.files:
        if file.total:
            echo(clean_line(f"{file.path}: ") + ", ".join(f"{n} {kind}" for kind, n in file.counts))
    for finding in report.skipped:
        echo(clean_line(f"{finding}  (not copied)"), err=True)
    redacted = sum(f.total for f in report.files)
    touched = sum(1 for f in report.files if f.total)
    echo(
        f"Wrote {len(report.files)} card file(s) from {report.commit[:8]} to {report.out}; "
        f"redacted {redacted} item(s) in {touched} file(s)."
    )
