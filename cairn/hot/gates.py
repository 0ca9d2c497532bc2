"""The three gates that decide whether a ranked card is injected: score lead, query coverage and margin.

Every gate value is a ratio in [0, 1], so one threshold means the same thing in a vault of 30 cards and one of
30,000, for a short question and for a long agent prompt:

- lead (the score gate; `Candidate.lead`, setting `min_lead`): (score - next score) / the query's best
  possible score, where the best possible score counts the words no card uses at the weight of a one-card word.
  How far the card stands above the next one in units of the whole query. Unlike a ratio of the two scores it does
  not grow when the vault is small: a card that is the only one sharing a single word of a long question has a
  large margin but a small lead, because the rest of the question (known or not) still counts.
- coverage: the share of the query's informative weight (IDF-weighted terms, instruction words discounted) that the
  card matches at all. Words the vault never uses count as unmatched evidence: a question about something the vault
  does not know should not get a card that only shares its everyday words.
- margin: 1 - next score / score; how clearly the card stands above the candidate ranked after it.

A card whose name (with its aliases) holds at least `NAME_COVERAGE` of the query's weight counts its lead
`NAMED_LEAD` times (`named_lead`; `Candidate.lead` is that value, what `min_lead` is compared with): a prompt that is
mostly the lesson's own title is strong evidence even when a neighbour scores close behind. Fitted on the dev
suites (RESULTS.md "Round 5"): no false injection more on any of them or the template vault.

The own words relief (`said_lead`) counts a card's lead `NAMED_LEAD` times too when the prompt says a larger share
of the card's own words (the distinct terms of its name and summary) than of the next admissible card's, by at
least `SAID_GAP`. Coverage looks from the prompt's side (how much of the prompt the card matches); this looks from
the card's: a right card is matched on what it is about, a near-topic neighbour only on the context it shares with
the prompt (RESULTS.md "Round 20": on the cases the gates refuse, the share tells right first cards from wrong ones
at AUC 0.80 on stackfaq-en and 0.86 on wtfpython-agent, where the lead does at 0.73 and 0.79; on tldr, whose cards
are a command and a line, at 0.55-0.57). Only the first admissible card, and only in the main decision: the phrase
step and the fragment pick, already looser asks, do not count it.

The confidence gate (opt-in, `min_confidence`): how likely the best few admissible cards hold the lesson a prompt
asks for. (Here rather than in a module of its own: recall computes its features when the gate is on, and each
module the hook imports costs every prompt; `cairn.hot.confidence` keeps its names for code that imports them from
there. `math` is imported only then: see `cairn.hot.ln`.)

A logistic model over the evidence recall already has (`features`), read with `math` only. Recall scores each cut
of the admissible ranking after card k (k = 1 .. max_cards): "the first k cards fit and stand above the rest".
`probability` estimates the chance that one of those k cards is right; recall injects the cut with the highest
chance when it reaches `min_confidence` (setting), so related cards that fit about as well go in together instead
of cancelling each other.

The coefficients were fitted once on the dev suites (`benchmarks/confidence_study.py`, RESULTS.md "Round 3"):
cases of all three suites, the label "an expected card is among the first k admissible", L2-regularised logistic
regression. Cross-validated (leave one suite out, 5 folds) it did worse than the three threshold gates, and the
same estimate means different false injection rates in different suites: it ships off (`min_confidence` 0). The
semantic features (`sem`, `has_sem`) have no data yet: coefficient 0.

Features of the cut after card k, with s_i the i-th admissible score and `best` the query's best possible score:
- lead: (s_k - s_{k+1}) / best, the cut's lead in units of the whole query;
- margin: 1 - s_{k+1} / s_k;
- rel: s_1 / best;
- cover: coverage of card 1; cover_k: the lowest coverage among the first k;
- spread: s_k / s_1 (1 for k = 1): how alike the grouped cards fit;
- miss: the heaviest query term card 1 does not match, over the heaviest term weight possible (a one-card word):
  a rare word of the prompt the card lacks says it is about something else;
- unknown: the share of the query's weight in words no card uses;
- named: the share of card 1's score earned in its name and summary (the body alone is weaker evidence);
- terms: log(1 + the query's informative weight in one-card words): short prompts are thin evidence;
- close: log(1 + the admissible cards below the cut, down to card max_cards + 1, scoring at least 0.8 s_k);
- k2, k3: the cut is after card 2 / card 3;
- sem: the semantic similarity of card 1 when the optional semantic channel gives one (else 0, `has_sem` 0).
lead, margin, rel, cover and cover_k enter as log(value + 0.01).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from cairn.config import RecallSettings

SMALL_LEAD = "small_lead"
LOW_COVERAGE = "low_coverage"
SMALL_MARGIN = "small_margin"
LOW_CONFIDENCE = "low_confidence"  # the confidence gate (below) did not pick this card's cut
LITTLE_EVIDENCE = "little_evidence"  # the words a card matches weigh less than `min_evidence` rare words (below)

# The evidence floor (`[recall] min_evidence`, `config.RecallSettings`): a card is injected only when the prompt's
# words it matches weigh at least that many rare words: their IDF weights summed, in units of the weight of a word
# found in one card of the vault (`QueryWeights.one_card`), instruction words at their discount
# (`recall.evidence_of`). The other gates are shares (of the best possible score, of the prompt's weight, of the
# card's own score), and a prompt of one or two everyday words passes them all: "continue" matched by one card of a
# 14-card vault is a lead of 1.0 and a coverage of 1.0. Follow-ups like it ("run the tests", "fix it", "push",
# "再试一次") were injected a card 13-36% of the time on every suite's vault (benchmarks/suites/followups).


def evidence(weight: float, one_card: float) -> float:
    """`weight` (IDF weights summed) in rare words: over the weight of a word found in one card."""
    return weight / one_card if one_card > 0 else 0.0


def lead(score: float, next_score: float, best: float) -> float:
    """(score - next_score) / best, where best is the score a card matching every query term fully would approach
    (words no card uses included); 0.0 when the query has no weight."""
    return max(0.0, score - next_score) / best if best > 0 else 0.0


# The name gate's relief (see the module docstring): 2/3 of `min_lead` for a card named by most of the prompt.
NAME_COVERAGE = 0.65
NAMED_LEAD = 1.5


def named_lead(value: float, name_coverage: float) -> float:
    """The lead gate's value of a card: its lead, times `NAMED_LEAD` (at most 1.0) when its name with aliases holds
    at least `NAME_COVERAGE` of the query's weight."""
    return min(1.0, value * NAMED_LEAD) if name_coverage >= NAME_COVERAGE else value


