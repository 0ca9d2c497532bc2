"""Bad input to the user-facing commands, run as the installed `cairn` on real git vaults: each mistake is one line
`Error: ...` (or one finding) that says what to do, exit 1, and nothing is written or served from it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers.vaults import REBASE_ID, VaultRepo, cairn_executable, make_vault, run_cairn

SUMMARY = "Copy the lockfile and install dependencies before copying the source, so Docker keeps the layer."
BODY = "The image rebuilt every dependency on each commit until the COPY of the source moved below the install."


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one `Error: ...` line a failed command printed (and nothing that looks like a traceback)."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


# -- cairn.toml: numbers out of their range ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "detail"),
    [
        ("[recall]\nmin_lead = nan\n", "[recall] min_lead must be a finite number, not nan"),
        ("[recall]\nmin_coverage = inf\n", "[recall] min_coverage must be a finite number, not inf"),
        ("[recall]\nmin_margin = -0.5\n", "[recall] min_margin must be between 0 and 1, not -0.5"),
        ("[recall]\nmax_cards = 0\n", "[recall] max_cards must be 1 or more, not 0"),
        ("[recall]\nk1 = -1\n", "[recall] k1 must be between 0 and 100, not -1"),
        ("[lint]\nmax_age_days = 99999999999999\n", "[lint] max_age_days must be between 1 and 36500"),
        ("[hook]\nsession_ttl_days = 0\n", "[hook] session_ttl_days must be between 1 and 36500, not 0"),
    ],
)
def test_a_setting_out_of_its_range_is_refused_with_its_line(vault_repo: VaultRepo, setting: str, detail: str) -> None:
    make_vault(vault_repo)
    vault_repo.write_raw("cairn.toml", setting)
    commit = vault_repo.commit("A setting out of range")

    line = _one_error_line(vault_repo.cairn("index"))
    assert line.startswith(f"Error: cairn.toml:2: {detail}")
    assert f"(committed in {commit[:8]}: fix it and commit the fix" in line

    linted = vault_repo.cairn("lint")
    assert linted.returncode == 1 and "unexpected" not in linted.stderr, linted.stderr
    assert linted.stdout.splitlines()[0].startswith(f"cairn.toml:2: config-invalid {detail}")


def test_a_huge_max_age_days_is_a_finding_not_a_crash(vault_repo: VaultRepo) -> None:
    """It used to reach the stale-card rule's date arithmetic: `Error: unexpected OverflowError ... (a bug)`."""
    make_vault(vault_repo)
    vault_repo.write_raw("cairn.toml", "[lint]\nmax_age_days = 99999999999999\n")
    done = vault_repo.cairn("lint")
    assert done.returncode == 1
    assert "OverflowError" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[0] == (
        "cairn.toml:2: config-invalid [lint] max_age_days must be between 1 and 36500, not 99999999999999; "
        "lint used the defaults, but a vault whose cairn.toml is invalid serves no card until it is fixed"
    )


def test_review_fails_a_range_that_sets_the_gates_to_nan(vault_repo: VaultRepo) -> None:
    """A NaN gate passes every card, and compares as neither lower nor higher, so the weaker-gate check let it by."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "nan-gates")
    vault_repo.write_raw("cairn.toml", "[recall]\nmin_lead = nan\nmin_coverage = nan\nmin_margin = nan\n")
    vault_repo.commit("Gates")
    done = vault_repo.cairn("review", "main..nan-gates")
    assert done.returncode == 1, done.stdout
    assert "config-invalid" in done.stdout and "min_lead must be a finite number" in done.stdout


def test_settings_in_range_still_read(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.write_raw(
        "cairn.toml", "[recall]\nmin_lead = 0\nmin_margin = 1\nmax_cards = 1\n[lint]\nmax_age_days = 1\n"
    )
    vault_repo.commit("Edge values")
    done = vault_repo.cairn("index")
    assert done.returncode == 0, done.stderr


# -- eval cases --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "- id: a\n  query: how do I order docker layers\n  expected: [docker/layer-cache-order]\n",
            "cases.yaml: case 1: unknown key 'expected' in a case; did you mean 'expect'?",
        ),
        (
            "- id: [1, 2]\n  query: how do I order docker layers\n",
            "cases.yaml: case 1: 'id' must be text (or leave it out: the case is then case-1)",
        ),
        (
            "- id: a\n  query: one\n- id: b\n  query: two\n- id: a\n  query: three\n",
            "cases.yaml: case 3: case id 'a' appears twice (first at case 1); give each case its own id",
        ),
        ("", "cases.yaml: no cases to evaluate; add positive and negative cases (id, query, expect)"),
    ],
)
def test_eval_refuses_a_cases_file_that_would_measure_the_wrong_thing(
    vault_repo: VaultRepo, tmp_path: Path, text: str, message: str
) -> None:
    """`expected:` for `expect:` used to turn a positive case into a negative one, silently; an empty file gave
    all-zero figures, "No failing cases" and exit 0."""
    make_vault(vault_repo)
    cases = tmp_path / "cases.yaml"
    cases.write_text(text, encoding="utf-8")
    line = _one_error_line(vault_repo.cairn("eval", "--cases", str(cases)))
    assert line == f"Error: {tmp_path}/{message}"


def test_a_case_may_carry_other_keys(tmp_path: Path) -> None:
    """A suite may note a case's language or source; only a key spelt like a case key is refused."""
    from cairn.quality.evaluate import load_cases

    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "query": "x", "expect": ["b/c"], "lang": "zh", "note": "from a ticket"}\n')
    [case] = load_cases(cases)
    assert (case.id, case.query, case.expect) == ("a", "x", ("b/c",))


