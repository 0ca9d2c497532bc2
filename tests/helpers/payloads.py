"""Real agent payloads for the hook tests (checked against Codex's schema), the prompts that fit the two-card vault
(helpers.vaults.make_vault) or nothing in it, and the hook log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.vaults import state_dir

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# A prompt that clearly fits the rebase card, and one that fits nothing in the vault.
FITTING_PROMPT = "git pull --rebase dropped my local commits after someone force-pushed the shared branch"
UNRELATED_PROMPT = "bake a chocolate cake with vanilla frosting for the birthday party"


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
    """What the agent behind `cairn hook --format FMT` sends on stdin."""
    if fmt == "claude-code":
        return json.dumps(claude_payload(prompt, cwd, session))
    if fmt == "codex":
        return json.dumps(codex_payload(prompt, cwd, session))
    if fmt == "gemini":
        return json.dumps(gemini_payload(prompt, cwd, session))
    if fmt == "json":
        return json.dumps({"prompt": prompt, "session_id": session})
    return prompt


def log_entries() -> list[dict[str, Any]]:
    """The hook log's entries, oldest first."""
    path = state_dir() / "hook.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def load_schema(name: str) -> dict[str, Any]:
    """One of Codex's published hook JSON schemas (tests/fixtures/codex)."""
    return json.loads((FIXTURES / "codex" / name).read_text("utf-8"))  # type: ignore[no-any-return]