# The own words relief's gap (see the module docstring), fitted on the six fittable suites leaving one out
# (RESULTS.md "Round 20", `benchmarks/said_study.py`).
SAID_GAP = 0.1


def says_own_words(share: float, next_share: float) -> bool:
    """Whether the prompt says at least `SAID_GAP` more of the card's own words (`share`) than of the next admissible
    card's (`next_share`): the own words relief's condition, which no threshold changes."""
    return share - next_share >= SAID_GAP


def said_lead(value: float, share: float, next_share: float) -> float:
    """The lead gate's value of a card: its lead, times `NAMED_LEAD` (at most 1.0) when `says_own_words`."""
    return min(1.0, value * NAMED_LEAD) if says_own_words(share, next_share) else value


def coverage(matched: "Iterable[str]", weights: "Mapping[str, float]", total: float) -> float:
    """The share of the query's informative weight among the matched terms."""
    if total <= 0:
        return 0.0
    return min(1.0, sum(weights.get(term, 0.0) for term in matched) / total)


def margin(score: float, next_score: float) -> float:
    """How far a score stands above the next one, as a share of itself (1.0 when nothing follows)."""
    if score <= 0:
        return 0.0
    return max(0.0, 1.0 - next_score / score)


def failed_gate(ahead: float, cover: float, gap: float, settings: "RecallSettings") -> str | None:
    """The first gate a candidate fails (score lead, then coverage, then margin), or None when it passes all three."""
    if ahead < settings.min_lead:
        return SMALL_LEAD
    if cover < settings.min_coverage:
        return LOW_COVERAGE
    if gap < settings.min_margin:
        return SMALL_MARGIN
    return None


FEATURES = (
    "lead",
    "margin",
    "rel",
    "cover",
    "cover_k",
    "spread",
    "miss",
    "unknown",
    "named",
    "terms",
    "close",
    "k2",
    "k3",
    "sem",
    "has_sem",
)

# Fitted by `python -m benchmarks.confidence_study fit --fit-fir 0.04` on the three dev suites (round 3's recall),
# in the order of FEATURES. Measured worse than the three threshold gates (RESULTS.md "Round 3"), so recall does not
# use it unless `[recall] min_confidence` is set above 0; 0.94 is the estimate that held FIR <= 4% on the suites.
INTERCEPT = 6.5360
COEFFICIENTS = (
    1.2694,
    -0.533,
    1.1453,
    -0.8165,
    -0.186,
    -5.084,
    0.5523,
    -1.6994,
    -1.0104,
    0.7823,
    -0.45,
    -0.0348,
    -0.212,
    0.0,
    0.0,
)
FITTED_MIN_CONFIDENCE = 0.94


def probability(
    values: "tuple[float, ...]", coefficients: "tuple[float, ...]" = COEFFICIENTS, intercept: float = INTERCEPT
) -> float:
    """The model's chance that the cut holds a right card: the logistic of intercept + coefficients . values."""
    z = intercept
    for c, v in zip(coefficients, values, strict=True):
        z += c * v
    if z < -40.0:
        return 0.0
    import math  # the confidence gate is opt-in: a prompt without it does not load `math` (see `cairn.hot.ln`)

    return 1.0 / (1.0 + math.exp(-z))


def features(
    k: int,
    scores: "list[float]",
    covers: "list[float]",
    best: float,
    miss: float,
    unknown: float,
    named: float,
    mass_terms: float,
    sem: "float | None" = None,
    upto: int = 4,
) -> "tuple[float, ...]":
    """The features of the cut after admissible card k (1-based); scores and covers of every admissible card."""
    s1 = scores[0]
    sk = scores[k - 1]
    nxt = scores[k] if k < len(scores) else 0.0
    close = 0
    for s in scores[k:upto]:  # up to card max_cards + 1: what recall always has, however early it stops
        if s >= 0.8 * sk:
            close += 1
    lead = max(0.0, sk - nxt) / best if best > 0 else 0.0
    margin = max(0.0, 1.0 - nxt / sk) if sk > 0 else 0.0
    import math  # recall asks for features only with the confidence gate on or `evidence` (see `cairn.hot.ln`)

    log = math.log
    return (
        log(lead + 0.01),
        log(margin + 0.01),
        log(s1 / best + 0.01) if best > 0 else log(0.01),
        log(covers[0] + 0.01),
        log(min(covers[:k]) + 0.01),
        sk / s1 if s1 > 0 else 0.0,
        miss,
        unknown,
        named,
        math.log1p(mass_terms),
        math.log1p(close),
        1.0 if k == 2 else 0.0,
        1.0 if k == 3 else 0.0,
        sem if sem is not None else 0.0,
        1.0 if sem is not None else 0.0,
    )
