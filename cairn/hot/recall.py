"""Recall: rank the indexed cards for a prompt with BM25F, admit, gate, and keep at most `max_cards` (or none).

1. The query's distinct tokens (`tokens.prompt_terms`: agent boilerplate sentences left out, pasted traceback,
   log and code lines at `tokens.PASTED_WEIGHT`) are weighted: IDF in this vault; agent instruction words (`tokens.INSTRUCTION_WORDS`)
   count for `instruction_weight` of their IDF (a CJK term's among the cards holding CJK terms, when they are
   `MIN_CJK_CARDS` or more); words the vault never uses weigh as much as a word found in one
   card, times `unknown_weight`, and count only for the gates (no card can match them). A CJK 2-gram the vault
   never uses counts half of that, for coverage only: about half the 2-grams of a run of Chinese straddle two
   words, and a small vault lacks most of the real ones too.
2. BM25F (name with aliases, summary and body, each length-normalised, one saturation) ranks every card sharing
   a term with the query.
3. Admission, in ranking order: status, expiry, supersedes, scope, not_when, already injected in the session;
   after the first admitted card, a card in its other language matched only by its terms (`OTHER_LANGUAGE`).
   Rejected cards are listed but take no slot and are not "the next candidate" for a margin.
4. The gates (`cairn.hot.gates`) run on the admissible cards in order. Injection is a prefix of that order: once a
   card fails a gate, no card ranked below it is injected (it would win only because a better match was refused).
   Cards that fit about as well and stand clear of the next together are injected as a group (`_group`); the
   semantic channel's z-scores, when given, veto (`_semantic_judgement`; not a card the words clearly pass whose
   z-score is near the semantic first's, `SEMANTIC_SPARE_LEAD`, `SEMANTIC_SPARE_NEAR`), and when nothing is injected
   pick its clear first choice among the first admissible cards (`_semantic_pick`), or the first admissible card
   when both channels put it first and its words nearly pass, or its cosine stands clear (`_agreement_pick`); an
   opt-in confidence gate (`cairn.hot.confidence`, `min_confidence`) picks the cut.
"""

import time

try:  # the C module itself: `bisect` is a Python wrapper around it, one import more
    from _bisect import bisect_left
except ImportError:  # pragma: no cover - an interpreter without it
    from bisect import bisect_left

