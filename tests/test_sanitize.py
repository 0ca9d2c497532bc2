"""`cairn sanitize`: a redacted copy of the committed cards, never written into the vault, atomic, reported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from cairn.cards.card import parse_card
from cairn.cards.sanitize import PATTERN_SECONDS, redact, redact_all, rules_for, sanitize_vault
from cairn.config import SanitizeSettings
from cairn.hot.errors import InvalidConfig
from cairn.hot.vault import find_vault
from helpers.cli import run_on_terminal
from helpers.vaults import VaultRepo, cairn_executable

FAKE_GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
FAKE_AWS_KEY = "AKIA" + "Q3RT5ZKXW7PL2M4N"  # AWS's documented AKIAIOSFODNN7EXAMPLE is a placeholder: kept
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        (f"key:\n{PEM}\nafter", "key:\nREDACTED-PRIVATE-KEY\nafter", "private-key"),
        (f"export AWS_ACCESS_KEY_ID={FAKE_AWS_KEY}", "export AWS_ACCESS_KEY_ID=REDACTED-CLOUD-KEY", "cloud-key"),
        (f"use {FAKE_GITHUB_TOKEN} here", "use REDACTED-TOKEN here", "token"),
        # The AWS CLI takes the secret after a space: it was copied, and lint passed it
        (
            "aws configure set aws_secret_access_key " + "wJa7rXUtnF3MI/K7MDENG" + "/bPxRfiCYq8Vz2Tn4Lm",
            "aws configure set REDACTED-TOKEN",
            "token",
        ),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwx0123", "Authorization: Bearer REDACTED-TOKEN", "token"),
        ("password = hunter2hunter2", "password = REDACTED-SECRET", "secret"),
        ("DB_PASSWORD: 'correcthorsebatterystaple'", "DB_PASSWORD: 'REDACTED-SECRET'", "secret"),
        ("postgres://app:s3cretpass@db.example.com/x", "postgres://app:REDACTED-SECRET@db.example.com/x", "secret"),
        # A query's parameters after the secret were lost with it (`&format=json`); a `&` inside the value is the value's
        ("GET /v1?api_key=9f8e7d6c5b4a3928&format=json", "GET /v1?api_key=REDACTED-SECRET&format=json", "secret"),
        (
            "jdbc:mysql://db/app?password=Hunter2Pass&useSSL=false",
            "jdbc:mysql://db/app?password=REDACTED-SECRET&useSSL=false",
            "secret",
        ),
        ("password=Abc123&xyz789 here", "password=REDACTED-SECRET here", "secret"),
        ("ask ann.lee@example.com", "ask REDACTED-EMAIL", "email"),
        ("see /home/alice/src/app", "see /home/REDACTED-USER/src/app", "home-path"),
        ("see /Users/bob/Library", "see /Users/REDACTED-USER/Library", "home-path"),
        ("see C:\\Users\\carol\\AppData", "see C:\\Users\\REDACTED-USER\\AppData", "home-path"),
        # Home folders under another folder were left whole: WSL's, Fedora Atomic's, FreeBSD's
        ("on WSL /mnt/c/Users/dave/src", "on WSL /mnt/c/Users/REDACTED-USER/src", "home-path"),
        ("see /var/home/erin/src", "see /var/home/REDACTED-USER/src", "home-path"),
        ("see /usr/home/frank/src", "see /usr/home/REDACTED-USER/src", "home-path"),
        ("ssh build01.corp now", "ssh REDACTED-HOST now", "internal-host"),
        ("curl http://api.svc.internal:8080/", "curl http://REDACTED-HOST:8080/", "internal-host"),
        # The whole host: its labels after the internal domain were left (`REDACTED-HOST.acme.com`)
        ("ssh db01.corp.acme.com now", "ssh REDACTED-HOST now", "internal-host"),
        ("server 10.20.30.40 and 8.8.8.8", "server REDACTED-IP and REDACTED-IP", "ip"),
        ("link fe80::1ff:fe23:4567:890a up", "link REDACTED-IP up", "ip"),
    ],
)
def test_each_kind_is_redacted(text: str, expected: str, kind: str) -> None:
    out, counts = redact(text, rules_for(SanitizeSettings()))
    assert out == expected
    assert counts[kind] >= 1


@pytest.mark.parametrize(
    "text",
    [
        "Bind to 0.0.0.0, not 127.0.0.1; ::1 is localhost too.",
        "git clone git@github.com:org/repo.git",
        "token: regenerate it, then api_key=$API_KEY or ${TOKEN} or <your-token>.",
        "Put it in .env.local; std::vector and a::b are code; 12:30:45 is a time.",
        # File names that hold an internal domain (were `REDACTED-HOST.json`)
        "Edit .claude/settings.local.json and docker-compose.corp.yml, then notes.local.md.",
        "CI runs in /home/runner/work and examples use /home/user or /Users/$USER.",
        "Version 1.2.3 of the tool; see localhost:8080.",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    out, counts = redact(text, rules_for(SanitizeSettings()))
    assert (out, dict(counts)) == (text, {})


def _secret_vault(vault_repo: VaultRepo) -> None:
    vault_repo.write(
        "ops/deploy-key",
        "Rotate the deploy key",
        "Ask ops@example.com before rotating; the old key lived on build01.corp.",
        body=f"Old key:\n\n```\n{PEM}\n```\n\nToken {FAKE_GITHUB_TOKEN} was in /home/alice/.netrc on 10.1.2.3.\n",
        source="https://wiki.example.org/ops/ACME-1234",
    )
    vault_repo.write("git/plain", "Nothing to hide", "Compare with git reflog before you pull.")
    vault_repo.write_raw(
        "cairn.toml", '[sanitize]\npatterns = ["ACME-[0-9]+"]\ninternal_domains = [".corp", ".example.org"]\n'
    )
    vault_repo.commit("Cards with secrets")


def test_sanitize_writes_a_redacted_copy_from_head_and_reports_per_file(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _secret_vault(vault_repo)
    # Uncommitted edits are not part of the copy: it comes from HEAD's tree.
    vault_repo.write("git/plain", "Nothing to hide", "Uncommitted, mail me at me@example.com.")
    out = tmp_path / "shared"
    done = vault_repo.invoke("sanitize", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_path = {f["path"]: f["redactions"] for f in report["files"]}
    assert by_path == {
        "cards/ops/deploy-key.md": {
            "custom": 1,
            "email": 1,
            "home-path": 1,
            "internal-host": 2,
            "ip": 1,
            "private-key": 1,
            "token": 1,
        },
        "cards/git/plain.md": {},
    }
    assert report["totals"]["internal-host"] == 2
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        ".cairn-sanitized",
        "cards/git/plain.md",
        "cards/ops/deploy-key.md",
    ]
    text = (out / "cards/ops/deploy-key.md").read_text()
    for leaked in ("ops@example.com", "build01.corp", "PRIVATE KEY", FAKE_GITHUB_TOKEN, "alice", "10.1.2.3", "1234"):
        assert leaked not in text
    assert "wiki.example.org" not in text  # an internal domain from cairn.toml
    card, findings = parse_card("cards/ops/deploy-key.md", text.encode())
    assert card is not None, findings  # the redacted copy still keeps the card contract
    assert card.summary == "Ask REDACTED-EMAIL before rotating; the old key lived on REDACTED-HOST."
    assert "Uncommitted" not in (out / "cards/git/plain.md").read_text()
    assert "ops@example.com" in (vault_repo.root / "cards/ops/deploy-key.md").read_text()  # the vault is untouched
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".shared.")]  # no temp folders left

    text_out = vault_repo.invoke("sanitize", "--out", str(tmp_path / "again"))
    assert text_out.returncode == 0, text_out.stderr
    assert "cards/ops/deploy-key.md: 1 custom, 1 email, 1 home-path, 2 internal-host" in text_out.stdout
    assert "redacted 8 item(s) in 1 file(s)" in text_out.stdout


# Secrets `cairn lint`'s secret rule names (built from parts, so that this file holds none whole).
LINTED_SECRETS = (
    "https://hooks.slack.com/services/" + "T0ABCDEF1/B0ABCDEF2/abcdefghijklmnopqrstuvwx",
    "https://discord.com/api/webhooks/" + "123456789012345678/abcdefghijklmnopqrstuvwxyz0123456789",
    "ya29." + "a0AfH6SMBabcdefghijklmnopqrstuvwxyz",
    "pypi-" + "AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0",
    "SG." + "abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABC",
    "SK" + "0123456789abcdef" * 2,
    "dop_" + "v1_" + "0123456789abcdef" * 4,
    "shpat_" + "0123456789abcdef" * 2,
    "123456789:" + "AAabcdefghijklmnopqrstuvwxyz0123456",
    "gldt-" + "abcdefghijklmnopqrstuvwx",
    "xoxe-" + "1-abcdefghijklmnop",
    "whsec_" + "abcdefghijklmnopqrstuvwxyz012345",
    "SuperSecret123",  # DB_PASS=
    "hunter2x",  # pass:
    "hunter3y",  # "the password is"
    "mypassword123",  # a URL's password with no user name (redis://:pw@host)
    "AAAAC3NzaC1lZDI1NTE5AAAAIJ",  # a PuTTY key's lines
)


def test_sanitize_draws_its_progress_on_a_terminal_only(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A copy of 10,000 cards takes a minute: sanitize drew nothing on a terminal all that while."""
    vault_repo.write_raw("cairn.toml", "# defaults\n")
    for n in range(60):
        vault_repo.write(f"ops/service{n}", f"Service {n} hangs without a timeout", f"Set timeout{n} on service{n}.")
    vault_repo.commit("Sixty cards")
    heard: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        heard.append((done, total))

    sanitize_vault(find_vault(vault_repo.root), tmp_path / "copy", SanitizeSettings(), progress=progress)
    assert heard[-1] == (180, 180) and {total for _, total in heard} == {180}
    assert [done for done, _ in heard] == sorted(done for done, _ in heard)
    code, output = run_on_terminal(["sanitize", "--out", str(tmp_path / "shown")], vault_repo.root)
    assert code == 0, output
    assert b"sanitize  [" in output and b"180/180" in output
    piped = vault_repo.cairn("sanitize", "--out", str(tmp_path / "piped"))
    assert piped.returncode == 0 and "[" not in piped.stderr and "Wrote 60 card file(s)" in piped.stdout