def test_a_duplicate_id_in_jsonl_names_both_lines(vault_repo: VaultRepo, tmp_path: Path) -> None:
    make_vault(vault_repo)
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "query": "x"}\n\n{"id": "a", "query": "y"}\n', encoding="utf-8")
    line = _one_error_line(vault_repo.cairn("calibrate", "--cases", str(cases)))
    assert line == f"Error: {cases}:3: case id 'a' appears twice (first at line 1); give each case its own id"


# -- cairn add and cairn import: a file where a folder must be -----------------------------------------------------


def test_add_under_a_file_says_which_file_is_in_the_way(vault_repo: VaultRepo) -> None:
    """It used to fail in the write with `Error: File exists (/.../cards/docker)`."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write_raw("cards/docker", "not a folder\n")
    done = vault_repo.cairn(
        "add", "--id", "docker/layers", "--name", "Order Docker layers", "--summary", SUMMARY, "--body", BODY
    )
    assert _one_error_line(done) == (
        "Error: cards/docker is a file, not a folder, so cards/docker/layers.md cannot be written; choose another --id"
    )
    assert (vault_repo.root / "cards" / "docker").read_text() == "not a folder\n"


def test_a_file_where_the_state_folder_goes_is_named_in_the_error(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn recall --session` with a file at $CAIRN_STATE_DIR said `Not a directory (.../state/sessions): a file
    stands where a folder should be; move it away`, naming a path that is not there: the file to move was not said."""
    make_vault(vault_repo)
    state = tmp_path / "state-is-a-file"
    state.write_text("not a folder\n")
    done = vault_repo.cairn(
        "recall", "git pull --rebase after a force-push", "--session", "s1", env={"CAIRN_STATE_DIR": str(state)}
    )
    assert _one_error_line(done) == (
        f"Error: Not a directory ({state}/sessions): a file stands where a folder should be; move it away ({state} is"
        " a file)"
    )


def _two_notes(tmp_path: Path) -> Path:
    """A notes folder: docker/layers.md (imported under cards/docker/) and loose.md (under cards/imported/)."""
    notes = tmp_path / "notes"
    (notes / "docker").mkdir(parents=True)
    (notes / "docker" / "layers.md").write_text(f"# Order Docker layers\n\n{SUMMARY}\n\n{BODY}\n", encoding="utf-8")
    (notes / "loose.md").write_text(
        "# Cron runs in the host's time zone\n\nA cron line runs in the scheduler's time zone, so a job set for 02:30 "
        "runs twice or never on the day clocks change.\n\nWe lost a nightly backup that way.\n",
        encoding="utf-8",
    )
    return notes