from cairn.hot import Record, gates, ln
from cairn.hot.tokens import (
    INSTRUCTION_WORDS,
    is_cjk,
    nfkc,
    phrases,
    prompt_fragments,
    prompt_sentences,
    prompt_terms,
    prose_fragments,
    tokenize,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

    from cairn.config import RecallSettings
    from cairn.hot.index import IndexedCard, IndexReader, Postings

    # the semantic channel's evidence: similarities by card id, or a function giving them later (`recall`)
    Semantic = Mapping[str, float] | Callable[[], Mapping[str, float] | None]

INJECTED = "injected"
REJECTED = "rejected"
OVER_LIMIT = "over_limit"
ALREADY_INJECTED = "already_injected"  # admission's reason for a card the agent session already got
# Admission's reason for a card whose status is none of active, draft, retired (a typo lint's status-value finds).
UNKNOWN_STATUS = "unknown_status"
# A card written in the other language than the first admissible card (CJK in its name or summary, or not) and
# matched only by terms that card also matches: its translation, or a card sharing only its commands and names. It
# neither competes with it (lead, margin) nor is injected beside it: in a vault of lessons and their translations,
# a lesson's two versions silenced each other or took two slots for one lesson (benchmarks/mixed_vault.py, the tldr
# suites in one vault: Injection@1 of Chinese prompts 0.170 -> 0.173, of English ones 0.089 -> 0.090, the false
# injection rate of both unchanged). A vault in one language never has such a card: no dev suite's decision moved.
OTHER_LANGUAGE = "other_language"
# How many scored cards recall looks at beyond what the gates need, so explain and logs show the neighbourhood.
_MIN_EXAMINED = 20
# Recall reads the ranking in chunks of this many cards (card rows are fetched a chunk at a time).
_CHUNK = 64
# Slack on every pruning comparison: scores summed in another order differ in the last bits, never by this much.
_SLACK = 1e-9
# ... and on a ceiling of a score worked out from a sum of bounds (`_top`).
_CEILING = 1 + 1e-6
# `_kth` sorts up to this many scores, and beyond takes the k-th highest from a max-heap (both in C).
_SORT_UP_TO = 1000
# A known CJK term's IDF is taken among the cards holding CJK terms when there are at least this many (an index
# setting, `n_cjk_cards`): in a vault of English cards and Chinese ones, every Chinese word looked rarer by the
# English cards' count, which no Chinese word is ever found in, and that shared rarity shrank the lead of the right
# Chinese card over the next (benchmarks/mixed_vault.py: Chinese prompts' Recall@1 0.617 -> 0.654, as the Chinese
# cards alone, Injection@1 0.173 -> 0.185). Below it the whole vault's count stays: with a few Chinese cards every
# Chinese word is in most of them, and they would weigh next to nothing (the explain fixture's one Chinese card:
# coverage 0.92 -> 0.64). 30 is set by hand (as `SEMANTIC_MIN_CARDS`: a sub-vault with statistics of its own), not
# fitted: no suite here has a Chinese sub-vault between 4 and 176 cards.
MIN_CJK_CARDS = 30
# A CJK 2-gram the vault never uses counts this share of an unknown word in the coverage gate: about half the
# 2-grams of a run straddle two words (no evidence), the other half are words the vault does not know.
_CJK_UNKNOWN = 0.5


class Candidate(Record):
    """One scored card and what recall decided about it.

    score: raw BM25F score. lead (see `cairn.hot.gates`), coverage, margin: the three gate values
    (0.0 for cards refused at admission, which never reach the gates). decision: `injected` or `rejected`. reason: None when injected, else
    why not: a gate (`small_lead`, `low_coverage`, `small_margin`, `little_evidence`: the prompt's words the card
    matched weigh less than `min_evidence` rare words, `evidence_of`), admission (`out_of_scope`, `expired`,
    `retired`, `draft`, `unknown_status`: a status none of those three, `superseded`, `not_when`,
    `already_injected`), `other_language` (see `OTHER_LANGUAGE`) or `over_limit`.
    matched: the query terms the card matched. blocked_by: for a card that passed its own gates but sits below a
    card the gates refused, that card's id (its reason is then `small_margin`: it does not stand clear of it).
    confidence: for the first `max_cards` admissible cards, the confidence gate's estimate that the cards down to
    this one hold a right card (`cairn.hot.confidence`); 0.0 for the others, and for all when the gate is off
    (unless `recall(evidence=True)`). similarity: the semantic channel's
    cosine similarity of the card to the prompt, None without it. named: the prompt names the card (its name with
    aliases holds at least `gates.NAME_COVERAGE` of the prompt's weight), so its lead is counted `gates.NAMED_LEAD`
    times (`gates.named_lead`). picked: for a card the gates alone did not pass, the rule that injected it when
    nothing else was: `semantic` (`_semantic_pick`), `agreement` (`_agreement_pick`), `fragment`
    (`_fragment_pick`) or `phrase` (`_phrase_step`: the lead and margin gates at PHRASE_SCALE); None otherwise.
    said: the prompt says more of the card's own words than of the next card's, so its lead is counted
    `gates.NAMED_LEAD` times (`gates.said_lead`; worked out only where that decides the lead gate).
    """

    __slots__ = (
        "card",
        "score",
        "lead",
        "coverage",
        "margin",
        "decision",
        "reason",
        "matched",
        "blocked_by",
        "confidence",
        "similarity",
        "named",
        "picked",
        "said",
    )
    card: "IndexedCard"
    score: float
    lead: float
    coverage: float
    margin: float
    decision: str
    reason: str | None
    matched: tuple[str, ...]
    blocked_by: str | None
    confidence: float
    similarity: float | None
    named: bool
    picked: str | None
    said: bool

    def __init__(
        self,
        card: "IndexedCard",
        score: float,
        lead: float,
        coverage: float,
        margin: float,
        decision: str,
        reason: str | None,
        matched: tuple[str, ...] = (),
        blocked_by: str | None = None,
        confidence: float = 0.0,
        similarity: float | None = None,
        named: bool = False,
        picked: str | None = None,
        said: bool = False,
    ) -> None:
        self._init(
            card, score, lead, coverage, margin, decision, reason, matched, blocked_by, confidence, similarity, named,
            picked, said,
        )  # fmt: skip


class Result(Record):
    """injected: the cards to give the agent, best first. candidates: every card examined, by score.
    evidence: the confidence gate's features of each cut after admissible card k = 1 .. max_cards (what
    `benchmarks/confidence_study.py` fits on; `cairn.hot.confidence.FEATURES` names them). weights: the prompt's
    weights in this vault (what the layered merge puts on one scale, `cairn.hot.serve`); None when not recalled.
    fragment: the part of the prompt asked alone that injected the card, when the fragment pick did.
    phrases: the prompt's rare phrases the first injected card holds, when the phrase step injected it
    (`_phrase_step`: the lead and margin gates at PHRASE_SCALE of theirs)."""

    __slots__ = ("injected", "candidates", "settings", "evidence", "weights", "fragment", "phrases")
    injected: tuple[Candidate, ...]
    candidates: tuple[Candidate, ...]
    settings: "RecallSettings"
    evidence: "tuple[tuple[float, ...], ...]"
    weights: "QueryWeights | None"
    fragment: str | None
    phrases: tuple[str, ...]

    def __init__(
        self,
        injected: tuple[Candidate, ...],
        candidates: tuple[Candidate, ...],
        settings: "RecallSettings",
        evidence: "tuple[tuple[float, ...], ...]" = (),
        weights: "QueryWeights | None" = None,
        fragment: str | None = None,
        phrases: tuple[str, ...] = (),
    ) -> None:
        self._init(injected, candidates, settings, evidence, weights, fragment, phrases)

    @property
    def abstained(self) -> bool:
        return not self.injected


class QueryWeights(Record):
    """The query's terms and their weights in this vault.

    idf: weight of each term the vault knows (IDF times the instruction discount). mass: their sum, the most a card
    could score. unknown: weight of the words the vault never uses; unknown_cjk: of the CJK 2-grams it never uses
    (at `_CJK_UNKNOWN`). best: mass + unknown, the lead gate's denominator. total: best + unknown_cjk, the coverage
    denominator. df: each known term's document frequency; discount: each term's instruction discount times its
    salience (what the layered merge needs to weigh the terms over several vaults, `serve.Scale`). foreign: the terms
    weighed `FOREIGN_WEIGHT` of themselves, said only in sentences the vault hardly knows (`_foreign`).
    """

    __slots__ = (
        "terms", "idf", "mass", "unknown", "unknown_cjk", "unknown_terms", "one_card", "df", "discount", "foreign",
    )  # fmt: skip
    terms: tuple[str, ...]
    idf: dict[str, float]
    mass: float
    unknown: float
    unknown_cjk: float
    unknown_terms: dict[str, float]
    one_card: float
    df: dict[str, int]
    discount: dict[str, float]
    foreign: tuple[str, ...]

    def __init__(
        self,
        terms: tuple[str, ...],
        idf: dict[str, float],
        mass: float,
        unknown: float,
        unknown_cjk: float = 0.0,
        unknown_terms: "dict[str, float] | None" = None,
        one_card: float = 0.0,
        df: "dict[str, int] | None" = None,
        discount: "dict[str, float] | None" = None,
        foreign: tuple[str, ...] = (),
    ) -> None:
        self._init(
            terms, idf, mass, unknown, unknown_cjk, unknown_terms or {}, one_card, df or {}, discount or {}, foreign
        )

    @property
    def best(self) -> float:
        return self.mass + self.unknown

    @property
    def total(self) -> float:
        return self.mass + self.unknown + self.unknown_cjk


# What one prompt costs recall is bounded (the hook's prompt is cut at `hook.MAX_QUERY_CHARS` characters, but 8,000
# characters of pasted material or of the vault's commonest words can name hundreds of terms): at most
# MAX_QUERY_TERMS distinct terms are looked up (the first: `tokens.prompt_terms` puts the question's and the salient
# evidence's first, pasted material's last), and of those the vault knows, at most MAX_KNOWN_TERMS, whose postings
# hold at most QUERY_POSTINGS_PER_CARD per card of the vault (or MIN_QUERY_POSTINGS), are weighed: the most salient,
# rarest first (`_bounded`). The rest are left out, as words beyond the cut are. Ranking reads a term's postings
# whole while many terms are about as heavy (a prompt of hundreds of the vault's common words read every posting of
# each, 0.3 s at 10,000 cards, 3.5 s in a vault whose cards all share their words). No prompt of the dev suites (at
# most 69 terms, 38 known, 6.1 postings per card) or of the hook benchmark (5.5 per card at 10,000 cards) is cut.
MAX_QUERY_TERMS = 512
MAX_KNOWN_TERMS = 64
QUERY_POSTINGS_PER_CARD = 8
MIN_QUERY_POSTINGS = 20_000


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in order of first appearance."""
    return list(dict.fromkeys(tokenize(query)))


def prompt_weights(index: "IndexReader", query: str, settings: "RecallSettings | None" = None) -> QueryWeights:
    """The weights recall gives a prompt's terms (`tokens.prompt_terms` salience, IDF, instruction discount)."""
    return _query(index, query, settings or index.recall_settings())[2]


def _query(
    index: "IndexReader", query: str, settings: "RecallSettings"
) -> "tuple[list[str], dict[str, Postings], QueryWeights]":
    """A prompt's terms (`tokens.prompt_terms`, in order, within the bounds of MAX_QUERY_TERMS), their postings in
    this vault and their weights."""
    salience = prompt_terms(query)
    terms = list(salience)[:MAX_QUERY_TERMS]  # bounded: see MAX_QUERY_TERMS
    postings = index.postings(terms)
    budget = max(MIN_QUERY_POSTINGS, QUERY_POSTINGS_PER_CARD * index.n_cards)
    if len(postings) > MAX_KNOWN_TERMS or sum(found.df for found in postings.values()) > budget:
        terms, postings = _bounded(terms, postings, salience, budget)
    return terms, postings, _weights(index, terms, postings, settings, salience, prompt_sentences(query))


def _bounded(
    terms: "list[str]", postings: "dict[str, Postings]", salience: "Mapping[str, float]", budget: int
) -> "tuple[list[str], dict[str, Postings]]":
    """The terms and postings recall weighs when a prompt's known terms are over MAX_KNOWN_TERMS or their postings
    over `budget`: the most salient, rarest first (of alike ones, the first said), each that keeps both bounds (the
    first always). The terms the vault does not know stay (they are looked up, never scored)."""
    kept: dict[str, Postings] = {}
    total = 0
    known = [t for t in terms if t in postings]
    for term in sorted(known, key=lambda t: (-salience.get(t, 1.0), postings[t].df)):  # stable: the first said first
        found = postings[term]
        if len(kept) >= MAX_KNOWN_TERMS:
            break
        if kept and total + found.df > budget:
            continue  # a less salient term may still fit
        kept[term] = found
        total += found.df
    return [t for t in terms if t in kept or t not in postings], kept


def missing_terms(weights: QueryWeights, matched: "Collection[str]", limit: int = 5) -> list[str]:
    """The heaviest query terms a card does not match (words no card uses included), heaviest first."""
    every = [*weights.idf.items(), *weights.unknown_terms.items()]
    left = [(-w, i, t) for i, (t, w) in enumerate(every) if t not in matched and w > 0]
    return [t for _, _, t in sorted(left)[:limit]]


def rank(
    index: "IndexReader", query: str, settings: "RecallSettings | None" = None, depth: int | None = None
) -> list[tuple[int, float]]:
    """(card row, BM25F score) for every card sharing a term with the query, best first; ties by id. depth: only
    the `depth` best, the same rows and scores, found as recall finds them (`_top`: the cost follows the query's
    rare terms, not the vault's size)."""
    settings = settings or index.recall_settings()
    if depth is None:
        scores, _, _ = score_terms(index, query_terms(query), settings)
        return _ranked(index, scores)
    terms = query_terms(query)
    postings = index.postings(terms)
    ranked, _, _ = _top(index, terms, postings, _weights(index, terms, postings, settings), settings, depth)
    return ranked[:depth]


def recall(
    index: "IndexReader",
    query: str,
    *,
    scope: "Sequence[str] | None" = None,
    already_injected: "Collection[str]" = (),
    today: "dt.date | None" = None,
    settings: "RecallSettings | None" = None,
    examine_all: bool = False,
    decide_first: int | None = None,
    semantic: "Semantic | None" = None,
    evidence: bool = False,
    only_if_decisive: bool = False,
) -> Result:
    """The cards to inject for `query` (at most `settings.max_cards`, possibly none) and every card examined.

    scope: the declared scope tags (empty = no scope filtering). already_injected: card ids this session got.
    examine_all: look at every scored card (for `cairn explain`), not just enough to decide.
    decide_first: only the first n candidates are wanted (the hook logs 3, `hook.LOGGED_PER_VAULT`): `candidates` holds just those, the
    same n with the same decisions a call without it lists first, and recall stops as soon as they and the
    injected cards are settled (`_first_decisions`).
    semantic: the optional semantic channel's cosine similarity of cards to the prompt, by card id
    (`cairn.hot.semantic`); None (or empty) is the lexical judgement alone, exactly. Or a function giving them (or
    None), called when the gates first need them, after the ranking by words: the hook asks the warm encoder before
    it ranks and reads the answer then (`cairn.hot.semantic.ask`). When it gives none, the result is the lexical
    judgement's, exactly (recall runs again without it).
    only_if_decisive: with a function, call it only when its answer could change which cards are injected
    (`_decisive`); otherwise the words decide, as they would with the answer, and no candidate shows a similarity.
    The hook sets it (`serve.recall_all`, which reads the answers the merge across vaults needs), so a prompt that
    fits no card is not kept waiting for the warm encoder.
    evidence: fill `Result.evidence` and each candidate's `confidence` even with the confidence gate off
    (`benchmarks/confidence_study.py` fits on them); with it off, nothing else reads them, so a prompt skips them.

    Unless examine_all, only the best-scored cards are ranked exactly (`_top`): as many chunks of the ranking as
    admission and the gates need, the same cards and scores a full ranking would give.
    """
    if callable(semantic):
        semantic = _Once(semantic)  # the phrase step may recall again: the answer is read once
        if only_if_decisive:
            semantic = _Decisive(semantic)
    result = _decided(
        index, query, scope, already_injected, today, settings, examine_all, decide_first, semantic, evidence
    )
    if result.injected or getattr(result.settings, "min_confidence", 0.0) > 0:
        return result
    return (
        _phrase_step(
            index, query, result, scope, already_injected, today, examine_all, decide_first, semantic, evidence
        )
        or result
    )


def _decided(
    index: "IndexReader",
    query: str,
    scope: "Sequence[str] | None",
    already_injected: "Collection[str]",
    today: "dt.date | None",
    settings: "RecallSettings | None",
    examine_all: bool,
    decide_first: int | None,
    semantic: "Semantic | None",
    evidence: bool,
    said: bool = True,
) -> Result:
    """Recall's decision at `settings`: the gates, then (when nothing is injected) the fragment pick. said: the own
    words relief applies (`gates.said_lead`; not at the phrase step's looser gates)."""
    try:
        result = _recall(
            index, query, scope, already_injected, today, settings, examine_all, decide_first, semantic, evidence, said
        )
    except _Unanswered:  # the semantic channel was asked and gave nothing: the words alone decide
        result = _recall(
            index, query, scope, already_injected, today, settings, examine_all, decide_first, None, evidence, said
        )
    if result.injected or getattr(result.settings, "min_confidence", 0.0) > 0:
        return result
    return _fragment_pick(index, query, result, scope, already_injected, today) or result


# The phrase step: when nothing is injected and the first admissible card holds a rare phrase of the prompt (two of
# its words side by side, `tokens.phrases`, that at most PHRASE_RARE cards of the vault hold), recall decides again
# with the lead and margin gates at PHRASE_SCALE of theirs, and what that injects goes in when its first card holds
# such a phrase too. Words in the prompt's order are evidence that words scattered over a near-topic card are not:
# at 0.9 of every gate without it, the tldr suites' long slices reach 6.1% and 6.7% of false injections; with it,
# 4.1% and 4.4%, and every fittable suite gains 0.015-0.05 Injection@1. PHRASE_SCALE is the one value on a grid of
# per-count scales (RESULTS.md "Round 13", `benchmarks/phrase_study.py`) that every fold chose, fitted leaving one of
# the six fittable suites out at 5% per slice (each held-out suite stayed at or under 4.4% on every slice), with the
# coverage gate scaled too; coverage is left as it is since (a question about a tool the vault never names went in on
# "real number"; the suites lose 0.004 on tldr-zh and 0.006 on gostyle-agent, no false injection rate moves).
PHRASE_PICKED = "phrase"
PHRASE_SCALE = 0.9
PHRASE_RARE = 2
# At most this many of the prompt's phrases are weighed: only phrases whose two words the card matched can be the
# card's, so a prompt rarely has more than a few.
PHRASE_TRIES = 32
# A phrase whose two words more cards than this hold together is counted common without reading those cards; and
# one prompt reads at most this many cards' records in a vault besides the candidate's (a phrase that would need
# more, too).
PHRASE_READS = 16
# Of each field of a card read for its phrases, at most this many characters (the hook reads as much of a prompt):
# the contract lets a card reach 1 MB, whose phrases would cost 0.2 s to work out, 17 of them 3 s of one prompt.
# Every card of every suite is shorter (the longest, in stackfaq-en-dev, 10 KB in all).
PHRASE_CHARS = 8000
# And the records read for one prompt in a vault (the candidate's first) stop past this many characters (the seal's
# hash and the parse read a record whole: 16 cards of 1 MB cost 0.3 s); a phrase that would need more is counted
# common. 17 of the longest suite card (10 KB) stay under it.
PHRASE_READ_CHARS = 200_000


def _phrase_step(
    index: "IndexReader",
    query: str,
    result: Result,
    scope: "Sequence[str] | None",
    already_injected: "Collection[str]",
    today: "dt.date | None",
    examine_all: bool,
    decide_first: int | None,
    semantic: "Semantic | None",
    evidence: bool,
) -> Result | None:
    """What recall decides with the lead and margin gates at PHRASE_SCALE, when the first card it injects holds a rare phrase
    of the prompt (and the first admissible card does too); else None."""
    first = next((c for c in result.candidates if c.reason in GATE_REASONS), None)
    read = _Held(index)  # the records read for this prompt, shared by both asks
    if first is None or not rare_phrases(index, query, first, read):
        return None  # (a card the semantic channel vetoed is asked too: the veto spares, at looser gates, a card
        # whose words clear the lead gate, `SEMANTIC_SPARE_LEAD`, and the rules at PHRASE_SCALE decide as they do)
    settings = result.settings
    loose = _scaled(settings, PHRASE_SCALE)
    again = _decided(
        index, query, scope, already_injected, today, loose, examine_all, decide_first, semantic, evidence, False
    )
    if not again.injected:
        return None
    top = again.injected[0]
    held = rare_phrases(index, query, top, read)
    if not held:
        return None
    picked = tuple(c if c.picked else c.replace(picked=PHRASE_PICKED) for c in again.injected)
    swap = {id(c): p for c, p in zip(again.injected, picked, strict=True)}
    candidates = tuple(swap.get(id(c), c) for c in again.candidates)
    return Result(picked, candidates, settings, again.evidence, again.weights, again.fragment, tuple(held))


def rare_phrases(index: "IndexReader", query: str, candidate: Candidate, held: "_Held | None" = None) -> list[str]:
    """The prompt's phrases (`tokens.phrases`) the candidate's card holds and at most PHRASE_RARE cards of the vault
    do, in the prompt's order. Only a phrase of two words the card matched can be the card's; the cards holding
    both words come from the words' postings, and when they are more than PHRASE_RARE, at most PHRASE_READS of
    them (the phrase is counted common beyond) are read to count those that hold the words side by side. The index
    stores no phrases: a card's are worked out from its stored record (`_Held`, given to share the reads of one
    prompt between calls), for at most PHRASE_READS cards besides the candidate and while the records read hold at
    most PHRASE_READ_CHARS (a phrase that would need more is counted common), in the index's id order. The postings come first: when every
    phrase is common by them, no record is read (most prompts a vault knows only in common words)."""
    matched = set(candidate.matched)
    if len(matched) < 2:
        return []
    wanted: list[str] = []
    for phrase in phrases(tokenize(query)):
        a, _, b = phrase.partition(" ")
        if a in matched and b in matched and phrase not in wanted:
            wanted.append(phrase)
            if len(wanted) >= PHRASE_TRIES:
                break
    if not wanted:
        return []
    postings = index.postings({word for phrase in wanted for word in phrase.split(" ")})
    holding: dict[str, set[int]] = {}  # the cards holding both words, for the phrases that could be rare
    for phrase in wanted:
        a, _, b = phrase.partition(" ")
        both = set(postings[a].rows).intersection(postings[b].rows) if a in postings and b in postings else set()
        if len(both) <= PHRASE_READS + 1:  # more: counted common, whatever the cards hold (no record read)
            holding[phrase] = both
    if not holding:
        return []
    held = _Held(index) if held is None else held
    row = candidate.card.row
    if not held.phrases(row).intersection(holding):
        return []
    out: list[str] = []
    for phrase, both in holding.items():
        if phrase not in held.phrases(row):
            continue
        if len(both) <= PHRASE_RARE:
            out.append(phrase)
        elif len(both | held.rows()) <= PHRASE_READS + 1:  # the cards read for one prompt stay within the budget
            holders = 0
            order = index.id_order()  # which cards fit in the budget: the same however the index was built
            for other in sorted(both, key=lambda row: order[row - 1]):
                if not held.affords(other):  # past PHRASE_READ_CHARS: counted common
                    holders = PHRASE_RARE + 1
                    break
                holders += phrase in held.phrases(other)
            if holders <= PHRASE_RARE:
                out.append(phrase)
    return out


class _Held:
    """The phrases of the cards read for one prompt (each field on its own, each to PHRASE_CHARS: its name, each
    alias, its summary and its body), from their stored records (checked against their seals), each read once; and
    how many characters those records held (the reads' cost: the seal's hash and the parse are of the whole record)."""

    __slots__ = ("_index", "_of", "_chars")

    def __init__(self, index: "IndexReader") -> None:
        self._index = index
        self._of: dict[int, frozenset[str]] = {}
        self._chars = 0

    def rows(self) -> "set[int]":
        return set(self._of)

    def affords(self, row: int) -> bool:
        """Whether the card at `row` is read already or may still be: at most PHRASE_READ_CHARS of records read."""
        return row in self._of or self._chars <= PHRASE_READ_CHARS

    def phrases(self, row: int) -> "frozenset[str]":
        if row not in self._of:
            card = self._index.cards([row]).get(row)
            stored = getattr(self._index, "record", None)  # the memory benchmarks' index keeps no text: no phrases
            record = stored(card.id) if card is not None and stored is not None else None
            found: set[str] = set()
            if record is not None:
                for text in (
                    record.get("name"),
                    *(record.get("aliases") or ()),
                    record.get("summary"),
                    record.get("body"),
                ):
                    if isinstance(text, str):
                        self._chars += len(text)
                        found.update(phrases(tokenize(text[:PHRASE_CHARS])))
            self._of[row] = frozenset(found)
        return self._of[row]


def _scaled(settings: "RecallSettings", scale: float) -> "RecallSettings":
    """`settings` with the lead and margin gates times `scale`: phrases tell a card from its near neighbours; they do
    not make a prompt about what the vault knows, which coverage keeps judging (RESULTS.md "Round 13")."""
    changes = {
        "min_lead": settings.min_lead * scale,
        "min_margin": settings.min_margin * scale,
    }
    replace = getattr(settings, "replace", None)  # the hook's stored settings (a Record)
    if replace is not None:
        return replace(**changes)  # type: ignore[no-any-return]
    import dataclasses  # cold: `cairn.config.RecallSettings`, from eval, calibrate and explain

    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]


