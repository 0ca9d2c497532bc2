"""Tokens: CJK 2-grams, case-folded words without stopwords, identifiers split while the whole also counts."""

from __future__ import annotations

import pytest

from cairn.hot.tokens import INSTRUCTION_WORDS, is_cjk, stem, tokenize


def test_cjk_text_becomes_character_bigrams() -> None:
    assert tokenize("暂存修改") == ["暂存", "存修", "修改"]


def test_a_lone_cjk_character_is_kept() -> None:
    assert tokenize("用 git") == ["用", "git"]


def test_punctuation_breaks_cjk_runs() -> None:
    assert "存，" not in tokenize("暂存，修改") and tokenize("暂存，修改") == ["暂存", "修改"]


def test_grammar_bigrams_are_dropped() -> None:
    assert "什么" not in tokenize("这是什么命令")


def test_words_are_case_folded_and_stopwords_dropped() -> None:
    assert tokenize("How do I Rebase THE branch") == ["rebase", "branch"]


def test_contractions_do_not_leave_fragments() -> None:
    assert tokenize("Don't change it, it's fine") == ["change", "fine"]


@pytest.mark.parametrize(
    ("identifier", "parts"),
    [
        ("camelCaseName", ["camel", "case", "name"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ("kebab-case-name", ["kebab", "case", "name"]),
        ("config.toml", ["config", "toml"]),
        ("src/cairn/recall.py", ["src", "cairn", "recall", "py"]),
        ("HTTPServer", ["http", "server"]),
    ],
)
def test_identifiers_yield_themselves_then_their_parts(identifier: str, parts: list[str]) -> None:
    tokens = tokenize(identifier)
    assert tokens[0] == identifier.lower()
    assert tokens[1:] == parts


def test_mixed_chinese_and_english() -> None:
    assert tokenize("用 git stash 暂存") == ["用", "git", "stash", "暂存"]


def test_light_stemming_meets_plurals_and_ing_forms() -> None:
    assert tokenize("videos buffering directories") == ["video", "buffer", "directory"]
    assert stem("status") == "status" and stem("pass") == "pass" and stem("git") == "git"


def test_identifiers_are_not_stemmed() -> None:
    assert tokenize("node_modules")[0] == "node_modules"


def test_instruction_words_are_tokens_recall_discounts() -> None:
    assert "readme" in tokenize("read the README first")
    assert "readme" in INSTRUCTION_WORDS


def test_is_cjk() -> None:
    assert is_cjk("暂存") and not is_cjk("git")


def test_empty_and_symbol_only_text() -> None:
    assert tokenize("") == [] and tokenize("--- ... ///") == []
