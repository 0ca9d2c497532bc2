"""Hostile ids, paths and files for every command that takes one: a clean refusal, never a file from outside the vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.hostile import ESC, HOSTILE, assert_clean_exit
from helpers.vaults import VaultRepo, card_text, make_vault

SECRET = "SECRET-OUTSIDE-THE-VAULT"

BAD_IDS = [
    "../outside",
    "../../outside.md",
    "/etc/passwd",
    "cards/../../outside.md",
    "git/../../../outside",
    "git/./x",
    "git//x",
    "..\\outside",
    "C:/outside",
    "a\x01b",
    "a\x1b[31mb",
    "x" * 10_000,
    "",
    " ",
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A valid card file outside the vault, which no command may print."""
    path = tmp_path / "outside.md"
    path.write_text(card_text("Outside", SECRET, body=SECRET))
    return path


@pytest.mark.parametrize("worktree", (False, True))
@pytest.mark.parametrize("card_id", BAD_IDS, ids=range(len(BAD_IDS)))
def test_show_refuses_traversal(vault_repo: VaultRepo, outside: Path, card_id: str, worktree: bool) -> None:
    make_vault(vault_repo)
    done = vault_repo.cairn("show", *(["--worktree"] if worktree else []), "--", card_id)
    assert_clean_exit(done, 1)
    assert SECRET not in done.stdout + done.stderr
    assert "is not a card id" in done.stderr
    assert len(done.stderr) < 600  # a 10,000-character id is not echoed whole


def test_show_worktree_refuses_a_symlink_out(vault_repo: VaultRepo, outside: Path) -> None:
    make_vault(vault_repo)
    (vault_repo.root / "cards" / "git" / "leak.md").symlink_to(outside)
    done = vault_repo.cairn("show", "--worktree", "git/leak")
    assert_clean_exit(done, 1)
    assert SECRET not in done.stdout + done.stderr
    assert "symlink" in done.stderr


@pytest.mark.parametrize("card_id", ["../../evil", "/tmp/evil", "a\x1bb", "git/" + "x" * 300, "git/./x"])
def test_add_refuses_bad_ids(vault_repo: VaultRepo, card_id: str, tmp_path: Path) -> None:
    make_vault(vault_repo)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = vault_repo.cairn("add", "--name", "Evil", "--summary", "s", "--id", card_id)
    assert_clean_exit(done, 1)
    assert "is not a card id" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert vault_repo.git("status", "--porcelain") == ""


def test_add_and_import_refuse_a_symlinked_topic_folder(vault_repo: VaultRepo, outside: Path, tmp_path: Path) -> None:
    """Bug fixed: `add --id out/new/x` with cards/out -> elsewhere created elsewhere/new/x.md."""
    make_vault(vault_repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (vault_repo.root / "cards" / "out").symlink_to(elsewhere)
    for card_id in ("out/new/x", "out/y"):
        done = vault_repo.cairn("add", "--name", "Sneaky " + card_id, "--summary", "s", "--id", card_id)
        assert_clean_exit(done, 1)
        assert "outside the vault's cards/ folder" in done.stderr
    done = vault_repo.cairn("import", str(outside), "--topic", "out/deep")
    assert_clean_exit(done, 1)
    assert "outside cards/" in done.stderr
    assert list(elsewhere.rglob("*")) == []


def test_lint_refuses_files_outside_the_vault(vault_repo: VaultRepo, outside: Path) -> None:
    make_vault(vault_repo)
    for given in (str(outside), "../outside.md", "/etc/passwd", str(HOSTILE / "binary.bin")):
        done = vault_repo.cairn("lint", "--vault", str(vault_repo.root), given)
        assert_clean_exit(done, 1)
        assert SECRET not in done.stdout + done.stderr
        assert "root:" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "name", ["binary.bin", "latin1.md", "cases-nested.jsonl", "bench-nested.json", "escape-card.md"]
)
def test_import_survives_hostile_sources(vault_repo: VaultRepo, name: str) -> None:
    make_vault(vault_repo)
    done = vault_repo.cairn("import", str(HOSTILE / name), "--dry-run")
    assert_clean_exit(done, 0, 1)
    assert vault_repo.git("status", "--porcelain") == ""