class _Once:
    """A deferred semantic answer read at most once, however often recall decides (the socket is read once)."""

    __slots__ = ("_read", "_done", "_answer")
    _answer: "Mapping[str, float] | None"

    def __init__(self, read: "Callable[[], Mapping[str, float] | None]") -> None:
        self._read = read
        self._done = False
        self._answer = None

    def __call__(self) -> "Mapping[str, float] | None":
        if not self._done:
            self._answer = self._read()
            self._done = True
        return self._answer


# The fragment pick: when nothing is injected, each fragment of the prompt (`tokens.prompt_fragments`: a sentence,
# or an instruction or question glued to one without a full stop) is asked alone; the first whose own recall ranks
# the card the whole prompt ranks first (its first admissible card) first and passes it through the gates on its
# own, with a lead of at least FRAGMENT_LEAD, injects that card. Both readings agree on the card, and one sentence of the prompt is a confident question about it on its
# own: what the rest of an agent prompt (the repo, the stack, the deliverables) drowned was the wrapper's evidence,
# not the question's. FRAGMENT_LEAD is stricter than the lead gate's 0.24 because a prompt of n fragments has n more
# chances to pass: the lowest lead on a 0.02 grid keeping every slice of the fittable suites (the dev suites, their
# questions in varied wrappers, wtfjs-agent, gostyle-agent) at or under 5%, RESULTS.md "Round 9" (dockerops-agent,
# written after, was measured once with it as a fresh check: 4b there). Decided on words
# alone, with or without the semantic channel, except that a card the whole prompt's words passed and the semantic
# channel vetoed stays out (the pick finds drowned questions; it does not overrule the veto). Requiring the veto's
# z-score of 3.0 of the picked card too refused most of these cards in vaults about one subject; without it every
# fittable slice stays under 5% with the extra too.
FRAGMENT_PICKED = "fragment"
FRAGMENT_LEAD = 0.26
# At most this many fragments are asked, those saying most of the card's matched terms first: an agent prompt has a
# few sentences; a pasted document of thousands would cost the hook a scoring of each.
FRAGMENT_TRIES = 6


def _fragment_pick(
    index: "IndexReader",
    query: str,
    result: Result,
    scope: "Sequence[str] | None",
    already_injected: "Collection[str]",
    today: "dt.date | None",
) -> Result | None:
    """`result` with its first admissible card injected by the fragment pick, or None."""
    first = next((c for c in result.candidates if c.reason in GATE_REASONS), None)
    if first is None or first.reason == SEMANTIC_VETO:
        return None  # nothing admitted, or the words passed it and the semantic channel found it far from the prompt
    settings = result.settings
    for fragment, alone in fragment_gates(index, query, first, settings, scope, already_injected, today):
        if gates.failed_gate(alone.lead, alone.coverage, alone.margin, settings) is None:
            picked = first.replace(decision=INJECTED, reason=None, blocked_by=None, picked=FRAGMENT_PICKED)
            candidates = tuple(picked if c is first else c for c in result.candidates)
            return Result((picked,), candidates, settings, result.evidence, result.weights, fragment)
    return None


