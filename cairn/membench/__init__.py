"""Cairn's ranking on the public conversation-memory benchmarks (LongMemEval, LoCoMo), at session level.

suites: the two file formats read into haystacks and questions. sessionbags: sessions tokenized once per run, as
bags of tokens. memindex: an in-memory index that `cairn.hot.recall` ranks as it ranks an index file. collection:
term statistics of the whole file (IDF, burstiness); expansion: words that keep company in its turns. dates: dates
a question names, absolute or relative to the day asked. ranker: a haystack's sessions ranked for a question with
Cairn's recall core. metrics: Recall@k and NDCG@10. run: the whole benchmark, overall and per question type.
"""

from __future__ import annotations

from cairn.membench.run import BenchReport, run_bench
from cairn.membench.suites import load_locomo, load_longmemeval

__all__ = ["BenchReport", "load_locomo", "load_longmemeval", "run_bench"]
