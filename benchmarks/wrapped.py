"""Recall on the dev suites with their short queries wrapped in varied agent prompts: a slice "wrapped".

The dev suites' "long" slice wraps every question in ONE wrapper ("Before you touch any files, read the README
first. Question from a teammate: ... Don't change anything yet, just explain."), so gates and boilerplate rules
fitted on it are fitted on that sentence. Here each `short` case (positives and negatives) is also asked inside one
of ~20 wrappers an agent prompt realistically carries: context about the repo, stack or ticket before the
question, instructions and deliverables after it, some with a pasted path or command line, of varied length and
order (English for the English suites, Chinese for tldr-zh). The wrapper is chosen by a hash of the case id, so the
slice is the same on every run. The wrappers were written without reading the held-out suite
(benchmarks/suites/wtfpython-agent), which is not wrapped here.

Run from the repository root:
    .venv/bin/python -m benchmarks.wrapped                       # all dev suites: all, long, short, wrapped
    .venv/bin/python -m benchmarks.wrapped --suite tldr-zh-dev --json
    .venv/bin/python -m benchmarks.wrapped --context-weight 0.3  # explore tokens.CONTEXT_WEIGHT (not shipped)
    .venv/bin/python -m benchmarks.wrapped --fit                 # leave-one-suite-out fit of CONTEXT_WEIGHT
    .venv/bin/python -m benchmarks.wrapped --semantic            # with the extra's similarities
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
from typing import Any

from benchmarks import recall_suites

WRAPPED = "wrapped"

# {q} is the case's query, given a closing full stop when it has none.
EN_WRAPPERS = (
    "Context: we're on the payments service, Go 1.22 with Postgres 15, deployed on Kubernetes. {q} Please write up"
    " your findings as a short note for the ticket, no code changes.",
    "Working in ~/src/webapp on branch feature/checkout-v2.\n{q}\nKeep the answer short and link any docs you use.",
    "Ticket OPS-4412 came in from support this morning. {q} Reply with the likely cause and a suggested fix; do not"
    " open a PR.",
    "{q} For context, this is a monorepo with a React frontend and a Django backend, and CI runs on GitHub Actions."
    " Summarize the options before changing anything.",
    "Hey, quick one while I'm waiting on the build.\n{q}\nNo need to modify the repository, an explanation is enough.",
    "I ran `make test` in services/api and then got pulled into a meeting. Someone on the team asked me this: {q}"
    " Can you draft a reply I can paste into Slack?",
    "We're migrating the data pipeline from Airflow to Dagster this sprint, and the staging cluster is shared with"
    " another team. {q} Please don't deploy or restart anything; list the steps you would take instead.",
    "Background: macOS 14 laptop, zsh, Homebrew, Docker Desktop. {q}",
    "My manager forwarded this from the customer call notes. {q} Write the answer in plain language, in two or three"
    " paragraphs, and mention any risks.",
    "In /srv/app/config/settings.yaml the values look fine to me. {q} Check the relevant parts of the codebase"
    " before answering and cite the file paths you looked at.",
    "I'm onboarding onto this project and still learning the stack (TypeScript, Node 20, pnpm, Vitest). {q} Explain"
    " it like I'm new here.",
    "{q}\n\nConstraints: don't touch the lockfile, don't run the formatter over the whole tree, and keep any change"
    " under 50 lines.",
    "Following up on yesterday's incident review. {q} Add your answer to docs/runbooks/incidents.md under a new"
    " heading, but show me the text first.",
    "Here's something from the team channel: {q} I'd like a short answer plus a link to the official documentation"
    " if there is one.",
    "Our on-call rotation keeps hitting this. {q} Please investigate, then propose a fix and a test that would have"
    " caught it.",
    "Setup: Ubuntu 22.04 on the build agents, Java 17, Gradle 8. The release is on Friday. {q}",
    "Running `docker compose up` locally works fine. {q} Reply in bullet points and keep it under 150 words.",
    "I was pairing with Sam on the reporting dashboard. {q} Don't commit anything; we'll decide together after your"
    " answer.",
    "Before we start the refactor of the auth module, one thing I'd like settled. {q} Think it through step by step"
    " and then give me a recommendation.",
    "This came up in code review on PR #2381 (the caching layer). {q} Answer first, then list any follow-up tasks we"
    " should file.",
)
ZH_WRAPPERS = (
    "我在公司的后端仓库里（Python 3.11，用 pytest 和 ruff）。{q}先别动代码，告诉我你的判断就行。",
    "背景：我们这个迭代在把数据管道从 Airflow 迁到 Dagster，测试集群是和别的组共用的。{q}请不要重启任何服务，列出你会怎么做。",
    "工单 OPS-4412 是今天早上客服转过来的。{q}回复可能的原因和建议的修复方式，不要提交 PR。",
    "{q}\n补充一下：这是一个前端 React、后端 Django 的单仓库，CI 跑在 GitHub Actions 上。改东西之前先总结一下有哪些方案。",
    "我刚在 services/api 目录下跑了 `make test`，然后被拉去开会了。组里有人问我：{q}帮我写一段可以直接发到群里的回复。",
    "环境：macOS 14，zsh，Homebrew，Docker Desktop。{q}",
    "我在和小王一起看报表看板的代码。{q}用几条要点回答，控制在两百字以内。",
    "这是昨天事故复盘时提出来的。{q}把答案写成一小段说明，先给我看，再写进 docs/runbooks/incidents.md。",
)
_ENDS = tuple(".?!。？！")


def wrap(case_id: str, query: str, chinese: bool) -> str:
    """The query inside the wrapper the case id's hash picks."""
    wrappers = ZH_WRAPPERS if chinese else EN_WRAPPERS
    pick = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:4], "big") % len(wrappers)
    query = query.strip()
    if not query.endswith(_ENDS):
        query += "。" if chinese else "."
    return wrappers[pick].replace("{q}", query)


