"""A vault in two languages: English cards and Chinese ones side by side (a team's lessons and their translations).

A lesson's translation, matched only by what the lesson itself matches, neither competes with it (its lead and
margin) nor takes a slot beside it (`recall.OTHER_LANGUAGE`); `benchmarks/mixed_vault.py` measures it on the tldr
suites in one vault.
"""

from __future__ import annotations

from cairn.hot.recall import OTHER_LANGUAGE, recall
from cairn.hot.vault import find_vault
from cairn.index.build import build_index, open_index
from helpers.vaults import VaultRepo

LESSON = {
    "git/force-with-lease": (
        "Force-push with --force-with-lease after a rebase",
        "After a rebase, git push --force-with-lease refuses to overwrite commits you have not fetched; plain --force"
        " does not.",
        "- `git push --force-with-lease origin my-branch`",
    ),
    "zh/git/force-with-lease": (
        "变基后用 --force-with-lease 强制推送",
        "变基之后强制推送：带租约的推送不会覆盖你还没拉取的提交。",
        "- `git push --force-with-lease origin my-branch`",
    ),
    "git/reflog": ("Recover lost commits with the reflog", "git reflog lists where HEAD has been.", ""),
    "zh/git/reflog": ("用 reflog 找回丢失的提交", "git reflog 列出 HEAD 去过的位置；重置到某一项就能找回提交。", ""),
    "docker/layer-order": ("Copy the lockfile before the sources", "Install dependencies before copying sources.", ""),
    "shell/pipefail": ("set -o pipefail", "Without pipefail a failing command early in a pipe is hidden.", ""),
}


def test_a_lesson_and_its_translation_do_not_compete(vault_repo: VaultRepo) -> None:
    for card_id, (name, summary, body) in LESSON.items():
        vault_repo.write(card_id, name, summary, body)
    vault_repo.commit("A lesson, its translation, and others")
    vault = find_vault(vault_repo.root)
    build_index(vault)
    with open_index(vault) as index:
        english = recall(index, "Should I use --force-with-lease after a rebase?")
        chinese = recall(index, "变基之后可以用 git push --force-with-lease 吗？")
        # Each version matches words the other lacks (English ones, Chinese ones): both compete as any card does.
        both = recall(index, "git reflog lists where HEAD has been: 怎么找回提交？")
    # Before, both versions were injected (two of three slots for one lesson), the English one only as a group:
    # alone against its translation, its lead and margin (0.22 / 0.26) failed the gates.
    assert [c.card.id for c in english.injected] == ["git/force-with-lease"]
    translation = next(c for c in english.candidates if c.card.id == "zh/git/force-with-lease")
    assert translation.reason == OTHER_LANGUAGE
    assert english.injected[0].lead > 0.5
    assert [c.card.id for c in chinese.injected] == ["zh/git/force-with-lease"]
    assert next(c for c in chinese.candidates if c.card.id == "git/force-with-lease").reason == OTHER_LANGUAGE
    reasons = {c.card.id: c.reason for c in both.candidates}
    assert reasons["git/reflog"] != OTHER_LANGUAGE and reasons["zh/git/reflog"] != OTHER_LANGUAGE, reasons
