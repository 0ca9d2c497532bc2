"""Recall's own small pieces give what the library functions they replace gave."""

from __future__ import annotations

import dataclasses
import heapq
import json
import random
from pathlib import Path
from typing import Any

import pytest

from cairn.config import Config
from cairn.hot import recall
from cairn.hot.index import IndexReader
from cairn.hot.tokens import tokenize
from cairn.index import store
from helpers.vaults import VaultRepo


def test_kth_is_heapq_nlargest_on_both_sides_of_the_sort_limit() -> None:
    rng = random.Random(3)
    for size in (0, 1, 5, 63, 64, 65, 500, recall._SORT_UP_TO, recall._SORT_UP_TO + 1, 4000):
        for k in (1, 3, 64):
            scores = {row: rng.choice([rng.random() * 9, 1.5, 0.0]) for row in range(size)}
            expected = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else 0.0
            assert recall._kth(scores, k) == expected, (size, k)


WORDS = [f"w{i}" for i in range(40)] + ["git", "rebase", "cache", "build", "docker", "layer", "timeout", "retry"]


def _varied_index(tmp_path: Path, n: int, seed: int) -> IndexReader:
    """Cards that admission refuses for every reason: drafts, retired, expired, superseded, scoped, not_when."""
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(len(WORDS))]

    def text(k: int) -> str:
        return " ".join(rng.choices(WORDS, weights, k=k))

    cards = []
    for i in range(n):
        name, summary, body = text(rng.randint(1, 4)), text(rng.randint(3, 12)), text(rng.randint(0, 30))
        status = rng.choices(["active", "draft", "retired"], [8, 1, 1])[0]
        cards.append(
            store.CardTerms(
                id=f"c{i}", path=f"cards/c{i}.md", blob=f"{i:040x}", name=name, summary=summary, status=status,
                expires_on=rng.choice([None, None, None, "2001-01-01", "2999-01-01"]),
                scope=tuple(rng.sample(["git", "docker", "ci"], rng.choice([0, 0, 1, 2]))),
                not_when=tuple(rng.sample(WORDS, 1)) if rng.random() < 0.1 else (),
                supersedes=(f"c{rng.randrange(n)}",) if rng.random() < 0.1 else (), record={},
                tokens=(tokenize(name), tokenize(summary), tokenize(body)),
            )
        )  # fmt: skip
    target = tmp_path / f"index-{seed}.cairn"
    meta = {"commit": "0" * 40, "config": json.dumps(Config().to_dict())}
    store.write_index(target, meta, cards)
    return IndexReader(target)


