"""`cairn bench`: Cairn's ranking on the public conversation-memory benchmarks (LongMemEval, LoCoMo)."""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Rank each benchmark question's haystack sessions with Cairn's recall core and report the metrics."""
