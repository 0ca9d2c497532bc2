"""Load: 50 hooks of one session at once while two `cairn index` runs rebuild; nothing twice, nothing broken."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.payloads import FITTING_PROMPT as FITTING
from helpers.vaults import VaultRepo, cairn_executable, make_vault, state_dir

HOOKS = 50


@pytest.mark.slow
def test_fifty_hooks_and_two_index_runs_at_once(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    for n in range(8):  # more cards, so the index runs take a while and overlap the hooks
        vault_repo.write(f"misc/card-{n}", f"Misc lesson {n}", f"lesson number {n} about shell quoting and make")
    vault_repo.commit("More cards")
    assert vault_repo.invoke("index").returncode == 0  # fresh: a stale index serves nothing (the rebuild below races)
    env = dict(os.environ, CAIRN_VAULT=str(vault_repo.root))  # the hook serves only a vault it is given
    payload = json.dumps({"session_id": "one-session", "cwd": str(vault_repo.root), "prompt": FITTING}).encode()
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    for args in (["index", "--rebuild"], ["index"]):
        procs.append(("index", _spawn(args, vault_repo.root, env)))
    for _ in range(HOOKS):
        procs.append(("hook", _spawn(["hook", "--format", "claude-code"], vault_repo.root, env, stdin=True)))
    outputs: list[bytes] = []
    for kind, proc in procs:
        out, err = proc.communicate(payload if kind == "hook" else None, timeout=300)  # a hang guard
        assert proc.returncode == 0, (kind, err)
        assert b"Traceback" not in err
        if kind == "hook" and out.strip():
            outputs.append(out)
    contexts = [json.loads(out)["hookSpecificOutput"]["additionalContext"] for out in outputs]
    assert sum("force-push-rebase" in c for c in contexts) == 1  # never injected twice in one session
    log = [json.loads(line) for line in (state_dir() / "hook.jsonl").read_text("utf-8").splitlines()]
    assert len(log) == HOOKS
    injected = [card for entry in log for card in entry["injected"]]
    assert injected == ["git/force-push-rebase"]  # exactly once: the session's lock serialises its hooks
    for path in (state_dir() / "sessions").glob("*.json"):
        session = json.loads(path.read_text("utf-8"))
        assert set(session["injected"]) <= {"git/force-push-rebase", "docker/layer-cache-order"}
    assert not list(Path(os.environ["CAIRN_CACHE_DIR"]).rglob("*.tmp"))
    audit = vault_repo.cairn("audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _spawn(args: list[str], cwd: Path, env: dict[str, str], stdin: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [cairn_executable(), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