def fragment_gates(
    index: "IndexReader",
    query: str,
    first: Candidate,
    settings: "RecallSettings",
    scope: "Sequence[str] | None" = None,
    already_injected: "Collection[str]" = (),
    today: "dt.date | None" = None,
) -> "Iterator[tuple[str, Candidate]]":
    """The fragments the pick asks (at most FRAGMENT_TRIES, those saying most of the terms `first` matched first),
    each with `first` as the fragment's own recall judges it, when it is the fragment's first card by words there
    with a lead of FRAGMENT_LEAD or more (and `settings` do not rule it out: `_may_lead`). The pick injects `first`
    when one of them passes the gates on its own; `cairn calibrate` replays them with the gates open."""
    whole = set(prompt_terms(query))
    matched = set(first.matched)
    asked: list[tuple[int, int, str]] = []  # (-terms of the card it says, position, fragment)
    for position, fragment in enumerate(prompt_fragments(query)):
        said = set(tokenize(fragment))
        if not whole.issubset(said) and not said.isdisjoint(matched):  # else asking it alone changes nothing
            asked.append((-len(said & matched), position, fragment))
    for _, _, fragment in sorted(asked)[:FRAGMENT_TRIES]:
        if not _may_lead(index, fragment, first.card.row, settings):
            continue
        alone = _recall(index, fragment, scope, already_injected, today, settings, False, 1, None, False)
        top = alone.injected[0] if alone.injected else None
        if top is not None and top.card.id == first.card.id and top.lead >= FRAGMENT_LEAD:
            yield fragment, top


def _may_lead(index: "IndexReader", fragment: str, row: int, settings: "RecallSettings") -> bool:
    """Whether the card at `row` could pass the fragment pick for `fragment`: its coverage of the fragment reaches
    the coverage gate and its score the share of the fragment's best possible score that a lead of FRAGMENT_LEAD
    needs (with a second card scoring nothing, and the prompt naming it). One card scored, not the vault ranked: the
    ranking is what the pick costs, and most fragments fail here."""
    terms, postings, weights = _query(index, fragment, settings)
    known = [(t, postings[t].rows, postings[t].stats, weights.idf[t]) for t in terms if t in postings]
    avg = tuple(max(a, 1.0) for a in index.avg_lengths)
    score, matched = _exact(row, known, settings, avg)
    if gates.coverage(matched, weights.idf, weights.total) < settings.min_coverage:
        return False
    return gates.named_lead(gates.lead(score, 0.0, weights.best), 1.0) >= FRAGMENT_LEAD


class _Unanswered(Exception):
    """A deferred semantic answer (`recall(semantic=function)`) turned out to be none."""


class _Decisive:
    """A deferred semantic answer that recall reads only when it could change the decision (`only_if_decisive`)."""

    __slots__ = ("_read",)

    def __init__(self, read: "Callable[[], Mapping[str, float] | None]") -> None:
        self._read = read

    def __call__(self) -> "Mapping[str, float] | None":
        return self._read()


def _decisive(
    admitted: "Sequence[tuple[IndexedCard, float]]",
    words: "Sequence[Candidate]",
    best: float,
    index: "IndexReader",
    query: str,
) -> bool:
    """Whether the semantic answer could change which cards the words' decisions (`words`, one per admitted card)
    inject: the words inject a card the veto judges (`veto_judges`), or nothing and a pick could fire. The semantic
    pick needs a card among the first `SEMANTIC_PICK_DEPTH` covering at least `SEMANTIC_PICK_MIN_COVERAGE` (the
    rounded coverage a candidate shows reaches it whenever the coverage does; so does the agreement pick's third
    form), the agreement pick a first card with a lead of `AGREE_LEAD` (the rounded lead it compares) scoring
    `AGREE_SCORE` of the best possible, or in a prompt the veto judges."""
    if index.n_cards < SEMANTIC_MIN_CARDS:
        return False  # judged on words alone
    if any(c.decision == INJECTED for c in words):
        return veto_judges(query)
    if best <= 0 or not admitted:
        return False
    if any(c.coverage >= SEMANTIC_PICK_MIN_COVERAGE for c in words[:SEMANTIC_PICK_DEPTH]):
        return True
    return words[0].lead >= AGREE_LEAD and (admitted[0][1] >= AGREE_SCORE * best or veto_judges(query))


def _recall(
    index: "IndexReader",
    query: str,
    scope: "Sequence[str] | None",
    already_injected: "Collection[str]",
    today: "dt.date | None",
    settings: "RecallSettings | None",
    examine_all: bool,
    decide_first: int | None,
    semantic: "Semantic | None",
    evidence: bool,
    said: bool = False,
) -> Result:
    """Recall's ranking and gates at `settings` (said: with the own words relief, `_gate`)."""
    settings = settings or index.recall_settings()
    terms, postings, weights = _query(index, query, settings)
    today_iso = today.isoformat() if today is not None else time.strftime("%Y-%m-%d")  # local date, as date.today()
    wanted_scope = {s.strip().lower() for s in scope or () if s.strip()}
    needed = _needed(index, settings, semantic)

    if decide_first is not None and not examine_all:
        first = _first_decisions(
            index,
            terms,
            postings,
            weights,
            settings,
            decide_first,
            lambda card: admission(card, today_iso, wanted_scope, query, already_injected),
            semantic,
            evidence,
            query,
            said,
        )
        if first is not None:
            return first
    depth = _CHUNK
    while True:
        if examine_all:
            ranked, matched, complete = _rank_all(index, terms, postings, weights, settings)
        else:
            ranked, matched, complete = _top(index, terms, postings, weights, settings, depth)
        admitted: list[tuple[IndexedCard, float]] = []
        refused: list[Candidate] = []
        examined = 0
        enough = False
        for start in range(0, len(ranked), _CHUNK):
            if not examine_all and len(admitted) >= needed and examined >= _MIN_EXAMINED:
                enough = True
                break
            chunk = ranked[start : start + _CHUNK]
            cards = index.cards(row for row, _ in chunk)
            for row, score in chunk:
                examined += 1
                card = cards[row]
                reason = admission(card, today_iso, wanted_scope, query, already_injected)
                if reason is None and admitted and _other_language(card, admitted[0][0], matched):
                    reason = OTHER_LANGUAGE
                if reason is None:
                    admitted.append((card, score))
                else:
                    refused.append(_refused(card, score, matched.get(row, ()), reason))
        if enough or complete or (len(admitted) >= needed and examined >= _MIN_EXAMINED):
            break
        depth *= 4  # admission refused too many of the best cards: rank deeper

    decided, features = _gate(admitted, matched, weights, settings, index, postings, semantic, evidence, query, said)
    injected = tuple(c for c in decided if c.decision == INJECTED)
    pool = sorted(decided + refused, key=lambda c: (-c.score, c.card.id))
    return Result(injected, tuple(pool[:decide_first]), settings, features, weights)


def _first_decisions(
    index: "IndexReader",
    terms: "Sequence[str]",
    postings: "dict[str, Postings]",
    weights: QueryWeights,
    settings: "RecallSettings",
    first: int,
    refusal: "Callable[[IndexedCard], str | None]",
    semantic: "Semantic | None" = None,
    evidence: bool = False,
    query: str = "",
    said: bool = False,
) -> Result | None:
    """`recall` for its first `first` candidates, from a ranking only `first` + a few deep; None when that depth
    does not settle them (too many refused, or too many scores that round alike), and `recall` then goes the
    whole way.

    Candidates are listed by rounded score, then id: the first `first` are among the ranked cards down to the
    last whose rounded score equals the `first`-th's (`wanted`). A candidate's decision depends on the admitted
    cards before it (injected so far, the first gate failure) and on the admitted card after it (its lead and
    margin); the injected cards are among the first `max_cards` admitted, or the semantic pick among the first
    `SEMANTIC_PICK_DEPTH`. So once the `wanted` are examined, `_needed` cards are admitted and one admitted card
    follows the last admitted among the `wanted`, every
    decision listed is the one a whole examination gives (`recall` examines whole chunks of `_CHUNK` cards, which
    start with these)."""
    needed = _needed(index, settings, semantic)
    if first + needed > _CHUNK:
        return None  # deeper than `recall`'s first chunk, whose end may cut off the admitted card after one wanted
    ranked, matched, complete = _top(index, terms, postings, weights, settings, first + needed)
    wanted = min(first, len(ranked))
    if 0 < wanted < len(ranked):
        last = round(ranked[wanted - 1][1], 4)
        while wanted < len(ranked) and round(ranked[wanted][1], 4) == last:
            wanted += 1
        if wanted == len(ranked) and not complete:
            return None  # the run of equal rounded scores may go on below this depth
    cards = index.cards(row for row, _ in ranked)
    admitted: list[tuple[IndexedCard, float]] = []
    refused: list[Candidate] = []
    leading = 0  # admitted among the `wanted`
    settled = False
    for rank, (row, score) in enumerate(ranked, 1):
        card = cards[row]
        reason = refusal(card)
        if reason is None and admitted and _other_language(card, admitted[0][0], matched):
            reason = OTHER_LANGUAGE
        if reason is None:
            admitted.append((card, score))
            leading += rank <= wanted
        else:
            refused.append(_refused(card, score, matched.get(row, ()), reason))
        if rank >= wanted and len(admitted) >= needed and len(admitted) > leading:
            settled = True
            break
    if not (settled or complete):
        return None
    decided, features = _gate(admitted, matched, weights, settings, index, postings, semantic, evidence, query, said)
    injected = tuple(c for c in decided if c.decision == INJECTED)
    pool = sorted(decided + refused, key=lambda c: (-c.score, c.card.id))
    return Result(injected, tuple(pool[:first]), settings, features, weights)


def _needed(index: "IndexReader", settings: "RecallSettings", semantic: "Semantic | None") -> int:
    """How many admissible cards the gates need: up to one past the last slot, or one past the first
    `SEMANTIC_PICK_DEPTH` when the semantic pick may look at them (both ways of ranking must see the same ones, and
    the card after the one picked gives its gate values)."""
    if semantic and index.n_cards >= SEMANTIC_MIN_CARDS:
        return max(settings.max_cards, SEMANTIC_PICK_DEPTH) + 1
    return settings.max_cards + 1


def admission(
    card: "IndexedCard", today_iso: str, scope: set[str], query: str, already: "Collection[str]"
) -> str | None:
    """Why a card may not be injected whatever its score, or None when it may."""
    if card.status == "retired":
        return "retired"
    if card.status == "draft":
        return "draft"
    if card.status != "active":
        return UNKNOWN_STATUS
    if card.expires_on and card.expires_on < today_iso:
        return "expired"
    if card.superseded_by:
        return "superseded"
    if scope and card.scope and not scope.intersection(card.scope):
        return "out_of_scope"
    if not_when_found(card, query) is not None:
        return "not_when"
    if card.id in already:
        return ALREADY_INJECTED
    return None


def not_when_found(card: "IndexedCard", query: str) -> str | None:
    """The first of the card's `not_when` words the prompt contains as a word (`_has_word`), both read as
    `caseless` gives them, as the card spells it, or None: what keeps the card out at admission, and what explain
    names."""
    if not card.not_when:
        return None
    global _LAST_PROMPT
    if _LAST_PROMPT[0] is not query:  # cards with `not_when` are few: a long prompt is read once, when one comes
        _LAST_PROMPT = (query, caseless(query))
    text = _LAST_PROMPT[1]
    return next((word for term in card.not_when if (word := term.strip()) and _has_word(text, caseless(word))), None)


