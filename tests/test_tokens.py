"""Tokens: CJK 2-grams, case-folded words without stopwords, identifiers split while the whole also counts."""

from __future__ import annotations

import pytest

from cairn.hot.tokens import INSTRUCTION_WORDS, is_cjk, particle_straddles, prompt_terms, stem, tokenize


def test_cjk_text_becomes_character_bigrams() -> None:
    assert tokenize("暂存修改") == ["暂存", "存修", "修改"]


def test_a_lone_cjk_character_is_kept() -> None:
    assert tokenize("用 git") == ["用", "git"]


def test_punctuation_breaks_cjk_runs() -> None:
    assert "存，" not in tokenize("暂存，修改") and tokenize("暂存，修改") == ["暂存", "修改"]


def test_grammar_bigrams_are_dropped() -> None:
    assert "什么" not in tokenize("这是什么命令")


def test_a_prompt_leaves_out_the_bigrams_straddling_the_particle_de() -> None:
    """The run "提交的打包文件" is 提交 的 打包文件: 交的 and 的打 are no words. Cards keep them (`tokenize`); a prompt's terms
    do not, unless the particle ends a run (要注意的, channel 的缓冲区), where its 2-gram is the word beside it."""
    assert {"交的", "的打"} <= set(tokenize("创建最近提交的打包文件"))
    terms = prompt_terms("创建最近提交的打包文件")
    assert "交的" not in terms and "的打" not in terms and {"提交", "打包", "文件"} <= terms.keys()
    assert "意的" in prompt_terms("用 sync.Pool 有什么需要注意的")
    assert "的缓" in prompt_terms("channel 的缓冲区大小怎么定")


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


def test_the_particle_straddles_are_the_tokens_read_of_the_prompt() -> None:
    """Bug fixed (sweep 114): the 2-grams around 的 were cut from the prompt as typed, the tokens from it folded, so a
    compatibility ideograph beside 的 (U+F900, which NFC reads as U+8C48) left its straddle among the prompt's terms."""
    typed = "提交\uf900的打包文件"
    assert particle_straddles(typed) == {"\u8c48的", "的打"}
    assert "\u8c48的" in tokenize(typed) and "\u8c48的" not in prompt_terms(typed)


def test_every_particle_inside_a_cjk_run_has_its_straddles_cut() -> None:
    """Each 的 with a CJK character on both sides gives its two 2-grams, wherever it stands in the run: second (我的),
    second to last (交的值), one right after another (目的的: 的实 too), and none where it ends a run before a word
    in letters (提交的 commit, where 交的 is the word beside it)."""
    assert particle_straddles("我的分支") == {"我的", "的分"}
    assert particle_straddles("提交的值") == {"交的", "的值"}
    assert particle_straddles("目的的实现") == {"目的", "的的", "的实"}
    assert particle_straddles("提交的 commit") == set()


def test_the_characters_read_as_is_are_ones_nfc_and_the_letter_fold_leave_alone() -> None:
    """`tokens.read_as_is` lets `fold_letters` skip `unicodedata` (about 1.4 ms of the hook's start on every Chinese
    prompt). Proven here for every character of its ranges: NFC leaves it alone, NFKC too if it is a letter (the
    letter fold), it is no combining mark, and no canonical composition takes it as its second half, so no two of
    them, side by side, compose either."""
    import unicodedata

    from cairn.hot.tokens import _AS_IS, fold_letters, fold_width, read_as_is

    seconds = set()
    for cp in range(0x110000):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    jamo = {chr(cp) for cp in range(0x1100, 0x1200)}  # Hangul's compositions are worked out, not listed
    wrong = []
    for low, high in _AS_IS:
        for cp in range(ord(low), ord(high) + 1):
            ch = chr(cp)
            kept = unicodedata.normalize("NFC", ch) == ch and not (
                ch.isalpha() and unicodedata.normalize("NFKC", ch) != ch
            )
            if not kept or unicodedata.combining(ch) or ch in seconds or ch in jamo:
                wrong.append(f"U+{cp:04X}")
    assert wrong == []
    assert all(read_as_is(low) and read_as_is(high) for low, high in _AS_IS)  # each range's ends too (一 is U+4E00)
    prompt = "切换分支前先暂存未提交的修改——“为什么”？ひらがな・カタカナー 한국어 café"
    assert not read_as_is(prompt) and read_as_is(fold_width(prompt))  # full-width `？` is folded to ASCII first
    assert fold_letters(fold_width(prompt)) == fold_width(prompt)
    assert not read_as_is("cafe\u0301") and fold_letters("cafe\u0301") == "caf\u00e9"  # a separate accent: folded


def test_nfkc_skips_only_what_nfkc_leaves_alone() -> None:
    """`tokens.nfkc` skips `unicodedata` for text `read_as_is` that holds none of `_NFKC_OTHERS`. Proven here: of
    the characters read as is (no two of which compose, as the test above proves), NFKC changes exactly those."""
    import unicodedata

    from cairn.hot.tokens import _AS_IS, _NFKC_OTHERS, nfkc

    changed = {
        chr(cp)
        for low, high in _AS_IS
        for cp in range(ord(low), ord(high) + 1)
        if unicodedata.normalize("NFKC", chr(cp)) != chr(cp)
    }
    assert changed == _NFKC_OTHERS
    for text in (
        "运维，日志：“提交”——ひらがな 한국어 café（ｇｉｔ）",
        "ﾄﾞｯｶｰ",
        "提交…\u3000〸",
        "cafe\u0301",
        "Classy™ x²",
        "",
    ):
        assert nfkc(text) == unicodedata.normalize("NFKC", text), text