@pytest.mark.parametrize(("n", "seed"), [(40, 1), (300, 2), (1500, 3), (3000, 4)])
def test_deciding_the_first_candidates_decides_them_as_a_whole_recall(
    tmp_path: Path, n: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    settings = [Config().recall, dataclasses.replace(Config().recall, min_lead=0.0, min_coverage=0.0, min_margin=0.0)]
    short: list[bool] = []
    decide = recall._first_decisions

    def counted(*args: Any) -> recall.Result | None:
        result = decide(*args)
        short.append(result is not None)
        return result

    monkeypatch.setattr(recall, "_first_decisions", counted)
    with _varied_index(tmp_path, n, seed) as index:
        for _ in range(150):
            query = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
            already = {f"c{rng.randrange(n)}" for _ in range(rng.choice([0, 3, 30]))}
            scope = rng.choice([None, ["git"], ["docker", "ci"]])
            chosen = rng.choice(settings)
            full = recall.recall(index, query, scope=scope, already_injected=already, settings=chosen)
            for first in (0, 1, 2, 5, 19, 20, 21, 40, 70):
                part = recall.recall(
                    index, query, scope=scope, already_injected=already, settings=chosen, decide_first=first
                )
                assert part.injected == full.injected, (query, first)
                assert part.candidates == full.candidates[:first], (query, first)
    assert any(short) and not all(short)  # both ways were taken: settled early, and the whole way


def _tied_card(card_id: str) -> store.CardTerms:
    """A card every other `_tied_card` scores exactly alike with: the same words, only the id differs."""
    name, summary = "Redis evicts session keys", "Set maxmemory-policy to volatile-lru"
    return store.CardTerms(
        id=card_id, path=f"cards/{card_id}.md", blob="0" * 40, name=name, summary=summary, status="active",
        expires_on=None, scope=(), not_when=(), supersedes=(), record={},
        tokens=(tokenize(name), tokenize(summary), tokenize("")),
    )  # fmt: skip


def test_tied_cards_rank_by_id_after_any_history_of_updates(tmp_path: Path) -> None:
    """Bug fixed: cards that score exactly alike ranked by their index row, and an update numbers the cards it adds
    after the others, so an index updated commit by commit and one built at once (a teammate's fresh clone) put
    different tied cards first. Ties now go by id, through the id order the index stores; after every update of a
    random history the stored order places each card by its id, and the ranking (whole, and the `depth` best the
    hook's path finds) is the one a fresh build gives."""
    rng = random.Random(5)
    meta = {"commit": "0" * 40, "config": json.dumps(Config().to_dict())}
    updated, fresh = tmp_path / "updated.cairn", tmp_path / "fresh.cairn"
    held: set[str] = set()
    query = "redis evicts session keys"
    for step in range(25):
        removed = set(rng.sample(sorted(held), min(len(held), rng.choice([0, 1, 3]))))
        added = {f"{rng.choice('abcxyz')}{rng.randrange(100):02d}/redis" for _ in range(rng.choice([1, 2, 6]))}
        added |= set(rng.sample(sorted(held - removed), min(len(held - removed), rng.choice([0, 1]))))  # edits
        base = updated if step else None
        store.write_index(updated, meta, [_tied_card(i) for i in sorted(added)], removed, base=base)
        held = (held - removed) | added
        store.write_index(fresh, meta, [_tied_card(i) for i in sorted(held, reverse=True)])
        with IndexReader(updated) as reader, IndexReader(fresh) as built:
            order = reader.id_order()
            cards = reader.cards(row for row in range(1, len(order) + 1) if order[row - 1])
            assert [card.id for _, card in sorted((order[row - 1], card) for row, card in cards.items())] == sorted(
                held
            )
            assert not store.verify(reader)
            ids = {row: card.id for row, card in cards.items()}
            built_ids = {row: card.id for row, card in built.cards(row for row, _ in recall.rank(built, query)).items()}
            whole = [(ids[row], score) for row, score in recall.rank(reader, query)]
            assert whole == [(built_ids[row], score) for row, score in recall.rank(built, query)]
            assert [card_id for card_id, _ in whole] == sorted(held)
            for depth in (1, 2, 5):
                assert [(ids[row], score) for row, score in recall.rank(reader, query, depth=depth)] == whole[:depth]


def test_cards_that_score_alike_rank_by_id_however_the_index_was_built(vault_repo: VaultRepo) -> None:
    """Bug fixed (sweep 71): indexed commit by commit, `zeta/` ranked before the tied `alpha/`; rebuilt at the same
    commit (a teammate's fresh clone), `alpha/` did. Which tied card an agent got, or `max_cards` cut, followed each
    machine's history; now both give the id order."""
    vault_repo.write("zeta/redis-eviction", "Redis evicts session keys", "Set maxmemory-policy to volatile-lru.")
    vault_repo.commit("zeta")
    assert vault_repo.invoke("index").returncode == 0
    vault_repo.write("alpha/redis-eviction", "Session keys Redis evicts", "Set maxmemory-policy to volatile-lru.")
    vault_repo.commit("alpha")
    query = "redis evicts my session keys under memory pressure"

    def order(*extra: str) -> list[tuple[str, float]]:
        done = vault_repo.invoke("explain", query, "--json", *extra)
        assert done.returncode == 0, done.stderr
        return [(row["id"], row["score"]) for row in json.loads(done.stdout)["candidates"]]

    updated = order()
    indexed = vault_repo.invoke("index", "--rebuild", "--json")
    assert indexed.returncode == 0 and json.loads(indexed.stdout)["mode"] == "full"
    rebuilt = order()
    assert updated == rebuilt
    [(first, score), (second, again)] = rebuilt
    assert (first, second) == ("alpha/redis-eviction", "zeta/redis-eviction") and score == again


def test_a_chinese_card_is_not_matched_on_the_bigrams_around_de(vault_repo: VaultRepo) -> None:
    """The prompt "最近的提交怎么打包带走" asks to bundle commits. The shallow-clone card says "最近的提交" too, and matched the
    prompt on 近的 and 的提 (the 2-grams across 的, no words), which put it first and injected it; the prompt's terms
    leave those out now, and nothing is injected."""
    topics = (
        "缓存 索引 日志 线程 进程 内存 磁盘 网络 端口 证书 密钥 权限 镜像 容器 集群 节点 队列 事务 快照 备份".split()
    )
    for i, topic in enumerate(topics):
        vault_repo.write(
            f"zh/topic-{i:02}", f"{topic}的常见问题", f"排查{topic}相关的问题时，先看{topic}的配置和日志。"
        )
    vault_repo.write(
        "zh/bundle",
        "把仓库打包成一个文件",
        "用 git bundle create 把提交和引用打包成一个文件，拷到没有网络的机器上再克隆。",
    )
    vault_repo.write(
        "zh/shallow-clone",
        "浅克隆只取最近的提交",
        "git clone --depth 1 只拉最近的提交，仓库的历史不完整，没法回到更早的版本。",
    )
    vault_repo.commit()
    done = vault_repo.invoke("explain", "最近的提交怎么打包带走", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)["candidates"]}
    assert {"近的", "的提"}.isdisjoint(rows["zh/shallow-clone"]["matched"])
    assert [card_id for card_id, row in rows.items() if row["decision"] == "injected"] == []
