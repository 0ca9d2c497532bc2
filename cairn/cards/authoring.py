"""Writing vaults and cards: `cairn init` lays down the template, `cairn add` writes one new card; the frontmatter
writer, the short ids and the lint-before-write that `cairn import` shares."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from cairn import gitrepo
from cairn.atomic import disk_fix, ensure_inside, write_atomic
from cairn.cards.card import check_card_id, parse_card, slugify
from cairn.cards.lessons import flat
from cairn.cards.similarity import name_key
from cairn.finding import ERROR, Finding
from cairn.hot.errors import CairnError, CardExists, InvalidCard, RefusedWrite
from cairn.hot.vault import Vault
from cairn.lint.runner import DEFAULTS_USED, SANITIZE_REFUSES, lint_files
from cairn.lint.snapshot import COMMIT, WORKTREE


def template_dir() -> Path:
    """The bundled vault template (package data, so a plain `pip install` has it)."""
    return Path(str(resources.files("cairn") / "templates" / "vault"))


def init_vault(path: Path, *, again: str = "cairn init") -> str:
    """Copy the template into a new or empty folder (or the clone of an empty repository), `git init` it and make
    the first commit; returns the commit.

    All or nothing: when any step fails (git cannot commit, Ctrl-C), what it made is removed (the folders it
    created; the contents of the empty folder it was given), so `cairn init` can simply be run again. again: the
    command a failure says to run again (`cairn demo` makes its vault in a temporary folder with this too)."""
    if path.exists() and not path.is_dir():
        raise CairnError(f"{path} is a file, not a folder; choose a new folder (nothing was written)")
    if path.is_symlink() and not path.exists():
        target = os.readlink(path)
        if (path.parent / target).is_symlink():  # symlinks that loop, or a chain whose end is missing
            raise CairnError(
                f"{path} is a symlink to {target}, itself a symlink that leads to no folder (a loop, or a chain whose "
                "last link is missing); point it at a folder or choose a new one (nothing was written)"
            )
        raise CairnError(
            f"{path} is a symlink to {target}, which does not exist; make that folder or choose a new one "
            "(nothing was written)"
        )
    kept = _empty_clone(path)  # `git clone` of a new, empty repository: the vault goes into it, its .git kept
    if path.is_dir() and any(child.name not in kept for child in path.iterdir()):
        if (path / "cairn.toml").is_file() and (path / "cards").is_dir():  # `cairn init` run again, as a README
            unfinished = _unfinished(path)
            if len(unfinished) == 1 and unfinished[0][1].startswith("cairn install git-hooks"):
                # `cairn init --no-git-hooks` leaves a vault so too, and nothing records that choice: not "missing"
                what, command = unfinished[0]
                raise CairnError(
                    f"{path} is already a Cairn vault; it has {what}, as `cairn init --no-git-hooks` leaves it (or an "
                    f"init stopped before them): use it as it is, or run `{command}` if you want them (nothing "
                    "was written)"
                )
            if unfinished:  # a `cairn init` stopped after its commit (killed, the machine off): say what it left
                raise CairnError(
                    f"{path} is already a Cairn vault, but it has {' and '.join(what for what, _ in unfinished)}; "
                    f"finish it with `{' && '.join(command for _, command in unfinished)}` (nothing was written)"
                )
            raise CairnError(  # block pasted twice does: not a reason to make a second vault elsewhere
                f"{path} is already a Cairn vault; use it as it is (`cairn vault list` shows whether the prompt hook "
                "serves it), or choose a new folder for another (nothing was written)"
            )
        raise CairnError(f"{path} is not empty; choose a new folder (nothing was written)")
    created = _first_missing(path)
    path.mkdir(parents=True, exist_ok=True)
    try:
        _copy_template(path, again)
        from cairn import __version__, install  # the workflow installs the Cairn that made the vault

        install.pin_workflow_version(path, __version__)
        with gitrepo.init_repo(path) as repo:
            try:
                return gitrepo.commit_all(repo, "Start a Cairn vault from the template")
            except CairnError:
                raise
            except Exception as exc:  # git's own refusal (GitCommandError: a signing key, a hook...)
                reason = _git_reason(exc)
                raise CairnError(
                    f"git could not make the vault's first commit ({reason}); fix that (`git commit` must work "
                    f"there), then run `{again}` again; nothing was kept at {path}"
                ) from None
    except BaseException:
        _undo_init(path, created, kept)
        raise


def _empty_clone(path: Path) -> frozenset[str]:
    """`{".git"}` when `path` holds nothing but a repository with no commit yet (a clone of a new, empty repository,
    or a bare `git init`), which init may fill; else nothing (a folder with a commit already is not init's)."""
    git_dir = path / ".git"
    if not path.is_dir() or path.is_symlink() or not git_dir.is_dir() or git_dir.is_symlink():
        return frozenset()
    if [child.name for child in path.iterdir()] != [".git"]:
        return frozenset()
    return frozenset({".git"}) if gitrepo.has_no_refs(path) else frozenset()


def _copy_template(path: Path, again: str) -> None:
    """Copy the template into `path`, its files and folders with the modes the user's umask gives new ones (as git's
    checkout does), and `path` itself left as it is: `copytree` copied the installed package's modes, which opened
    a folder made 0700 to everyone and ignored a umask of 077. A file that cannot be written (a full disk, a file
    size limit) is said in one line."""
    template = template_dir()
    for folder, children, files in os.walk(template):
        children[:] = sorted(child for child in children if child != "__pycache__")
        target = path / os.path.relpath(folder, template)
        dst = target
        try:
            target.mkdir(exist_ok=True)
            for name in sorted(files):
                dst = target / name
                source = os.path.join(folder, name)
                if dst.suffix == ".md" and dst.relative_to(path).parts[0] == "cards":
                    dst.write_bytes(verified_today(Path(source).read_bytes()))
                else:
                    shutil.copyfile(source, dst)
        except OSError as exc:
            raise CairnError(
                f"the vault template could not be copied into {path} ({exc.strerror or exc}: {dst}); free some "
                f"space or raise the file size limit (`ulimit -f`), check the folder is writable, then run "
                f"`{again}` again; nothing was kept at {path}"
            ) from None


# A template card's `verified_at` line (the template's own files: one line each, as written there).
_VERIFIED_LINE = re.compile(rb"^verified_at: \d{4}-\d{2}-\d{2}$", re.MULTILINE)


def today() -> dt.date:
    """The day a card Cairn writes is verified on: `$CAIRN_TODAY` when set (YYYY-MM-DD, the day lint and review judge
    dates as of: a vault made under it is not dated in its future), else the clock's. A value that is no day is an
    error, as lint's and review's `--today` make it: the clock's day in its place dated cards unlike what lint then
    judged them by."""
    given = os.environ.get("CAIRN_TODAY", "").strip()
    if not given:
        return dt.date.today()
    try:
        if _DAY.fullmatch(given):
            return dt.date.fromisoformat(given)
    except ValueError:  # 2026-02-30
        pass
    raise CairnError(f"$CAIRN_TODAY is {given[:40]!r}, not a day; set it to YYYY-MM-DD, or unset it")


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def verified_today(card: bytes, day: dt.date | None = None) -> bytes:
    """A template card as `cairn init` lays it down: verified on the day the vault starts (`today`). The template's
    own dates are the day each lesson was written; kept, every card of every new vault (and `cairn demo`) expired a
    year after them (`review_after: 365d`), whenever the vault was made."""
    stamp = (day or today()).isoformat().encode()
    return _VERIFIED_LINE.sub(b"verified_at: " + stamp, card, count=1)


def _unfinished(path: Path) -> list[tuple[str, str]]:
    """What `cairn init` does after its first commit that the vault at `path` lacks, each with the command that does
    it: its index, its git hooks. Empty for a vault without a commit or a git repository (no command finishes it)."""
    from cairn import githooks
    from cairn.hot.paths import index_file
    from cairn.hot.vault import find_vault, head_commit, shell_word

    try:
        vault = find_vault(path)
        if vault.git_root is None or head_commit(vault.git_root) is None:
            return []
        hooks = gitrepo.hooks_dir(vault)
    except CairnError:
        return []
    where = shell_word(vault.root)
    unfinished = []
    if not os.path.exists(index_file(os.path.realpath(vault.root))):
        unfinished.append(("no index", f"cairn index --vault {where}"))
    missing = githooks.missing_git_hooks(hooks)
    if missing:
        unfinished.append(
            (
                f"no git hooks ({', '.join(missing)}) to keep its index current",
                f"cairn install git-hooks --vault {where}",
            )
        )
    return unfinished


def _first_missing(path: Path) -> Path | None:
    """The outermost folder of `path` (itself included) that does not exist yet: what `mkdir(parents=True)` makes."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def _undo_init(path: Path, created: Path | None, kept: frozenset[str] = frozenset()) -> None:
    """Remove what a failed `init_vault` made: the folders it created, else the contents of the empty folder (but
    `kept`, the empty clone's own .git)."""
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
        return
    for child in path.iterdir() if path.is_dir() else ():
        if child.name in kept:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _git_reason(exc: Exception) -> str:
    """git's own words from a failed command: its first `error:` or `fatal:` line, else its last line."""
    stderr = str(getattr(exc, "stderr", "") or "")
    lines = [line.strip().removeprefix("stderr: ").strip("'").strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    told = next((line for line in lines if line.startswith(("error:", "fatal:"))), None)
    return told or (lines[-1] if lines else (str(exc).splitlines() or [type(exc).__name__])[0])


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
    """The card's file: block-style YAML frontmatter in the contract's order, then the body (empty when none). The
    name and summary are written on one line, as every reader takes them (`--name ' x '` kept its spaces, and a
    line break in a flag made a quoted scalar spread over lines)."""
    meta: dict[str, object] = {"name": flat(card.name), "summary": flat(card.summary)}
    if card.scope:
        meta["scope"] = list(card.scope)
    meta["verified_at"] = card.verified_at or today()  # a YAML date, unquoted
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
    return render_frontmatter(meta, card.body)


_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def render_frontmatter(meta: Mapping[str, object], body: str) -> str:
    """A card file from its frontmatter (block-style YAML, keys in the given order) and its body (none when empty).
    The one writer for `cairn add`, `cairn import` and the MCP drafts."""
    # Only the line end goes: `strip()` also took a last value's no-break space, and `source: "2026\u00a0"` was
    # written `source: 2026`, a number lint refuses
    head = yaml.safe_dump(dict(meta), allow_unicode=True, sort_keys=False, width=100, default_flow_style=False)
    head = head.rstrip("\n")
    # Blank lines around it go, never its first line's indentation: a body that opens with an indented code block
    # (a pasted command and its output) must stay one.
    body = _BLANK_LINES.sub("", body).rstrip()
    return f"---\n{head}\n---\n" + (f"\n{body}\n" if body else "")


SLUG_MAX_CHARS = 60
_SCRIPTS = (
    ("HIRAGANA", "ja"),
    ("KATAKANA", "ja"),
    ("HANGUL", "ko"),
    ("CJK", "zh"),
    ("CYRILLIC", "cyrl"),
    ("GREEK", "grek"),
    ("ARABIC", "arab"),
    ("HEBREW", "hebr"),
    ("THAI", "thai"),
    ("DEVANAGARI", "deva"),
)


def card_slug(name: str, max_length: int = SLUG_MAX_CHARS) -> str:
    """A file name for a card named `name`: lowercase ASCII words joined by hyphens, at most `max_length`
    characters, cut at a word. Latin letters lose their accents (`Café` -> `cafe`); words in other scripts are not
    transliterated: they are left out and a 6-hex hash of the name keeps the slug unique, after the name's Latin
    words or, with none, a script tag (`zh-3f9a2c`, `ja-…`, `ko-…`), never a long file name in another script."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFC", name).strip())
    kept = "".join(ch for ch in text if not unicodedata.combining(ch))
    words = re.findall(r"[a-z0-9]+", kept.lower())
    others = [ch for ch in kept if ch.isalnum() and not ch.isascii()]
    if not others:
        return _cut("-".join(words), max_length) or "card"
    # surrogatepass: a note's file name that is not UTF-8 (its bytes held as surrogates) still gets its hash
    digest = hashlib.sha256(unicodedata.normalize("NFC", name.strip()).encode("utf-8", "surrogatepass")).hexdigest()[:6]
    if any(ch.isalpha() for w in words for ch in w):
        base = _cut("-".join(words), max_length - len(digest) - 1)
    else:
        base = _script_tag(others)
    return f"{base}-{digest}"


def _script_tag(chars: list[str]) -> str:
    names = [unicodedata.name(ch, "") for ch in chars]
    for word, tag in _SCRIPTS:
        if any(n.startswith(word) or f" {word}" in n for n in names):
            return tag
    return "x"


def _cut(slug: str, limit: int) -> str:
    if len(slug) <= limit:
        return slug
    cut = slug[:limit]
    hyphen = cut.rfind("-")
    return (cut[:hyphen] if hyphen >= limit // 2 else cut).strip("-")


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
        card_id = check_card_id(unicodedata.normalize("NFC", card.card_id))  # the form a keyboard types
        if "/" in card_id or not folder:
            return card_id
        return check_card_id(f"{folder}/{card_id}")
    slug = card_slug(card.name)
    return check_card_id(f"{folder}/{slug}" if folder else slug)


def prepare_card(vault: Vault, card: NewCard, *, today: dt.date | None = None) -> PendingCard:
    """Render a new card and lint it as `cairn lint` would with the card in the vault (so name-unique and
    near-duplicate see the other cards). Raises when the id is taken or points outside `cards/`."""
    rel = f"cards/{resolve_card_id(card)}.md"
    _check_utf8(card, rel)
    text = render_card(card)
    data = text.encode("utf-8")
    parsed, findings = parse_card(rel, data)
    if parsed is None:
        messages = "; ".join(f.message for f in findings)
        raise InvalidCard(f"{rel} was not written: {messages}; fix that and run it again")
    target = vault.root / rel
    # a card whose file name is the decomposed form (NFD: macOS's) of this id is shown as it and found by it
    for taken in dict.fromkeys(vault.root / unicodedata.normalize(form, rel) for form in ("NFC", "NFD")):
        if taken.exists() or taken.is_symlink():
            raise CardExists(_taken(vault, taken, rel, parsed.name))
    try:
        ensure_inside(vault.cards_dir, target)
    except RefusedWrite:
        raise RefusedWrite(f"{rel} would be written outside the vault's cards/ folder (a symlinked folder?)") from None
    blocking = why_folder_cannot_be_made(vault, rel)
    if blocking is not None:
        raise RefusedWrite(f"{blocking}, so {rel} cannot be written; choose another --id")
    return PendingCard(rel, text, lint_pending(vault, {rel: data}, today=today)[rel])


def _taken(vault: Vault, target: Path, rel: str, name: str) -> str:
    """Why `rel` cannot be written, and what to do: the same name gives the same id, so a second `cairn add` of one
    lesson (a command run again) finds its own card there, where another --id would only meet name-unique. The card
    there is read as git stores it (`gitrepo.stored_text`: one checked out in UTF-16 is that card)."""
    try:
        there = named_alike(rel, gitrepo.stored_text(vault, rel, target.read_bytes()), name)
    except OSError:
        there = None
    if there is not None:
        return (
            f"{rel} already holds a card named {there!r} (names are unique): edit that card, or give this one "
            "another --name (the file was left untouched)"
        )
    return f"{rel} already exists; choose another --id (the file was left untouched)"


def named_alike(rel: str, data: bytes, name: str) -> str | None:
    """The name of the card `data` (the file `rel`) when it is `name` once case, punctuation and spacing are folded,
    else None: the same lesson written again, where another id would only meet name-unique."""
    there, _ = parse_card(rel, data)
    return there.name if there is not None and name_key(there.name) == name_key(name) else None


def _check_utf8(card: NewCard, rel: str) -> None:
    """Refuse text that is not UTF-8 (a terminal in another encoding hands Python its bytes as lone surrogates),
    naming the field: YAML would write it escaped, then refuse to read it back ("invalid Unicode character escape
    code"), blaming frontmatter Cairn wrote itself."""
    fields: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("name", (card.name,)),
        ("summary", (card.summary,)),
        ("scope", card.scope),
        ("body", (card.body,)),
        ("aliases", card.aliases),
        ("not_when", card.not_when),
        ("supersedes", card.supersedes),
        ("source", (card.source or "",)),
    )
    for label, values in fields:
        try:
            for value in values:
                value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidCard(
                f"{rel} was not written: its {label} is not UTF-8 text (a terminal set to another encoding?); "
                "give it in UTF-8 and run it again"
            ) from None


def why_folder_cannot_be_made(vault: Vault, rel: str) -> str | None:
    """What stands where a folder of `rel` must be (`cards/git is a file, not a folder`), or None: a card
    `cards/git/x.md` cannot be written while `cards/git` is a file, or a symlink to nothing (which no folder can be
    made at: the write failed with "File exists")."""
    parts = rel.split("/")[:-1]
    for end in range(1, len(parts) + 1):
        folder = vault.root.joinpath(*parts[:end])
        shown = "/".join(parts[:end])
        if folder.is_symlink() and not folder.exists():
            return f"{shown} is a symlink to {os.readlink(folder)}, which does not exist"
        if folder.exists() and not folder.is_dir():
            return f"{shown} is a file, not a folder"
    return None


def lint_pending(
    vault: Vault, files: Mapping[str, bytes], *, today: dt.date | None = None, commit: str | None = None
) -> dict[str, tuple[Finding, ...]]:
    """Lint files not written yet (vault-relative path -> bytes) as `cairn lint` would with them in the vault (a
    pending file replaces the file at its path); returns each path's findings. The check every command that writes
    a card runs first, so none accepts a card that `cairn lint` would refuse. commit: the vault is that commit's
    tree, not the working tree (a draft committed on top of it is judged beside its cards, by its `cairn.toml`)."""
    if not files:
        return {}
    source = WORKTREE if commit is None else COMMIT
    report = lint_files(vault, list(files), today=today, pending=files, source=source, commit=commit)
    found: dict[str, list[Finding]] = {rel: [] for rel in files}
    for finding in report.findings:
        if (
            finding.rule == "config-invalid"
            and finding.path not in found
            and not finding.message.endswith(SANITIZE_REFUSES)
        ):
            # lint fell back to the defaults: the card would be checked against a policy the team did not set
            from cairn.index.build import vault_command  # `cairn add --vault NAME` runs from any folder

            raise CairnError(
                f"{finding.path}:{finding.line}: {finding.message.removesuffix(DEFAULTS_USED)}; "
                f"fix it (`{vault_command(vault, 'lint')}` shows it), then run this again (nothing was written)"
            )
        if finding.path in found:
            found[finding.path].append(finding)
    return {rel: tuple(items) for rel, items in found.items()}


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
    data = checked_out_card(vault, pending.rel_path, pending.text)
    try:
        write_atomic(target, data, overwrite=False)
    except CardExists:  # written by another run since prepare_card looked
        raise CardExists(
            f"{pending.rel_path} already exists; choose another --id (the file was left untouched)"
        ) from None
    except OSError as exc:
        raise CairnError(f"{unwritable(pending.rel_path, exc)} (nothing was written)") from None
    return target


def checked_out_card(vault: Vault, rel: str, text: str, encodings: Mapping[str, str | None] | None = None) -> bytes:
    """A new card's file as git checks `rel` out: in the `working-tree-encoding` the vault's `.gitattributes` give it
    (a UTF-8 file where git expects UTF-16 made the printed `git add` fail, "BOM is required"), else UTF-8; from
    `encodings` (`gitrepo.working_tree_encodings`) when given. A CairnError when that encoding cannot hold the text
    (or Python lacks it)."""
    encoding = encodings[rel] if encodings is not None else gitrepo.working_tree_encoding(vault, rel)
    try:
        return gitrepo.encoded_as_checked_out(text, encoding)
    except (LookupError, UnicodeEncodeError):
        raise CairnError(
            f"{rel} was not written: .gitattributes gives it working-tree-encoding={encoding}, which cannot hold "
            "this card's text; write it where that attribute does not apply, or change the attribute"
        ) from None


def unwritable(rel: str, exc: OSError) -> str:
    """Why the card file `rel` could not be written, in the vault's terms (not the temp file's), with what to do."""
    folder = rel.rpartition("/")[0] or "."
    fix = disk_fix(exc, "check that you can write there")
    return f"{rel} could not be written: {exc.strerror or exc} in {folder}/; {fix}"


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
    "card_slug",
    "checked_out_card",
    "init_vault",
    "lint_pending",
    "named_alike",
    "prepare_card",
    "render_card",
    "render_frontmatter",
    "resolve_card_id",
    "template_dir",
    "unwritable",
    "why_folder_cannot_be_made",
    "write_card",
]
