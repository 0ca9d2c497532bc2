"""Real agent payloads for the hook tests (checked against Codex's schema), a two-card vault, the hook log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from conftest import VaultRepo

FIXTURES = Path(__file__).parent / "fixtures"

# A prompt that clearly fits the rebase card, and one that fits nothing in the vault.
FITTING_PROMPT = "git pull --rebase dropped my local commits after someone force-pushed the shared branch"
UNRELATED_PROMPT = "bake a chocolate cake with vanilla frosting for the birthday party"
REBASE_ID = "git/force-push-rebase"


def make_vault(repo: VaultRepo) -> str:
    """Two cards on unrelated topics, committed and indexed; returns the commit."""
    repo.write(
        REBASE_ID,
        "Pull --rebase drops local commits after a force-push",
        "If the shared branch was force-pushed, git pull --rebase can silently drop your local commits; "
        "compare with git reflog before you pull.",
        scope=["git"],
    )
    repo.write(
        "docker/layer-cache-order",
        "Docker layer cache breaks when COPY comes first",
        "Copy requirements.txt and run pip install before copying the source, so Docker keeps the dependency layer.",
        scope=["docker"],
    )
    commit = repo.commit("Two cards")
    done = repo.cairn("index")
    assert done.returncode == 0, done.stderr
    return commit


def claude_payload(prompt: str, cwd: Path, session: str = "session-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def codex_payload(prompt: str, cwd: Path, session: str = "session-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": None,
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "turn_id": "turn-1",
        "prompt": prompt,
    }


def gemini_payload(prompt: str, cwd: Path, session: str = "session-1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(cwd / "chat.json"),
        "cwd": str(cwd),
        "hook_event_name": "BeforeAgent",
        "timestamp": "2026-05-01T12:00:00.000Z",
        "prompt": prompt,
    }


def payload_for(fmt: str, prompt: str, cwd: Path, session: str = "session-1") -> str:
    if fmt == "claude-code":
        return json.dumps(claude_payload(prompt, cwd, session))
    if fmt == "codex":
        return json.dumps(codex_payload(prompt, cwd, session))
    if fmt == "gemini":
        return json.dumps(gemini_payload(prompt, cwd, session))
    if fmt == "json":
        return json.dumps({"prompt": prompt, "session_id": session})
    return prompt


def state_dir() -> Path:
    return Path(os.environ["CAIRN_STATE_DIR"])


def log_entries() -> list[dict[str, Any]]:
    path = state_dir() / "hook.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def load_schema(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "codex" / name).read_text("utf-8"))  # type: ignore[no-any-return]


# -- the payload builders above are what the agents send -------------------------------------------------------


def test_codex_payload_matches_codex_input_schema(tmp_path: Path) -> None:
    import jsonschema

    schema = load_schema("user-prompt-submit.command.input.schema.json")
    jsonschema.validate(codex_payload("hello", tmp_path), schema)


def test_claude_payload_is_codex_schema_minus_codex_fields(tmp_path: Path) -> None:
    schema = load_schema("user-prompt-submit.command.input.schema.json")
    claude = claude_payload("hello", tmp_path)
    assert set(claude) == set(schema["required"]) - {"model", "turn_id"}
    assert claude["hook_event_name"] == "UserPromptSubmit"