_LAST_PROMPT = ("", "")


def caseless(text: str) -> str:
    """`text` as a prompt and a `not_when` word are matched: NFKC and case-folded. Only lowered, a prompt in
    full-width letters (`ｍｅｒｃｕｒｉａｌ`, which recall's tokens read as `mercurial`), with its accents as separate
    marks (macOS) or saying `STRASSE` passed the card's `mercurial`, `café` or `Straße`."""
    return text.lower() if text.isascii() else nfkc(text).casefold()


def _has_word(text: str, word: str) -> bool:
    """Whether `word` is in `text` with no ASCII letter or digit joined to it: `go` is not in "django" or "going",
    `js` not in "json"; "node.js", "go_test" and "go-kit" hold theirs. A CJK edge joins nothing (Chinese puts no
    space between words): `微服务` is in "我们的微服务架构"."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if not (_joined(word[0], text[start - 1 : start]) or _joined(word[-1], text[end : end + 1])):
            return True
        start = text.find(word, start + 1)
    return False


def _joined(edge: str, neighbour: str) -> bool:
    """Whether a word's edge character and the character beside it in the text are both ASCII letters or digits."""
    return edge in _ALNUM and neighbour in _ALNUM


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # the text and the word are lowered


def _other_language(card: "IndexedCard", first: "IndexedCard", matched: "dict[int, list[str]]") -> bool:
    """Whether `card` is written in the other language than `first` and matched only by terms `first` also matches
    (`OTHER_LANGUAGE`)."""
    if _written_in_cjk(card) == _written_in_cjk(first):
        return False
    theirs = matched.get(first.row, ())
    return all(term in theirs for term in matched.get(card.row, ()))


# Of a card's name and of its summary, at most this many characters are read for its own words (`said_share`): what
# an interface gives of a summary (`serve.SUMMARY_CHARS`). A card's fields are untrusted, and the contract lets its
# frontmatter be long: a prompt must not tokenize a summary of 100,000 characters.
SAID_CHARS = 2000


def said_share(card: "IndexedCard", asked: "frozenset[str]") -> float:
    """The share of a card's own words (the distinct terms of its name and summary) among the prompt's terms."""
    words = set(tokenize(card.name[:SAID_CHARS] + " " + card.summary[:SAID_CHARS]))
    return len(words & asked) / len(words) if words else 0.0


def said_shares(first: "IndexedCard", following: "IndexedCard | None", terms: "Iterable[str]") -> tuple[float, float]:
    """The shares of the first admissible card's own words and of the next one's (0.0 when there is none) among the
    prompt's terms: what the own words relief compares (`gates.said_lead`, `gates.says_own_words`)."""
    asked = frozenset(terms)
    return said_share(first, asked), said_share(following, asked) if following is not None else 0.0


def _written_in_cjk(card: "IndexedCard") -> bool:
    """Whether a card's name or summary holds CJK text."""
    text = card.name + card.summary
    if text.isascii():  # the common case, one pass in C (a scan in Python cost the 10,000-card hook 2M instructions)
        return False
    return any(is_cjk(char) for char in text if char >= "\u3040")  # below U+3040 no character is CJK


def _gate(
    admitted: "Sequence[tuple[IndexedCard, float]]",
    matched: dict[int, list[str]],
    weights: QueryWeights,
    settings: "RecallSettings",
    index: "IndexReader",
    postings: "dict[str, Postings]",
    given: "Semantic | None" = None,
    want_evidence: bool = False,
    query: str = "",
    said: bool = False,
) -> "tuple[list[Candidate], tuple[tuple[float, ...], ...]]":
    """Each admitted card's gate values and decision, and the confidence gate's features of each cut (computed when
    the confidence gate is on, or `want_evidence`; else empty).

    The confidence gate (`min_confidence` > 0) picks the cut after card k (k <= max_cards) with the highest
    estimated chance of holding a right card, and injects cards 1..k when that chance reaches `min_confidence`.
    The three threshold gates (`min_lead`, `min_coverage`, `min_margin`; 0 turns one off) apply on top, each card
    against the next admissible one, and injection stays a prefix: below a card they refuse, none is injected.
    With `min_confidence` 0 the threshold gates alone decide, as before the confidence gate. A deferred semantic
    answer is read here (once: a recall gates once) and raises `_Unanswered` when it is none.
    """
    if isinstance(given, _Decisive) and not want_evidence and getattr(settings, "min_confidence", 0.0) <= 0:
        words = _gate(admitted, matched, weights, settings, index, postings, None, False, query, said)
        if not _decisive(admitted, words[0], weights.best, index, query):
            return words  # the answer could change nothing: it is not waited for
    semantic = given() if callable(given) else given
    if callable(given) and not semantic:
        raise _Unanswered
    scores = [score for _, score in admitted]
    covers = [gates.coverage(matched.get(card.row, []), weights.idf, weights.total) for card, _ in admitted]
    name_covers = [
        _name_coverage(card.row, matched.get(card.row, []), weights, postings) if cover >= gates.NAME_COVERAGE else 0.0
        for (card, _), cover in zip(admitted, covers, strict=True)
    ]  # a card's name coverage is at most its coverage: only a card covering that much can be named by the prompt
    n_cuts = min(settings.max_cards, len(admitted))
    evidence: list[tuple[float, ...]] = []
    chances: list[float] = []
    min_confidence = getattr(settings, "min_confidence", 0.0)
    if n_cuts and (min_confidence > 0 or want_evidence):
        first = admitted[0][0]
        miss, unknown, named, mass = _evidence(
            first, scores[0], matched.get(first.row, []), weights, settings, index, postings
        )
        similarity = semantic.get(first.id) if semantic else None
        for k in range(1, n_cuts + 1):
            values = gates.features(
                k, scores, covers, weights.best, miss, unknown, named, mass, similarity, settings.max_cards + 1
            )
            evidence.append(values)
            chances.append(gates.probability(values))
    cut = n_cuts
    if min_confidence > 0:
        cut = 0
        if chances:
            best = max(range(n_cuts), key=lambda k: (chances[k], -k))
            if chances[best] >= min_confidence:
                cut = best + 1
    group = _group(scores, covers, weights.best, settings, name_covers) if min_confidence <= 0 else 0
    vetoed = _semantic_judgement(admitted, semantic if index.n_cards >= SEMANTIC_MIN_CARDS else None, query)
    near: set[str] = set()  # the vetoed cards the meaning puts first or as good as first
    if vetoed and semantic:
        floor = _semantic_first(semantic)[1] - SEMANTIC_SPARE_NEAR
        near = {card_id for card_id in vetoed if semantic.get(card_id, -1e9) >= floor}
    out: list[Candidate] = []
    blocker: Candidate | None = None
    n_injected = 0
    for i, (card, score) in enumerate(admitted):
        terms = matched.get(card.row, [])
        next_score = scores[i + 1] if i + 1 < len(scores) else 0.0
        ahead = gates.named_lead(gates.lead(score, next_score, weights.best), name_covers[i])
        relieved = False
        if (
            said
            and i == 0
            and ahead < settings.min_lead <= ahead * gates.NAMED_LEAD
            and name_covers[i] < gates.NAME_COVERAGE
        ):
            # the own words relief, for the first card (what the prompt is about, against the next one), worked out
            # only where it decides the lead gate, and not counted twice with the name's
            following = admitted[1][0] if len(admitted) > 1 else None
            counted = gates.said_lead(ahead, *said_shares(card, following, weights.terms))
            relieved, ahead = counted > ahead, counted
        cover = covers[i]
        gap = gates.margin(score, next_score)
        reason = gates.failed_gate(ahead, cover, gap, settings)
        if i < group:
            reason = None  # one of related cards that fit about as well and stand clear of the rest together
        if reason is None and evidence_of(terms, weights, settings) < settings.min_evidence:
            reason = gates.LITTLE_EVIDENCE  # one or two everyday words: nothing to go on, whatever the shares say
        if (
            reason is None
            and card.id in vetoed
            and not (card.id in near and ahead >= settings.min_lead + SEMANTIC_SPARE_LEAD)
        ):
            reason = SEMANTIC_VETO
        blocked_by = None
        if reason is None and blocker is not None:
            reason, blocked_by = gates.SMALL_MARGIN, blocker.card.id
        elif reason is None and n_injected >= settings.max_cards:
            reason = OVER_LIMIT
        elif reason is None and i >= cut:
            reason = gates.LOW_CONFIDENCE
        candidate = Candidate(
            card,
            round(score, 4),
            round(ahead, 4),
            round(cover, 4),
            round(gap, 4),
            INJECTED if reason is None else REJECTED,
            reason,
            tuple(terms),
            blocked_by,
            round(chances[i], 4) if i < len(chances) else 0.0,
            semantic.get(card.id) if semantic else None,
            name_covers[i] >= gates.NAME_COVERAGE,
            None,
            relieved,
        )
        if reason is None:
            n_injected += 1
        elif blocker is None and reason not in (OVER_LIMIT, gates.LOW_CONFIDENCE, SEMANTIC_VETO):
            blocker = candidate
        out.append(candidate)
    if not n_injected and min_confidence <= 0 and semantic and index.n_cards >= SEMANTIC_MIN_CARDS:
        pick, rule = _semantic_pick(admitted, scores, covers, weights.best, semantic), SEMANTIC_PICKED
        if pick is None and out:
            gap = gates.margin(scores[0], scores[1] if len(scores) > 1 else 0.0)
            confirmed = (  # the words pass every gate but the lead, in a prompt the veto judges
                covers[0] >= settings.min_coverage and gap >= settings.min_margin and veto_judges(query)
            )
            if _agreement_pick(admitted[0][0], scores[0], out[0].lead, weights.best, semantic, confirmed, covers[0]):
                pick, rule = 0, AGREEMENT_PICKED
        if pick is not None and evidence_of(matched.get(admitted[pick][0].row, []), weights, settings) >= (
            settings.min_evidence
        ):
            out[pick] = out[pick].replace(decision=INJECTED, reason=None, blocked_by=None, picked=rule)
    return out, tuple(evidence)


