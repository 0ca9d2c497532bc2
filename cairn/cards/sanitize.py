"""`cairn sanitize`: a copy of the vault's committed cards with secrets and identifying details redacted.

What is redacted (each counted by kind): private keys, cloud keys, tokens and secret assignments (at least every
secret the lint rule `secret` names, so the copy passes it; the placeholders it lets pass are left as written),
e-mail addresses, the user name in home-directory
paths, internal host names (`[sanitize] internal_domains`), IP addresses, and whatever `[sanitize] patterns` adds. Markers are plain words (`REDACTED-EMAIL`) so frontmatter stays valid YAML
and Markdown renders them as text. The copy is built in a temporary folder beside DIR and renamed into place; what a
run stopped for good left there, the next run puts right (`recover_interrupted`).

`[sanitize] patterns` come from the vault, so they are untrusted: at most 100, each at most 1,000 characters, and
with any of them the redaction runs in a child process that is stopped after `PATTERN_SECONDS` (a pattern such as
`(a+)+$` backtracks for ever on a long run of `a`): a clear error naming the pattern, and nothing written.
"""

from __future__ import annotations

import contextlib
import ipaddress
import multiprocessing
import os
import re
import shutil
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn import gitrepo
from cairn.atomic import disk_fix, new_folder_mode
from cairn.cards.card import MAX_CARD_BYTES, card_id_from_path, oversize_finding, parse_card
from cairn.cards.visible import fold
from cairn.config import SanitizeSettings, VaultConfigError, line_of_key
from cairn.finding import Finding
from cairn.hot.errors import InvalidConfig, RefusedWrite
from cairn.hot.vault import Vault
from cairn.lint.rules.secret import REDACTABLE, bearer_kept, is_placeholder, placeholder_in

PATTERN_SECONDS = 10.0  # all of a vault's cards through its own patterns, at most
# The file every copy holds beside its cards/: `--force` replaces a folder only when it holds this file and nothing
# but it and cards/ of card files, what `cairn sanitize` writes. Before, it replaced any folder it was given that was
# not the vault, its parent or the home folder: `--out /work --force` moved a whole workspace aside and deleted it.
MARKER = ".cairn-sanitized"
MARKER_TEXT = (
    "A copy of a vault's cards that `cairn sanitize` wrote, with secrets and identifying details redacted.\n"
    "`cairn sanitize --force` may replace this folder, as long as it holds only this file and cards/.\n"
)
MAX_PATTERNS = 100
MAX_PATTERN_CHARS = 1000

