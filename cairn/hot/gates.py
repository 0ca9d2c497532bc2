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
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from cairn.config import RecallSettings

SMALL_LEAD = "small_lead"
LOW_COVERAGE = "low_coverage"
SMALL_MARGIN = "small_margin"
LOW_CONFIDENCE = "low_confidence"  # the confidence gate (`cairn.hot.confidence`) did not pick this card's cut


def lead(score: float, next_score: float, best: float) -> float:
    """(score - next_score) / best, where best is the score a card matching every query term fully would approach
    (words no card uses included); 0.0 when the query has no weight."""
    return max(0.0, score - next_score) / best if best > 0 else 0.0


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