def test_the_copy_keeps_no_secret_that_cairn_lint_names(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn sanitize` left webhook URLs, vendor tokens (Google OAuth, PyPI, SendGrid, Twilio,
    DigitalOcean, Shopify, Telegram, GitLab's other tokens...), `DB_PASS=` and prose passwords, a Redis URL's
    password and PuTTY keys in the copy meant for sharing, though `cairn lint` names each as a secret."""
    body = "\n".join(
        [
            *(f"- {value}" for value in LINTED_SECRETS[:12]),
            f"- DB_PASS={LINTED_SECRETS[12]}",
            f"- pass: {LINTED_SECRETS[13]}",
            f"- the password is {LINTED_SECRETS[14]}",
            f"- redis://:{LINTED_SECRETS[15]}@cache:6379/0",
            "",
            "```",
            "PuTTY-User-Key-File-3: ssh-ed25519",
            "Encryption: none",
            "Public-Lines: 1",
            "AAAAC3NzaC1lZDI1NTE5AAAAIJ",
            "Private-Lines: 1",
            "AAAAIH" + "abcdefghij" * 4,
            "Private-MAC: " + "0123456789abcdef" * 4,
            "```",
        ]
    )
    vault_repo.write("ops/leaks", "Leaked credentials", "Rotate what was pasted here.", body=body)
    vault_repo.commit("A card with secrets")
    assert vault_repo.cairn("lint", "cards/ops/leaks.md").stdout.count(" secret ") >= len(LINTED_SECRETS) - 1
    out = tmp_path / "shared"
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 0, done.stderr
    copy = (out / "cards/ops/leaks.md").read_text()
    assert [value for value in LINTED_SECRETS if value in copy] == []
    assert "Private-MAC" not in copy and "abcdefghij" * 4 not in copy
    vault_repo.write_raw("cards/ops/leaks.md", copy)  # the copy, judged by the rule that named the secrets
    linted = vault_repo.cairn("lint", "cards/ops/leaks.md")
    assert " secret " not in linted.stdout, linted.stdout


