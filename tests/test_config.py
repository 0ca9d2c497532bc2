"""cairn.toml: defaults for everything, typos and wrong types as one-line errors, the template spelling out defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.cards.authoring import template_dir
from cairn.config import Config, VaultConfigError, config_from_dict, parse_config, set_recall_keys, toml_loads
from cairn.hot.errors import InvalidConfig


def test_missing_or_empty_file_means_defaults() -> None:
    assert parse_config(None) == Config()
    assert parse_config("\n# nothing\n") == Config()


def test_template_spells_out_every_default() -> None:
    text = (template_dir() / "cairn.toml").read_text(encoding="utf-8")
    assert parse_config(text) == Config()
    for section, values in Config().to_dict().items():
        assert f"[{section}]" in text
        for key in values:
            assert f"\n{key} = " in text, f"{section}.{key} is not spelled out in the template's cairn.toml"


def test_values_are_typed_and_round_trip() -> None:
    config = parse_config('[recall]\nmax_cards = 2\nmin_lead = 1\n[lint]\nscopes = ["git", "ci"]\n')
    assert config.recall.max_cards == 2 and config.recall.min_lead == 1.0
    assert config.lint.scopes == ("git", "ci")
    assert config_from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[recal]\n", "unknown section [recal]"),
        ("max_cards = 2\n[recall]\n", "max_cards is outside every section; settings go under one of: recall, lint"),
        ("[recall]\nmax_card = 1\n", "unknown key 'max_card' in [recall]"),
        ("[recall]\nmax_cards = 'three'\n", "max_cards must be a whole number"),
        ("[recall]\nmin_lead = true\n", "min_lead must be a number"),
        ("[lint]\nscopes = 'git'\n", "scopes must be a list of strings"),
        ("[recall\n", "cairn.toml:"),
        ("recall = 3\n", "[recall] must be a table"),
        # bug fixed: 1e308 made every score and lead infinite (the card went in whatever the gates); k1 = 1e308
        # made recall abstain on every prompt
        ("[recall]\nweight_summary = 1e308\n", "weight_summary must be between 0 and 100, not 1e+308"),
        ("[recall]\nk1 = 1e308\n", "k1 must be between 0 and 100, not 1e+308"),
        ("[recall]\nunknown_weight = 2\n", "unknown_weight must be between 0 and 1, not 2"),
    ],
)
def test_mistakes_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidConfig, match=__import__("re").escape(message)):
        parse_config(text)


TOML = """\
# Team settings. Keep this comment.

[recall]
# gates
min_lead = 0.0    # score gate
min_coverage = 0.4
k1 = 1.2

[lint]
# lint comment
max_age_days = 200
"""


def test_set_recall_keys_keeps_comments_and_other_settings() -> None:
    text = set_recall_keys(TOML, {"min_lead": 0.35, "min_coverage": 0.6, "min_margin": 0.3})
    assert text == TOML.replace("min_lead = 0.0    # score gate", "min_lead = 0.35    # score gate").replace(
        "min_coverage = 0.4\nk1 = 1.2\n", "min_coverage = 0.6\nk1 = 1.2\nmin_margin = 0.3\n"
    )
    config = parse_config(text)
    assert (config.recall.min_lead, config.recall.min_coverage, config.recall.min_margin) == (0.35, 0.6, 0.3)
    assert config.lint.max_age_days == 200


def test_set_recall_keys_adds_the_table_when_missing() -> None:
    text = set_recall_keys("[lint]\nmax_age_days = 90\n", {"min_lead": 0.5})
    assert text == "[lint]\nmax_age_days = 90\n\n[recall]\nmin_lead = 0.5\n"
    assert set_recall_keys("", {"min_margin": 0.25}) == "[recall]\nmin_margin = 0.25\n"


def test_the_old_name_of_the_lead_gate_is_still_read() -> None:
    assert parse_config("[recall]\nmin_score = 0.4\n").recall.min_lead == 0.4
    assert config_from_dict({"recall": {"min_score": 0.3}}).recall.min_lead == 0.3  # an index from before 0.2


def test_the_old_and_new_names_of_one_setting_together_are_an_error() -> None:
    with pytest.raises(InvalidConfig, match="both min_score and min_lead"):
        parse_config("[recall]\nmin_score = 0.4\nmin_lead = 0.3\n")


@pytest.mark.parametrize(
    ("text", "line", "detail"),
    [
        ("# team\n[recall]\nmax_cards = \n", 3, "not valid TOML: invalid value at column 13"),
        ("[recall\n", 1, "not valid TOML: expected ']' at the end of a table declaration at column 8"),
        (
            "[recall]\nk1 = 1.2\n\n[lint]\n# age\nmax_age_days = 'a year'\n",
            6,
            "[lint] max_age_days must be a whole number",
        ),
        ("[recall]\nk1 = 1.2\n[recal]\n", 3, "unknown section [recal]; known: recall, lint, sanitize, hook"),
        ("[recall]\nmin_score = 0.1\nmin_lead = 0.2\n", 2, "[recall] has both min_score and min_lead"),
        ("[lint]\ndisable = 'x", 2, 'not valid TOML: expected "\'" at the end of the file'),
        ("recall.max_cards = 'x'\n", 0, "[recall] max_cards must be a whole number"),  # dotted keys: no line
    ],
)
def test_a_mistake_names_its_line(text: str, line: int, detail: str) -> None:
    with pytest.raises(VaultConfigError) as caught:
        parse_config(text)
    assert caught.value.line == line
    assert caught.value.detail.startswith(detail)
    where = f"cairn.toml:{line}" if line else "cairn.toml"
    assert str(caught.value) == f"{where}: {caught.value.detail}"  # the working tree's file: no commit to name


def test_python_3_10_reads_cairn_toml_with_a_tomli_that_words_errors_as_3_11_does() -> None:
    """Bug fixed: pyproject allowed tomli 2.0.0 on Python 3.10, whose errors differ from 3.11's tomllib (`Expected "]"`,
    `Can not declare`): with it, the line above said `expected "]"` and this file's tests failed. 2.0.1 is the release
    tomllib was copied from."""
    pyproject = toml_loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "tomli>=2.0.1; python_version < '3.11'" in pyproject["project"]["dependencies"]


def test_a_committed_mistake_names_the_commit_and_that_the_fix_must_be_committed() -> None:
    with pytest.raises(VaultConfigError) as caught:
        parse_config("[recall]\nmax_cards = 'three'\n", commit="0123456789abcdef")
    assert str(caught.value) == (
        "cairn.toml:2: [recall] max_cards must be a whole number (committed in 01234567: fix it and commit the fix; "
        "Cairn reads the commit, not the working tree)"
    )
    assert "\n" not in str(caught.value)
