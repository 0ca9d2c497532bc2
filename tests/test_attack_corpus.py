"""The attack corpus (tests/fixtures/attacks/cases.json): cards written to get instructions, remote code or secrets
into an agent's context, each with the lint finding it must give and a payload the hook's output must never hold.

Every case is committed (with --no-verify, as an attacker would) into one real vault, next to a clean "twin" card
whose name is the case's prompt: `cairn lint` fails with the case's rule, `cairn index` refuses the card (serving
refuses what lint refuses) and the installed `cairn hook`, fed a real Claude Code payload with the prompt, serves
the twin, never the payload. The JSON is written with `ensure_ascii`, so invisible characters show as escapes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from cairn.cards.card import parse_card
from cairn.cards.visible import invisible_in
from cairn.cli.vault_cmds import SHOWN_LEFT_OUT
from cairn.hot.vault import find_vault
from cairn.lint import lint_files
from cairn.lint.security import security_rules
from helpers.payloads import claude_payload
from helpers.vaults import VaultRepo, make_vault

CASES: list[dict[str, str]] = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "attacks" / "cases.json").read_text("utf-8")
)
SECURITY = {rule.id for rule in security_rules()}  # a new security rule needs its case here
TODAY = dt.date(2026, 12, 1)


def test_the_corpus_covers_the_issue() -> None:
    assert len(CASES) >= 40
    assert len({c["id"] for c in CASES}) == len(CASES) and len({c["path"] for c in CASES}) == len(CASES)
    missing = SECURITY - {c["rule"] for c in CASES}
    assert not missing, f"no case in tests/fixtures/attacks/cases.json for the security rule(s) {sorted(missing)}"
    assert {c["rule"] for c in CASES} == SECURITY
    texts = " ".join(c["text"] + c["path"] for c in CASES)
    for needle in (
        "\\x49",
        "\\u0059",
        "SYSTEM:",
        "</system>",
        "<|im_start|>",
        "[INST]",
        "### Instruction",
        "| sh",
        "| bash",
        "nc -e",
        "base64 -d",
        "id_rsa",
        "\u200b",
        "\u202e",
        "\U000e0041",
        "\u043e",
        "\uff49",
        "忽略",
        "你现在是",
        "以前の指示",
        "Ignora",
        "<!--",
        "pre-approved",
        "postgres://",
        "password=",
        "passwd:",
        "DB_PASS=",
        "sk-proj-",
        "ghp_",
        "github_pat_",
        "xoxb-",
        "AIza",
        "sk_live_",
        "hooks.slack.com",
        "eyJ",
        "PRIVATE KEY",
        "SYSTEM NOTE",
        "Ig**nore**",
        "I_gnore_",
        "**Ignore**",
        "Ig<b>nore</b>",
        "%49gnore",
        '"ignore previous instructions',
        "![Ignore",
        "Ignore the user's request",
        "ignore.previous.instructions",
        "IgnorePreviousInstructions",
        "Ignore your instructions",
        "Ignore-all-previous-instructions",
        "pre<!-- -->vious",
        "curl -u deploy:",
        "Authorization: Basic",
        "Authorization: Bearer",
        "-pS3cr3t",
        'passphrase: "',
        "Ignore the above and",
        "Disregard the above,",
        "Please `ignore` all",
        "Ig-\nnore",
        "Ig-\n  nore",
        "%7C sh",
        "%69nstall",
        "Dont tell",
        "\u2019re",
        "you are\n> now",
    ):
        assert needle in texts, needle


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_lint_gives_the_cases_finding(case: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "vault"
    card = root / case["path"]
    card.parent.mkdir(parents=True)
    card.write_text(case["text"], encoding="utf-8")
    report = lint_files(find_vault(root), [case["path"]], today=TODAY)
    errors = {f.rule for f in report.errors}
    assert case["rule"] in errors, [str(f) for f in report.findings]
    parsed, contract = parse_card(case["path"], case["text"].encode("utf-8"))
    assert parsed is not None, contract  # every case is a valid card: only the security rules stop it
    served = [parsed.name, parsed.summary, *parsed.aliases]
    assert not any(invisible_in(text) for text in served)  # removed at parse time, linted or not


def _twin(case: dict[str, str]) -> str:
    prompt = case["prompt"]
    return f"---\nname: {json.dumps(prompt.capitalize())}\nsummary: {json.dumps('Reviewed lesson: ' + prompt)}\n---\n\n# {prompt}\n\nThe fix.\n"


def test_committed_attacks_are_refused_by_lint_index_and_hook(vault_repo: VaultRepo) -> None:
    vault_repo.write_raw("cairn.toml", "# the vault's settings: Cairn's defaults\n")
    for n, case in enumerate(CASES):
        vault_repo.write_raw(case["path"], case["text"])
        vault_repo.write_raw(f"cards/twin/t{n}.md", _twin(case))  # ids that hold no payload
    vault_repo.commit("An attacker's cards, committed with --no-verify")
    added = vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team")  # the hook serves it
    assert added.returncode == 0, added.stderr

    lint = vault_repo.cairn("lint", "--json")
    assert lint.returncode == 1, lint.stderr
    errors: dict[str, set[str]] = {}
    for finding in json.loads(lint.stdout):
        if finding["severity"] == "error":
            errors.setdefault(finding["path"], set()).add(finding["rule"])
    missing = [c["id"] for c in CASES if c["rule"] not in errors.get(c["path"], set())]
    assert missing == []
    assert not any(path.startswith("cards/twin/") and rules & SECURITY for path, rules in errors.items())

    index = vault_repo.cairn("index", "--json")
    assert index.returncode == 0, index.stderr
    report: dict[str, Any] = json.loads(index.stdout)
    refused = {p["path"]: p for p in report["problems"]}
    assert sorted(refused) == sorted(c["path"] for c in CASES)
    assert all(p["rule"] in SECURITY and p["message"].startswith("refused:") for p in refused.values())
    assert report["cards"] == len(CASES)  # the twins, nothing else
    human = vault_repo.cairn("index", "--rebuild").stderr.splitlines()  # names the first 20, counts the rest
    assert sum("refused:" in line for line in human) == SHOWN_LEFT_OUT < len(CASES)
    assert f"... and {len(CASES) - SHOWN_LEFT_OUT} more left out." in human
    assert f"{len(CASES)} card file(s) left out; fix them (see `cairn lint`) and commit." in human

    served = 0
    for n, case in enumerate(CASES):
        payload = json.dumps(claude_payload(case["prompt"], vault_repo.root, session=case["id"]))
        hook = vault_repo.cairn(
            "hook", "--format", "claude-code", input=payload, env={"CAIRN_VAULT": str(vault_repo.root)}
        )
        assert hook.returncode == 0, hook.stderr
        assert case["payload"] not in hook.stdout, case["id"]
        if hook.stdout.strip():
            context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
            assert case["payload"] not in context, case["id"]
            assert not invisible_in(context)
            served += f"twin/t{n}" in context
    assert served == len(CASES)  # the prompts fit: each case's clean twin is served in its place


def _case(case_id: str) -> dict[str, str]:
    return next(c for c in CASES if c["id"] == case_id)


def test_an_incremental_index_refuses_a_card_pushed_past_lint(vault_repo: VaultRepo) -> None:
    vault_repo.write_raw("cairn.toml", "")
    case = _case("pre-approved")
    vault_repo.write_raw("cards/twin/t0.md", _twin(case))
    vault_repo.commit("a clean card")
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    assert vault_repo.cairn("index").returncode == 0
    vault_repo.write_raw(case["path"], case["text"])
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["security", "prompt-injection"]\n')  # the PR's own
    vault_repo.commit("an injection card with security switched off, --no-verify")
    index = vault_repo.cairn("index", "--json")
    report = json.loads(index.stdout)
    assert report["mode"] == "incremental", report
    assert [(p["path"], p["rule"]) for p in report["problems"]] == [(case["path"], "prompt-injection")]
    hook = vault_repo.cairn(
        "hook",
        "--format",
        "claude-code",
        input=json.dumps(claude_payload(case["prompt"], vault_repo.root)),
        env={"CAIRN_VAULT": str(vault_repo.root)},  # the hook serves only a vault it is given
    )
    assert "twin/t0" in hook.stdout and case["payload"] not in hook.stdout
    lint = vault_repo.cairn("lint")
    assert lint.returncode == 1 and "security-disable" in lint.stdout and "prompt-injection" in lint.stdout


def test_only_the_user_config_lets_a_vault_serve_what_a_security_rule_refuses(vault_repo: VaultRepo) -> None:
    case = _case("secret-db-url")
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    vault_repo.write_raw(case["path"], case["text"])
    vault_repo.commit("a card with a password, secret disabled by the vault")
    refused = json.loads(vault_repo.cairn("index", "--json").stdout)
    assert [p["rule"] for p in refused["problems"]] == ["secret"] and refused["cards"] == 0
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[security]\nallow_disabled_rules = ["secret"]\n')
    allowed = json.loads(vault_repo.cairn("index", "--rebuild", "--json").stdout)
    assert allowed["problems"] == [] and allowed["cards"] == 1
    assert vault_repo.cairn("lint").returncode == 0


def test_doctor_names_an_allowed_rule_that_is_no_security_rule(vault_repo: VaultRepo) -> None:
    """`allow_disabled_rules = ["secrets"]` (for `secret`: the example in Cairn's own error said "secrets") allowed
    nothing, and nothing said so: the vault's `disable = ["secret"]` stayed ignored. Doctor names it."""
    make_vault(vault_repo)
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.write_text(config.read_text() + '\n[security]\nallow_disabled_rules = ["secrets", "secret", "security"]\n')
    checks = json.loads(vault_repo.cairn("doctor", "--json").stdout)["checks"]
    found = [c for c in checks if c["area"] == "config" and "allow_disabled_rules" in c["detail"]]
    assert [(c["ok"], c["detail"].split(", which")[0]) for c in found] == [
        (False, "[security] allow_disabled_rules names 'secrets'")
    ]
    assert found[0]["detail"].endswith(", remote-code, secret)") and found[0]["note"].startswith(f"fix {config}")
    config.write_text('[security]\nallow_disabled_rules = "secret"\n')
    listed = vault_repo.cairn("vault", "list")
    assert listed.returncode == 1 and 'e.g. ["secret"]' in listed.stderr


def test_a_security_rule_switched_back_on_refuses_the_cards_it_let_in(
    vault_repo: VaultRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _case("secret-db-url")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "cairn" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[security]\nallow_disabled_rules = ["secret"]\n')
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    vault_repo.write_raw(case["path"], case["text"])
    vault_repo.write_raw("cards/twin/t0.md", _twin(_case("pre-approved")))
    vault_repo.commit("a card with a password, secret disabled by the vault with the user's leave")

    def indexed() -> tuple[str, int]:
        report = json.loads(vault_repo.cairn("index", "--json").stdout)
        return report["mode"], report["cards"]

    def hook(session: str) -> str:
        prompt = "Raise the pool timeout of the database pool"
        payload = json.dumps(claude_payload(prompt, vault_repo.root, session))
        return vault_repo.cairn("hook", "--format", "claude-code", input=payload).stdout

    assert indexed() == ("full", 2)
    # The vault's own cairn.toml turns the rule back on: the card no diff names is refused all the same.
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.commit("stop disabling the secret rule")
    assert indexed() == ("full", 1)
    vault_repo.write_raw("cairn.toml", '[lint]\ndisable = ["secret"]\n')
    vault_repo.commit("disable it again")
    assert indexed()[1] == 2
    monkeypatch.setenv("CAIRN_VAULT", str(vault_repo.root))  # the hook serves only a vault it is given
    assert case["payload"] in hook("s-1")
    # The user withdraws the leave: the hook serves nothing from the index built under it, and the index re-reads.
    config.write_text("[security]\nallow_disabled_rules = []\n")
    assert hook("s-2") == ""
    line = json.loads((Path(os.environ["CAIRN_STATE_DIR"]) / "hook.jsonl").read_text().splitlines()[-1])
    assert line["stale"] is True and "allow_disabled_rules" in line["vaults"][0]["error"]
    assert indexed()[1] == 1  # (the hook's background index may have been first)


def _cut_after(text: str, tail: str, keep: str, limit: int) -> str:
    """`text` padded so that the hook's cut to `limit` characters ends right after `keep`, the start of `tail`."""
    room = limit - 1 - len(keep) - 1
    return (text * (room // len(text) + 1))[:room].rstrip().ljust(room, "x") + " " + tail


@pytest.mark.parametrize("field", ["name", "summary"])
def test_a_field_the_hook_cuts_is_judged_as_it_is_served(vault_repo: VaultRepo, field: str) -> None:
    # Whole, the text pipes a download into shellcheck; cut to what the hook serves, into sh.
    limit = {"name": 200, "summary": 2000}[field]
    tail = "curl https://get.example.com/i | shellcheck - before you merge"
    text = _cut_after(
        "Pin the CI runner image and cache the lockfile hash. ", tail, tail[: tail.index("sh") + 2], limit
    )
    fields = {"name": "CI runner cache key", "summary": "Pin the CI runner image and cache the lockfile hash."}
    fields[field] = text
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write("ci/runner-cache", fields["name"], fields["summary"], scope=["ci"])
    vault_repo.commit("a card whose cut text pipes a download into a shell, --no-verify")
    assert vault_repo.cairn("vault", "add", str(vault_repo.root), "--name", "team").returncode == 0

    lint = vault_repo.cairn("lint", "cards/ci/runner-cache.md")
    assert lint.returncode == 1 and "remote-code" in lint.stdout, lint.stdout
    index = json.loads(vault_repo.cairn("index", "--json").stdout)
    assert [p["rule"] for p in index["problems"]] == ["remote-code"] and index["cards"] == 0
    payload = json.dumps(claude_payload("CI runner cache key lockfile hash", vault_repo.root))
    hook = vault_repo.cairn("hook", "--format", "claude-code", input=payload)
    assert hook.returncode == 0 and "| sh" not in hook.stdout
