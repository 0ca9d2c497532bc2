"""Real git vaults for tests: identities, card text, `VaultRepo`, the two-card vault, and the installed `cairn`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from helpers.cli import invoke_cli

ANN = ("Ann Author", "ann@example.com")
BOB = ("Bob Builder", "bob@example.com")

# The two-card vault's git card: FITTING_PROMPT (helpers.payloads) fits it, nothing else in that vault does.
REBASE_ID = "git/force-push-rebase"


def cairn_executable() -> str:
    """The installed `cairn` beside this interpreter (what a user or an agent runs)."""
    candidate = Path(sys.executable).with_name("cairn")
    found = str(candidate) if candidate.exists() else shutil.which("cairn")
    assert found, "the cairn command is not installed; run `pip install '.[test]'`"
    return found


def run_cairn(
    *args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed `cairn ARGS` run from `cwd`, with `env` added to the environment and `input` on stdin."""
    return subprocess.run(
        [cairn_executable(), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=input,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def run_cairn_within(limit: int, value: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed `cairn ARGS` run from `cwd` in a process under the resource limit `limit` (`resource.RLIMIT_*`)
    set to `value`: a user's `ulimit -f`, `-n` or `-v`."""
    import resource

    def limited() -> None:
        resource.setrlimit(limit, (value, value))

    return subprocess.run(
        [cairn_executable(), *args], cwd=cwd, capture_output=True, text=True, preexec_fn=limited, timeout=120
    )


_MEASURED = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stdout.write(done.stdout + done.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"  # KiB on Linux: cairn and its git
    "sys.exit(done.returncode)\n"
)


def run_cairn_measured(*args: str, cwd: Path) -> tuple[int, str, int]:
    """The installed `cairn ARGS` run from `cwd` under a small Python parent: (exit code, output, the highest resident
    memory in MB of it or of any process it started, its git)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, cairn_executable(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    *lines, rss = done.stdout.rstrip("\n").split("\n")
    return done.returncode, "\n".join(lines), int(rss)


def explain_after(root: Path, prompt: str, card_id: str) -> list[str]:
    """`cairn explain PROMPT` run as installed in the vault at `root`: the lines after the row of the injected card
    `card_id` (the first is its terms line: what it matched, and which lead was counted)."""
    shown = run_cairn("explain", prompt, cwd=root)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.split()[-1:] == [card_id] and "injected" in line)
    return lines[row + 1 :]


def state_dir() -> Path:
    """This test's Cairn state folder (the hook log, sessions), which the autouse fixture points at a temp folder."""
    return Path(os.environ["CAIRN_STATE_DIR"])


def cache_dir() -> Path:
    """This test's Cairn cache folder (the indexes)."""
    return Path(os.environ["CAIRN_CACHE_DIR"])


def card_text(name: str, summary: str, body: str = "", **fields: Any) -> str:
    """A card file's text; list values are written as YAML flow lists."""
    lines = ["---", f"name: {_yaml_scalar(name)}", f"summary: {_yaml_scalar(summary)}"]
    for key, value in fields.items():
        if isinstance(value, (list, tuple)):
            lines.append(f"{key}: [{', '.join(_yaml_scalar(v) for v in value)}]")
        else:
            lines.append(f"{key}: {value}")
    lines += ["---", "", textwrap.dedent(body).strip() or f"# {name}", ""]
    return "\n".join(lines)


def _yaml_scalar(value: str) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


class VaultRepo:
    """A real git repository holding a vault, with helpers to write cards and commit as different authors."""

    def __init__(self, root: Path, marker: bool = False) -> None:
        """marker: write Cairn's marker `cairn.toml` (committed with the first commit), without which the hook and
        the MCP server serve nothing from the vault."""
        self.root = root
        (root / "cards").mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        if marker:
            self.write_raw("cairn.toml", "")

    def git(self, *args: str, author: tuple[str, str] = ANN, check: bool = True) -> str:
        env = dict(os.environ)
        env.update(
            GIT_AUTHOR_NAME=author[0],
            GIT_AUTHOR_EMAIL=author[1],
            GIT_COMMITTER_NAME=author[0],
            GIT_COMMITTER_EMAIL=author[1],
        )
        done = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    def write(self, card_id: str, name: str, summary: str, body: str = "", **fields: Any) -> Path:
        path = self.root / "cards" / f"{card_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(card_text(name, summary, body, **fields), encoding="utf-8")
        return path

    def write_raw(self, rel_path: str, data: bytes | str) -> Path:
        path = self.root / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        return path

    def commit(self, message: str = "Update cards", author: tuple[str, str] = ANN) -> str:
        self.git("add", "-A", author=author)
        self.git("commit", "-q", "--no-verify", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")

    def cairn(
        self, *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed `cairn` as a subprocess against this vault: for what a user or an agent runs."""
        text_input = input.decode("utf-8", "replace") if isinstance(input, bytes) else input
        return run_cairn(*args, cwd=cwd or self.root, env=env, input=text_input)

    def hook(
        self, prompt: str, session: str, fmt: str = "claude-code", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The installed `cairn hook --format FMT --vault ROOT` given the agent's payload for `prompt` in `session`,
        from the vault, as the agent runs it."""
        from helpers.payloads import payload_for

        payload = payload_for(fmt, prompt, self.root, session=session)
        return self.cairn("hook", "--format", fmt, "--vault", str(self.root), input=payload, env=env)

    def hook_refusal(self) -> str:
        """Why the prompt hook serves nothing from this vault (`--vault ROOT`): its log's error, without the
        exception's name, as a command says it after `Error: `."""
        from helpers.payloads import log_entries

        done = self.hook("git pull --rebase dropped my commits", "refused")
        assert done.returncode == 0 and not done.stdout, done
        error = log_entries()[-1]["error"]
        assert error, "the hook served the vault"
        return str(error).split(": ", 1)[1]

    def same_refusal(self, said: str, logged: str) -> bool:
        """Whether a command's refusal (`said`, after `Error: `) is the one the hook logged (`hook_refusal`): the
        log keeps an error's first 500 characters, so a long one (a vault in a deep folder, named three times) is
        its start."""
        return said == logged or (len(logged) > 400 and said.startswith(logged))

    def invoke(
        self, *args: str, input: str | bytes | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a `cairn` command in this process through click's CliRunner, from the vault (or `cwd`): the same
        result as `cairn()` without a process start, for tests of a command's logic rather than of the executable."""
        return invoke_cli(list(args), input=input, env=env, cwd=cwd or self.root)


def run_unshallow_commands(note: str, clone: Path, cwd: Path) -> None:
    """The commands a shallow clone's note names (`git -C CLONE fetch --unshallow`, then `cairn index --rebuild
    --vault CLONE`): checked to name the clone, then run as printed from `cwd`, each one succeeding."""
    import re
    import shlex

    commands = re.findall(r"`([^`]+)`", note)
    assert commands == [
        f"git -C {shlex.quote(str(clone))} fetch --unshallow",
        f"cairn index --rebuild --vault {shlex.quote(str(clone))}",
    ], note
    fetched = subprocess.run(shlex.split(commands[0]), cwd=cwd, capture_output=True, text=True, check=False)
    assert fetched.returncode == 0, fetched.stderr
    indexed = invoke_cli(shlex.split(commands[1])[1:], cwd=cwd)
    assert indexed.returncode == 0, indexed.stderr


def make_vault(repo: VaultRepo) -> str:
    """Two cards on unrelated topics (git's REBASE_ID and a Docker card) and Cairn's marker `cairn.toml` (the hook
    serves no folder without it), committed and indexed; returns the commit."""
    if not (repo.root / "cairn.toml").exists():
        repo.write_raw("cairn.toml", "# Cairn's settings for this vault: the defaults.\n")
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
    done = repo.invoke("index")
    assert done.returncode == 0, done.stderr
    return commit


def write_filler_cards(repo: VaultRepo, n: int) -> None:
    """`n` cards on subjects no test prompt asks about: a vault as large as recall's semantic rules need
    (`recall.SEMANTIC_MIN_CARDS`), whose cards stay out of the way of the ones a test is about."""
    for i in range(n):
        repo.write(
            f"garden/plant-{i:02d}",
            f"Houseplant {i:02d} wants water on day {i % 7}",
            f"Houseplant {i:02d} wilts in a dry week; water it on day {i % 7} and repot it every {i % 3 + 1} springs.",
            scope=["garden"],
        )


def write_drafts(repo: VaultRepo, n: int) -> None:
    """`n` drafts of a k8s lesson named "Zorblax quuxfrob flimflam", which outscore any active card on those words
    (explain's candidates below 20 of them)."""
    for i in range(n):
        repo.write(
            f"k8s/draft-{i:02d}",
            "Zorblax quuxfrob flimflam",
            f"Zorblax quuxfrob flimflam zorblax quuxfrob flimflam {i}.",
            scope=["k8s"],
            status="draft",
        )
