"""The hot path's string versions of what it used `pathlib`, `re` and `shlex` for give what those gave: vault
discovery, the cache and state folders, the index path and its URI, the vault key, shell quoting, plain text."""

from __future__ import annotations

import os
import re
import shlex
import unicodedata
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cairn.hot import hook, paths
from cairn.hot.errors import VaultNotFound
from cairn.hot.vault import Vault, VaultDirs, find_vault, locate_vault

posix_only = pytest.mark.skipif(os.name != "posix", reason="the string paths follow POSIX; Windows uses pathlib")


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet=st.sampled_from("aZ09_@%+=:,./-'\" \t\n$`\\!*?é"))))
@example("")
@example("'")
def test_quote_is_shlex_quote(arg: str) -> None:
    assert hook._quote(arg) == shlex.quote(arg)


_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn"}  # controls, format (zero-width, bidi, tags), surrogates, private, unassigned


def _plain_spec(text: str, limit: int) -> str:
    """What the agent may read of card text: white space of any kind as one space, every other character that
    is not printable (by its Unicode category) dropped, cut at `limit` with an ellipsis."""
    out = []
    for char in text:
        if char.isspace() or unicodedata.category(char) in ("Zl", "Zp", "Zs"):
            out.append(" ")
        elif unicodedata.category(char) not in _HIDDEN:
            out.append(char)
    flat = " ".join("".join(out).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@settings(max_examples=2000, deadline=None)
@given(st.text(), st.integers(min_value=2, max_value=50))
@example("a\u202eb\x00\x00c\u2069 d", 10)
@example("x\U000e0041\u200by\u2028z\u00a0w", 20)
def test_plain_text_drops_what_is_not_printable(text: str, limit: int) -> None:
    assert hook._plain(text, limit) == _plain_spec(text, limit)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet=st.sampled_from("aZ09._- -!é/\x00"))))
def test_the_vault_key_text_is_the_regex_substitution(name: str) -> None:
    assert paths._key_text(name) == re.sub(r"[^A-Za-z0-9._-]+", "-", name)


PATH_TEXT = st.lists(st.sampled_from(["a", "b", "/", ".", "..", "~", " ", "é", "\x00"]), max_size=12).map("".join)


@posix_only
@settings(max_examples=2000, deadline=None)
@given(PATH_TEXT, st.lists(st.sampled_from(["x", "cairn", ".cache", "..", "a b"]), max_size=3))
@example("//", [])
@example("///a//", ["x"])
@example("", [])
def test_path_text_is_str_of_a_path(first: str, names: list[str]) -> None:
    assert paths.path_text(first, *names) == str(PurePosixPath(first, *names))