# The semantic channel (`recall(semantic=...)`: z-scores of the cards' similarity to the prompt over the vault's
# cards, `cairn.hot.semantic`): a card the word gates pass is injected only when its z-score reaches SEMANTIC_MIN_Z
# (it is among the few cards the prompt means). Fitted by helper "semantic" on the dev suites, leaving one suite
# out (benchmarks/bench_semantic.py, RESULTS.md "Round 3"). Round 3's rescue (the first admissible card the word
# gates refuse, injected when it is the semantic first choice 2.0 ahead of the second, whatever its words) is gone
# since round 6: it gave most of the extra's false injections (tldr-zh-dev 0.042; near topics on a never-fitted
# suite), and the semantic pick below, which asks words for some support, takes its place.
# Below SEMANTIC_MIN_CARDS cards z-scores cannot spread that far (at most about sqrt(n - 1) over n cards: 3.6 for
# the 14-card template vault, whose positives it vetoed), so a small vault is judged on words alone.
SEMANTIC_MIN_Z = 3.0
SEMANTIC_MIN_CARDS = 30
# The veto judges a prompt that asks one thing. One that says two things or more in prose (`tokens.prose_fragments`:
# a question and the project it is about, an agent's wrapper of stack, ticket and deliverables) is encoded whole, so
# its z-scores are the wrapper's as much as the question's; in a vault about one subject every card is near the
# wrapper and none reaches 3. Such a prompt is judged by the word gates, and the pick rules still read its z-scores.
# Measured on the fittable suites with the extra (RESULTS.md "Round 10"): no false injection added to any slice,
# right cards added on every slice of wrapped prompts (dockerops-agent long 0.302 -> 0.396, the words' own 0.396).
# Exception lines are evidence of the question, not more things said: a traceback's prompt is still judged.
SEMANTIC_VETO_FRAGMENTS = 2
SEMANTIC_VETO = "semantic_veto"
# The veto spares a card whose words clear the lead gate by SEMANTIC_SPARE_LEAD and whose z-score is within
# SEMANTIC_SPARE_NEAR of the semantic channel's first choice over the vault (the first itself included): the words
# put it first, do not just scrape through, and the meaning puts it first or as good as first. In a vault about one
# subject every card is near a one-question prompt, and the right one often stands at a z-score of 2-3, first or a
# hair behind a card the words hardly touch. Fitted on the fittable suites with the extra (`recall_suites
# --semantic`, RESULTS.md "Round 11"): SEMANTIC_SPARE_LEAD the smallest step of 0.01 that adds no false injection to
# any of their slices (0.01 adds one on stackfaq-en short), then SEMANTIC_SPARE_NEAR the smallest step of 0.05 that
# gives them the most right cards with none added (0.4 adds one on gostyle-agent short).
SEMANTIC_SPARE_LEAD = 0.02
SEMANTIC_SPARE_NEAR = 0.25
# The reasons of a card that was admitted and scored but not injected (None: injected): what explain shows gate
# values for, and what the layered serve counts as "refused by the gates".
GATE_REASONS = frozenset(
    {
        gates.SMALL_LEAD,
        gates.LOW_COVERAGE,
        gates.SMALL_MARGIN,
        gates.LITTLE_EVIDENCE,
        gates.LOW_CONFIDENCE,
        SEMANTIC_VETO,
        OVER_LIMIT,
        None,
    }  # fmt: skip
)


# The semantic pick: when nothing is injected, the semantic channel's first choice among the first
# SEMANTIC_PICK_DEPTH admissible cards is injected when its z-score's lead over the semantic second, plus
# SEMANTIC_PICK_LEAD_WEIGHT times its word lead, reaches SEMANTIC_PICK, and its word coverage (the coverage gate's
# value) reaches SEMANTIC_PICK_MIN_COVERAGE: a card the prompt's words barely touch is not taken on meaning alone
# (near topics: a prompt about the same module, another question). Its word lead is the lead gate's value when
# it is the first admissible card, else minus how far it scores below the card ranked just above it (over the
# query's best possible score): the two channels' evidence added, so a clear semantic choice that word overlap also
# puts first goes in, and one that word overlap ranks well below needs a larger semantic gap. Fitted on the three
# dev suites (`python -m benchmarks.gate_study sem-margin`, RESULTS.md "Round 6"): most positives injected with
# FIR at most 2.5% on every slice (or what the word gates alone give there), a margin under the 5% promise;
# leaving one suite out holds every held-out slice at 3.5% or less.
SEMANTIC_PICK = 2.35
SEMANTIC_PICK_LEAD_WEIGHT = 1.0
SEMANTIC_PICK_MIN_COVERAGE = 0.25
SEMANTIC_PICK_DEPTH = 10


# The agreement pick: when nothing else is injected, the first admissible card goes in when it is also the semantic
# channel's first choice over the vault, its words score at least AGREE_SCORE of the query's best possible score,
# its lead gate's value reaches AGREE_LEAD (under `min_lead`: the words alone fall a little short) and its cosine
# stands at least AGREE_COSINE_GAP above the semantic second's (the z-scores' difference in cosine units, which
# carries across vaults of 38 and 1,043 cards better than the z-gap does). Both channels put the same card first,
# and the words nearly suffice on their own. Most of what it takes was vetoed before (z under SEMANTIC_MIN_Z in a
# vault too small for a z-score of 3). Fitted on the three dev suites and wtfjs-agent, leaving one out
# (`python -m benchmarks.joint_study agree-cv`, RESULTS.md "Round 7"): no false injection added to a fitted slice
# over 2.5%; held out, every slice at or under 3.9%. Its second form, in a prompt the veto judges: a first card whose
# words pass every gate but the lead (coverage, margin; the lead at AGREE_LEAD or more) goes in, whatever its share
# of the best possible score, when its z-score reaches the veto's SEMANTIC_MIN_Z and its cosine leads the semantic
# second's by AGREE_CONFIRMED_GAP: the words fall short only on the lead, and the meaning confirms the card as the
# veto asks, clearly first. AGREE_CONFIRMED_GAP fitted as the first form was, leaving one fittable suite out
# (`python -m benchmarks.joint_study agree2-cv --fit-fir 0.025`, RESULTS.md "Round 11"): 0.026 in five folds of six
# and on all six (0.010 with tldr-en-dev left out).
SEMANTIC_PICKED = "semantic"  # `Candidate.picked` of the two rules
AGREEMENT_PICKED = "agreement"
AGREE_SCORE = 0.47
AGREE_LEAD = 0.20
AGREE_COSINE_GAP = 0.006
AGREE_CONFIRMED_GAP = 0.026
# Its third form: a first card its words cover at least SEMANTIC_PICK_MIN_COVERAGE of goes in, whatever its lead and
# score, when the semantic first over the vault is the same card and its cosine leads the semantic second's by
# AGREE_CLEAR_GAP: the meaning picks it clearly, and the words rank it first on a fair share of the prompt. On
# stackfaq-en-dev, with the extra, the right card first in both channels and refused on the lead is 95 of the
# positives; the lead (0.00-0.19) does not tell them from the 31 negatives both channels agree on, the cosine gap
# does best. Fitted on the stackfaq-en-dev cases whose id's sha256 is even (`recall_suites --semantic`): the
# smallest step of 0.005 adding none of their negatives (0.035 adds two at 0.038-0.039). Held out, the odd half
# went 0.486 -> 0.548 Injection@1 and every other suite's false injection rate stayed as it was (RESULTS "Round 25").
AGREE_CLEAR_GAP = 0.04


def _agreement_pick(
    first: "IndexedCard",
    score: float,
    lead: float,
    best: float,
    semantic: "Mapping[str, float]",
    confirmed: bool = False,
    coverage: float = 0.0,
) -> bool:
    """Whether the first admissible card (`score`, its lead gate's value `lead`, its coverage gate's `coverage`)
    goes in as the agreement pick; `confirmed`: its words pass every gate but the lead, in a prompt the veto judges."""
    scale = getattr(semantic, "scale", None)  # the z-scores' unit in cosine (`cairn.hot.semantic.Similarities`)
    if scale is None or best <= 0:
        return False
    first_id, z1, z2 = _semantic_first(semantic)
    if first_id != first.id:
        return False
    gap = (z1 - z2) * scale
    if gap >= AGREE_CLEAR_GAP and coverage >= SEMANTIC_PICK_MIN_COVERAGE:
        return True
    if lead < AGREE_LEAD:
        return False
    if score >= AGREE_SCORE * best and gap >= AGREE_COSINE_GAP:
        return True
    return confirmed and z1 >= SEMANTIC_MIN_Z and gap >= AGREE_CONFIRMED_GAP


def evidence_of(terms: "Sequence[str]", weights: QueryWeights, settings: "RecallSettings") -> float:
    """What the prompt's words a card matches (`terms`) say, in rare words (`gates.evidence`; the evidence floor,
    `min_evidence`, needs this much for any card to be injected, by the gates or a pick): their IDF with the
    instruction words' discount, without the salience and foreign discounts (a rare identifier shared with a pasted
    traceback or code line is evidence, however little it weighs in coverage)."""
    weight = 0.0
    for term in terms:
        idf = weights.idf.get(term, 0.0)
        discount = weights.discount.get(term, 1.0)
        if discount > 0:
            instruction = settings.instruction_weight if term in INSTRUCTION_WORDS else 1.0
            weight += idf / discount * instruction
    return gates.evidence(weight, weights.one_card)


def _semantic_first(semantic: "Mapping[str, float]") -> "tuple[str | None, float, float]":
    """The semantic channel's first choice, its z-score and the second's (-1e9 when there is none)."""
    first_id = None
    z1 = z2 = -1e9
    for card_id, z in semantic.items():
        if z > z1:
            z1, z2, first_id = z, z1, card_id
        elif z > z2:
            z2 = z
    return first_id, z1, z2


def _semantic_pick(
    admitted: "Sequence[tuple[IndexedCard, float]]",
    scores: "Sequence[float]",
    covers: "Sequence[float]",
    best: float,
    semantic: "Mapping[str, float]",
) -> int | None:
    """The position among the admitted cards of the semantic first choice to inject when nothing else is, or None."""
    if len(semantic) < 2 or best <= 0:
        return None
    first_id, z1, z2 = _semantic_first(semantic)
    for i, (card, score) in enumerate(admitted[:SEMANTIC_PICK_DEPTH]):
        if card.id != first_id:
            continue
        if i == 0:
            lead = gates.lead(score, scores[1] if len(scores) > 1 else 0.0, best)
        else:
            lead = (score - scores[i - 1]) / best
        if covers[i] < SEMANTIC_PICK_MIN_COVERAGE:
            return None
        return i if (z1 - z2) + SEMANTIC_PICK_LEAD_WEIGHT * lead >= SEMANTIC_PICK else None
    return None


def _semantic_judgement(
    admitted: "Sequence[tuple[IndexedCard, float]]", semantic: "Mapping[str, float] | None", query: str = ""
) -> set[str]:
    """The admitted cards the semantic channel vetoes (the word gates pass them, the prompt does not mean them):
    none for a prompt that says more than one thing in prose (`SEMANTIC_VETO_FRAGMENTS`)."""
    if not semantic or not admitted:
        return set()
    vetoed = {card.id for card, _ in admitted[:8] if semantic.get(card.id, -1e9) < SEMANTIC_MIN_Z}
    return vetoed if vetoed and veto_judges(query) else set()