def test_import_under_a_file_skips_those_cards_and_writes_the_others(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """It used to stop halfway with `Error: File exists (/.../cards/imported)`, the cards before it written."""
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write_raw("cards/imported", "not a folder\n")
    notes = _two_notes(tmp_path)
    done = vault_repo.cairn("import", str(notes))
    assert done.returncode == 1
    assert "File exists" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert (
        f"{notes}/loose.md: skipped (invalid): cards/imported is a file, not a folder, so cards/imported/loose.md "
        "cannot be written; choose another --topic"
    ) in done.stderr.splitlines()
    assert (vault_repo.root / "cards" / "docker" / "layers.md").is_file()
    assert (vault_repo.root / "cards" / "imported").read_text() == "not a folder\n"


def test_add_and_import_under_a_broken_symlink_say_where_it_points(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cards/docker -> gone` (a folder moved away): add said `Error: File exists (/.../cards/docker)`, and import
    stopped there with the same line, the cards before it written and no report."""
    vault_repo.write_raw("cairn.toml", "")
    (vault_repo.root / "cards").mkdir(exist_ok=True)
    (vault_repo.root / "cards" / "docker").symlink_to("gone")
    done = vault_repo.cairn(
        "add", "--id", "docker/layers", "--name", "Order Docker layers", "--summary", SUMMARY, "--body", BODY
    )
    assert _one_error_line(done) == (
        "Error: cards/docker is a symlink to gone, which does not exist, so cards/docker/layers.md cannot be "
        "written; choose another --id"
    )
    notes = _two_notes(tmp_path)
    imported = vault_repo.cairn("import", str(notes))
    assert imported.returncode == 1 and "File exists" not in imported.stderr, imported.stderr
    assert (
        f"{notes}/docker/layers.md: skipped (invalid): cards/docker is a symlink to gone, which does not exist, so "
        "cards/docker/layers.md cannot be written; choose another --topic"
    ) in imported.stderr.splitlines()
    assert (vault_repo.root / "cards" / "imported" / "loose.md").is_file()
    assert (vault_repo.root / "cards" / "docker").is_symlink() and not (vault_repo.root / "gone").exists()


@contextmanager
def _unwritable(folder: Path) -> Iterator[None]:
    """`folder` made unwritable for this process: mode 555, or for root (whom modes do not stop) immutable."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
    elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("running as root where `chattr +i` is not available")
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_add_and_import_into_a_folder_that_cannot_be_written(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A read-only cards/imported: add named its temp file (`Permission denied (.../.x.md.k2j1.tmp)`), and import
    stopped at the first card there, with no report of the cards it had written before."""
    vault_repo.write_raw("cairn.toml", "")
    locked = vault_repo.root / "cards" / "imported"
    locked.mkdir(parents=True)
    notes = tmp_path / "notes"
    (notes / "docker").mkdir(parents=True)
    (notes / "loose.md").write_text(
        "# Cron runs in the host's time zone\n\nA cron line runs in the scheduler's time zone, so a job set for 02:30 "
        "runs twice or never on the day clocks change.\n\nWe lost a nightly backup that way.\n",
        encoding="utf-8",
    )
    (notes / "docker" / "layers.md").write_text(f"# Order Docker layers\n\n{SUMMARY}\n\n{BODY}\n", encoding="utf-8")
    with _unwritable(locked):
        added = vault_repo.cairn(
            "add", "--id", "imported/layers", "--name", "Order Docker layers", "--summary", SUMMARY, "--body", BODY
        )
        imported = vault_repo.cairn("import", str(notes))
    line = _one_error_line(added)
    assert line.startswith("Error: cards/imported/layers.md could not be written: ") and ".tmp" not in line, line
    assert line.endswith(" in cards/imported/; check that you can write there (nothing was written)"), line
    assert imported.returncode == 1, imported.stderr
    [skipped] = [entry for entry in imported.stderr.splitlines() if "loose.md" in entry]
    assert skipped.startswith(f"{notes}/loose.md: skipped (invalid): cards/imported/loose.md could not be written: ")
    assert "wrote cards/docker/layers.md" in imported.stdout and "skipped 1." in imported.stdout
    assert sorted(p.name for p in (vault_repo.root / "cards").rglob("*.md")) == ["layers.md"]


# -- cairn import: what is not a notes file -------------------------------------------------------------------------


def test_import_skips_a_huge_file_without_reading_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A 50 MB CLAUDE.md used to run for minutes (every bullet planned and linted)."""
    vault_repo.write_raw("cairn.toml", "")
    source = tmp_path / "CLAUDE.md"
    bullet = "- the cache breaks silently because the key is wrong\n"
    source.write_text("# Gotchas\n\n" + bullet * (5 * 1024 * 1024 // len(bullet)), encoding="utf-8")
    done = vault_repo.cairn("import", str(source), "--dry-run")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{source}: skipped (invalid): the file is 5.0 MiB; Cairn imports files under 4 MiB; split it"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_import_of_a_named_pipe_is_an_error_not_an_empty_success(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """It used to print `Would import 0 card(s)` and exit 0."""
    vault_repo.write_raw("cairn.toml", "")
    pipe = tmp_path / "notes.md"
    os.mkfifo(pipe)
    line = _one_error_line(vault_repo.cairn("import", str(pipe), "--dry-run"))
    assert line == f"Error: {pipe} is not a regular file or a folder; give a Markdown file or a folder of them"


# -- cairn vault list -----------------------------------------------------------------------------------------------


def test_vault_list_shows_a_missing_folder_without_a_python_none(tmp_path: Path) -> None:
    """A configured vault whose folder is gone, with no `ref` configured, was listed as `None (no commit)`."""
    config = tmp_path / "config.toml"
    config.write_text(f'[[vaults]]\nname = "gone"\npath = "{tmp_path / "gone"}"\n', encoding="utf-8")
    done = subprocess.run(
        [cairn_executable(), "vault", "list"],
        cwd=tmp_path,
        env={**os.environ, "CAIRN_CONFIG": str(config)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"gone  {tmp_path / 'gone'}  - (no commit)  (missing folder)"]


def test_a_cards_folder_that_is_a_symlink_out_of_the_vault_is_neither_linted_through_nor_read(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """`cards -> /elsewhere`: lint said "0 errors" and `show --worktree` printed a card from outside the vault."""
    make_vault(vault_repo)
    outside = tmp_path / "elsewhere"
    (outside / "git").mkdir(parents=True)
    (outside / "git" / "lesson.md").write_bytes((vault_repo.root / "cards" / f"{REBASE_ID}.md").read_bytes())
    cards = vault_repo.root / "cards"
    subprocess.run(["rm", "-rf", str(cards)], check=True)
    cards.symlink_to(outside, target_is_directory=True)
    lint = vault_repo.cairn("lint")
    assert lint.returncode == 1 and "cards:0: file-symlink" in lint.stdout, lint.stdout + lint.stderr
    # it said "a card must be a regular file, not a symlink", of a folder no card file is: now what the index says
    assert "cards:0: file-symlink cards/ must be a folder in the commit, not a symlink or a file" in lint.stdout
    line = _one_error_line(vault_repo.cairn("show", "--worktree", "git/lesson"))
    assert line.startswith("Error: cards/git/lesson.md:0: path-outside-cards")
    # `cairn index --worktree` said only "Indexed 0 cards": it names why now, as the commit's index does
    indexed = vault_repo.cairn("index", "--worktree")
    assert indexed.returncode == 0 and indexed.stdout.startswith("Indexed 0 cards at working tree"), indexed.stdout
    assert indexed.stderr.splitlines()[0] == (
        "cards:0: file-symlink cards/ must be a folder, not a symlink or a file; no card is read through it  "
        "(left out of the index)"
    ), indexed.stderr


def test_lint_does_not_misstate_the_size_of_a_card_it_read_only_the_start_of(vault_repo: VaultRepo) -> None:
    """Lint reads at most 1 MiB + 1 byte of a card; a 5 MiB card was reported as "the file is 1.0 MiB"."""
    make_vault(vault_repo)
    vault_repo.write_raw("cards/git/huge.md", b"---\nname: x\n---\n" + b"y" * (5 * 1048576))
    done = vault_repo.cairn("lint", "cards/git/huge.md")
    assert done.returncode == 1
    assert "cards/git/huge.md:0: file-size the file is over 1 MiB; a card must be under 1 MiB" in done.stdout


def test_a_skipped_file_name_reaches_the_terminal_cleaned(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A file under another project's `cards/` is skipped with its name on stderr in one line, as every line lint
    prints: a newline in the name could print a line of its own ("cairn lint: 0 errors")."""
    make_vault(vault_repo)
    other = tmp_path / "web" / "cards"
    other.mkdir(parents=True)
    name = "x\ncairn lint: 0 errors\x1b[31m.md"
    (other / name).write_text("# not a card\n")
    done = subprocess.run(
        [cairn_executable(), "lint", str(other / name)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    skipped, summary = done.stderr.splitlines()  # the note in one line, then lint's own summary
    assert skipped.endswith("x?cairn lint: 0 errors?.md: skipped, in no Cairn vault (no cairn.toml above it)")
    assert summary.startswith("cairn lint: 0 errors, 0 warnings in 0 file(s)") and "\x1b" not in done.stderr


# -- errors quote what the user gave: still one line ---------------------------------------------------------------


def test_an_error_quoting_a_name_with_a_line_break_stays_one_line(tmp_path: Path) -> None:
    """Bug fixed: errors went to the terminal through `clean`, which keeps line breaks, so a vault path holding
    one printed a forged second `Error:` line (`cairn list --vault $'/x\\nError: forged'`)."""
    done = subprocess.run(
        [cairn_executable(), "list", "--vault", str(tmp_path / "nope\nError: forged")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    line = _one_error_line(done)
    assert "is not a folder" in line


def test_calibrate_write_on_a_config_that_is_not_utf8_says_so(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn calibrate --write` read a non-UTF-8 cairn.toml without a check and printed
    `unexpected UnicodeDecodeError ... (a bug in Cairn)`."""
    make_vault(vault_repo)
    config = vault_repo.root / "cairn.toml"
    config.write_bytes(config.read_bytes() + b"# caf\xe9\n")
    cases = vault_repo.write_raw(
        "evals/cases.yaml",
        f"- {{id: p1, query: 'git pull --rebase dropped my commits after a force-push', expect: [{REBASE_ID}]}}\n"
        "- {id: n1, query: 'how do I center a div with flexbox', expect: []}\n",
    )
    before = config.read_bytes()
    done = vault_repo.cairn("calibrate", "--cases", str(cases), "--write")
    line = _one_error_line(done)
    assert "is not UTF-8" in line and "nothing was written" in line
    assert config.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("index", "--wait", "nan"), "--wait"),
        (("index", "--wait", "inf"), "--wait"),
        (("sync", "--timeout", "nan"), "--timeout"),
        (("sync", "--timeout", "inf"), "--timeout"),
        (("calibrate", "--cases", "evals/cases.yaml", "--target-fir", "nan"), "--target-fir"),
    ],
)
def test_a_number_option_refuses_nan_and_infinity(vault_repo: VaultRepo, args: tuple[str, ...], option: str) -> None:
    """nan passed every FloatRange (no comparison with it is true) and infinity every lower bound: `index --wait nan`
    and `sync --timeout inf` ran with a wait no clock reaches. A usage error now, naming the option."""
    make_vault(vault_repo)
    done = vault_repo.cairn(*args)
    assert (done.returncode, done.stdout) == (2, "")
    bounded = args[-1] == "inf" and option in ("--wait", "--timeout")  # these options stop at a day
    said = f"{args[-1]} is not in the range" if bounded else f"'{args[-1]}' is not a finite number; give one from"
    assert f"Error: Invalid value for '{option}': {said}" in done.stderr


@pytest.mark.parametrize(
    ("args", "option"), [(("sync", "--timeout", "1e8"), "--timeout"), (("index", "--wait", "1e300"), "--wait")]
)
def test_a_wait_past_a_day_is_a_usage_error(vault_repo: VaultRepo, args: tuple[str, ...], option: str) -> None:
    """Bug fixed: `sync --timeout 1e8` said "unexpected OverflowError ... (a bug in Cairn)"."""
    make_vault(vault_repo)
    done = vault_repo.cairn(*args)
    assert (done.returncode, done.stdout) == (2, "")
    assert f"Error: Invalid value for '{option}': {float(args[-1])!r} is not in the range" in done.stderr
    assert done.stderr.rstrip().endswith(
        "is not in the range " + ("1" if option == "--timeout" else "0") + "<=x<=86400."
    )


@pytest.mark.parametrize(
    "args",
    [("recall", "--vault", "", "rebase"), ("install", "claude-code", "--user", "--vault="), ("list", "--vault=")],
)
def test_an_empty_vault_option_is_a_usage_error(vault_repo: VaultRepo, args: tuple[str, ...]) -> None:
    """Bug fixed: `--vault "$TEAM"` with TEAM unset passed `--vault ""`, read as no option: recall asked every
    configured vault, and install wrote a hook that serves them all instead of the one meant."""
    make_vault(vault_repo)
    done = vault_repo.cairn(*args)
    assert done.returncode == 2, done.stderr
    assert (
        "Invalid value for '--vault': is empty (a shell variable that is not set?); name a vault or leave the option out"
        in done.stderr
    )


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("vault", "add", ""), "PATH"),
        (("vault", "add", ".", "--project="), "--project"),
        (("init", ""), "PATH"),
        (("demo", "--keep="), "--keep"),
        (("sanitize", "--out=", "--vault", "VAULT"), "--out"),
    ],
)
def test_an_empty_folder_argument_is_a_usage_error(
    vault_repo: VaultRepo, args: tuple[str, ...], name: str, tmp_path: Path
) -> None:
    """Bug fixed: `cairn vault add "$TEAM_DIR"` with TEAM_DIR unset registered the current folder's vault, an empty
    `--project` limited the vault to the current folder, `cairn init ""` and `cairn demo --keep ""` made a vault in
    the current folder, and `cairn sanitize --out ""` wrote the copy there: click reads "" as the current folder.
    Each is now a usage error, and nothing is written."""
    make_vault(vault_repo)
    (tmp_path / "empty").mkdir()
    here = vault_repo.root if args[0] == "vault" else tmp_path / "empty"
    done = run_cairn(*(str(vault_repo.root) if arg == "VAULT" else arg for arg in args), cwd=here)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        f"Error: Invalid value for '{name}': is empty (a shell variable that is not set?); give the folder\n"
    )
    assert run_cairn("vault", "list", cwd=tmp_path).stdout.startswith("No vault is configured")
    assert not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (("doctor", "--cwd", "PIPE"), "--cwd"),
        (("vault", "add", "VAULT", "--project", "PIPE"), "--project"),
        (("vault", "add", "PIPE"), "PATH"),
        (("install", "claude-code", "--project", "/dev/null"), "--project"),
        (("list", "--vault", "PIPE"), "--vault"),
        (("init", "PIPE"), "PATH"),
        (("demo", "--keep", "PIPE"), "--keep"),
        (("sanitize", "--out", "PIPE", "--vault", "VAULT"), "--out"),
    ],
)
def test_a_fifo_or_device_given_as_a_folder_is_a_usage_error(
    vault_repo: VaultRepo, args: tuple[str, ...], name: str, tmp_path: Path
) -> None:
    """Bug fixed: click's Path refuses a regular file where a folder goes but let a FIFO or a device through:
    `cairn vault add --project PIPE` registered a project no agent can work in, `cairn doctor --cwd PIPE` checked it,
    and `cairn init PIPE` called it a file. Each is now a usage error naming what it is, and nothing is written."""
    make_vault(vault_repo)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    given = {"PIPE": str(pipe), "VAULT": str(vault_repo.root)}
    done = run_cairn(*(given.get(arg, arg) for arg in args), cwd=tmp_path)
    shown = "'/dev/null' is a device" if "/dev/null" in args else f"{str(pipe)!r} is a FIFO"
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(f"Error: Invalid value for '{name}': {shown}, not a folder\n")
    assert run_cairn("vault", "list", cwd=tmp_path).stdout.startswith("No vault is configured")


@pytest.mark.parametrize(
    "args", [("recall", "--vault", "URL", "rebase"), ("install", "claude-code", "--user", "--vault", "URL")]
)
def test_a_url_for_the_vault_option_is_a_usage_error(vault_repo: VaultRepo, args: tuple[str, ...]) -> None:
    """Bug fixed: `--vault https://github.com/team/lessons.git` said "is not a folder; create one with `cairn init
    https://...`", a command that refuses a URL (`cairn init` fetches nothing)."""
    make_vault(vault_repo)
    url = "https://github.com/team/lessons.git"
    done = vault_repo.cairn(*(url if arg == "URL" else arg for arg in args))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        f"Error: Invalid value for '--vault': {url!r} is a URL; Cairn reads local folders and fetches nothing: "
        f"get it first (`git clone {url} FOLDER`), then give that folder\n"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/team/lessons.git",
        "git@github.com:team/lessons.git",
        "ann@git.example.com:team/lessons.git",
        "git@github.com:lessons.git",
    ],
)
def test_a_url_in_cairn_vault_says_to_clone_it(vault_repo: VaultRepo, url: str) -> None:
    """Bug fixed: `CAIRN_VAULT=https://github.com/team/lessons.git` said "is not a folder; create one with `cairn init
    https://...`", a command that refuses a URL; it says to clone it, as `--vault URL` does. So does git's scp-like
    address, which was read as a list (its `:`), and still was for a user other than `git` (`ann@host:path`), or as
    a vault's name without a `/` (`git@host:lessons.git`), where `--vault` refused each as a URL."""
    make_vault(vault_repo)
    done = vault_repo.cairn("recall", "rebase", env={"CAIRN_VAULT": url})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: CAIRN_VAULT {url!r} is a URL; Cairn reads local folders and fetches nothing: get it first (`git clone "
        f"{url} FOLDER`), then give that folder\n"
    )


