"""A vault in two languages: English cards and Chinese ones side by side (a team's lessons and their translations).

A CJK term's IDF is taken among the cards holding CJK terms (`n_cjk_cards` in the index's settings), so a Chinese
prompt weighs its words in a mixed vault as the Chinese cards alone would: before, the English cards beside them made
every Chinese word look rarer (mixed tldr vault, `benchmarks/mixed_vault.py`: Chinese prompts' Recall@1 0.542 ->
0.569). The count is kept through incremental updates, recounted from a base written before it, and checked by
`cairn audit` against the tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cairn.hot.recall import prompt_weights
from cairn.hot.vault import find_vault
from cairn.index.build import build_index, index_file_for, open_index
from helpers.cachefiles import edit_meta, reseal
from helpers.vaults import VaultRepo

ENGLISH = {
    "git/force-with-lease": ("Force-push with lease", "Use git push --force-with-lease after a rebase."),
    "git/reflog-recovery": ("Recover commits with the reflog", "git reflog finds commits a reset dropped."),
    "docker/layer-order": ("Copy sources after installing deps", "Order Dockerfile layers by how often they change."),
    "python/requests-timeout": ("requests has no default timeout", "Pass timeout= or a hung server hangs the worker."),
    "http/idempotency-key": ("Retry POST only with an idempotency key", "A retried POST can charge a card twice."),
}
CHINESE = {
    "zh/force-with-lease": (
        "变基后用 lease 强制推送",
        "变基之后推送被拒绝时，用 git push --force-with-lease，不要直接强制推送。",
    ),
    "zh/reflog-recovery": ("用 reflog 找回提交", "重置之后丢失的提交可以用 git reflog 找回。"),
}
PROMPT = "变基之后推送被拒绝，可以直接强制推送吗？"


def _write(repo: VaultRepo, cards: dict[str, tuple[str, str]]) -> None:
    for card_id, (name, summary) in cards.items():
        repo.write(card_id, name, summary)


def _settings(repo: VaultRepo) -> dict[str, Any]:
    with open_index(find_vault(repo.root)) as index:
        return dict(index.meta)


def test_a_chinese_prompt_weighs_its_words_as_among_the_chinese_cards(tmp_path: Path) -> None:
    mixed = VaultRepo(tmp_path / "mixed")
    _write(mixed, {**ENGLISH, **CHINESE})
    mixed.commit("English cards and two Chinese ones")
    chinese = VaultRepo(tmp_path / "chinese")
    _write(chinese, CHINESE)
    chinese.commit("The Chinese cards alone")
    weights = {}
    for name, repo in (("mixed", mixed), ("chinese", chinese)):
        vault = find_vault(repo.root)
        build_index(vault)
        with open_index(vault) as index:
            weights[name] = prompt_weights(index, PROMPT).idf
            counts = (index.n_cards, index.n_cjk_cards)
        assert counts == ((7, 2) if name == "mixed" else (2, 2))
    cjk = {term: w for term, w in weights["chinese"].items() if not term.isascii()}
    assert len(cjk) >= 4  # 变基, 推送, 拒绝, 强制, ...
    assert {term: round(weights["mixed"][term], 9) for term in cjk} == {t: round(w, 9) for t, w in cjk.items()}


def test_the_count_follows_commits_and_is_recounted_from_an_older_base(vault_repo: VaultRepo) -> None:
    _write(vault_repo, ENGLISH)
    vault_repo.commit("English cards")
    vault = find_vault(vault_repo.root)
    build_index(vault)
    assert _settings(vault_repo)["n_cjk_cards"] == "0"
    _write(vault_repo, CHINESE)
    vault_repo.commit("Two Chinese cards")
    assert build_index(vault).mode == "incremental"  # an update from the base, not a rebuild
    assert _settings(vault_repo)["n_cjk_cards"] == "2"
    (vault_repo.root / "cards" / "zh" / "reflog-recovery.md").unlink()
    vault_repo.commit("One Chinese card removed")
    build_index(vault)
    assert _settings(vault_repo)["n_cjk_cards"] == "1"
    # An index written before the count: the next update counts the cards it keeps.
    index_file = index_file_for(vault)
    _drop_setting(index_file, "n_cjk_cards")
    reseal(index_file)
    with open_index(vault) as index:
        assert "n_cjk_cards" not in index.meta and index.n_cjk_cards == index.n_cards  # the old reading
    vault_repo.write("zh/layer-order", "先复制依赖清单", "先安装依赖再复制源码，Docker 的缓存层才不会每次失效。")
    vault_repo.commit("Another Chinese card")
    build_index(vault)
    assert _settings(vault_repo)["n_cjk_cards"] == "2"


def test_audit_checks_the_count_against_the_tree(vault_repo: VaultRepo) -> None:
    _write(vault_repo, {**ENGLISH, **CHINESE})
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.commit("Cards in two languages")
    assert vault_repo.invoke("index").returncode == 0
    done = vault_repo.invoke("audit", "--json")
    assert done.returncode == 0, done.stdout
    index_file = index_file_for(find_vault(vault_repo.root))
    edit_meta(index_file, n_cjk_cards="7")  # every Chinese word made as rare as among all seven cards
    reseal(index_file)
    done = vault_repo.invoke("audit", "--json")
    assert done.returncode == 1
    details = [d for check in json.loads(done.stdout)["checks"] for d in check.get("details", [])]
    assert "settings: n_cjk_cards is '7', the commit gives 2 cards with CJK terms" in details


def _drop_setting(index_file: Path, key: str) -> None:
    from cairn.index import store
    from cairn.index.store import meta_message

    parts = store.read_parts(index_file, unchecked=True)
    meta = dict(json.loads(parts.meta))
    meta.pop(key)
    parts.meta = meta_message(meta)
    with open(index_file, "wb") as handle:
        from helpers.cachefiles import _sealer

        store.write_parts(handle, parts, _sealer())
