"""`cairn bench`: Cairn's ranking on the public conversation-memory benchmarks (LongMemEval, LoCoMo)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cairn.cli.common import File, echo, echo_json, errors_to_exit, json_option, progress_bar
from cairn.terminal import clean_line

if TYPE_CHECKING:  # the benchmark package loads when a benchmark runs, not for `cairn --help`
    from cairn.membench.suites import Suite

METRICS = ("recall@1", "recall@3", "recall@5", "recall@10", "ndcg@10")
# a FIFO no one writes to waited for ever, as `cairn add --body-file PIPE` did
_FILE = File(exists=True, dir_okay=False, path_type=Path)


@click.group()
def bench() -> None:
    """Rank each benchmark question's haystack sessions with Cairn's recall core; report Recall@k and NDCG@10.

    \b
    Example:
      cairn bench locomo locomo10.json
      cairn bench longmemeval longmemeval_s_cleaned.json.gz --json
    """


@bench.command()
@click.argument("file", type=_FILE)
@json_option
@errors_to_exit
def longmemeval(file: Path, as_json: bool) -> None:
    """LongMemEval (a file in the format of longmemeval_s_cleaned.json, or gzipped): ~50 sessions per question.

    Each session is one document of the user's turns; abstention questions (`_abs`) are left out.

    \b
    Example:
      cairn bench longmemeval longmemeval_s_cleaned.json --json
      cairn bench longmemeval longmemeval_s.dev.json.gz
    """
    from cairn.membench import load_longmemeval

    _run(file, load_longmemeval, as_json)


@bench.command()
@click.argument("file", type=_FILE)
@json_option
@errors_to_exit
def locomo(file: Path, as_json: bool) -> None:
    """LoCoMo (locomo10.json, or gzipped): each conversation is a haystack, each session one document (both speakers).

    Questions with evidence are scored; evidence `D3:11` names session 3.

    \b
    Example:
      cairn bench locomo locomo10.json
    """
    from cairn.membench import load_locomo

    _run(file, load_locomo, as_json)


def _run(file: Path, load: Callable[[Path], Suite], as_json: bool) -> None:
    from cairn.membench import run_bench
    from cairn.membench.suites import InvalidBenchmark

    started = time.perf_counter()
    if sys.stderr.isatty():  # reading a large file takes seconds: say so, on a terminal only
        echo(clean_line(f"Reading {file.name} ..."), err=True)  # a name may hold escapes and line breaks
    suite = load(file)
    if not suite.questions:  # all-zero figures would read as a measurement
        left_out = ", ".join(f"{count} {reason.replace('_', ' ')}" for reason, count in suite.excluded.items())
        raise InvalidBenchmark(
            f"{file}: no question to score"
            + (f" (left out: {left_out})" if left_out else "")
            + f"; is it the {suite.name} file?"
        )
    with progress_bar(f"Ranking {suite.name} sessions") as progress:
        report = run_bench(suite, progress=progress)
    if as_json:
        echo_json(report.to_dict())
        return
    excluded = ", ".join(f"{count} {reason.replace('_', ' ')}" for reason, count in report.excluded.items())
    echo(f"{report.suite}: {report.questions} questions" + (f" (left out: {excluded})" if excluded else ""))
    types = [(_shown(name), row) for name, row in report.by_type.items()]  # names from the file: one line each
    width = max([len("all"), *(len(name) for name, _ in types)])
    echo(f"{'':<{width}}  {'n':>5}  " + "  ".join(f"{m:>9}" for m in METRICS))
    echo(f"{'all':<{width}}  {report.questions:>5}  " + "  ".join(f"{report.metrics[m]:>9.3f}" for m in METRICS))
    for name, row in types:
        echo(f"{name:<{width}}  {int(row['questions']):>5}  " + "  ".join(f"{row[m]:>9.3f}" for m in METRICS))
    echo(f"({time.perf_counter() - started:.1f}s)")


def _shown(name: str, width: int = 40) -> str:
    """A question type from the file as one table cell: no escape, no line break, at most `width` characters."""
    one_line = clean_line(name)
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"
