"""The user configuration's reader (`cairn.hot.userconfig`): where the file is, what it gives, what it refuses,
and the cached JSON copy that keeps `tomllib` off the hook's path."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import cairn
from cairn.hot.errors import CairnError, ConfigError
from cairn.hot.userconfig import (
    VaultEntry,
    allowed_disabled_rules,
    config_file,
    load_vaults,
)
from helpers.payloads import FITTING_PROMPT, log_entries, payload_for
from helpers.vaults import REBASE_ID, VaultRepo, make_vault, run_cairn, state_dir


def write_config(home: Path, text: str) -> Path:
    path = home / "xdg-config" / "cairn" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cache_files(home: Path) -> list[Path]:
    return sorted((home / "state" / "config").glob("*.json"))


GOOD = """\
# my vaults
[[vaults]]
name = "team"
path = "~/team-lessons"
ref = "refs/remotes/origin/main"
scopes = ["python", "git"]
projects = ["~/work/acme", "/srv/other/"]

[[vaults]]
name = "me_2"
path = "/home/me/personal"

[security]
allow_disabled_rules = ["secrets", " injection "]
"""


def test_the_file_is_cairn_config_else_xdg_else_home(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert config_file() == str(isolated_env / "xdg-config" / "cairn" / "config.toml")
    monkeypatch.setenv("CAIRN_CONFIG", "~/elsewhere/c.toml")
    assert config_file() == str(isolated_env / "elsewhere" / "c.toml")
    assert config_file({"HOME": "/h"}) == "/h/.config/cairn/config.toml"
    assert config_file({"HOME": "/h", "XDG_CONFIG_HOME": "/x/"}) == "/x/cairn/config.toml"
    # A relative XDG_CONFIG_HOME is invalid (the XDG spec): the hook would read the agent's project's file.
    assert config_file({"HOME": "/h", "XDG_CONFIG_HOME": "x"}) == "/h/.config/cairn/config.toml"


def test_no_file_means_no_vaults(isolated_env: Path) -> None:
    assert load_vaults() == []
    assert allowed_disabled_rules() == frozenset()
    assert cache_files(isolated_env) == []


def test_entries_in_order_with_home_expanded(isolated_env: Path) -> None:
    write_config(isolated_env, GOOD)
    home = str(isolated_env)
    assert load_vaults() == [
        VaultEntry(
            "team",
            f"{home}/team-lessons",
            "refs/remotes/origin/main",
            ("python", "git"),
            (f"{home}/work/acme", "/srv/other"),
        ),
        VaultEntry("me_2", "/home/me/personal", None, (), ()),
    ]
    assert allowed_disabled_rules() == frozenset({"secrets", "injection"})


def test_projects_limit_the_folders_a_vault_serves(isolated_env: Path, tmp_path: Path) -> None:
    acme = tmp_path / "acme"
    (acme / "src").mkdir(parents=True)
    (tmp_path / "acme-two").mkdir()
    entry = VaultEntry("team", "/v", None, (), (str(acme),))
    assert entry.serves_cwd(str(acme))
    assert entry.serves_cwd(str(acme / "src"))
    assert not entry.serves_cwd(str(tmp_path / "acme-two"))
    assert not entry.serves_cwd(None)
    assert VaultEntry("all", "/v", None, (), ()).serves_cwd(None)


def test_the_cached_copy_is_private_and_read_without_tomllib(isolated_env: Path) -> None:
    write_config(isolated_env, GOOD)
    first = load_vaults()
    (cache,) = cache_files(isolated_env)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    stored = json.loads(cache.read_text())
    assert [v["name"] for v in stored["data"]["vaults"]] == ["team", "me_2"]
    # A fresh interpreter reading the same file takes the copy: tomllib is never imported.
    code = (
        "import sys\nfrom cairn.hot.userconfig import load_vaults\n"
        "print([v.name for v in load_vaults()], 'tomllib' in sys.modules, 're' in sys.modules)"
    )
    root = str(Path(cairn.__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={**os.environ, "PYTHONPATH": root},
        cwd=isolated_env,  # not the checkout's root, whose `cairn` (`-c` imports from there first) is another build
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['team', 'me_2'] False False"
    assert load_vaults() == first


def test_an_edited_file_is_read_again(isolated_env: Path) -> None:
    path = write_config(isolated_env, GOOD)
    assert [v.name for v in load_vaults()] == ["team", "me_2"]
    path.write_text('[[vaults]]\nname = "org"\npath = "/org"\n', encoding="utf-8")
    os.utime(path, ns=(1, 1))  # even a clock that does not move: size and inode change too
    assert [v.name for v in load_vaults()] == ["org"]


def test_a_file_rewritten_in_place_with_its_old_size_and_time_is_read_again(isolated_env: Path) -> None:
    """Bug fixed: the copy was keyed by the file's size, mtime and inode only, so a configuration copied in place with
    its times kept (`cp -p`, `rsync -a --inplace`, a restored backup) and of the same size kept the old vaults served
    at every prompt, a vault the user had removed among them. The change time, which no copy can set, is in the key."""
    path = write_config(isolated_env, '[[vaults]]\nname = "old"\npath = "/old"\n')
    before = path.stat()
    assert [v.name for v in load_vaults()] == ["old"]
    with open(path, "r+b") as handle:  # the same file (inode), the same size, another vault
        handle.write(b'[[vaults]]\nname = "new"\npath = "/new"\n')
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_ino, path.stat().st_mtime_ns) == (
        before.st_size,
        before.st_ino,
        before.st_mtime_ns,
    )
    assert [(v.name, v.path) for v in load_vaults()] == [("new", "/new")]


def test_a_damaged_copy_is_made_again(isolated_env: Path) -> None:
    write_config(isolated_env, GOOD)
    expected = load_vaults()
    (cache,) = cache_files(isolated_env)
    stored = json.loads(cache.read_text())
    stored["data"]["vaults"][0]["path"] = "relative/evil"
    cache.write_text(json.dumps(stored))
    assert load_vaults() == expected
    cache.write_text("not json")
    assert load_vaults() == expected
    assert json.loads(cache.read_text())["data"]["vaults"][0]["name"] == "team"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[vaults]\n", "config.toml: not valid TOML: "),
        (  # bug fixed: "fix the line it names" of an error that names no line
            "[[vaults]]\nname = 'team'\npath = [\n",
            "not valid TOML: Invalid value (at end of document); complete its last entry, which the file ends inside",
        ),
        ("vaults = 3\n", "config.toml: vaults must be [[vaults]] tables"),
        ("[vault]\nname = 'x'\n", "config.toml: unknown key 'vault'; known: [[vaults]] and [security]"),
        (  # bug fixed: a missing name was said as "..., not None", a word TOML has not
            "[[vaults]]\npath = '/v'\n",
            "config.toml: [[vaults]] entry 1: name is required: 1 to 32 characters of a-z, 0-9, '_' and '-', starting "
            'with a letter or digit (e.g. name = "team")',
        ),
        ("[[vaults]]\nname = 'Team'\npath = '/v'\n", "not 'Team'"),
        ("[[vaults]]\nname = '-x'\npath = '/v'\n", "not '-x'"),
        ("[[vaults]]\nname = '" + "a" * 33 + "'\npath = '/v'\n", "name must be 1 to 32"),
        ("[[vaults]]\nname = 'team'\n", "config.toml: [[vaults]] entry 1 (team): path is required"),
        (
            "[[vaults]]\nname = 'team'\npath = 1\n",
            "config.toml: [[vaults]] entry 1 (team): path must be a folder's path, not 1",
        ),
        ("[[vaults]]\nname = 'team'\npath = 'rel/v'\n", "(team): path 'rel/v' is not absolute; write the full path"),
        ("[[vaults]]\nname = 'team'\npath = '/v'\nref = 'a b'\n", "(team): ref must be a ref name"),
        ("[[vaults]]\nname = 'team'\npath = '/v'\nref = '../x'\n", "(team): ref must be a ref name"),
        ("[[vaults]]\nname = 'team'\npath = '/v'\nscopes = 'git'\n", "(team): scopes must be a list of scope tags"),
        ("[[vaults]]\nname = 'team'\npath = '/v'\nprojects = ['w']\n", "(team): projects 'w' is not absolute"),
        ("[[vaults]]\nname = 'team'\npath = '/v'\nscope = ['git']\n", "(team): unknown key 'scope'; known: name,"),
        (
            "[[vaults]]\nname = 'a'\npath = '/v'\n[[vaults]]\nname = 'a'\npath = '/w'\n",
            "[[vaults]] entry 2 (a): the name 'a' is used twice",
        ),
        (
            "[[vaults]]\nname = 'a'\npath = '/v'\n[[vaults]]\nname = 'b'\npath = '/v/'\n",
            "[[vaults]] entry 2 (b): the path '/v' is already vault 'a'; list a vault once",
        ),
        ("[security]\nallow_disabled_rules = 'all'\n", "[security] allow_disabled_rules must be a list of rule ids"),
        ("[security]\nallow = []\n", "unknown key 'allow' in [security]"),
    ],
)
def test_a_malformed_file_names_the_file_the_entry_and_the_fix(isolated_env: Path, text: str, message: str) -> None:
    path = write_config(isolated_env, text)
    for _ in range(2):  # the second read takes the cached error: the same message
        with pytest.raises(ConfigError) as caught:
            load_vaults()
        assert message in str(caught.value)
        assert str(caught.value).startswith(str(path))
        assert "\n" not in str(caught.value)
    assert isinstance(caught.value, CairnError)
    with pytest.raises(ConfigError):
        allowed_disabled_rules()


def test_a_symlink_to_a_listed_vault_is_that_vault(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: `cairn vault add` refuses a symlink to a configured vault, but a hand-edited file listing the
    vault and a symlink to it was taken, and the hook asked one vault twice (each card under two names)."""
    (tmp_path / "team").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "team")
    write_config(
        isolated_env,
        f"[[vaults]]\nname = 'a'\npath = '{tmp_path / 'team'}'\n[[vaults]]\nname = 'b'\npath = '{tmp_path / 'link'}'\n",
    )
    with pytest.raises(ConfigError, match=r"entry 2 \(b\): the path '.*link' is already vault 'a'; list a vault once"):
        load_vaults()