def test_a_card_that_hides_what_sanitize_redacts_is_not_copied(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bugs fixed: sanitize redacted the text as written, not as YAML and HTML decode it (as lint and agents read
    it), so `jane\\x40acme.com` and `ghp&#95;...` went into the copy; its host rule matched inside `db\\x2eacme.internal`
    and left a card that no longer parsed; a file named `jane.doe@acme.com.md` was copied under its name; and a token
    behind a Markdown escape (`ghp\\_...`, as an export from HTML writes it) was copied, shown whole once rendered.
    Each such card is left out, with why; the others are copied."""
    vault_repo.write_raw("cairn.toml", "")
    escaped = (
        '---\nname: Reports API\nsummary: "The reports API at db\\x2eacme.internal needs basic auth."\n---\n\n'
        "# Reports API\n\nAsk the owner.\n"
    )
    vault_repo.write_raw("cards/ops/escaped-yaml.md", escaped)
    vault_repo.write(
        "ops/escaped-html", "CI token", "The CI token sits in the vault.", body="Owner: jane&#64;acme.com\n"
    )
    escaped_token = "ghp\\_" + FAKE_GITHUB_TOKEN.removeprefix("ghp_")
    vault_repo.write(
        "ops/escaped-markdown", "CI token", "The CI token sits in the vault.", body=f"It was {escaped_token}\n"
    )
    vault_repo.write("ops/jane.doe@acme.com", "Ask Jane", "Staging deploys fail on Fridays; ask the owner first.")
    vault_repo.write("ops/plain", "Plain card", "Mail jane@acme.com for access to the reports API.")
    vault_repo.commit("Cards hiding what sanitize redacts")
    out = tmp_path / "shared"
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 0, done.stderr
    left_out = {line.split(":", 1)[0]: line for line in done.stderr.splitlines() if " sanitize " in line}
    assert sorted(left_out) == [
        "cards/ops/escaped-html.md",
        "cards/ops/escaped-markdown.md",
        "cards/ops/escaped-yaml.md",
        "cards/ops/jane.doe@acme.com.md",
    ]
    assert "broke its frontmatter" in left_out["cards/ops/escaped-yaml.md"]
    assert "(email) behind escapes" in left_out["cards/ops/escaped-html.md"]
    assert "(token) behind escapes" in left_out["cards/ops/escaped-markdown.md"]
    assert "its file name holds" in left_out["cards/ops/jane.doe@acme.com.md"]
    copied = sorted(p.name for p in (out / "cards" / "ops").iterdir())
    assert copied == ["plain.md"] and "jane@acme.com" not in (out / "cards/ops/plain.md").read_text()


def test_a_secret_written_with_a_full_width_colon_is_not_copied(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn lint` reads a card as NFKC folds it, so `password：…` (the full-width colon a Chinese input
    method types) is a password to it, while sanitize redacted the text as written: the copy held the password,
    "redacted 0 item(s)", and failed the lint rule it is meant to pass. Such a card is left out, with why."""
    leak = "Hunter22" + "xyz"
    vault_repo.write(
        "ops/db",
        "测试库的连接",
        "测试库只在内网可用，连接前先开 VPN，否则会超时。",
        body=f"连接信息：password：{leak}。\n",
    )
    vault_repo.write("ops/plain", "Plain card", "Mail the owner for access to the reports API.")
    vault_repo.commit("A password behind a full-width colon")
    assert " secret " in vault_repo.cairn("lint", "cards/ops/db.md").stdout
    out = tmp_path / "shared"
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "cards/ops/db.md:0: sanitize it holds what sanitize redacts (secret)" in done.stderr, done.stderr
    assert "full-width characters" in done.stderr
    assert sorted(p.name for p in (out / "cards" / "ops").iterdir()) == ["plain.md"]
    assert not any(leak in p.read_text("utf-8") for p in out.rglob("*.md"))


def test_refuses_an_out_inside_the_vault_even_through_a_symlink(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _secret_vault(vault_repo)
    link = tmp_path / "sneaky"
    os.symlink(vault_repo.root / "cards", link)
    before = sorted(p.as_posix() for p in vault_repo.root.rglob("*") if ".git" not in p.parts)
    for out in (vault_repo.root / "export", vault_repo.root, link / "copy", link):
        done = vault_repo.invoke("sanitize", "--out", str(out), "--force")
        assert done.returncode == 1, out
        assert done.stderr.startswith("Error: ") and "inside the vault" in done.stderr
        assert done.stdout == ""
    assert sorted(p.as_posix() for p in vault_repo.root.rglob("*") if ".git" not in p.parts) == before
    done = vault_repo.invoke("sanitize", "--out", str(vault_repo.root.parent), "--force")
    assert done.returncode == 1 and "holds the vault" in done.stderr


def test_force_replaces_an_earlier_copy_and_no_other_folder(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `--force` replaced any non-empty folder that was not the vault, its parent or the home folder: it
    moved the folder aside and deleted it. `cairn sanitize --out /work --force`, run from a vault in /tmp, deleted a
    whole workspace (every project's checkout and its git history) and wrote 14 cards in its place. Now `--force`
    replaces only a copy `cairn sanitize` wrote: its `.cairn-sanitized` file and cards/ of card files, nothing else."""
    _secret_vault(vault_repo)
    work = tmp_path / "work"  # the shape of the workspace it deleted: projects with their git histories
    project = work / "main"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "README.md").write_text("a project\n")
    (work / "shared").mkdir()
    (work / "shared" / "notes.md").write_text("notes\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "old.txt").write_text("the user's own file")
    forged = tmp_path / "forged"  # the marker alone does not make a folder a copy
    (forged / "cards").mkdir(parents=True)
    (forged / ".cairn-sanitized").write_text("x")
    (forged / "cards" / "keep.txt").write_text("not a card file")
    linked = tmp_path / "linked"
    (linked / "cards").mkdir(parents=True)
    (linked / ".cairn-sanitized").write_text("x")
    os.symlink(project, linked / "cards" / "git")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    for out in (work, mine, forged, linked):
        for args in ([], ["--force"]):
            done = vault_repo.cairn("sanitize", "--out", str(out), *args)
            assert done.returncode == 1, (out, args)
            assert done.stderr.splitlines() == [
                f"Error: {out} is not empty and is not a copy `cairn sanitize` wrote (.cairn-sanitized and cards/ "
                "only), so it is never replaced, not even with --force; choose a new or empty folder (nothing was "
                "written)"
            ]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing moved aside

    out = tmp_path / "shared-lessons"
    assert vault_repo.cairn("sanitize", "--out", str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [".cairn-sanitized", "cards"]
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 1
    assert done.stderr == f"Error: {out} holds an earlier copy; pass --force to replace it (nothing was written)\n"
    (out / "cards" / "git" / "plain.md").write_text("stale")
    done = vault_repo.cairn("sanitize", "--out", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert (out / "cards" / "git" / "plain.md").read_text() != "stale"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".shared-lessons.")]
    (out / "README.md").write_text("added by hand to publish the copy")  # then it is the user's folder
    done = vault_repo.cairn("sanitize", "--out", str(out), "--force")
    assert done.returncode == 1 and "is not a copy `cairn sanitize` wrote" in done.stderr
    assert (out / "README.md").is_file()

    empty = tmp_path / "empty"
    empty.mkdir()
    assert vault_repo.invoke("sanitize", "--out", str(empty)).returncode == 0
    assert (empty / "cards/git/plain.md").is_file()


def test_the_copy_gets_the_mode_the_umask_gives_or_its_folders_own(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the copy's folder was the temporary folder's 0700 whatever the umask (its cards under it 0644 and
    0755 as the umask gave them), and an empty --out folder its user had made 0775 became 0700 as well."""
    _secret_vault(vault_repo)

    def run(out: Path, umask: int) -> None:
        done = subprocess.run(
            [cairn_executable(), "sanitize", "--out", str(out)],
            cwd=vault_repo.root,
            capture_output=True,
            text=True,
            preexec_fn=lambda: os.umask(umask),
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    run(tmp_path / "open", 0o022)
    run(tmp_path / "private", 0o077)
    made = tmp_path / "made"
    made.mkdir()
    made.chmod(0o775)
    run(made, 0o022)
    modes = {out: oct(out.stat().st_mode & 0o777) for out in (tmp_path / "open", tmp_path / "private", made)}
    assert modes == {tmp_path / "open": "0o755", tmp_path / "private": "0o700", made: "0o775"}
    assert oct((tmp_path / "open" / "cards").stat().st_mode & 0o777) == "0o755"


def test_an_out_that_cannot_be_made_is_one_line_naming_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `--out FILE/x` (a file where a folder must be) said only "Error: File exists (FILE)", and an out
    whose parent cannot be written named the temporary folder beside it, not --out, nor what to do."""
    _secret_vault(vault_repo)
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "shared"
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: {out}: the copy could not be written there (File exists); choose a folder you can write to "
        "(nothing was written)"
    ]
    assert (tmp_path / "afile").read_text() == "x"


def test_a_bad_pattern_in_cairn_toml_is_one_error_line_at_the_line_lint_names(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """The error said `cairn.toml: [sanitize] ...` where lint says `cairn.toml:3:`: it names the line now too."""
    vault_repo.write("git/plain", "Nothing to hide", "Compare with git reflog before you pull.")
    vault_repo.write_raw("cairn.toml", '# ours\n[sanitize]\npatterns = ["(unclosed"]\n')
    vault_repo.commit("Bad pattern")
    done = vault_repo.invoke("sanitize", "--out", str(tmp_path / "x"))
    assert done.returncode == 1
    assert done.stderr.startswith("Error: cairn.toml:3: [sanitize] patterns[0] is not a valid regular expression")
    assert "cairn.toml:3: config-invalid [sanitize] patterns[0]" in vault_repo.cairn("lint", "cairn.toml").stdout
    assert not (tmp_path / "x").exists()


def test_lint_names_a_pattern_sanitize_refuses(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn lint` (and so pre-commit and review) passed a cairn.toml whose [sanitize] pattern is not a
    regular expression, or is one too many; only `cairn sanitize`, run later, refused the file."""
    vault_repo.write("git/plain", "Nothing to hide", "Compare with git reflog before you pull.")
    vault_repo.write_raw("cairn.toml", '# ours\n[sanitize]\npatterns = ["ACME-[0-9]+", "(unclosed"]\n')
    done = vault_repo.cairn("lint", "cairn.toml")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "cairn.toml:3: config-invalid [sanitize] patterns[1] is not a valid regular expression: missing ), "
        "unterminated subpattern at position 0; `cairn sanitize` refuses it"
    ]
    # a card's lint does not read the patterns: `cairn add` still writes a card, as `cairn index` still serves
    added = vault_repo.cairn("add", "--name", "Fetch first", "--summary", "Fetch before you rebase.", "--body", "B.")
    assert added.returncode == 0, added.stderr
    vault_repo.write_raw("cairn.toml", '# ours\n[sanitize]\npatterns = ["ACME-[0-9]+"]\n')
    assert vault_repo.cairn("lint", "cairn.toml").returncode == 0


def test_a_backtracking_pattern_is_stopped_and_named() -> None:
    """`(a+)+$` backtracks for ever on a long run of `a` that does not end the text: the child process running the
    vault's patterns is stopped after the bound, and the error names the pattern and the card it was on."""
    settings = SanitizeSettings(patterns=("ACME-[0-9]+", "(a+)+$"))
    texts = [("cards/ok.md", "ACME-12 is fine"), ("cards/slow.md", "summary: " + "a" * 60 + "!\n")]
    started = time.monotonic()
    with pytest.raises(InvalidConfig) as caught:
        redact_all(texts, settings, seconds=1.0)
    assert time.monotonic() - started < 8
    assert str(caught.value) == (
        "cairn.toml: [sanitize] patterns[1] '(a+)+$' ran over 1 s on cards/slow.md: nested repetition such as "
        "(a+)+ can take for ever; make the pattern simpler (nothing was written)"
    )


def test_vault_patterns_redact_in_the_child_as_they_would_here() -> None:
    settings = SanitizeSettings(patterns=("ACME-[0-9]+",))
    texts = [("cards/a.md", "ticket ACME-42 and ann.lee@example.com"), ("cards/b.md", "nothing")]
    done = redact_all(texts, settings, seconds=30)
    assert done == [redact(text, rules_for(settings)) for _, text in texts]
    assert done[0][0] == "ticket REDACTED and REDACTED-EMAIL"


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (("x",) * 101, "cairn.toml: [sanitize] patterns has 101 entries; at most 100"),
        (("a" * 1001,), "cairn.toml: [sanitize] patterns[0] is 1001 characters long; at most 1000"),
    ],
)
def test_too_many_or_too_long_patterns_are_refused(patterns: tuple[str, ...], message: str) -> None:
    with pytest.raises(InvalidConfig, match=re.escape(message)):
        rules_for(SanitizeSettings(patterns=patterns))


def test_a_backtracking_pattern_is_named_at_its_line_as_a_bad_one_is() -> None:
    """Bug fixed: a pattern refused before the run (not a regular expression, too long) was named at its line in
    cairn.toml, one stopped for running over the bound only as `cairn.toml:`. Both name the line now."""
    settings = SanitizeSettings(patterns=("(a+)+$",))
    config = '# ours\n[sanitize]\npatterns = ["(a+)+$"]\n'
    with pytest.raises(InvalidConfig) as caught:
        redact_all([("cards/slow.md", "a" * 60 + "!")], settings, seconds=1.0, config_text=config)
    assert str(caught.value).startswith("cairn.toml:3: [sanitize] patterns[0] '(a+)+$' ran over 1 s on cards/slow.md")


@pytest.mark.slow
def test_cairn_sanitize_with_a_backtracking_pattern_is_one_error_line(vault_repo: VaultRepo, tmp_path: Path) -> None:
    vault_repo.write("git/plain", "Runs of a", "Summary " + "a" * 60 + "!")
    vault_repo.write_raw("cairn.toml", '[sanitize]\npatterns = ["(a+)+$"]\n')
    vault_repo.commit("A pattern that backtracks")
    started = time.monotonic()
    done = vault_repo.invoke("sanitize", "--out", str(tmp_path / "x"))
    assert time.monotonic() - started < PATTERN_SECONDS + 20
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: cairn.toml:2: [sanitize] patterns[0] '(a+)+$' ran over {PATTERN_SECONDS:g} s on cards/git/plain.md: "
        "nested repetition such as (a+)+ can take for ever; make the pattern simpler (nothing was written)"
    ]
    assert not (tmp_path / "x").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".x.")]