@posix_only
def test_folders_are_str_of_the_paths_they_were(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def old_cache_dir() -> Path:
        if os.path.isabs(os.environ.get("CAIRN_CACHE_DIR", "")):  # a relative one would be the agent's project's
            return Path(os.environ["CAIRN_CACHE_DIR"])
        if os.path.isabs(os.environ.get("XDG_CACHE_HOME", "")):  # a relative one is invalid (the XDG spec)
            return Path(os.environ["XDG_CACHE_HOME"]) / "cairn"
        return Path.home() / ".cache" / "cairn"

    def old_state_dir() -> Path:
        if os.path.isabs(os.environ.get("CAIRN_STATE_DIR", "")):  # a relative one would be the agent's project's
            return Path(os.environ["CAIRN_STATE_DIR"])
        if os.path.isabs(os.environ.get("XDG_STATE_HOME", "")):  # a relative one is invalid (the XDG spec)
            return Path(os.environ["XDG_STATE_HOME"]) / "cairn"
        return Path.home() / ".local" / "state" / "cairn"

    values = ["", "/tmp//x/./", "rel/dir/", "//two", "/", "~/x", "a/../b"]
    for cairn_dir in values:
        for xdg in values:
            for home in ("/home/u/", "/", "//h", "rel"):
                for name in ("CACHE", "STATE"):
                    monkeypatch.setenv(f"CAIRN_{name}_DIR", cairn_dir)
                    monkeypatch.setenv(f"XDG_{name}_HOME", xdg)
                monkeypatch.setenv("HOME", home)
                assert paths.cache_folder() == str(old_cache_dir())
                assert paths.state_folder() == str(old_state_dir())
                assert paths.cache_dir() == old_cache_dir() and paths.state_dir() == old_state_dir()
                root = tmp_path / "v"
                old_index = old_cache_dir() / "vaults" / paths.vault_key(root) / "index.cairn"
                assert paths.index_file(root) == str(old_index) and paths.index_path(root) == old_index


def _file_tree(tmp_path: Path) -> list[str]:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link-dir").symlink_to(tmp_path / "dir")
    (tmp_path / "link-file").symlink_to(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    names = ["dir", "file", "link-dir", "link-file", "dangling", "loop-a", "missing", "file/below", "dir/../file"]
    return [str(tmp_path / name) for name in names] + ["bad\x00path", ".", "", "/"]


@posix_only
def test_file_tests_are_pathlib_s(tmp_path: Path) -> None:
    for path in _file_tree(tmp_path):
        assert paths.is_dir(path) == Path(path).is_dir(), path
        assert paths.is_file(path) == Path(path).is_file(), path
        assert paths.exists(path) == Path(path).exists(), path


@posix_only
def test_resolve_is_pathlib_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for path in [*_file_tree(tmp_path), "dir/../link-dir", "link-dir/..", "nowhere/x"]:
        if "\x00" in path:
            continue
        try:
            expected: object = str(Path(path).resolve())
        except RuntimeError as exc:
            expected = ("RuntimeError", str(exc))
        try:
            got: object = paths.resolve(path)
        except RuntimeError as exc:
            got = ("RuntimeError", str(exc))
        assert got == expected, path


def reference_find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Vault:
    """`find_vault` as it was, with pathlib (the specification of the one discovery algorithm)."""
    given = explicit or os.environ.get("CAIRN_VAULT")
    if given:
        root = Path(given).expanduser()
        if not root.is_dir():
            if not explicit and os.pathsep in str(given):
                raise VaultNotFound(
                    f"CAIRN_VAULT names one vault, not a list: {str(given)!r}; set it to a single vault's folder"
                )
            raise VaultNotFound(f"vault {str(given)!r} is not a folder; create one with `cairn init {given}`")
        if not (root / "cards").is_dir():
            real = root.resolve()
            if real.name == "cards" and _reference_holds_a_vault(real.parent):
                raise VaultNotFound(f"{str(given)!r} is a vault's cards/ folder; pass the vault itself: {real.parent}")
            raise VaultNotFound(f"{str(given)!r} has no cards/ folder; create a vault with `cairn init PATH`")
        return _reference_vault_at(root.resolve())
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if _reference_holds_a_vault(folder):
            return _reference_vault_at(folder)
        if (folder / ".git").exists():
            break
    raise VaultNotFound("no vault here; pass --vault PATH, set CAIRN_VAULT, or create one with `cairn init PATH`")


def _reference_holds_a_vault(folder: Path) -> bool:
    return (folder / "cards").is_dir() and ((folder / "cairn.toml").is_file() or (folder / ".git").exists())


def _reference_vault_at(root: Path) -> Vault:
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            rel = root.relative_to(folder).as_posix()
            return Vault(root=root, git_root=folder, prefix="" if rel == "." else rel + "/")
    return Vault(root=root, git_root=None, prefix="")


def _outcome(call: object, *args: object) -> object:
    try:
        return call(*args)  # type: ignore[operator]
    except (VaultNotFound, RuntimeError) as exc:
        return type(exc).__name__, str(exc)


@posix_only
def test_vault_discovery_finds_what_the_pathlib_version_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    for folder in ("repo/.git", "repo/cards", "repo/sub/vault/cards", "repo/sub/vault/deep", "plain/cards",
                   "plain/inner/cards", "loose/cards", "home/v/cards", "gitfile/cards", "nested/.git",
                   "nested/inner/.git", "nested/inner/cards", "nested/cards"):  # fmt: skip
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "repo/sub/vault/cairn.toml").write_text("")
    (tmp_path / "plain/cairn.toml").write_text("")
    (tmp_path / "plain/inner/cairn.toml").write_text("")
    (tmp_path / "gitfile/.git").write_text("gitdir: elsewhere\n")
    (tmp_path / "link").symlink_to(tmp_path / "repo/sub")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CAIRN_VAULT", raising=False)
    monkeypatch.chdir(tmp_path / "repo")
    places = ["repo", "repo/cards", "repo/sub", "repo/sub/vault", "repo/sub/vault/deep", "plain", "plain/inner",
              "plain/inner/cards", "loose", "home", "home/v", "gitfile", "nested/inner", "nested", "link/vault/deep",
              "missing", "loop", "/"]  # fmt: skip
    explicit = [None, "~/v", "~", "~nosuchuser/x", "sub/vault/", "./sub//vault/.", "../plain", "cards", "missing",
                str(tmp_path / "link" / "vault"), str(tmp_path / "loose") + "/", "loop"]  # fmt: skip
    for vault_arg in explicit:
        for place in places:
            cwd = tmp_path / place if place != "/" else Path("/")
            expected = _outcome(reference_find_vault, vault_arg, cwd)
            assert _outcome(find_vault, vault_arg, cwd) == expected, (vault_arg, place)
            found = _outcome(locate_vault, vault_arg, str(cwd))
            if isinstance(expected, Vault):
                assert isinstance(found, VaultDirs)
                assert (found.root, found.git_root, found.prefix) == (
                    str(expected.root),
                    None if expected.git_root is None else str(expected.git_root),
                    expected.prefix,
                )
            else:
                assert found == expected
    monkeypatch.setenv("CAIRN_VAULT", str(tmp_path / "plain"))
    assert find_vault() == reference_find_vault()
    assert find_vault(None, tmp_path / "loose") == reference_find_vault(None, tmp_path / "loose")


def test_without_a_cwd_discovery_starts_in_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cards").mkdir()
    (tmp_path / "cairn.toml").write_text("")
    monkeypatch.delenv("CAIRN_VAULT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert find_vault() == reference_find_vault() and find_vault().root == tmp_path.resolve()
    assert locate_vault().root == str(tmp_path.resolve())


def test_reading_an_index_path_given_as_a_string_or_a_path(tmp_path: Path) -> None:
    from cairn.hot.errors import IndexMissing
    from cairn.hot.index import IndexReader

    with pytest.raises(IndexMissing, match="no index at"):
        IndexReader(str(tmp_path / "none.cairn"))
    with pytest.raises(IndexMissing, match="no index at"):
        IndexReader(tmp_path / "none.cairn")
