"""Git's `.mailmap`: the name and e-mail each person's commits are shown under (gitmailmap(5)), so that someone who
committed as `Ann <ann@old.example>` and as `Ann Lee <ann@new.example>` is one author in `cairn show` and
`cairn review`, as in `git shortlog`.

The file is read from a commit's tree, the reviewed one (the index's commit for `show`, the merge base for `review`),
never from the working tree: git itself reads the working tree's `.mailmap` first, so an uncommitted edit, or a pull
request adding a line for its own commits, would change who is credited. The text is untrusted like the rest of git's
names: callers show the mapped names through the same checks as the names git gave.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_BYTES = 1024 * 1024  # a larger .mailmap is not read: no one's is near this

# (proper name or None, proper e-mail or None): what an entry replaces. Keyed by the commit's e-mail (folded), and by
# (commit name folded, commit e-mail folded) for entries that name the commit's name too; those win.
Proper = tuple[str | None, str | None]


@dataclass(frozen=True, slots=True)
class Mailmap:
    by_email: dict[str, Proper] = field(default_factory=dict)
    by_name_and_email: dict[tuple[str, str], Proper] = field(default_factory=dict)

    def identity(self, name: str, email: str) -> tuple[str, str]:
        """The (name, e-mail) a commit's author is shown under: the entry for its name and e-mail, else the one for
        its e-mail alone (both compared ignoring case, as git compares them), else as committed."""
        key = email.casefold()
        proper = self.by_name_and_email.get((name.casefold(), key)) or self.by_email.get(key)
        if proper is None:
            return name, email
        return proper[0] or name, proper[1] or email

    def authors(self, authors: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Provenance's author list (`name`, `email`, `commits`) mapped, entries that become one person merged (their
        commits added), in the order each first appears."""
        merged: dict[str, dict[str, Any]] = {}
        for author in authors:
            name, email = self.identity(str(author.get("name", "")), str(author.get("email", "")))
            entry = merged.setdefault(author_key(name, email), {**author, "name": name, "email": email, "commits": 0})
            commits = author.get("commits")
            entry["commits"] += commits if isinstance(commits, int) and not isinstance(commits, bool) else 0
        return list(merged.values())


def author_key(name: str, email: str) -> str:
    """One author: by e-mail (any case), or by name when the commit has no e-mail (git allows `<>`), so people
    without one are not all counted as the first of them."""
    return f"<{email.lower()}>" if email.strip() else name


def parse(text: str) -> Mailmap:
    """The entries of a `.mailmap`'s text. Each line is one of
    `Proper Name <commit@email>`, `<proper@email> <commit@email>`, `Proper Name <proper@email> <commit@email>`,
    `Proper Name <proper@email> Commit Name <commit@email>`; `#` starts a comment; lines of any other shape are
    skipped, as git skips them."""
    mailmap = Mailmap()
    for line in text.splitlines():
        line = _without_comment(line)
        first = _bracketed(line)
        if first is None:
            continue
        name1, email1, rest = first
        second = _bracketed(rest)
        if second is None:
            if name1:
                mailmap.by_email[email1.casefold()] = (name1, None)
            continue
        name2, email2, _ = second
        proper = (name1 or None, email1 or None)
        if name2:
            mailmap.by_name_and_email[(name2.casefold(), email2.casefold())] = proper
        else:
            mailmap.by_email[email2.casefold()] = proper
    return mailmap


def _without_comment(line: str) -> str:
    """The line up to a `#` that starts it or follows white space outside `<...>`."""
    inside = False
    for i, char in enumerate(line):
        if char == "<":
            inside = True
        elif char == ">":
            inside = False
        elif char == "#" and not inside and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _bracketed(text: str) -> tuple[str, str, str] | None:
    """(the name before the first `<e-mail>`, the e-mail, the text after it), or None when there is none."""
    start = text.find("<")
    end = text.find(">", start + 1)
    if start < 0 or end < 0:
        return None
    return " ".join(text[:start].split()), text[start + 1 : end].strip(), text[end + 1 :]


EMPTY = Mailmap()