def veto_judges(query: str) -> bool:
    """Whether the semantic veto judges this prompt: it asks one thing (fewer than `SEMANTIC_VETO_FRAGMENTS` prose
    fragments, `tokens.prose_fragments`)."""
    return len(prose_fragments(query)) < SEMANTIC_VETO_FRAGMENTS


# Related cards inject together when each scores at least this share of the first (they "fit about as well").
GROUP_SPREAD = 0.7


def _group(
    scores: "list[float]",
    covers: "list[float]",
    best: float,
    settings: "RecallSettings",
    named: "Sequence[float]" = (),
) -> int:
    """How many of the first admissible cards inject together (2 or 3), or 0: cards 2..k score at least
    `GROUP_SPREAD` of card 1, each of cards 1..k passes the coverage gate, and card k passes the lead and margin
    gates against card k + 1 (its lead as `gates.named_lead` counts it, with its name coverage from `named`).
    Card 1 alone failing lead or margin against a card that fits about as well is then no reason to abstain: the
    two are related lessons, and both go in."""
    if not scores or covers[0] < settings.min_coverage:
        return 0
    for k in range(2, min(settings.max_cards, len(scores)) + 1):
        score = scores[k - 1]
        if score < GROUP_SPREAD * scores[0] or covers[k - 1] < settings.min_coverage:
            return 0
        following = scores[k] if k < len(scores) else 0.0
        ahead = gates.lead(score, following, best)
        if k - 1 < len(named):
            ahead = gates.named_lead(ahead, named[k - 1])
        if ahead >= settings.min_lead and gates.margin(score, following) >= settings.min_margin:
            return k
    return 0


def _name_coverage(row: int, terms: "Sequence[str]", weights: QueryWeights, postings: "dict[str, Postings]") -> float:
    """The share of the query's weight (the coverage gate's denominator) in the terms the card matches in its name
    field (its name and aliases)."""
    total = weights.total
    if total <= 0:
        return 0.0
    hit = 0.0
    for term in terms:
        found = postings.get(term)
        if found is None:
            continue
        rows = found.rows
        at = bisect_left(rows, row)
        if at < len(rows) and rows[at] == row and found.stats[6 * at] > 0:
            hit += weights.idf[term]
    return min(1.0, hit / total)


def _evidence(
    card: "IndexedCard",
    score: float,
    terms: "Sequence[str]",
    weights: QueryWeights,
    settings: "RecallSettings",
    index: "IndexReader",
    postings: "dict[str, Postings]",
) -> tuple[float, float, float, float]:
    """The first card's evidence beyond its score: (miss, unknown, named, mass) as `cairn.hot.confidence` reads them.

    miss: the heaviest query term the card does not match, in one-card words. unknown: the share of the query's
    weight in words no card uses. named: the share of the card's score earned in its name and summary. mass: the
    query's whole weight in one-card words."""
    one = weights.one_card if weights.one_card > 0 else 1.0
    hit = set(terms)
    heaviest = 0.0
    for term, weight in weights.idf.items():
        if term not in hit and weight > heaviest:
            heaviest = weight
    for weight in weights.unknown_terms.values():
        if weight > heaviest:
            heaviest = weight
    total = weights.total
    unknown = (weights.unknown + weights.unknown_cjk) / total if total > 0 else 0.0
    k1, b = settings.k1, settings.b
    avg_name, avg_summary, avg_body = (max(a, 1.0) for a in index.avg_lengths)
    one_b = 1 - b
    named = 0.0
    row = card.row
    for term in terms:
        found = postings.get(term)
        if found is None:
            continue
        rows, st = found.rows, found.stats
        at = bisect_left(rows, row)
        if at < len(rows) and rows[at] == row:
            j = 6 * at
            in_name = settings.weight_name * st[j] / (one_b + b * st[j + 3] / avg_name)
            in_summary = settings.weight_summary * st[j + 1] / (one_b + b * st[j + 4] / avg_summary)
            in_body = settings.weight_body * st[j + 2] / (one_b + b * st[j + 5] / avg_body)
            tf = in_name + in_summary + in_body
            if tf > 0:
                named += weights.idf[term] * tf / (k1 + tf) * (in_name + in_summary) / tf
    return heaviest / one, unknown, named / score if score > 0 else 0.0, total / one


def _refused(card: "IndexedCard", score: float, terms: "Sequence[str]", reason: str) -> Candidate:
    return Candidate(card, round(score, 4), 0.0, 0.0, 0.0, REJECTED, reason, tuple(terms))


def _ranked(index: "IndexReader", scores: dict[int, float]) -> list[tuple[int, float]]:
    """(row, score) of every scored card, best first; ties by id (`_ties_by_id`)."""
    return _ties_by_id(index, sorted(scores.items(), key=lambda item: (-item[1], item[0])), len(scores))


def _ties_by_id(index: "IndexReader", ranked: list[tuple[int, float]], depth: int) -> list[tuple[int, float]]:
    """The first `depth` of `ranked` (best first, equal scores by row), cards that score exactly alike in the
    order of their ids. A row follows the index's history (an update numbers the cards it adds after all the
    others), an id only the commit: by row, which of two tied cards came first (and was injected, or cut by
    `max_cards`) depended on how each machine's index was built. The index's id order (`IndexReader.id_order`, one
    read) is read only when a tie is within the first `depth` or across its end."""
    end = min(depth, len(ranked) - 1)
    if not any(ranked[i][1] == ranked[i + 1][1] for i in range(end)):
        return ranked[:depth]
    order = index.id_order()
    return sorted(ranked, key=lambda item: (-item[1], order[item[0] - 1]))[:depth]


def _weights(
    index: "IndexReader",
    terms: "Sequence[str]",
    postings: "dict[str, Postings]",
    settings: "RecallSettings",
    salience: "Mapping[str, float] | None" = None,
    sentences: "Sequence[Sequence[str]]" = (),
) -> QueryWeights:
    """The query's weights; salience (`tokens.prompt_terms`) scales each term (pasted material counts less), and a
    term said only in a sentence the vault hardly knows weighs `FOREIGN_WEIGHT` of itself (`_foreign`; `sentences`:
    `tokens.prompt_sentences`)."""
    n = max(index.n_cards, 1)
    n_cjk = index.n_cjk_cards
    among_cjk = n_cjk if n_cjk >= MIN_CJK_CARDS else n  # see MIN_CJK_CARDS
    unknown_idf = ln(1 + (n - 0.5) / 1.5)  # as rare as a term found in one card
    idf: dict[str, float] = {}
    unknown_terms: dict[str, float] = {}
    dfs: dict[str, int] = {}
    discounts: dict[str, float] = {}
    unknown = unknown_cjk = 0.0
    for term in terms:
        discount = settings.instruction_weight if term in INSTRUCTION_WORDS else 1.0
        if salience is not None:
            discount *= salience.get(term, 1.0)
        discounts[term] = discount
        found = postings.get(term)
        if found is None:
            weight = discount * settings.unknown_weight * unknown_idf
            if is_cjk(term):
                weight *= _CJK_UNKNOWN
                unknown_cjk += weight
            else:
                unknown += weight
            unknown_terms[term] = weight
        else:
            dfs[term] = df = found.df
            among = max(among_cjk, df) if is_cjk(term) else n
            idf[term] = discount * ln(1 + (among - df + 0.5) / (df + 0.5))
    foreign: set[str] = set()
    if len(sentences) > 1:  # of the terms kept: `_bounded` may have cut some words of the sentences
        foreign = _foreign(sentences, idf, unknown_terms) & discounts.keys()
        if foreign:
            for term in foreign:
                discounts[term] *= FOREIGN_WEIGHT
                if term in idf:
                    idf[term] *= FOREIGN_WEIGHT
                elif term in unknown_terms:
                    unknown_terms[term] *= FOREIGN_WEIGHT
            unknown_cjk = sum(w for t, w in unknown_terms.items() if is_cjk(t))
            unknown = sum(w for t, w in unknown_terms.items() if not is_cjk(t))
    return QueryWeights(
        tuple(terms), idf, sum(idf.values()), unknown, unknown_cjk, unknown_terms, unknown_idf, dfs, discounts,
        tuple(t for t in terms if t in foreign),
    )  # fmt: skip


# A sentence of a prompt is about something else than the vault when the words the vault uses hold less than
# FOREIGN_SHARE of its weight (the rest: words no card uses), and another sentence of the prompt is not: the repo,
# stack and ticket an agent's wrapper names around a short question ("Legacy jQuery admin panel, plain ES5 in
# public/js/, no build step. typeof NaN is number?? ..."). Its terms, unless a sentence the vault knows says them
# too, weigh FOREIGN_WEIGHT of themselves, in the best possible score and in coverage: the words the vault does not
# know no longer drown the question they wrap. A question about something the vault does not know keeps its weight
# (its own sentence is the one that names it; a prompt of one sentence is never discounted). Set by hand on wtfjs-agent
# and the dev suites' wrapped slices (`benchmarks/wrapped.py`), RESULTS.md "Round 7".
FOREIGN_SHARE = 0.5
FOREIGN_WEIGHT = 0.1


def _foreign(
    sentences: "Sequence[Sequence[str]]", idf: "Mapping[str, float]", unknown: "Mapping[str, float]"
) -> set[str]:
    """The terms said only in sentences the vault hardly knows (see `FOREIGN_SHARE`), when some sentence it knows
    better is there; else none."""
    foreign: list[set[str]] = []
    kept: set[str] = set()
    for tokens in sentences:
        words = set(tokens)
        known = sum(idf.get(t, 0.0) for t in words)
        strange = sum(unknown.get(t, 0.0) for t in words)
        if known + strange > 0 and known < FOREIGN_SHARE * (known + strange):
            foreign.append(words)
        else:
            kept |= words
    if not foreign or len(foreign) == len(sentences):
        return set()
    return set().union(*foreign) - kept


def score_terms(
    index: "IndexReader", terms: "Sequence[str]", settings: "RecallSettings"
) -> tuple[dict[int, float], dict[int, list[str]], QueryWeights]:
    """Every card sharing one of `terms` (taken as they are, no salience): its BM25F score and matched terms, and
    the terms' weights; what `rank` sorts, and what `cairn.membench` scores a single term with."""
    postings = index.postings(terms)
    weights = _weights(index, terms, postings, settings)
    scores, matched = _score_all(index, terms, postings, weights, settings)
    return scores, matched, weights


