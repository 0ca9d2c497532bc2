"""The three gates that decide whether a ranked card is injected: normalized score, query coverage and margin.

Every gate value is a ratio in [0, 1], so one threshold means the same thing in a vault of 30 cards and one of
30,000, for a short question and for a long agent prompt:

- norm_score: the card's BM25F score over the most the query could score (every informative query term fully
  matched); how much of the query's weight the card answers, and how strongly.
- coverage: the share of the query's informative weight (IDF-weighted terms, instruction words discounted) that the
  card matches at all. Words the vault never uses count as unmatched evidence: a question about something the vault
  does not know should not get a card that only shares its everyday words.
- margin: 1 - next score / score; how clearly the card stands above the candidate ranked after it.

Hot path: standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: the hook does not import cairn.config (dataclasses)
    from collections.abc import Iterable, Mapping

    from cairn.config import RecallSettings

BELOW_SCORE = "below_score"
LOW_COVERAGE = "low_coverage"
SMALL_MARGIN = "small_margin"


def norm_score(score: float, query_mass: float) -> float:
    """score / query_mass, where query_mass is the score a card matching every query term fully would approach."""
    return score / query_mass if query_mass > 0 else 0.0


def coverage(matched: Iterable[str], weights: Mapping[str, float], total: float) -> float:
    """The share of the query's informative weight among the matched terms."""
    if total <= 0:
        return 0.0
    return min(1.0, sum(weights.get(term, 0.0) for term in matched) / total)


def margin(score: float, next_score: float) -> float:
    """How far a score stands above the next one, as a share of itself (1.0 when nothing follows)."""
    if score <= 0:
        return 0.0
    return max(0.0, 1.0 - next_score / score)


def failed_gate(norm: float, cover: float, gap: float, settings: RecallSettings) -> str | None:
    """The first gate a candidate fails (score, then coverage, then margin), or None when it passes all three."""
    if norm < settings.min_score:
        return BELOW_SCORE
    if cover < settings.min_coverage:
        return LOW_COVERAGE
    if gap < settings.min_margin:
        return SMALL_MARGIN
    return None