def test_a_fixed_file_replaces_the_cached_error(isolated_env: Path) -> None:
    path = write_config(isolated_env, "[[vaults]]\nname = 'team'\n")
    with pytest.raises(ConfigError):
        load_vaults()
    path.write_text("[[vaults]]\nname = 'team'\npath = '/v'\n", encoding="utf-8")
    assert [v.path for v in load_vaults()] == ["/v"]


def test_not_utf8_and_huge_files_are_refused(isolated_env: Path) -> None:
    path = write_config(isolated_env, "")
    path.write_bytes(b"[[vaults]]\nname = '\xff'\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_vaults()
    path.write_bytes(b"# " + b"x" * (1 << 20) + b"\n")
    with pytest.raises(ConfigError, match="a user configuration is a few lines"):
        load_vaults()


def test_a_read_only_state_folder_still_reads(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(isolated_env, GOOD)
    blocker = isolated_env / "blocked"
    blocker.write_text("a file where the state folder would be")
    monkeypatch.setenv("CAIRN_STATE_DIR", str(blocker))
    assert [v.name for v in load_vaults()] == ["team", "me_2"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to make another user's file")
def test_a_copy_another_user_wrote_never_chooses_the_vaults(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A state folder another user owns (a shared CAIRN_STATE_DIR, one made by `sudo`): its owner could write the
    cached copy keyed to this user's file, and the hook served the vaults that copy named, a vault of theirs
    included (its index built by the hook's own background `cairn index`). Only this user's own copy is believed."""
    make_vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    first = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s1")
    assert REBASE_ID in run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=first).stdout
    (copy,) = sorted((state_dir() / "config").glob("*.json"))
    stored = json.loads(copy.read_text())
    theirs = tmp_path / "theirs"
    stored["data"]["vaults"] = [{"name": "team", "path": str(theirs), "projects": [], "ref": None, "scopes": []}]
    copy.write_text(json.dumps(stored, sort_keys=True))
    os.chown(copy, 65534, 65534)  # nobody's
    payload = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s2")
    done = run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=payload)
    assert (done.returncode, done.stderr) == (0, "")
    assert [v["vault"] for v in log_entries()[-1]["vaults"]] == [str(vault_repo.root)]
    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"].count(f"team:{REBASE_ID}") == 1
    assert copy.stat().st_uid == os.getuid()  # made again by this user


def test_a_configuration_saved_with_a_byte_order_mark_is_read(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: a config.toml saved by a Windows editor starts with a byte order mark, which no one sees and
    tomllib refuses: every command said `not valid TOML: Invalid statement (at line 1, column 1)` of a line that
    looks right, and the hook served nothing. The mark is now read past, by the hook and `cairn vault` alike."""
    make_vault(vault_repo)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(f'\ufeff# mine\n[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\n'.encode())

    listed = run_cairn("vault", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [v["name"] for v in json.loads(listed.stdout)["vaults"]] == ["team"]
    payload = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s1")
    assert REBASE_ID in run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=payload).stdout
    other = tmp_path / "notes"
    (other / "cards").mkdir(parents=True)
    (other / "cairn.toml").write_text("")
    added = run_cairn("vault", "add", str(other), "--name", "notes", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert [v.name for v in load_vaults()] == ["team", "notes"]


def test_doctor_says_how_to_fix_a_configuration_that_is_a_folder(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: with a folder where the user configuration goes, doctor's fix was "fix FILE (the line the error
    names)", a line there is not; it now moves it aside, and running that fix lets `cairn vault add` work."""
    folder = isolated_env / "xdg-config" / "cairn" / "config.toml"
    folder.mkdir(parents=True)
    done = run_cairn("doctor", "--json", cwd=tmp_path)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "config"]
    assert check["ok"] is False and "not a regular file" in check["detail"]
    assert check["fix"] == f"mv {folder} {folder}.not-a-file && cairn vault add PATH"
    moved = subprocess.run(check["fix"].split(" && ")[0], shell=True, check=False)
    assert moved.returncode == 0 and not folder.exists() and folder.with_name("config.toml.not-a-file").is_dir()


def test_doctor_reports_a_cairn_config_it_cannot_use_as_a_check_with_its_fix(
    isolated_env: Path, tmp_path: Path
) -> None:
    """Bug fixed: a relative CAIRN_CONFIG stopped doctor at its first line (`Error: CAIRN_CONFIG is ...`), with none
    of the other checks; and with CAIRN_CONFIG naming a folder, its fix moved that folder away (the user's own, such
    as `~/.config/cairn`) where the variable was what to change. Both are now a failed config check whose fix is the
    variable, and the checks after it run."""
    relative = run_cairn("doctor", "--json", cwd=tmp_path, env={"CAIRN_CONFIG": "cairn.toml"})
    assert relative.returncode == 1 and "Traceback" not in relative.stderr and relative.stderr == ""
    checks = json.loads(relative.stdout)["checks"]
    [check] = [c for c in checks if c["area"] == "config"]
    assert check["ok"] is False and "a relative path" in check["detail"]
    assert check["fix"] == "set CAIRN_CONFIG to a full path, or unset it"
    assert any(c["area"] == "agent" for c in checks)
    folder = tmp_path / "mine"
    folder.mkdir()
    done = run_cairn("doctor", "--json", cwd=tmp_path, env={"CAIRN_CONFIG": str(folder)})
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "config"]
    assert check["ok"] is False and "not a regular file" in check["detail"]
    assert check["fix"] == f"set CAIRN_CONFIG to a file's full path, such as {folder}/config.toml"


def test_a_file_where_the_configurations_folder_goes_is_named_with_its_fix(isolated_env: Path, tmp_path: Path) -> None:
    """Bug fixed: with `~/.config/cairn` a file, every command said only "cannot read the user configuration (Not a
    directory)", and doctor's fix was "fix FILE as the error says", a file that cannot be there; both now name the
    file in the way, and doctor's fix moves it aside so that `cairn vault add` works."""
    blocker = isolated_env / "xdg-config" / "cairn"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder\n", encoding="utf-8")
    listed = run_cairn("vault", "list", cwd=tmp_path)
    assert listed.returncode == 1
    assert listed.stderr == (
        f"Error: {blocker}/config.toml: cannot read the user configuration: {blocker} is a file, not a folder; move "
        "it away, or set CAIRN_CONFIG to a file elsewhere\n"
    )
    done = run_cairn("doctor", "--json", cwd=tmp_path)
    [check] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "config"]
    assert check["ok"] is False and f"{blocker} is a file, not a folder" in check["detail"]
    assert check["fix"] == f"mv {blocker} {blocker}.old && cairn vault add PATH"
    assert subprocess.run(check["fix"].split(" && ")[0], shell=True, check=False).returncode == 0
    vault = tmp_path / "vault"
    assert run_cairn("init", str(vault), "--no-register", cwd=tmp_path).returncode == 0
    added = run_cairn("vault", "add", str(vault), cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert blocker.is_dir() and blocker.with_name("cairn.old").read_text("utf-8") == "not a folder\n"


def test_a_path_a_non_utf8_locale_cannot_name_is_not_cached_as_the_files_error(
    vault_repo: VaultRepo, isolated_env: Path
) -> None:
    """Bug fixed: one run of Cairn (the hook, `cairn list`) in a locale that cannot name a vault's path (`文` under
    an ISO-8859-1 or ASCII locale) cached "'ascii' codec can't encode character" as the configuration's error: from
    then on every prompt in every locale got nothing from any vault, and every command failed with it, until the
    file was edited. The file is fine; the other vaults are served there and everywhere else."""
    make_vault(vault_repo)
    write_config(
        isolated_env,
        f'[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\n\n[[vaults]]\nname = "zh"\npath = "/srv/笔记"\n',
    )
    ascii_locale = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}  # Python's file names in ASCII
    payload = payload_for("json", FITTING_PROMPT, vault_repo.root)
    hooked = run_cairn("hook", "--format", "json", cwd=vault_repo.root, input=payload, env=ascii_locale)
    assert hooked.returncode == 0, hooked.stderr
    assert [card["id"] for card in json.loads(hooked.stdout)["cards"]] == [f"team:{REBASE_ID}"]
    listed = run_cairn("vault", "list", cwd=vault_repo.root)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["team", "zh"]


def test_an_older_cairns_cached_error_is_not_believed_after_an_upgrade(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: the cached copy was keyed by the file alone, so the error an older Cairn cached for a file it
    refused (one saved with a byte order mark, read past since) stood after an upgrade to a Cairn that reads it: the
    hook served nothing and every command failed with the old error until the file was edited."""
    make_vault(vault_repo)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(f'\ufeff[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\n'.encode())
    st = config.stat()
    old_error = f"{config}: not valid TOML: Invalid statement (at line 1, column 1); fix the line it names"
    stored = {"error": old_error, "key": [str(config), st.st_size, st.st_mtime_ns, st.st_ino], "version": 1}
    folder = state_dir() / "config"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / (hashlib.sha256(str(config).encode()).hexdigest()[:24] + ".json")
    copy.write_text(json.dumps(stored, sort_keys=True), encoding="utf-8")  # as Cairn before the mark was read past
    copy.chmod(0o600)

    listed = run_cairn("vault", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    payload = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s1")
    assert f"team:{REBASE_ID}" in run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=payload).stdout
    assert "error" not in json.loads(copy.read_text())


def test_scopes_typed_in_full_width_letters_are_read_as_a_cards_scope_is(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `scopes = ["ｇｉｔ"]`, as an input method types it, met no card's `scope: [git]` (a card's scope and
    `--scope` are read NFKC): the hook served nothing from the vault, and `cairn recall` noted it serves only cards
    of scope ｇｉｔ."""
    make_vault(vault_repo)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\nscopes = ["ｇｉｔ"]\n', encoding="utf-8")
    assert [v.scopes for v in load_vaults()] == [("git",)]
    payload = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s1")
    assert REBASE_ID in run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=payload).stdout


def test_recall_in_a_vault_says_when_the_configuration_cannot_be_read(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: with a typo in the user configuration (`projcts`), the prompt hook serves nothing, but `cairn
    recall` run in the vault read no configured entry and answered as for a vault the configuration does not limit:
    the card its `scopes = ["python"]` keeps from agents came out, and nothing said the file was broken."""
    make_vault(vault_repo)
    write_config(
        Path(os.environ["HOME"]),
        f'[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\nscopes = ["python"]\nprojcts = ["/srv"]\n',
    )
    payload = payload_for("claude-code", FITTING_PROMPT, tmp_path, session="s1")
    assert run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=payload).stdout == ""

    for command in ("recall", "explain"):
        done = vault_repo.invoke(command, FITTING_PROMPT)
        assert done.returncode == 0, done.stderr
        warning = next(line for line in done.stderr.splitlines() if line.startswith("Warning: "))
        assert "config.toml: [[vaults]] entry 1 (team): unknown key 'projcts'" in warning
        assert "the prompt hook serves nothing until it is fixed" in warning


def test_index_in_a_vault_says_when_the_configuration_cannot_be_read(vault_repo: VaultRepo) -> None:
    """Bug fixed: with a typo in the user configuration, `cairn index` in the vault read no configured entry and
    indexed the default branch instead of the vault's configured `ref`, saying nothing of the broken file."""
    make_vault(vault_repo)
    vault_repo.git("branch", "reviewed")
    write_config(
        Path(os.environ["HOME"]),
        f'[[vaults]]\nname = "team"\npath = "{vault_repo.root}"\nref = "reviewed"\nscopse = ["git"]\n',
    )
    done = vault_repo.invoke("index")
    assert done.returncode == 0, done.stderr
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("Warning: ")]
    assert "config.toml: [[vaults]] entry 1 (team): unknown key 'scopse'" in warning
    assert "this indexed refs/heads/main, not a ref it may configure for this vault" in warning
    # an author's own ref is not the served one: nothing to say
    done = vault_repo.invoke("index", "--ref", "HEAD")
    assert done.returncode == 0 and "Warning" not in done.stderr, done.stderr