def test_a_run_killed_between_its_renames_is_put_right_by_the_next(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`sanitize --force` moves the earlier copy aside (`.NAME.*.old`), renames its copy into place, then removes the
    old one: killed between the two renames, `--out` was gone and the copy hidden beside it, with the partial copy
    (`.NAME.*.tmp`). The next run moves it back (and says so), then works as it would have. A leftover that holds
    files `cairn sanitize` does not write is left as it is (and said): only copies are ever removed."""
    _secret_vault(vault_repo)
    out = tmp_path / "shared"
    assert vault_repo.cairn("sanitize", "--out", str(out)).returncode == 0
    # what a run killed between its renames leaves: --out moved aside, its partial copy beside it
    out.rename(tmp_path / ".shared.k1ll3d_1.old")
    (tmp_path / ".shared.k1ll3d_2.tmp" / "cards").mkdir(parents=True)
    (tmp_path / ".shared.k1ll3d_5.tmp").mkdir()
    (tmp_path / ".shared.k1ll3d_5.tmp" / "mine.txt").write_text("not a copy's")  # a name like ours, not ours
    (tmp_path / ".shared-other.k1ll3d_3.tmp").mkdir()  # another folder's: not this run's business
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 1
    assert sorted(done.stderr.splitlines()[:2]) == [
        f"Note: left {tmp_path / '.shared.k1ll3d_5.tmp'} as it is: it holds files `cairn sanitize` does not write.",
        f"Note: removed {tmp_path / '.shared.k1ll3d_2.tmp'}, the partial copy of an interrupted run.",
    ]
    assert done.stderr.splitlines()[2:] == [
        f"Note: restored {out} from {tmp_path / '.shared.k1ll3d_1.old'}, where an interrupted run had moved it aside.",
        f"Error: {out} holds an earlier copy; pass --force to replace it (nothing was written)",
    ]
    assert sorted(p.name for p in out.iterdir()) == [".cairn-sanitized", "cards"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".shared")) == [
        ".shared-other.k1ll3d_3.tmp",
        ".shared.k1ll3d_5.tmp",
    ]
    # killed after the copy went into place, before the old one was removed; and an old folder not a copy's
    (tmp_path / ".shared.k1ll3d_4.old").mkdir()
    (tmp_path / ".shared.k1ll3d_6.old").mkdir()
    (tmp_path / ".shared.k1ll3d_6.old" / ".git").mkdir()
    done = vault_repo.cairn("sanitize", "--out", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert sorted(line for line in done.stderr.splitlines() if ".old" in line) == [
        f"Note: left {tmp_path / '.shared.k1ll3d_6.old'} as it is: it holds files `cairn sanitize` does not write.",
        f"Note: removed {tmp_path / '.shared.k1ll3d_4.old'}, the replaced copy an interrupted run left.",
    ]
    assert sorted(p.name for p in out.iterdir()) == [".cairn-sanitized", "cards"]
    assert (tmp_path / ".shared.k1ll3d_6.old" / ".git").is_dir()


def test_the_placeholders_the_secret_rule_lets_pass_are_copied_as_written(vault_repo: VaultRepo) -> None:
    """Bug fixed: sanitize's own bearer, token, cloud-key, URL-password and assignment rules redacted placeholders
    the `secret` rule lets pass (`Authorization: Bearer YOUR_ACCESS_TOKEN_HERE`, `AKIAIOSFODNN7EXAMPLE`,
    `https://user:pass@host`): the rule's good cards come out of `cairn sanitize` as they went in, and a real
    bearer token beside them is still redacted."""
    good = Path(__file__).resolve().parent / "fixtures" / "lint" / "secret" / "good"
    for path in sorted(good.glob("*.md")):
        vault_repo.write_raw(f"cards/ops/{path.name}", path.read_text("utf-8"))
    vault_repo.write_raw(
        "cards/ops/more.md",
        "---\nname: Placeholders in prose\nsummary: Show the header with a placeholder.\n---\n\n"
        "Send `Bearer YOUR_ACCESS_TOKEN_HERE` or `token: YOUR_ACCESS_TOKEN_HERE`; never sk-your-key-goes-here-xxxx.\n"
        "Real: Authorization: Bearer Zr8kLm2Qx5Tb7Wd1Vn3Pq9Hs4\n",
    )
    vault_repo.commit("placeholders")
    assert " secret " not in vault_repo.cairn("lint", *(f"cards/ops/{p.name}" for p in good.glob("*.md"))).stdout
    out = vault_repo.root.parent / "shared"
    done = vault_repo.cairn("sanitize", "--out", str(out))
    assert done.returncode == 0, done.stderr
    for path in sorted(good.glob("*.md")):
        assert (out / "cards/ops" / path.name).read_text("utf-8") == path.read_text("utf-8"), path.name
    more = (out / "cards/ops/more.md").read_text("utf-8")
    assert more.count("YOUR_ACCESS_TOKEN_HERE") == 2 and "sk-your-key-goes-here-xxxx" in more
    assert "Zr8kLm2Qx5Tb7Wd1Vn3Pq9Hs4" not in more and "Authorization: Bearer REDACTED-TOKEN" in more


def test_help_says_what_is_not_redacted_and_the_copy_keeps_it(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the help promised a copy with "identifying details redacted" and said nothing of what is left, so
    a user shared people's names and public host names believing them gone."""
    help_text = " ".join(vault_repo.invoke("sanitize", "--help").stdout.split())
    assert (
        "Not redacted: people's names, user names outside home paths and host names outside the internal" in help_text
    )
    assert "no git history, so no commit authors" in help_text
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ops/owner", "Ask the owner", "Jane Doe owns api.acme.com; ask her before a deploy.")
    vault_repo.commit("A card naming a person and a public host")
    out = tmp_path / "shared"
    assert vault_repo.cairn("sanitize", "--out", str(out)).returncode == 0
    assert "Jane Doe owns api.acme.com" in (out / "cards/ops/owner.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == [".cairn-sanitized", "cards"]