def wrapped_cases(suite: str, cases: list[Any]) -> list[Any]:
    """The suite's cases, then a wrapped copy of each short one (id `w-<id>`, slice "wrapped")."""
    chinese = "-zh" in suite
    extra = [
        dataclasses.replace(case, id=f"w-{case.id}", query=wrap(case.id, case.query, chinese), slice=WRAPPED)
        for case in cases
        if case.slice == "short"
    ]
    return [*cases, *extra]


def run_suite(suite: str, overrides: dict[str, Any], semantic: bool = False) -> dict[str, Any]:
    """The suite's figures (overall and per slice, wrapped included); semantic: with the extra's z-scores, as
    `recall_suites --semantic` gives them."""
    from cairn.hot.settings import settings_of
    from cairn.hot.vault import find_vault
    from cairn.index import build as indexer
    from cairn.quality.evaluate import evaluate, load_cases

    vault = find_vault(recall_suites.prepare(suite))
    indexer.build_index(vault)
    cases = wrapped_cases(suite, load_cases(recall_suites.cases_file(suite, vault.root)))
    with indexer.open_index(vault) as index:
        settings = dataclasses.replace(settings_of(index), **overrides)
        sims = None
        if semantic:
            from cairn.semantic.batch import similarities_for

            prompts = [case.query for case in cases]
            sims = similarities_for(index.path, prompts, top=50, z=True, cache_dir=recall_suites.WORK / "semantic")
        result = evaluate(index, cases, settings=settings, semantic=sims)
    data = result.to_dict()
    recall_suites.add_wrong_at_1(data, result.outcomes)
    data["n_cards"] = len(cases)
    data["ms_per_case"] = 0.0
    return data


def set_context_weight(value: float) -> None:
    from cairn.hot import tokens  # here, not at the top: bench_hook takes `wrap` and never imports the checkout

    tokens.CONTEXT_WEIGHT = value
    tokens._LAST_PROMPT.clear()


def fit(suites: list[str], grid: list[float], overrides: dict[str, Any]) -> None:
    """Leave one suite out: pick the context weight with the best mean Injection@1 on the other suites' wrapped
    slices (FIR at most 5% on every slice), report it on the left-out suite."""
    figures: dict[float, dict[str, dict[str, Any]]] = {}
    for value in grid:
        set_context_weight(value)
        figures[value] = {suite: run_suite(suite, overrides) for suite in suites}
        row = "  ".join(_cell(suite, figures[value][suite]) for suite in suites)
        print(f"context_weight {value:.2f}: {row}", flush=True)
    before = figures[grid[0]]  # grid[0] is 1.0: every sentence weighs fully (recall before the ask was read)
    for held in suites:
        fitted = [s for s in suites if s != held]

        def score(value: float, on: list[str] = fitted) -> float:
            if any(m["false_injection_rate"] > 0.05 for s in on for m in _slices(figures[value][s])):
                return -1.0
            for s in on:  # the original slices must not drop
                for name in ("long", "short"):
                    if figures[value][s]["by_slice"][name]["injection@1"] < before[s]["by_slice"][name]["injection@1"]:
                        return -1.0
            return float(sum(figures[value][s]["by_slice"][WRAPPED]["injection@1"] for s in on)) / len(on)

        best = max(grid, key=lambda v: (round(score(v), 6), v))  # a tie: the milder discount
        print(f"held out {held}: fitted {best:.2f} on {fitted}; {_cell(held, figures[best][held])}")


def _slices(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [data, *data["by_slice"].values()]


def _cell(suite: str, data: dict[str, Any]) -> str:
    parts = [f"{suite}"]
    for name in ("long", "short", WRAPPED):
        m = data["by_slice"].get(name)
        if m:
            parts.append(f"{name} {m['injection@1']:.3f}/{m['false_injection_rate']:.3f}")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", action="append", choices=recall_suites.SUITES, help="Only this suite (repeatable).")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="Override a [recall] setting.")
    parser.add_argument("--context-weight", type=float, help="Override tokens.CONTEXT_WEIGHT (exploration only).")
    parser.add_argument("--fit", action="store_true", help="Leave-one-suite-out fit of tokens.CONTEXT_WEIGHT.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    parser.add_argument(
        "--semantic", action="store_true", help="With the semantic extra's similarities (pip install the extra)."
    )
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(recall_suites.WORK / "cache")
    overrides: dict[str, Any] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = float(value)
    suites = list(args.suite or recall_suites.SUITES)
    if args.fit:
        fit(suites, [1.0, 0.5, 0.2, 0.1, 0.05, 0.02], overrides)
        return 0
    if args.context_weight is not None:
        set_context_weight(args.context_weight)
    results = {suite: run_suite(suite, overrides, args.semantic) for suite in suites}
    if args.json:
        print(json.dumps({s: {k: v for k, v in d.items() if k != "cases"} for s, d in results.items()}, indent=2))
    else:
        print(recall_suites.table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
