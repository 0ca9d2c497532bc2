"""The payload builders in helpers.payloads are what the agents send: Codex's published schema holds them."""

from __future__ import annotations

from pathlib import Path

from helpers.payloads import claude_payload, codex_payload, load_schema


def test_codex_payload_matches_codex_input_schema(tmp_path: Path) -> None:
    import jsonschema

    schema = load_schema("user-prompt-submit.command.input.schema.json")
    jsonschema.validate(codex_payload("hello", tmp_path), schema)


def test_claude_payload_is_codex_schema_minus_codex_fields(tmp_path: Path) -> None:
    schema = load_schema("user-prompt-submit.command.input.schema.json")
    claude = claude_payload("hello", tmp_path)
    assert set(claude) == set(schema["required"]) - {"model", "turn_id"}
    assert claude["hook_event_name"] == "UserPromptSubmit"