@pytest.mark.parametrize("topic", ["../../x", "/abs", "a/../../b"])
def test_import_topic_never_leaves_cards(vault_repo: VaultRepo, outside: Path, topic: str) -> None:
    """A topic that climbs out of cards/ or is absolute is a usage error (it was slugged, part by part, into a
    folder under cards/ nobody asked for); nothing is written, inside the vault or beside it."""
    make_vault(vault_repo)
    done = vault_repo.cairn("import", str(outside), "--topic", topic, "--json")
    assert_clean_exit(done, 2)
    assert "is not a folder under cards/" in done.stderr
    assert vault_repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert sorted(p.name for p in vault_repo.root.parent.glob("*.md")) == ["outside.md"]
    done = vault_repo.cairn("import", str(outside), "--topic", "ops/deep", "--json")  # a topic under cards/: written
    assert_clean_exit(done, 0, 1)
    for outcome in json.loads(done.stdout)["cards"]:
        assert outcome["path"].startswith("cards/ops/deep/")
        assert (vault_repo.root / outcome["path"]).resolve().is_relative_to(vault_repo.root / "cards")


def test_sanitize_out_refusals(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    a_file = tmp_path / "a-file"
    a_file.write_text("keep")
    for out, says, code in (
        (vault_repo.root / "cards", "inside the vault", 1),
        (vault_repo.root, "inside the vault", 1),
        (a_file, "not a folder", 1),
        (Path("/dev/null"), "'/dev/null' is a device, not a folder", 2),  # a usage error, as for every folder option
    ):
        done = vault_repo.cairn("sanitize", "--out", str(out))
        assert_clean_exit(done, code)
        assert says in done.stderr
    assert a_file.read_text() == "keep"
    assert vault_repo.git("status", "--porcelain") == ""


CASES = {
    "binary.bin": "not UTF-8",
    "cases-wrong-shape.yaml": "'query' must be non-empty text",
    "cases-not-a-list.yaml": "a list of cases",
    "cases-bad-yaml.yaml": "not valid YAML",
    "cases-alias-bomb.yaml": "not valid YAML",
    "cases-python-tag.yaml": "not valid YAML",
    "cases-truncated.jsonl": ":2: not JSON",
    "cases-wrong-types.jsonl": "'query' must be non-empty text",
    "cases-expect-object.jsonl": "'expect' must be a list",
    "cases-not-objects.jsonl": "a case is a mapping",
    "cases-nested.jsonl": "nested too deeply",
    "missing.jsonl": "no such cases file",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eval_refuses_bad_cases_files(vault_repo: VaultRepo, name: str) -> None:
    """Bug fixed: a deeply nested JSONL line was a RecursionError traceback."""
    make_vault(vault_repo)
    done = vault_repo.cairn("eval", "--cases", str(HOSTILE / name))
    assert_clean_exit(done, 1)
    assert done.stderr.startswith("Error: ") and CASES[name] in done.stderr


def test_eval_names_a_device_and_refuses_a_slice_called_all(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `--cases /dev/stdin` (or /dev/null) said "no such cases file" of a file that exists, and a slice
    named `all` printed a second `all` row beside the row of every case."""
    make_vault(vault_repo)
    done = vault_repo.cairn("eval", "--cases", "/dev/null")
    assert_clean_exit(done, 1)
    assert done.stderr == (
        "Error: /dev/null: not a regular file; save the cases to a .jsonl or .yaml file and name that\n"
    )
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "query": "rebase", "expect": [], "slice": "All"}\n', encoding="utf-8")
    done = vault_repo.cairn("eval", "--cases", str(cases))
    assert_clean_exit(done, 1)
    assert done.stderr == f"Error: {cases}:1: the slice 'All' names every case in the tables; pick another name\n"


BENCH = {
    "binary.bin": "not UTF-8",
    "bench-truncated.json": "not JSON",
    "bench-nested.json": "nested too deeply",
    "bench-wrong-shape.json": "is a JSON list",
    "bench-wrong-items.json": "is not in the",
    "bench-longmemeval-mismatched.json": "is not in the",
    "bench-locomo-wrong-types.json": "is not in the",
}


@pytest.mark.parametrize("suite", ("locomo", "longmemeval"))
@pytest.mark.parametrize("name", sorted(BENCH))
def test_bench_refuses_bad_files(vault_repo: VaultRepo, suite: str, name: str) -> None:
    """Bugs fixed: a binary file was a UnicodeDecodeError and a deeply nested one a RecursionError traceback."""
    done = vault_repo.cairn("bench", suite, str(HOSTILE / name))
    assert_clean_exit(done, 1)
    assert done.stderr.startswith("Error: ") and BENCH[name] in done.stderr


def test_bench_refuses_a_missing_file(vault_repo: VaultRepo) -> None:
    done = vault_repo.cairn("bench", "locomo", str(HOSTILE / "missing.json"))
    assert_clean_exit(done, 2)


def test_install_project_refusals(vault_repo: VaultRepo, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("keep")
    done = vault_repo.cairn("install", "claude-code", "--project", str(a_file))
    assert_clean_exit(done, 2)
    served = {"CAIRN_VAULT": str(vault_repo.root)}  # a vault to serve, so install gets as far as the folder
    done = vault_repo.cairn("install", "claude-code", "--project", str(a_file / "below"), env=served)
    assert_clean_exit(done, 2)  # a project folder that does not exist is refused before anything is made
    assert f"Directory '{a_file / 'below'}' does not exist" in done.stderr
    assert a_file.read_text() == "keep"


def test_card_file_names_that_cannot_be_ids_are_findings(vault_repo: VaultRepo) -> None:
    """Bug fixed: a committed file name with undecodable bytes crashed `cairn index` (UnicodeEncodeError)."""
    vault_repo.write("git/ok", "Rebase lesson", "git pull --rebase after a force-push drops local commits")
    cards = bytes(vault_repo.root / "cards" / "git")
    for raw in (b"latin\xff\xfe.md", b"esc\x1b[31mred\x1b]0;pwned\x07.md", b"new\nline.md"):
        with open(cards + b"/" + raw, "wb") as handle:
            handle.write(card_text("Other " + raw.hex(), "another summary about docker layers").encode())
    vault_repo.commit()
    for args in (("index",), ("lint",), ("audit",), ("show", "git/ok"), ("sanitize", "--out", "../sanitized")):
        done = vault_repo.cairn(*args)
        assert_clean_exit(done)
        assert "\nline.md" not in done.stdout + done.stderr
    indexed = vault_repo.cairn("index", "--json")
    problems = json.loads(indexed.stdout)["problems"]
    assert sorted(p["rule"] for p in problems) == ["file-name"] * 3
    assert vault_repo.cairn("audit").returncode == 0
    lint = vault_repo.cairn("lint")
    assert lint.stdout.count("file-name") == 3 and lint.stdout.count("\n") >= 3
    assert all(line.startswith("cards/") for line in lint.stdout.splitlines())
    assert ESC not in vault_repo.cairn("lint", "--json").stdout


def test_mcp_show_and_add_draft_refuse_bad_ids(vault_repo: VaultRepo) -> None:
    pytest.importorskip("mcp")
    from helpers.mcpclient import drive_serve, is_error

    make_vault(vault_repo)
    head = vault_repo.git("rev-parse", "HEAD")
    calls = [("show", {"id": bad}) for bad in ("../outside", "/etc/passwd", "a\x00b", "x" * 10_000)]
    calls += [
        ("add_draft", {"name": "Evil", "summary": "s", "id": "../../evil"}),
        ("add_draft", {"name": "Evil", "summary": "s", "branch": "../../evil"}),
        ("add_draft", {"name": "Evil", "summary": "s", "branch": "main"}),
        ("add_draft", {"name": "Evil", "summary": "s", "branch": "-x"}),
    ]
    _, _, results = drive_serve(vault_repo.root, calls)
    assert all(is_error(r) for r in results)
    assert vault_repo.git("rev-parse", "HEAD") == head
    assert vault_repo.git("branch", "--list").split() == ["*", "main"]
