"""A cases file's size limit: one bound, checked before the file is read, for .jsonl and .yaml alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.hot.errors import InvalidCases
from cairn.quality.evaluate import MAX_CASES_BYTES, load_cases


@pytest.mark.parametrize("suffix", [".jsonl", ".yaml"])
def test_a_cases_file_over_the_limit_is_refused_unread(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"cases{suffix}"
    with open(path, "wb") as handle:
        handle.truncate(MAX_CASES_BYTES + 1)  # sparse: nothing is written, and nothing must be read
    with pytest.raises(InvalidCases, match="larger than 32 MiB"):
        load_cases(path)
