"""When two cards are near-duplicates: the one definition `cairn lint` (near-duplicate) and `cairn review` report.

Three figures, each a share in [0, 1]:
- name: difflib's character ratio of the two names, compared as name-unique compares them (case, spacing and end
  punctuation do not count);
- summary: the Jaccard index of the two summaries' term sets, terms as recall sees them
  (`cairn.hot.tokens.tokenize`: CJK text as 2-grams, stop words dropped, plurals folded, identifiers with their
  parts), when each summary has at least MIN_TERMS terms;
- body: the same for the bodies, when each has at least MIN_BODY_TERMS terms.

Two cards are near-duplicates when one figure reaches the threshold, `[lint] duplicate_threshold` in cairn.toml
(default 0.8), the same for all three; the name counts only when both names have at least MIN_NAME_WORDS words and
the cards share a scope (or neither has one). Cards linked by `supersedes` are expected to be alike; callers skip
them.

Why these choices. Lint and review used to disagree: lint split words with its own regex (a run of CJK text was one
"word", so Chinese summaries hardly ever matched) and flagged at 0.8; review used recall's terms and flagged
summaries at 0.6 and names at 0.85 within a scope. Measured on the dev suites' vaults (benchmarks/.work; tldr-en
has 1,043 cards, each a different tool): summary Jaccard >= 0.6 pairs 47 of its cards, mostly different tools with
templated summaries ("Calculate SHA224 cryptographic checksums." and "... SHA512 ..."); >= 0.7 still 14; >= 0.8
five pairs whose summaries are copies with at most a word changed. Names are worse: lint's character ratio at 0.8
gave 123 warnings on tldr-en ("cp" and "scp", "cargo rustc" and "cargo rustdoc", "docker container rm" and "docker
container stop"): in a short name the one word that tells two cards apart is most of the name. So the name counts
only for sentence-like names (4 words or more; a CJK run counts a word per 2 characters), which lesson names are,
and only within a scope ("Pin versions" in [python] and in [node] are two lessons). On the dev vaults lint now warns
10 times on tldr-en (was 133), 4 on tldr-zh (was 16), none by name; the lint fixtures' near-copies (a name with one
word respelled, a summary with one word changed) are still found.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher

from cairn.hot.tokens import tokenize

DEFAULT_THRESHOLD = 0.8  # `[lint] duplicate_threshold`'s default (cairn.config.LintSettings)
MIN_TERMS = 4  # term sets smaller than this are too small to call an overlap
MIN_BODY_TERMS = 20
MIN_NAME_WORDS = 4

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")
_WORDING = {
    "name": "their names are {:.0%} alike",
    "summary": "their summaries share {:.0%} of their words",
    "body": "their bodies share {:.0%} of their words",
}


def terms(text: str) -> frozenset[str]:
    """The set of recall's terms in a text: what summaries and bodies are compared on."""
    return frozenset(tokenize(text))


def name_key(name: str) -> str:
    """A name as names are compared (for uniqueness and likeness): case, spacing and end punctuation do not count,
    Chinese full-width end punctuation (`。！？：；`) as much as ASCII's, nor the Unicode form (NFKC): `Ｄｏｃｋｅｒ`, as
    an input method types it and recall reads it, is `Docker`, and an accent macOS spelled as a separate mark is
    the accent."""
    if not name.isascii():
        name = unicodedata.normalize("NFKC", name)
    return " ".join(name.casefold().split()).strip(" .!?:;。！？：；")


@dataclass(frozen=True, slots=True)
class Profile:
    """What is compared of a card (`profile` makes one). name: as `name_key` gives it; name_words: its length in
    words; scope: case-folded; summary, body: term sets, body None when not read (then bodies are not compared)."""

    name: str
    name_words: int
    scope: frozenset[str]
    summary: frozenset[str]
    body: frozenset[str] | None = None


def profile(
    name: str,
    scope: tuple[str, ...],
    summary: str | frozenset[str],
    body: str | frozenset[str] | None = None,
) -> Profile:
    """A card's profile; summary and body as text, or as their terms when the caller has them already."""
    key = name_key(name)
    return Profile(
        key,
        _words(key),
        frozenset(s.casefold() for s in scope),
        terms(summary) if isinstance(summary, str) else summary,
        terms(body) if isinstance(body, str) else body,
    )


@dataclass(frozen=True, slots=True)
class Likeness:
    """The three figures of a pair of cards; name_counts: whether the name figure may make them near-duplicates."""

    name: float
    summary: float
    body: float
    name_counts: bool

    def duplicate(self, threshold: float = DEFAULT_THRESHOLD) -> tuple[str, float] | None:
        """The strongest figure that makes the pair near-duplicates, as (`name`, `summary` or `body`, value)."""
        figures = [("summary", self.summary), ("body", self.body)]
        if self.name_counts:
            figures.insert(0, ("name", self.name))
        key, value = max(figures, key=lambda f: f[1])
        return (key, value) if value >= threshold else None


def likeness(a: Profile, b: Profile, floor: float = 0.0) -> Likeness:
    """How alike two cards are. With a `floor`, a name ratio that cannot make a near-duplicate at that threshold
    (it does not count, or its cheap bounds fall short) is reported as 0: lint passes its threshold to skip most of
    difflib's work; review passes none to show every figure."""
    name_counts = min(a.name_words, b.name_words) >= MIN_NAME_WORDS and shares_scope(a.scope, b.scope)
    return Likeness(
        name=_name_ratio(a.name, b.name, floor) if name_counts or not floor else 0.0,
        summary=_jaccard(a.summary, b.summary, MIN_TERMS),
        body=_jaccard(a.body, b.body, MIN_BODY_TERMS) if a.body is not None and b.body is not None else 0.0,
        name_counts=name_counts,
    )


def shares_scope(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two cards share a scope, or neither has one."""
    return bool(a & b) or not (a or b)


def describe(key: str, value: float) -> str:
    """A figure in words (`their names are 94% alike`), as lint's message and review's reason say it."""
    return _WORDING[key].format(value)


def _name_ratio(a: str, b: str, floor: float) -> float:
    matcher = SequenceMatcher(None, a, b)
    if floor and (matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor):
        return 0.0
    return matcher.ratio()


def _jaccard(a: frozenset[str], b: frozenset[str], minimum: int) -> float:
    if len(a) < minimum or len(b) < minimum:
        return 0.0
    return len(a & b) / len(a | b)


def _words(name: str) -> int:
    """Words in a name; a run of CJK text counts a word per 2 characters (CJK is written without spaces)."""
    count = 0
    for word in name.split():
        runs = _CJK_RUN.findall(word)
        count += len(_CJK_RUN.sub(" ", word).split()) + sum(max(1, len(run) // 2) for run in runs)
    return count