def _score_all(
    index: "IndexReader",
    terms: "Sequence[str]",
    postings: "dict[str, Postings]",
    weights: QueryWeights,
    settings: "RecallSettings",
) -> tuple[dict[int, float], dict[int, list[str]]]:
    """Every card sharing a term with the query: its BM25F score and the terms it matched (query order)."""
    scores: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    avg_name, avg_summary, avg_body = (max(a, 1.0) for a in index.avg_lengths)
    k1, b = settings.k1, settings.b
    w_name, w_summary, w_body = settings.weight_name, settings.weight_summary, settings.weight_body
    for term in terms:
        found = postings.get(term)
        if found is None:
            continue
        weight = weights.idf[term]
        for row, tf_n, tf_s, tf_b, len_n, len_s, len_b in found:
            tf = (
                w_name * tf_n / (1 - b + b * len_n / avg_name)
                + w_summary * tf_s / (1 - b + b * len_s / avg_summary)
                + w_body * tf_b / (1 - b + b * len_b / avg_body)
            )
            if tf <= 0:
                continue
            scores[row] = scores.get(row, 0.0) + weight * tf / (k1 + tf)
            matched.setdefault(row, []).append(term)
    return scores, matched


def _rank_all(
    index: "IndexReader",
    terms: "Sequence[str]",
    postings: "dict[str, Postings]",
    weights: QueryWeights,
    settings: "RecallSettings",
) -> tuple[list[tuple[int, float]], dict[int, list[str]], bool]:
    scores, matched = _score_all(index, terms, postings, weights, settings)
    return _ranked(index, scores), matched, True


def _top(
    index: "IndexReader",
    terms: "Sequence[str]",
    postings: "dict[str, Postings]",
    weights: QueryWeights,
    settings: "RecallSettings",
    depth: int,
) -> tuple[list[tuple[int, float]], dict[int, list[str]], bool]:
    """The `depth` best cards, best first (ties by id), with exactly the scores and matched terms `_score_all`
    gives them, and whether that is every scored card; the cost follows the query's rare terms, not the vault.

    MaxScore over term-at-a-time scoring. Each term's bound (its postings' best frontier pair, see `cairn.hot.index`)
    caps what it can add to any card. Terms are read whole in order of bound, highest first (the rare ones), while a
    card matching none of them so far could still reach the current depth-th best partial score; the terms left
    over are only looked up (bisection) for the cards that can still make the cut. Partial scores only grow (every
    term adds >= 0), so a card whose partial score plus the bounds still unread falls below the depth-th best
    partial score is out. The cards left are then scored exactly, terms in query order as `_score_all` adds them.
    """
    k1, b = settings.k1, settings.b
    field_weights = (settings.weight_name, settings.weight_summary, settings.weight_body)
    idf = weights.idf
    present = [t for t in terms if t in postings]
    if not (k1 > 0 and 0 <= b <= 1 and min(field_weights) >= 0 and all(idf[t] >= 0 for t in present)):
        return _rank_all(index, terms, postings, weights, settings)  # the bounds assume these
    avg = tuple(max(a, 1.0) for a in index.avg_lengths)
    avg_name, avg_summary, avg_body = avg
    w_name, w_summary, w_body = field_weights
    bound: dict[str, float] = {}
    for term in present:
        m_name, m_summary, m_body = postings[term].field_maxima(field_weights, b, avg)  # type: ignore[arg-type]
        top_tf = m_name + m_summary + m_body
        bound[term] = idf[term] * top_tf / (k1 + top_tf) if top_tf > 0 else 0.0
    order = sorted(present, key=lambda t: -bound[t])
    left = [0.0] * (len(order) + 1)  # left[i]: the most terms order[i:] can add to a card
    for i in range(len(order) - 1, -1, -1):
        left[i] = left[i + 1] + bound[order[i]]

    # partial: each card's sum so far. Sums of one or two terms equal `_score_all`'s bit for bit (0.0 + a is a,
    # a + b is b + a); `twice` and `thrice` note the cards with two and with three or more terms summed.
    partial: dict[int, float] = {}
    twice: set[int] = set()
    thrice: set[int] = set()
    one_b = 1 - b
    i = 0
    # The depth-th best partial score only grows, and by at most the bounds of the terms read since it was worked
    # out (`known` at `known_at`): it is worked out again only when that ceiling reaches the bounds left.
    known, known_at = 0.0, 0
    while i < len(order):
        if len(partial) >= depth and left[i] * (1 + _SLACK) < (known + left[known_at] - left[i]) * _CEILING:
            known, known_at = _kth(partial, depth), i
            if left[i] * (1 + _SLACK) < known:
                break  # no card unseen so far can reach the top `depth`
        term = order[i]
        found = postings[term]
        weight = idf[term]
        st = found.stats
        for row, tf_n, tf_s, tf_b, len_n, len_s, len_b in zip(
            found.rows, st[0::6], st[1::6], st[2::6], st[3::6], st[4::6], st[5::6], strict=True
        ):
            # `_score_all`'s sum, without the fields the term is not in: each adds exactly 0.0 there (`_exact`).
            if tf_n:
                tf = w_name * tf_n / (one_b + b * len_n / avg_name)
                if tf_s:
                    tf += w_summary * tf_s / (one_b + b * len_s / avg_summary)
                if tf_b:
                    tf += w_body * tf_b / (one_b + b * len_b / avg_body)
            elif tf_s:
                tf = w_summary * tf_s / (one_b + b * len_s / avg_summary)
                if tf_b:
                    tf += w_body * tf_b / (one_b + b * len_b / avg_body)
            elif tf_b:
                tf = w_body * tf_b / (one_b + b * len_b / avg_body)
            else:
                continue
            if tf > 0:
                before = partial.get(row)
                if before is None:
                    partial[row] = weight * tf / (k1 + tf)
                else:
                    partial[row] = before + weight * tf / (k1 + tf)
                    if row in twice:
                        thrice.add(row)
                    else:
                        twice.add(row)
        i += 1
    complete = i == len(order) and len(partial) <= depth

    alive = list(partial)
    while i < len(order):  # the remaining terms: looked up for the cards still in the running
        cut = _kth(partial, depth) / (1 + _SLACK)
        alive = [row for row in alive if partial[row] + left[i] >= cut]
        term = order[i]
        found = postings[term]
        weight = idf[term]
        rows, st, n = found.rows, found.stats, len(found.rows)
        for row in alive:
            at = bisect_left(rows, row)
            if at < n and rows[at] == row:
                tf = _posting_tf(st, 6 * at, w_name, w_summary, w_body, one_b, b, avg_name, avg_summary, avg_body)
                if tf > 0:
                    partial[row] += weight * tf / (k1 + tf)
                    if row in twice:
                        thrice.add(row)
                    else:
                        twice.add(row)
        i += 1

    # Every card outside `alive` is below the depth-th best. Inside, a sum of three or more terms was added in
    # another order than `_score_all`'s: rescore those near or above the cut in query order, so that scores and
    # ties are `_score_all`'s to the bit; then the matched terms of the cards kept.
    in_running = partial if len(alive) == len(partial) else {row: partial[row] for row in alive}
    cut = _kth(in_running, depth) / (1 + _SLACK) if len(alive) > depth else 0.0
    finalists = [row for row in alive if partial[row] >= cut]
    in_query_order = [(term, postings[term].rows, postings[term].stats, idf[term]) for term in present]
    exact = {row: _exact(row, in_query_order, settings, avg) for row in thrice.intersection(finalists)}
    for row, (score, _) in exact.items():
        partial[row] = score
    best = sorted([(-partial[row], row) for row in finalists])
    ranked = _ties_by_id(index, [(row, -negated) for negated, row in best], depth)
    matched = {row: (exact.get(row) or _exact(row, in_query_order, settings, avg))[1] for row, _ in ranked}
    return ranked, matched, complete


def _exact(
    row: int,
    terms: "Sequence[tuple[str, Sequence[int], Sequence[int], float]]",
    settings: "RecallSettings",
    avg: tuple[float, ...],
) -> tuple[float, list[str]]:
    """One card's score and matched terms, summed in query order exactly as `_score_all` sums them.

    terms: the query's terms the vault knows, in query order, each with its postings' rows and stats and its
    weight."""
    k1, b = settings.k1, settings.b
    w_name, w_summary, w_body = settings.weight_name, settings.weight_summary, settings.weight_body
    avg_name, avg_summary, avg_body = avg
    one_b = 1 - b
    score = 0.0
    hit: list[str] = []
    for term, rows, st, weight in terms:
        at = bisect_left(rows, row)
        if at < len(rows) and rows[at] == row:
            tf = _posting_tf(st, 6 * at, w_name, w_summary, w_body, one_b, b, avg_name, avg_summary, avg_body)
            if tf <= 0:
                continue
            score = score + weight * tf / (k1 + tf)
            hit.append(term)
    return score, hit


def _posting_tf(
    st: "Sequence[int]",
    j: int,
    w_name: float,
    w_summary: float,
    w_body: float,
    one_b: float,
    b: float,
    avg_name: float,
    avg_summary: float,
    avg_body: float,
) -> float:
    """The length-normalised, weighted frequency of the posting whose six counts start at `st[j]`: `_score_all`'s
    `tf` to the bit. A field the term is not in adds exactly 0.0 to that sum (0 * w / d is 0.0, and x + 0.0 is x),
    so only the fields it is in are computed, in the same order."""
    tf_n, tf_s, tf_b = st[j], st[j + 1], st[j + 2]
    tf = 0.0
    if tf_n:
        tf = w_name * tf_n / (one_b + b * st[j + 3] / avg_name)
    if tf_s:
        part = w_summary * tf_s / (one_b + b * st[j + 4] / avg_summary)
        tf = tf + part if tf_n else part
    if tf_b:
        part = w_body * tf_b / (one_b + b * st[j + 5] / avg_body)
        tf = tf + part if tf_n or tf_s else part
    return tf


def _kth(scores: dict[int, float], k: int) -> float:
    """The k-th highest value (0.0 when there are fewer): `heapq.nlargest(k, values)[-1]`."""
    if len(scores) < k:
        return 0.0
    if len(scores) <= _SORT_UP_TO:
        return sorted(scores.values(), reverse=True)[k - 1]
    heapify_max, heappop_max = _max_heap()
    values = list(scores.values())
    heapify_max(values)  # in linear time, then k - 1 pops of the highest, all in C
    for _ in range(k - 1):
        heappop_max(values)
    return values[0]


def _max_heap() -> "tuple[Callable[[list[float]], None], Callable[[list[float]], float]]":
    """`_heapq`'s max-heap functions (private names before Python 3.14, public from it), imported when first
    needed: a vault of up to `_SORT_UP_TO` cards never needs them."""
    try:
        import _heapq as module
    except ImportError:  # pragma: no cover - an interpreter without the C module
        import heapq as module  # type: ignore[no-redef]
    found = getattr(module, "heapify_max", None), getattr(module, "heappop_max", None)
    if found[0] is None or found[1] is None:
        found = module._heapify_max, module._heappop_max  # type: ignore[attr-defined]
    return found  # type: ignore[return-value]