@pytest.mark.parametrize(
    ("args", "name", "kind"),
    [
        (("init", "https://github.com/team/lessons.git"), "PATH", "folder"),
        (("vault", "add", "git@github.com:team/lessons.git"), "PATH", "folder"),
        (("eval", "--cases", "https://example.com/cases.yaml", "--vault", "VAULT"), "--cases", "file"),
    ],
)
def test_a_url_for_a_folder_or_file_is_a_usage_error(
    vault_repo: VaultRepo, args: tuple[str, ...], name: str, kind: str, tmp_path: Path
) -> None:
    """Bug fixed: `cairn init https://github.com/team/lessons.git` made the folder `https:/github.com/...` and said
    "Created a vault" there, and `cairn vault add URL` said to run `cairn init` on that path: Cairn fetches nothing,
    so a URL is refused, with how to get it, and nothing is made."""
    make_vault(vault_repo)
    (tmp_path / "empty").mkdir()
    done = run_cairn(*(str(vault_repo.root) if arg == "VAULT" else arg for arg in args), cwd=tmp_path / "empty")
    assert (done.returncode, done.stdout) == (2, "")
    remote = next(arg for arg in args if "example.com" in arg or "github.com" in arg)
    fetch = f"git clone {remote} FOLDER" if kind == "folder" else "curl -fsSLo FILE URL"
    assert done.stderr.endswith(
        f"Error: Invalid value for '{name}': {remote!r} is a URL; Cairn reads local {kind}s and fetches nothing: "
        f"get it first (`{fetch}`), then give that {kind}\n"
    )
    assert run_cairn("vault", "list", cwd=tmp_path).stdout.startswith("No vault is configured")
    assert not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_an_empty_cases_file_is_a_usage_error(vault_repo: VaultRepo, command: str) -> None:
    """Bug fixed: `cairn eval --cases "$CASES"` with CASES unset said `.: not a regular file` (exit 1): click read ""
    as the current folder. It is a usage error naming the option, as an empty folder is."""
    make_vault(vault_repo)
    done = run_cairn(command, "--cases=", cwd=vault_repo.root)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        "Error: Invalid value for '--cases': is empty (a shell variable that is not set?); give the file\n"
    )


