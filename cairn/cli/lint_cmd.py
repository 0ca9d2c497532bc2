"""`cairn lint`: contract and policy checks on cards; what the pre-commit hooks run."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import click

from cairn import lint
from cairn.cli.common import (
    Day,
    echo,
    echo_json,
    errors_to_exit,
    json_option,
    open_vault,
    progress_bar,
    vault_option,
    vaults_below,
)
from cairn.config import CONFIG_FILE
from cairn.finding import Finding
from cairn.hot.errors import CairnError, CardsMisnamed, VaultNotFound
from cairn.hot.vault import CARDS_DIR, Vault, find_vault, vault_in
from cairn.terminal import clean_line


class _FilesFirst(click.Command):
    """`cairn lint` as pre-commit runs it: the entry, then the staged files' paths. A vault in a folder whose name
    starts with `-` (`-lessons/cards/x.md`) was read as options (`No such option '-l'`), failing every commit; such
    an argument that is no option of the command (nor an option's value) and names a file or folder is read as a
    path, as after `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        params = self.get_params(ctx)
        names = {name for param in params for name in (*param.opts, *param.secondary_opts)}
        valued = {
            name for param in params if isinstance(param, click.Option) and not param.is_flag for name in param.opts
        }
        kept: list[str] = []
        paths: list[str] = []
        rest = list(args)
        while rest:
            arg = rest.pop(0)
            if arg == "--":
                paths += rest
                break
            if arg in valued and rest:  # `--vault -lessons`: the option's value, as click reads it
                kept += [arg, rest.pop(0)]
            elif arg[:1] == "-" and arg != "-" and arg.split("=", 1)[0] not in names and os.path.lexists(arg):
                paths.append(arg)
            else:
                kept.append(arg)
        return super().parse_args(ctx, [*kept, "--", *paths] if paths else kept)


@click.command("lint", cls=_FilesFirst)
@click.argument("files", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--rules",
    "rules",
    default=None,
    metavar="R,...",
    help="Comma-separated rule ids or groups (contract, scope, verified-at, vault, policy, security); default: all.",
)
@click.option("--strict", is_flag=True, help="Fail (exit 1) on warnings too, not only on errors.")
@click.option(
    "--worktree/--staged",
    "worktree",
    default=None,
    help="Read the working tree, or git's staging area (what the next commit records). "
    "Default: the staging area inside a git hook (GIT_INDEX_FILE is set), else the working tree.",
)
@click.option(
    "--today",
    type=Day(),
    envvar="CAIRN_TODAY",
    default=None,
    help="Check dates as of this day, YYYY-MM-DD (default: today; also $CAIRN_TODAY).",
)
@click.option("--list-rules", is_flag=True, help="List the rules with their severity and groups, then exit.")
@vault_option
@json_option
@errors_to_exit
def lint_command(
    files: tuple[str, ...],
    rules: str | None,
    strict: bool,
    worktree: bool | None,
    today: dt.datetime | None,
    list_rules: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Check cards against the contract and the vault's policy; print `path:line: rule-id message`.

    Without FILES, every card of the vault is checked. With FILES (paths relative to the current folder or to the
    vault; a folder stands for the card files under it), only they are, in the context of the whole vault (unique
    names, links, near-duplicates). Errors exit 1; warnings exit 0 unless --strict. Inside a git hook the staged
    content is checked, not the working tree, and of the repository being committed to ($CAIRN_VAULT is not read
    there, nor in any hook pre-commit runs; --vault is).

    \b
    Example:
      cairn lint
      cairn lint cards/git/force-push-safely.md --rules scope,verified-at --strict
      cairn lint cards/git
      cairn lint --staged --json
    """
    if list_rules:
        _print_rules(as_json)
        return
    wanted = [r for r in rules.split(",") if r.strip()] if rules is not None else None
    if wanted == []:  # `--rules "$RULES"` with RULES unset ran the contract alone and passed every other finding
        raise click.UsageError(
            "--rules names no rule; give rule ids or groups (`cairn lint --list-rules`), or leave --rules out to run "
            "every rule"
        )
    try:
        lint.select(wanted)
    except lint.UnknownRule as exc:
        raise click.UsageError(str(exc)) from None
    source = lint.STAGED if (worktree is False or (worktree is None and lint.in_git_hook())) else lint.WORKTREE
    day = today.date() if today else None
    # Inside a git hook the repository being committed to is the one to lint: $CAIRN_VAULT (set for the agents'
    # hooks, or for daily commands) named another vault, whose files of the same paths were linted in its place.
    # So for any hook pre-commit runs (`pre-commit run`, CI's --from-ref/--to-ref): given no file, a vault in a
    # subfolder of the repository was missed for the one configured vault, another repository's, or "no vault here".
    hooked = (lint.in_git_hook() or lint.run_by_pre_commit()) and not vault_path
    with _without_cairn_vault() if hooked else contextlib.nullcontext():
        found = _lint_findings(files, vault_path, wanted, source, day, hooked)
    if found is None:
        if as_json:
            echo_json([])
        echo("cairn lint: no Cairn vault in this repository (no cairn.toml beside a cards/ folder)", err=True)
        return
    findings, checked = found
    findings.sort(key=lambda f: (f.path, f.line, f.rule, f.message))
    if as_json:
        echo_json([f.to_dict() for f in findings])
    else:
        for finding in findings:
            echo(clean_line(str(finding)))
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity != "error"]
    echo(_summary(errors, warnings, checked, source, strict), err=True)
    if errors or (strict and warnings):
        raise SystemExit(1)


def _lint_findings(
    files: tuple[str, ...],
    vault_path: str | None,
    wanted: list[str] | None,
    source: str,
    day: dt.date | None,
    hooked: bool,
) -> tuple[list[Finding], int] | None:
    """The findings and the number of files checked; None when a git hook finds no vault in its repository."""
    findings: list[Finding] = []
    checked = 0
    if not files and not hooked:
        vault = open_vault(vault_path)
        with progress_bar("lint") as progress:
            report = lint.lint_vault(vault, rules=wanted, source=source, today=day, progress=progress)
        return list(report.findings), report.files
    if not files:  # a git hook (pre-commit's always_run): the vaults of the repository being committed to
        vaults = _repository_vaults()
        if not vaults:
            return None
        for vault in vaults:
            # No card or cairn.toml staged: what the commit deletes (the cards superseding a deleted card), as review
            # judges it. Linting every card cost each such commit (a README, an eval case) about 3 s per 1,000 cards.
            if source == lint.STAGED:
                report = lint.lint_files(vault, [], rules=wanted, source=source, today=day)
            else:
                report = lint.lint_vault(vault, rules=wanted, source=source, today=day)
            findings += [replace(f, path=_display(vault, f.path)) for f in report.findings]
            checked += report.files
        return findings, checked
    groups, outside = _by_vault(_card_files(files, vault_path), vault_path)
    if hooked:  # what the commit deletes in the repository's other vaults, whose files pre-commit passes none of
        for vault in _repository_vaults():
            groups.setdefault(vault, [])
    for given, why in outside:  # another project's `cards/` in the same repository (pre-commit passes it)
        echo(clean_line(f"{given}: skipped, {why}"), err=True)
    for vault, pairs in groups.items():
        report = lint.lint_files(vault, [rel for rel, _ in pairs], rules=wanted, source=source, today=day)
        shown = dict(pairs)
        findings += [replace(f, path=shown.get(f.path) or _display(vault, f.path)) for f in report.findings]
        checked += report.files
    return findings, checked


@contextlib.contextmanager
def _without_cairn_vault() -> Iterator[None]:
    """$CAIRN_VAULT unset for a while (every vault lookup reads it), then put back as it was."""
    saved = os.environ.pop("CAIRN_VAULT", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["CAIRN_VAULT"] = saved


def _summary(errors: list[Finding], warnings: list[Finding], checked: int, source: str, strict: bool) -> str:
    def count(items: list[Finding], word: str) -> str:
        ids = ", ".join(sorted({f.rule for f in items}))
        return f"{len(items)} {word}{'' if len(items) == 1 else 's'}" + (f" ({ids})" if ids else "")

    where = "git's staging area" if source == lint.STAGED else "the working tree"
    text = f"cairn lint: {count(errors, 'error')}, {count(warnings, 'warning')} in {checked} file(s) from {where}"
    if warnings and not errors and not strict:
        text += "; warnings do not fail (--strict makes them)"
    return text


def _card_files(files: tuple[str, ...], vault_path: str | None) -> tuple[str, ...]:
    """The paths given, each folder (`cards/git`, `.`) replaced by the card files under it (`.md` files in a `cards/`
    folder, not a vault's README), in order: `cairn lint cards` said "no such file" of a folder that is there. A
    folder the current one lacks is read from the vault's root, as a file is (`cairn lint --vault team cards/git`)."""
    found: list[str] = []
    for given in files:
        folder = Path(given)
        if not os.path.lexists(folder) and not folder.is_absolute():
            root = _vault_root(vault_path)
            if root is not None and (root / given).is_dir():
                folder = Path(os.path.relpath(root / given))
        linked = folder.is_symlink() and CARDS_DIR in Path(os.path.abspath(folder)).parts  # not a link to a vault
        if not folder.is_dir() or linked or (folder.name.endswith(".md") and (folder / ".git").exists()):
            # a file, a symlink in a vault's cards (git records one entry: a cards/ made a symlink served nothing) or
            # a submodule at a card's path: lint says what the index does of it
            found.append(given)
            continue
        cards = sorted(
            p
            for p in folder.rglob("*.md")
            if (p.is_file() or p.is_symlink()) and CARDS_DIR in Path(os.path.abspath(p)).parts[:-1]
        )
        if not cards:
            raise CairnError(
                f"{given} is a folder with no card file (.md) under it; give card files, or none to lint the vault"
            )
        found += [str(p) for p in cards]
    return tuple(found)


def _vault_root(vault_path: str | None) -> Path | None:
    """The root of the vault a path may be given from: --vault's, $CAIRN_VAULT's, else the vault around the current
    folder (None outside any)."""
    if vault_path or os.environ.get("CAIRN_VAULT"):
        return open_vault(vault_path).root
    try:
        return find_vault(None).root
    except VaultNotFound:
        return None


def _by_vault(
    files: tuple[str, ...], vault_path: str | None
) -> tuple[dict[Vault, list[tuple[str, str]]], list[tuple[str, str]]]:
    """Group the given paths by vault: (vault-relative path, path as given); and (path, why skipped) for what
    pre-commit's file pattern matches beside a vault's own files: a file under a `cards/` folder that is no vault's
    (no `cairn.toml` beside it: another project's, in a repository that holds a vault in a subfolder, or in a folder
    of a vault, `docs/cards/`), or a `cairn.toml` that is not a vault's. The index reads neither. Any other path in
    no vault raises VaultNotFound."""
    explicit = open_vault(vault_path) if vault_path or os.environ.get("CAIRN_VAULT") else None
    groups: dict[Vault, list[tuple[str, str]]] = {}
    outside: list[tuple[str, str]] = []
    cwd = Path.cwd()
    for given in files:
        absolute = Path(os.path.normpath(cwd / given))
        try:
            vault = explicit or _vault_of(absolute)
        except VaultNotFound:
            if not os.path.lexists(absolute):  # `cairn lint /missing.md` said "no vault here", inside a vault
                raise CairnError(f"{given}: no such file; give the path of a card file") from None
            if CARDS_DIR not in absolute.parts:  # a file named `cards` too: pre-commit passes it
                raise VaultNotFound(
                    f"{given} is in no Cairn vault (no {CONFIG_FILE} beside a cards/ folder above it); give a card "
                    "of a vault, or pass --vault PATH"
                ) from None
            outside.append((given, "in no Cairn vault (no cairn.toml above it)"))
            continue
        rel = _relative(vault, absolute, given)
        parts = rel.split("/")
        if parts[0] != CARDS_DIR and (CARDS_DIR in parts[:-1] or parts[1:] and parts[-1] == CONFIG_FILE):
            if not os.path.lexists(vault.root / rel):  # a typo there was "skipped" and passed, in CI too
                raise CairnError(f"{given}: no such file; give the path of a card file")
            why = (
                f"not the vault's {_display(vault, CONFIG_FILE)} (the index reads no setting there)"
                if parts[-1] == CONFIG_FILE
                else f"not in the vault's {_display(vault, CARDS_DIR)}/ folder (the index reads no card there)"
            )
            outside.append((given, why))
            groups.setdefault(vault, [])  # still judged: what the commit deletes (a card another supersedes)
            continue
        groups.setdefault(vault, []).append((rel, given))
    return groups, outside


def _repository_vaults() -> list[Vault]:
    """Inside a git hook, the vaults of the repository git runs it in (from its root): the vault around the current
    folder, else each folder git's staging area holds a `cairn.toml` in, beside a `cards/` folder (a vault in a
    subfolder of a monorepo, whose root is no vault). A configured vault of another repository is never one. A vault
    here or below whose cards are in `Cards/` raises CardsMisnamed: "no Cairn vault in this repository" let the
    commit in."""
    try:
        return [find_vault(None)]
    except CardsMisnamed:
        raise
    except VaultNotFound:
        return vaults_below(refuse_misnamed=True)


def _vault_of(file: Path) -> Vault:
    """The vault a file belongs to: the enclosing vault, else the folder above its `cards/` when that folder holds
    `cairn.toml` (a vault's marker); for `cards` itself, not a folder, or the `cairn.toml` beside it, that folder."""
    try:
        return find_vault(None, cwd=file.parent)
    except VaultNotFound:
        parts = file.parts
        if CARDS_DIR in parts[:-1]:
            top = len(parts) - 2 - parts[:-1][::-1].index(CARDS_DIR)
            if (Path(*parts[:top]) / CONFIG_FILE).is_file():
                return find_vault(Path(*parts[:top]))
        cards = file.parent / CARDS_DIR
        if file.name in (CARDS_DIR, CONFIG_FILE) and os.path.lexists(cards) and not cards.is_dir():
            if (file.parent / CONFIG_FILE).is_file():  # cards/ made a file: lint refuses it here, as the index does
                return vault_in(file.parent)
        raise


def _relative(vault: Vault, absolute: Path, given: str) -> str:
    if not os.path.lexists(absolute) and not Path(given).is_absolute() and (vault.root / given).exists():
        return Path(os.path.normpath(given)).as_posix()  # from the vault's root: the current folder has no such file
    for root in (vault.root, Path(os.path.realpath(vault.root))):
        try:
            return absolute.relative_to(root).as_posix()
        except ValueError:
            pass
    try:
        return Path(os.path.realpath(absolute)).relative_to(vault.root).as_posix()
    except ValueError:
        pass
    if not os.path.lexists(absolute):
        raise CairnError(f"{given}: no such file; give the path of a card file")
    # The file in the current folder is the one named: the vault's file of the same path is another card.
    raise CairnError(
        f"{given} is not in the vault at {vault.root} (--vault or $CAIRN_VAULT); lint it from its own vault, or name "
        "that vault with --vault"
    )


def _display(vault: Vault, rel: str) -> str:
    return os.path.relpath(vault.root / rel)


def _print_rules(as_json: bool) -> None:
    """Each rule's id, severity, groups and what it checks (its docstring's first paragraph, one line: the first line
    alone cut a sentence that runs onto the next, "... (links in the"), and the ids it reports."""
    rules = [
        {
            "id": rule.id,
            "severity": rule.severity,
            "groups": list(rule.groups),
            "checks": " ".join(rule.doc.strip().split("\n\n")[0].split()).split(": ", 1)[-1] or rule.id,
            "emits": list(rule.emits),
        }
        for rule in lint.RULES
    ]
    if as_json:
        echo_json(rules)
        return
    for rule in rules:
        echo(f"{rule['id']:<20} {rule['severity']:<8} {','.join(rule['groups']):<12} {rule['checks']}")
        for emitted in rule["emits"]:
            echo(f"  {emitted:<18} {rule['severity']}")