Replace = Callable[["re.Match[str]"], str | None]  # None: leave this match alone
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of redaction: matches of `pattern` are replaced by `replace(match)` (None keeps the match)."""

    kind: str
    pattern: re.Pattern[str]
    replace: Replace


@dataclass(frozen=True, slots=True)
class FileReport:
    """What was redacted in one card file, by kind."""

    path: str
    counts: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)


@dataclass(frozen=True, slots=True)
class SanitizeReport:
    out: Path
    commit: str
    files: tuple[FileReport, ...]
    skipped: tuple[Finding, ...]

    def totals(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for file in self.files:
            total.update(dict(file.counts))
        return dict(sorted(total.items()))

    def to_dict(self) -> dict[str, object]:
        return {
            "out": str(self.out),
            "commit": self.commit,
            "files": [{"path": f.path, "redactions": dict(f.counts)} for f in self.files],
            "totals": self.totals(),
            "skipped": [f.to_dict() for f in self.skipped],
        }


def _marker(kind: str) -> Replace:
    text = f"REDACTED-{kind.upper()}"
    return lambda match: text


# The lint rule `secret` lets placeholders pass (`AKIAIOSFODNN7EXAMPLE`, `Bearer YOUR_ACCESS_TOKEN_HERE`,
# `https://user:pass@host`): these rules, broader than its patterns, leave them as it does, so the copy keeps what
# the rule keeps.
def _unless_placeholder(kind: str) -> Replace:
    text = f"REDACTED-{kind.upper()}"
    return lambda match: None if placeholder_in(match.group(0)) else text


def _bearer(match: re.Match[str]) -> str | None:
    if bearer_kept(match.group(2)):
        return None
    return match.group(1) + "REDACTED-TOKEN"


def _url_password(match: re.Match[str]) -> str | None:
    if is_placeholder(match.group(2)):
        return None
    return match.group(1) + "REDACTED-SECRET"


def _secret_value(match: re.Match[str]) -> str | None:
    value = match.group(3)
    if value[0] in "$<{%[(" or value.startswith("REDACTED") or "*" in value or placeholder_in(value):
        return None  # a variable, placeholder or an already-masked value, not a secret
    if not any(c.isdigit() for c in value) and len(value) < 20:
        return None  # an ordinary word ("token: regenerate ...")
    return match.group(1) + match.group(2) + "REDACTED-SECRET"


_NOT_USERS = frozenset({"user", "username", "you", "yourname", "me", "runner", "redacted-user", "name"})


def _home_user(match: re.Match[str]) -> str | None:
    user = match.group(2)
    if user.lower() in _NOT_USERS or user[0] in "$<{%*" or user.startswith("REDACTED"):
        return None
    return match.group(1) + "REDACTED-USER"


_URL_USER = re.compile(r"://[^\s/@]*:$")


def _email(match: re.Match[str]) -> str | None:
    # git@github.com:org/repo names no one; REDACTED-SECRET@host is a URL whose password is already gone, and
    # `https://user:pass@host` one whose password the URL rule left as a placeholder.
    if match.group(0).lower().startswith(("git@", "redacted-")):
        return None
    if _URL_USER.search(match.string, max(0, match.start() - 100), match.start()):
        return None
    return "REDACTED-EMAIL"


# The endings of files whose names hold a configured domain (`settings.local.json`, `docker-compose.corp.yml`): a
# name that ends in one is taken for a file's. A few are country domains too (`.md`, `.sh`), but no one names a host
# `db.corp.example.sh`, where `notes.local.md` is a common file.
_FILE_ENDINGS = frozenset(
    "bak cfg conf css csv env html ini js json jsonc lock log md mjs py rb rs sh sql toml ts tsx txt xml yaml yml".split()
)


def _host(match: re.Match[str]) -> str | None:
    text = match.group(0)
    return None if text.rsplit(".", 1)[-1].lower() in _FILE_ENDINGS else "REDACTED-HOST"


def _ip(match: re.Match[str]) -> str | None:
    text = match.group(0)
    if ":" in text and not any(c.isdigit() for c in text):
        return None  # `a::b` is C++ or Rust far more often than an IPv6 address
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.is_loopback or address.is_unspecified or str(address) == "255.255.255.255":
        return None  # localhost, 0.0.0.0 and broadcast name no machine of yours
    return "REDACTED-IP"


def _linted(group: int, keep: Callable[[str], bool]) -> Replace:
    """Redact what the lint rule `secret` finds (the whole match, or the value in `group`) unless it lets it pass."""
    kind = "TOKEN" if group == 0 else "SECRET"

    def replace(match: re.Match[str]) -> str | None:
        if keep(match.group(group)):
            return None
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        return match.group(0)[:start] + f"REDACTED-{kind}" + match.group(0)[end:]

    return replace


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

BUILTIN_RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
            r"|PuTTY-User-Key-File-.*?(?:\nPrivate-MAC:[^\n]*|\Z)",
            re.DOTALL,
        ),
        _marker("private-key"),
    ),
    Rule(
        "cloud-key",
        re.compile(
            r"\b(?:(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35})\b"
            r"|(?<=AccountKey=)[A-Za-z0-9+/=]{40,}"
        ),
        _unless_placeholder("cloud-key"),
    ),
    Rule(
        "token",
        re.compile(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255}|glpat-[A-Za-z0-9_\-]{20,}"
            r"|xox[abposr]-[A-Za-z0-9-]{10,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_\-]{20,}"
            r"|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,})\b"
            r"|\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"
        ),
        _unless_placeholder("token"),
    ),
    Rule("token", re.compile(r"(\b[Bb]earer\s+)([A-Za-z0-9._~+/\-]{20,}=*)"), _bearer),
    Rule("secret", re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(?=@)"), _url_password),
    Rule(
        "secret",
        re.compile(
            r"(?i)(\b[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
            r"|private[_-]?key|client[_-]?secret)[A-Za-z0-9_.-]*)"
            r"([\"']?\s*[:=]\s*[\"']?)((?:[^\s\"'`,;&]|&(?![\w.-]+=)){8,})"  # up to a query's next `&name=`
        ),
        _secret_value,
    ),
    *(Rule("token" if group == 0 else "secret", pattern, _linted(group, keep)) for pattern, group, keep in REDACTABLE),
    Rule("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"), _email),
    Rule(
        "home-path",
        # `/var/home` (Fedora Atomic), `/usr/home` (FreeBSD), `/mnt/c/Users` (WSL): `/home` after another folder
        re.compile(
            r"((?<![\w.])(?:/var|/usr)?/home/|(?<![\w.])(?:/mnt/[A-Za-z])?/Users/|\b[A-Za-z]:\\\\?Users\\\\?)"
            r"([^/\\\s\"'`)\]]+)"
        ),
        _home_user,
    ),
)

_IP_RULES: tuple[Rule, ...] = (
    Rule("ip", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)"), _ip),
    Rule("ip", re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])"), _ip),
)


def rules_for(settings: SanitizeSettings, config_text: str | None = None) -> list[Rule]:
    """The built-in rules, internal host names for the configured domains, IP addresses, then custom patterns.
    config_text: the cairn.toml the settings were read from, for the line of a pattern refused."""
    rules = list(BUILTIN_RULES)
    for domain in settings.internal_domains:
        suffix = domain.strip().strip(".")
        if not suffix:
            continue
        labels = rf"(?:{_LABEL}\.)*" if "." in suffix else rf"(?:{_LABEL}\.)+"
        # The labels after the domain are the same host's (`db01.corp.acme.com`): the whole name goes
        pattern = rf"(?<![\w.-]){labels}{re.escape(suffix)}(?:\.{_LABEL})*(?![\w-])"
        rules.append(Rule("internal-host", re.compile(pattern, re.IGNORECASE), _host))
    rules.extend(_IP_RULES)
    line = line_of_key(config_text, "patterns")
    if len(settings.patterns) > MAX_PATTERNS:
        raise VaultConfigError(
            f"[sanitize] patterns has {len(settings.patterns)} entries; at most {MAX_PATTERNS}", line=line
        )
    for i, text in enumerate(settings.patterns):
        if len(text) > MAX_PATTERN_CHARS:
            raise VaultConfigError(
                f"[sanitize] patterns[{i}] is {len(text)} characters long; at most {MAX_PATTERN_CHARS}", line=line
            )
        try:
            rules.append(Rule("custom", re.compile(text), _marker("")))
        except re.error as exc:
            raise VaultConfigError(
                f"[sanitize] patterns[{i}] is not a valid regular expression: {exc}", line=line
            ) from None
    return [Rule(r.kind, r.pattern, (lambda m: "REDACTED") if r.kind == "custom" else r.replace) for r in rules]


def redact(text: str, rules: list[Rule]) -> tuple[str, Counter[str]]:
    """The text with every rule applied in order, and how many matches each kind redacted."""
    counts: Counter[str] = Counter()
    for rule in rules:

        def substitute(match: re.Match[str], rule: Rule = rule) -> str:
            replaced = rule.replace(match)
            if replaced is None:
                return match.group(0)
            counts[rule.kind] += 1
            return replaced

        text = rule.pattern.sub(substitute, text)
    return text, counts


def redact_all(
    texts: list[tuple[str, str]],
    settings: SanitizeSettings,
    *,
    seconds: float = PATTERN_SECONDS,
    progress: Progress | None = None,
    config_text: str | None = None,
) -> list[tuple[str, Counter[str]]]:
    """`redact` over (path, text) pairs with `rules_for(settings)`. With vault patterns, in a child process stopped
    after `seconds` (InvalidConfig naming the pattern, its line in `config_text` as `rules_for` names a bad one, and
    the file it was on); without, here, each 100 texts told to `progress(done, total)`."""
    rules = rules_for(settings)
    if not settings.patterns:
        out = []
        for n, (_, text) in enumerate(texts):
            if progress and n % 100 == 0:
                progress(n, len(texts))
            out.append(redact(text, rules))
        return out
    ctx: Any = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    where = ctx.Array("i", [-1, -1])  # (file, rule) being worked on
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_redact_child, args=(send, where, [t for _, t in texts], settings), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(seconds):
            try:
                done: list[tuple[str, dict[str, int]]] = receive.recv()
                return [(text, Counter(counts)) for text, counts in done]
            except EOFError:
                pass
        file_at, rule_at = where[0], where[1]
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    custom = [i for i, r in enumerate(rules) if r.kind == "custom"]
    path = texts[file_at][0] if 0 <= file_at < len(texts) else "a card"
    if rule_at in custom:
        n = custom.index(rule_at)
        raise VaultConfigError(
            f"[sanitize] patterns[{n}] {settings.patterns[n]!r} ran over {seconds:g} s on {path}: nested repetition "
            "such as (a+)+ can take for ever; make the pattern simpler (nothing was written)",
            line=line_of_key(config_text, "patterns"),
        )
    raise InvalidConfig(
        f"redacting {path} with the [sanitize] patterns ran over {seconds:g} s or failed; make them simpler "
        "(nothing was written)"
    )


def _redact_child(send: Any, where: Any, texts: list[str], settings: SanitizeSettings) -> None:
    rules = rules_for(settings)
    out: list[tuple[str, dict[str, int]]] = []
    for n, text in enumerate(texts):
        where[0] = n
        counts: Counter[str] = Counter()
        for r, rule in enumerate(rules):
            where[1] = r
            text, found = redact(text, [rule])
            counts.update(found)
        out.append((text, dict(counts)))
    send.send(out)
    send.close()


def check_out_dir(vault: Vault, out: Path, *, force: bool) -> Path:
    """The resolved output folder, or RefusedWrite: inside the vault (or its repository), holding the vault,
    not a folder, or not empty without --force."""
    target = Path(os.path.abspath(out.expanduser())).resolve()
    guarded = [vault.root.resolve()] + ([vault.git_root.resolve()] if vault.git_root else [])
    for root in guarded:
        if target == root or target.is_relative_to(root):
            raise RefusedWrite(f"{out} is inside the vault ({root}); choose a folder outside it (nothing was written)")
        if root.is_relative_to(target):
            raise RefusedWrite(f"{out} holds the vault ({root}); choose another folder (nothing was written)")
    if target == Path.home().resolve() or target.parent == target:
        raise RefusedWrite(
            f"{out} is your home folder or a file-system root; choose a new folder (nothing was written)"
        )
    if target.exists() and not target.is_dir():
        raise RefusedWrite(f"{out} exists and is not a folder (nothing was written)")
    if target.is_dir() and any(target.iterdir()):
        if not sanitized_copy(target):
            raise RefusedWrite(
                f"{out} is not empty and is not a copy `cairn sanitize` wrote ({MARKER} and cards/ only), so it is "
                "never replaced, not even with --force; choose a new or empty folder (nothing was written)"
            )
        if not force:
            raise RefusedWrite(f"{out} holds an earlier copy; pass --force to replace it (nothing was written)")
    return target


def sanitized_copy(folder: Path, *, marked: bool = True) -> bool:
    """Whether `folder` holds only what `cairn sanitize` writes: its `MARKER` file (unless not `marked`: a partial
    copy may not have it yet) and a `cards/` folder of folders and `.md` files, no symlink anywhere. An empty folder
    counts. Only such a folder is replaced, or removed as a leftover."""
    try:
        with os.scandir(folder) as entries:
            top = {entry.name: entry for entry in entries}
    except OSError:
        return False
    if not top:
        return True
    if not set(top) <= {MARKER, "cards"} or (marked and MARKER not in top):
        return False
    if MARKER in top and not top[MARKER].is_file(follow_symlinks=False):
        return False
    if "cards" not in top:
        return True
    if not top["cards"].is_dir(follow_symlinks=False):
        return False
    for root, dirs, files in os.walk(folder / "cards"):
        for name in dirs:
            if os.path.islink(os.path.join(root, name)):  # os.walk lists a link to a folder among the folders
                return False
        for name in files:
            if not name.endswith(".md") or os.path.islink(os.path.join(root, name)):
                return False
    return True


def sanitize_vault(
    vault: Vault,
    out: Path,
    settings: SanitizeSettings,
    *,
    force: bool = False,
    notice: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    config_text: str | None = None,
) -> SanitizeReport:
    """Write a redacted copy of the card files in HEAD's tree to `out`/cards/; never writes into the vault. What an
    interrupted run left beside `out` is put right first (`recover_interrupted`), each step told to `notice`.
    `progress(done, total)` hears the cards redacted, checked and written (seconds a thousand cards); config_text:
    the cairn.toml `settings` come from (the line of a bad pattern)."""
    target = check_out_dir(vault, out, force=True)  # where it is; whether it may be replaced once it is whole
    with _folder_lock(target.parent):
        for step in recover_interrupted(target):
            if notice is not None:
                notice(step)
        target = check_out_dir(vault, out, force=force)
        rules_for(settings, config_text)  # a bad pattern is an error before anything is read
        with gitrepo.open_repo(vault) as repo:
            try:
                return _sanitize(repo, vault, target, out, settings, progress, config_text)
            except OSError as exc:  # a file where a folder must be, a folder that cannot be written
                fix = disk_fix(exc, "choose a folder you can write to")
                raise RefusedWrite(
                    f"{out}: the copy could not be written there ({exc.strerror or exc}); {fix} (nothing was written)"
                ) from None


def recover_interrupted(target: Path) -> list[str]:
    """Put right what a run stopped for good (SIGKILL, a power cut) left beside `target`, and say each step: its
    partial copy (`.NAME.*.tmp`) is removed; the folder `--force` had moved aside (`.NAME.*.old`) is moved back when
    `target` is missing (the run stopped between its two renames), else removed (the new copy was in place)."""
    parent = target.parent
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    steps: list[str] = []
    olds = sorted(
        (parent / n for n in names if _leftover(n, target, ".old")), key=_changed, reverse=True
    )  # the newest first: the one a run moved aside last
    for name in names:
        if _leftover(name, target, ".tmp"):
            if sanitized_copy(parent / name, marked=False):
                shutil.rmtree(parent / name, ignore_errors=True)
                steps.append(f"removed {parent / name}, the partial copy of an interrupted run")
            else:
                steps.append(f"left {parent / name} as it is: it holds files `cairn sanitize` does not write")
    if olds and not os.path.lexists(target):
        os.rename(olds[0], target)
        steps.append(f"restored {target} from {olds[0]}, where an interrupted run had moved it aside")
        olds = olds[1:]
    for old in olds:
        if sanitized_copy(old):
            shutil.rmtree(old, ignore_errors=True)
            steps.append(f"removed {old}, the replaced copy an interrupted run left")
        else:
            steps.append(f"left {old} as it is: it holds files `cairn sanitize` does not write")
    return steps


def _leftover(name: str, target: Path, suffix: str) -> bool:
    """Whether `name` is one of `target`'s temporary folders (`tempfile.mkdtemp`'s 8 random characters between the
    prefix and the suffix `_move_into_place` and `_sanitize` give it)."""
    prefix = f".{target.name[:40]}."
    middle = name[len(prefix) : len(name) - len(suffix)]
    return (
        name.startswith(prefix)
        and name.endswith(suffix)
        and len(middle) == 8
        and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in middle)
    )


def _changed(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on the folder `--out` is in, for the run: two runs into one folder take turns, so neither
    takes the other's temporary folders for an interrupted run's. None when the folder cannot be opened (a missing
    one holds no leftover)."""
    import fcntl

    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _sanitize(
    repo: Any,
    vault: Vault,
    target: Path,
    out: Path,
    settings: SanitizeSettings,
    progress: Progress | None,
    config_text: str | None,
) -> SanitizeReport:
    commit = gitrepo.head_commit(repo)
    files: list[FileReport] = []
    skipped: list[Finding] = []
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name[:40]}.", suffix=".tmp", dir=target.parent))
    try:
        (staging / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        texts: list[tuple[str, str]] = []
        for entry in gitrepo.card_entries(repo, commit, vault):
            if card_id_from_path(entry.path) is None:
                skipped.append(Finding(entry.path, 0, "not-a-card", "only card files (.md) are copied"))
                continue
            if not _plain_path(entry.path):  # `cards/../../x.md` in a crafted tree would land outside the copy
                message = "the path has `..`, `.` or empty parts, which git never checks out; not copied"
                skipped.append(Finding(entry.path, 0, "file-name", message))
                continue
            if entry.mode in (gitrepo.SYMLINK_MODE, gitrepo.SUBMODULE_MODE):
                skipped.append(Finding(entry.path, 0, "file-symlink", "symlinks and submodules are not copied"))
                continue
            if entry.size > MAX_CARD_BYTES:
                skipped.append(oversize_finding(entry.path, entry.size))
                continue
            try:
                texts.append((entry.path, gitrepo.read_blob(repo, entry.blob).decode("utf-8")))
            except UnicodeDecodeError:
                skipped.append(Finding(entry.path, 0, "file-encoding", "not UTF-8 text; not copied"))
                continue
        total = 3 * len(texts)  # redacted, redacted again as read, written

        def part(offset: int) -> Progress | None:
            if progress is None:
                return None
            report = progress
            return lambda done, _: report(offset + done, total)

        redacted = redact_all(texts, settings, progress=part(0), config_text=config_text)
        # The copy as it would be read (its file name, its values decoded), asked of the same rules the same way: a
        # vault's own patterns run only in the child `redact_all` stops after PATTERN_SECONDS.
        as_read = [_as_read(path, raw, clean) for (path, raw), (clean, _) in zip(texts, redacted, strict=True)]
        named = [(path, path) for path, _ in texts]
        in_names = [counts for _, counts in redact_all(named, settings, config_text=config_text)]
        decoded = [(path, read or "") for (path, _), read in zip(texts, as_read, strict=True)]
        still = [
            counts for _, counts in redact_all(decoded, settings, progress=part(len(texts)), config_text=config_text)
        ]
        for done, ((path, _), (clean, counts), read, in_name, left) in enumerate(
            zip(texts, redacted, as_read, in_names, still, strict=True)
        ):
            if progress and done % 100 == 0:
                progress(2 * len(texts) + done, total)
            why = _left_in(in_name, read, left)
            if why:
                skipped.append(Finding(path, 0, "sanitize", why))
                continue
            dest = staging / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(clean, encoding="utf-8", newline="")
            files.append(FileReport(path, tuple(sorted(counts.items()))))
        if progress and texts:
            progress(total, total)
        # mkdtemp's 0700 (kept private while it is written) made every copy 0700, and an empty --out folder the user
        # made 0755 became 0700 too: the copy gets the mode of the folder it replaces, else the one the umask gives
        staging.chmod(stat.S_IMODE(target.stat().st_mode) if target.is_dir() else new_folder_mode())
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return SanitizeReport(target, commit, tuple(files), tuple(skipped))


# Markdown's backslash escapes, as a renderer shows them: an export from HTML escapes `_` and `@` (`ghp\_...`).
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _as_read(path: str, raw: str, clean: str) -> str | None:
    """The redacted card's values as YAML, HTML and Markdown decode them, as lint, agents and readers read them
    (`jane\\x40acme.com`, `ghp&#95;...`, `ghp\\_...`: the text was redacted as written), then folded as the lint
    rule `secret` reads them (NFKC: `password：S3cr3t` with a full-width colon, as a Chinese input method types it);
    None when the redaction broke the frontmatter a card had (a rule matched inside a YAML escape:
    `db\\x2eacme.internal`)."""
    import html

    before, _ = parse_card(path, raw.encode("utf-8"))
    card, _ = parse_card(path, clean.encode("utf-8"))
    if before is not None and card is None:
        return None
    values: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list | tuple):
            for item in value:
                collect(item)

    collect(card.to_dict() if card is not None else clean)
    if card is not None:
        values.append(clean)  # the whole file, as the rule reads it too: its YAML comments are in no value
    return "\n".join(fold(_MARKDOWN_ESCAPE.sub(r"\1", html.unescape(value))) for value in values)


