"""The agents' own switches that turn their hooks off: set, Cairn's hook is installed and runs nowhere.

`cairn doctor` fails each one it finds, naming the file and the setting to change. Each agent documents its own:
Claude Code's `disableAllHooks` (the switch of its `/hooks` menu), Codex's `[features] hooks = false` in
`config.toml`, Gemini CLI's `hooksConfig.enabled = false` and `hooksConfig.disabled` (hook names it skips).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cairn import install


@dataclass(frozen=True, slots=True)
class SwitchedOff:
    """One setting that keeps Cairn's hook from running. where: `user`, `project` or `system`; fix: what to do."""

    agent: str
    where: str
    detail: str
    fix: str


def claude_hooks_switched_off(places: list[tuple[str, Path]]) -> list[SwitchedOff]:
    """Each Claude Code settings file that sets `disableAllHooks`: Claude Code then runs no hook at all. Each
    project folder's `settings.local.json` (the personal file beside `settings.json`) is read too."""
    files: list[tuple[str, Path]] = []
    for where, path in places:
        files.append((where, path))
        if where == "project" and path.name == "settings.json":
            files.append((where, path.with_name("settings.local.json")))
    found = []
    for where, path in dict.fromkeys(files):
        data = install.settings_data("claude-code", path)
        if data is not None and data.get("disableAllHooks") is True:
            detail = f'{path} sets "disableAllHooks": true, so Claude Code runs no hook, Cairn\'s included'
            found.append(SwitchedOff("claude-code", where, detail, f'remove "disableAllHooks" from {path}'))
    return found


def codex_hooks_switched_off(config: Path) -> list[SwitchedOff]:
    """Codex's own configuration (`config.toml` beside its user hooks.json, in CODEX_HOME) switching hooks off:
    `[features] hooks = false`, or `codex_hooks = false`, the older name, without `hooks`."""
    data = install.toml_data(config)
    features = data.get("features") if data is not None else None
    if not isinstance(features, dict):
        return []
    key = "hooks" if "hooks" in features else "codex_hooks"
    if features.get(key) is not False:
        return []
    detail = f"{config} sets `{key} = false` under [features], so Codex runs no hook, Cairn's included"
    return [SwitchedOff("codex", "user", detail, f"set `{key} = true` under [features] in {config}")]


def gemini_hooks_switched_off(places: list[tuple[str, Path]], commands: list[str]) -> list[SwitchedOff]:
    """Gemini CLI's switches (geminicli.com/docs/reference/configuration, `hooksConfig`): `enabled` is "the
    canonical toggle for the hooks system. When disabled, no hooks will be executed"; `disabled` lists hook names
    (or commands) that do not run. Cairn's hook is named `cairn`.

    `enabled` is a single value: the file of highest precedence that sets it decides (system settings over the
    project's over the user's over the system defaults). A `disabled` list is read in every file, as Gemini CLI
    joins the lists of its settings files."""
    layers = [("system", p) for p in _gemini_system_files()[:1]]  # the defaults, lowest
    layers += [(w, p) for w, p in places if w == "user"]
    layers += [(w, p) for w, p in reversed(places) if w == "project"]  # the nearest project's file last
    layers += [("system", p) for p in _gemini_system_files()[1:]]  # the system settings, highest
    names = {"cairn", *commands}
    found = []
    deciding: tuple[str, Path] | None = None
    for where, path in layers:
        config = (install.settings_data("gemini", path) or {}).get("hooksConfig")
        if not isinstance(config, dict):
            continue
        if isinstance(config.get("enabled"), bool):
            deciding = (where, path) if config["enabled"] is False else None
        listed = config.get("disabled")
        skipped = (
            sorted(names & set(listed)) if isinstance(listed, list) and all(isinstance(n, str) for n in listed) else []
        )
        if skipped:
            detail = (
                f"{path} lists {', '.join(repr(n) for n in skipped)} in hooksConfig.disabled, so Gemini CLI skips "
                "Cairn's hook"
            )
            found.append(SwitchedOff("gemini", where, detail, f"remove it from hooksConfig.disabled in {path}"))
    if deciding is not None:
        where, path = deciding
        detail = f'{path} sets hooksConfig "enabled": false, so Gemini CLI runs no hook, Cairn\'s included'
        found.insert(0, SwitchedOff("gemini", where, detail, f'remove "enabled": false from hooksConfig in {path}'))
    return found


def _gemini_system_files() -> list[Path]:
    """Gemini CLI's system defaults file and system settings file, as it finds them (its environment overrides,
    else the platform's folder)."""
    if sys.platform == "darwin":
        folder = Path("/Library/Application Support/GeminiCli")
    elif sys.platform == "win32":  # pragma: no cover
        folder = Path("C:/ProgramData/gemini-cli")
    else:
        folder = Path("/etc/gemini-cli")
    defaults = os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or str(folder / "system-defaults.json")
    system = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or str(folder / "settings.json")
    return [Path(defaults), Path(system)]
