"""cairn.toml: defaults for everything, typos and wrong types as one-line errors, the template spelling out defaults."""

from __future__ import annotations

import pytest

from cairn.cards.authoring import template_dir
from cairn.config import Config, config_from_dict, parse_config
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
    config = parse_config('[recall]\nmax_cards = 2\nmin_score = 1\n[lint]\nscopes = ["git", "ci"]\n')
    assert config.recall.max_cards == 2 and config.recall.min_score == 1.0
    assert config.lint.scopes == ("git", "ci")
    assert config_from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[recal]\n", "unknown section [recal]"),
        ("[recall]\nmax_card = 1\n", "unknown key 'max_card' in [recall]"),
        ("[recall]\nmax_cards = 'three'\n", "max_cards must be a whole number"),
        ("[recall]\nmin_score = true\n", "min_score must be a number"),
        ("[lint]\nscopes = 'git'\n", "scopes must be a list of strings"),
        ("[recall\n", "cairn.toml:"),
        ("recall = 3\n", "[recall] must be a table"),
    ],
)
def test_mistakes_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidConfig, match=__import__("re").escape(message)):
        parse_config(text)