def _left_in(in_name: Counter[str], as_read: str | None, left: Counter[str]) -> str:
    """Why a redacted card must not be copied, or "": its file name holds what sanitize redacts (the copy keeps the
    name), the redaction broke its frontmatter, or its values as read still hold some."""
    if in_name:
        return "its file name holds what sanitize redacts (an e-mail, a host, a user name); rename the card"
    if as_read is None:
        return "redacting it broke its frontmatter (a value written with escapes?); write the value plainly"
    if left:
        kinds = ", ".join(sorted(left))
        return (
            f"it holds what sanitize redacts ({kinds}) behind escapes (YAML `\\x40`, HTML `&#64;`, Markdown `\\_`) "
            "or full-width characters (`：`, `＠`); write it plainly"
        )
    return ""


def _plain_path(path: str) -> bool:
    """Whether a tree path names a file under the copy: relative, no `..`, `.` or empty part (a crafted tree object
    can hold any of them, and `git ls-tree -r` lists them as they are)."""
    return not path.startswith("/") and all(part not in ("", ".", "..") for part in path.split("/"))


def _move_into_place(staging: Path, target: Path) -> None:
    """Rename the finished copy onto `target`; a replaced folder (an earlier copy: `check_out_dir` made sure, and it
    is checked again here, just before) is moved aside first and removed after."""
    if not target.exists():
        os.rename(staging, target)
        return
    if not any(target.iterdir()):
        os.replace(staging, target)  # an empty folder is replaced in one step on POSIX
        return
    if not sanitized_copy(target):  # something was written into it while the copy was made
        raise RefusedWrite(f"{target} changed while the copy was made and is no longer one `cairn sanitize` wrote")
    old = Path(tempfile.mkdtemp(prefix=f".{target.name[:40]}.", suffix=".old", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except OSError:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