@pytest.mark.parametrize(
    ("command", "closed", "status", "said"),
    [
        ("lint", "2>&-", 0, "cards/"),  # printed its findings, then the summary to a stderr that was not there
        ("review HEAD~1..HEAD", "2>&-", 0, "Cairn review"),
        ("index", "2>&-", 0, "3 cards"),
        ("add", "<&-", 2, "give --name and --summary"),  # asked `isatty()` of a stdin that was not there
        ("init new-vault", "<&-", 0, "Created a vault"),
    ],
)
def test_a_closed_standard_stream_reads_as_an_empty_one(
    vault_repo: VaultRepo, command: str, closed: str, status: int, said: str
) -> None:
    """Bug fixed: a command started with stderr or stdin closed (`cairn lint 2>&-`, `cairn add <&-`, a job runner's
    bare descriptors) ended in `unexpected AttributeError: 'NoneType' object has no attribute 'isatty'` (Python
    leaves a closed stream None), `cairn init` after it had made the vault. They now read /dev/null there."""
    make_vault(vault_repo)
    vault_repo.write(REBASE_ID + "-2", "Another card", "A summary of another card for the range to review.")
    vault_repo.commit("another card")
    done = subprocess.run(
        ["sh", "-c", f"'{cairn_executable()}' {command} {closed}"],
        cwd=vault_repo.root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    shown = done.stdout + done.stderr
    assert done.returncode == status, shown
    assert "unexpected" not in shown and said in shown, shown


@pytest.mark.parametrize(
    "args",
    [("list",), ("recall", "git pull --rebase dropped my commits"), ("index",), ("init", "new-vault"), ("demo",)],
)
def test_a_path_without_git_is_one_line_saying_so(vault_repo: VaultRepo, tmp_path: Path, args: tuple[str, ...]) -> None:
    """Bug fixed: with no `git` on PATH (an IDE's or a job's bare PATH), gitpython failed its own import with a
    page of advice, so every command (and `cairn doctor`) ended in a traceback of 60 lines, or in `unexpected
    ImportError (a bug in Cairn)`."""
    make_vault(vault_repo)
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    done = vault_repo.cairn(*args, env={"PATH": str(bare)})
    assert _one_error_line(done) == (
        "Error: git was not found on PATH; install git, or add the folder that holds it to PATH, then run this again"
    )
    doctor = vault_repo.cairn("doctor", env={"PATH": str(bare)})
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert "FAIL git PATH: git was not found on PATH  -> (install git, or add its folder to PATH)" in doctor.stdout


def test_the_init_a_missing_vault_folder_suggests_can_be_pasted(tmp_path: Path) -> None:
    """Bug fixed: `--vault '/x/my lessons'` (not made yet) said to run `cairn init /x/my lessons`, which the shell
    splits in two: init then refused its second argument."""
    missing = tmp_path / "my lessons"
    line = _one_error_line(run_cairn("list", "--vault", str(missing), cwd=tmp_path))
    assert line.endswith(f"create one with `cairn init '{missing}'`"), line


def test_the_init_a_vault_given_by_a_home_path_suggests_makes_that_vault(tmp_path: Path) -> None:
    """An MCP client's server entry runs `cairn serve --vault ~/lessons` with no shell: the vault is looked up in
    HOME, and when missing the error said to run `cairn init '~/lessons'`, which made `./~/lessons`, then failed
    with the one word `Error: /home/me/lessons` (git found no such folder) and left nothing."""
    project = tmp_path / "project"
    project.mkdir()
    line = _one_error_line(run_cairn("serve", "--vault", "~/lessons", cwd=project))
    [command] = re.findall(r"create one with `(cairn init [^`]*)`", line)
    made = run_cairn(*shlex.split(command)[1:], "--no-register", cwd=project)
    assert made.returncode == 0, made.stderr
    assert (Path(os.environ["HOME"]) / "lessons" / "cairn.toml").is_file() and not (project / "~").exists()
    assert run_cairn("list", "--vault", "~/lessons", cwd=project).returncode == 0


def test_a_locale_that_cannot_name_a_configured_vaults_path_is_one_line(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """Bug fixed: in a locale whose encoding is not UTF-8 (ISO-8859-1, or ASCII here), a configured vault whose path
    holds a letter that encoding lacks (`/srv/笔记`) ended `cairn list`, `recall` and `doctor` in every other vault
    as `unexpected UnicodeEncodeError (a bug in Cairn)`; it is one line saying to use a UTF-8 locale."""
    make_vault(vault_repo)
    config = isolated_env / "xdg-config" / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[[vaults]]\nname = "zh"\npath = "/srv/笔记"\n', encoding="utf-8")
    ascii_locale = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}  # Python's file names in ASCII
    line = _one_error_line(vault_repo.cairn("list", env=ascii_locale))
    assert line.startswith("Error: a path holds ") and line.endswith(
        "which this locale's encoding (ascii) cannot name; run Cairn in a UTF-8 locale (LC_ALL=C.UTF-8) or with "
        "PYTHONUTF8=1"
    ), line


def test_a_chinese_query_and_id_are_read_in_an_ascii_locale(vault_repo: VaultRepo) -> None:
    """Bug fixed: in a locale whose encoding is ASCII (`LC_ALL=POSIX`, no UTF-8 mode) Python decodes argv as ASCII,
    so `cairn recall 数据库迁移锁超时` from a UTF-8 terminal said "QUERY is not UTF-8 text; give the prompt as UTF-8",
    and `cairn show ID` of a card in Chinese printed escapes as "not a card id". The terminal's bytes are UTF-8: they
    are read as such; bytes that are not UTF-8 are still refused."""
    make_vault(vault_repo)
    vault_repo.write(
        "数据库/迁移-锁超时",
        "数据库迁移锁超时",
        "在生产环境执行数据库迁移时，要先设置 lock_timeout，否则 ALTER TABLE 会阻塞所有查询。",
    )
    vault_repo.commit("A card in Chinese")
    ascii_locale = {"LC_ALL": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    for command in ("recall", "explain"):
        done = vault_repo.cairn(command, "数据库迁移时 ALTER TABLE 阻塞所有查询", "--json", env=ascii_locale)
        assert done.returncode == 0, done.stderr
        assert '"数据库/迁移-锁超时"' in json.dumps(json.loads(done.stdout), ensure_ascii=False), done.stdout
    shown = vault_repo.cairn("show", "数据库/迁移-锁超时", "--json", env=ascii_locale)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["name"] == "数据库迁移锁超时"
    latin1 = subprocess.run(
        [cairn_executable(), "recall", "caf\xe9".encode("latin-1")],
        cwd=vault_repo.root,
        env={**os.environ, **ascii_locale},
        capture_output=True,
        text=True,
        check=False,
    )
    assert latin1.returncode == 2 and "QUERY is not UTF-8 text" in latin1.stderr, latin1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [("--help",), ("--version",), ("list", "--help"), ("list",)])
def test_output_to_a_full_disk_is_one_error_line(vault_repo: VaultRepo, args: tuple[str, ...]) -> None:
    """Bug fixed: `cairn --help > /dev/full` (and `--version`, `cairn list --help`: what click writes before any
    command runs, outside the error funnel) ended in a traceback; a command's own output said one line already."""
    make_vault(vault_repo)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [cairn_executable(), *args],
            cwd=vault_repo.root,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    assert _one_error_line(subprocess.CompletedProcess(args, done.returncode, "", done.stderr)) == (
        "Error: No space left on device: the disk is full; free some space there, then run this again"
    )


def test_a_chinese_scope_is_read_in_an_ascii_locale(vault_repo: VaultRepo) -> None:
    """Bug fixed: in an ASCII locale (`LC_ALL=POSIX`, no UTF-8 mode) `cairn recall 数据库迁移锁超时` was read as the
    terminal's UTF-8, but `--scope 数据库` was not: recall, explain, eval and list were asked for a tag of escapes,
    so every card was refused ("No card fits this prompt", "No card with that scope") and exit 0 said nothing was
    wrong. The scope is read as the query is; bytes that are not UTF-8 either are refused as the query's are."""
    make_vault(vault_repo)
    vault_repo.write(
        "数据库/迁移-锁超时",
        "数据库迁移锁超时",
        "在生产环境执行数据库迁移时，要先设置 lock_timeout，否则 ALTER TABLE 会阻塞所有查询。",
        scope=["数据库"],
    )
    vault_repo.commit("A card in Chinese")
    ascii_locale = {"LC_ALL": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    query = "数据库迁移时 ALTER TABLE 阻塞所有查询"
    for command in ("recall", "explain"):
        done = vault_repo.cairn(command, query, "--scope", "数据库", "--json", env=ascii_locale)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["abstained"] is False, done.stdout
    added = vault_repo.cairn(
        "vault", "add", str(vault_repo.root), "--name", "zh", "--scope", "数据库", env=ascii_locale
    )
    assert added.returncode == 0, added.stderr
    assert "scopes: 数据库" in vault_repo.cairn("vault", "list").stdout
    listed = vault_repo.cairn("list", "--scope", "数据库", "--json", env=ascii_locale)
    assert listed.returncode == 0, listed.stderr
    assert [c["id"] for c in json.loads(listed.stdout)["cards"]] == ["数据库/迁移-锁超时"]
    for asked in (["recall", query], ["list"]):
        gbk = subprocess.run(
            [cairn_executable(), *asked, "--scope", "数据库".encode("gbk")],
            cwd=vault_repo.root,
            env={**os.environ, **ascii_locale},
            capture_output=True,
            text=True,
            check=False,
        )
        assert gbk.returncode == 2 and "is not UTF-8 text" in gbk.stderr, gbk


@pytest.mark.parametrize("value", ["0", "false", "No", "off", " "])
def test_cairn_debug_set_off_keeps_a_bug_to_one_line(value: str) -> None:
    """Bug fixed: any value of CAIRN_DEBUG let a bug's traceback through, so `CAIRN_DEBUG=0` (a switch a shell or a
    CI job sets off) turned it on. The values that say off keep the one line; 1 still raises."""
    import click
    from click.testing import CliRunner

    from cairn.cli.common import errors_to_exit

    @click.command()
    @errors_to_exit
    def broken() -> None:
        raise RuntimeError("boom")

    done = CliRunner().invoke(broken, env={"CAIRN_DEBUG": value})
    assert done.exit_code == 1 and "unexpected RuntimeError: boom (a bug in Cairn" in done.output, done.output
    raised = CliRunner().invoke(broken, env={"CAIRN_DEBUG": "1"})
    assert isinstance(raised.exception, RuntimeError), raised
