"""How long `cairn hook --format claude-code` takes end to end, as a ratio to a bare `python -c pass`.

Run from the repository root:
    .venv/bin/python -m benchmarks.bench_hook [--sizes 1000,10000,100000] [--runs 30] [--rev REV | --venv DIR]
        [--layered NxSIZE,...] [--instructions] [--wrapped] [--typographic] [--sessions N] [--json]

What is timed is what a user gets: by default a plain venv with `pip install --no-deps` of the current sources
(`benchmarks.userenv`, cached by a hash of `cairn/` and `pyproject.toml`), not the developer's editable venv (whose
`.pth` finder slows every interpreter start and hides the hook's import cost). `--venv DIR` times another venv's
`cairn` and `python` instead (e.g. `--venv .venv`, to see what the editable install gives; it also writes the
index, so it needs Cairn's dependencies); `--rev REV` installs Cairn as of a commit instead of the working tree.

For each size, a committed synthetic vault (`benchmarks.synth`, built once and reused) is indexed with
`cairn.index.build.card_terms` and `cairn.index.store.write_index` by `benchmarks/hookindex.py`, run in a venv
with the same sources and their dependencies (so parsing 100,000 YAML files is not what is timed, the index is
written by the code the hook reads it with, and this process never imports the checkout; the index is rebuilt
when the vault, the index format or layout, Cairn's version or the default config changes). The hook serves it as
a user's hook does: from the user configuration (`CAIRN_CONFIG`, a file in the work folder listing the vault; the
hook reads its cached JSON copy, made by one run before anything is timed). `--layered 3x1000` adds a row where
three vaults of 1,000 cards are configured (the first the usual one, the others drawn with other seeds: different
cards) and every prompt is matched against all three: issue 14's budget for it is the 10,000-card budget
(`--sizes 1000,10000 --layered 3x1000` times the three rows in one run). Then four commands of the same interpreter run interleaved, in a rotating order,
`--runs` times after 2 warm-up rounds:

- `cairn hook --format claude-code` with a real UserPromptSubmit payload on stdin (a new session id every run, so
  each run ranks, gates, renders, records the session and logs);
- `python -c pass` (the baseline);
- `python -c "import cairn.hot.hook"` (the import floor: the hook module and what it imports at its top);
- `python -c` importing every module a real hook run imports beyond a bare interpreter (listed once with
  PYTHONPROFILEIMPORTTIME), in the same order: the floor including what the hook imports lazily, inside its
  functions (the first floor misses those).

It prints medians and the ratios to the baseline (the figure: the machine is shared, milliseconds move with its
load), the CPU-time ratios (user + system of the child), how many runs injected a card, and any stale index or
logged error; the machine (cores, CPU model, Python, load average) before and after. Budgets (ARCHITECTURE.md, "Budgets"): 1,000 cards <= 1.5x, 10,000 <= 2x, 100,000 <= 4x.

`--instructions` also counts, with valgrind's callgrind, the instructions of the hook on four of the prompts (three
that fit a card, one that does not; the median) and of `python -c pass`: a ratio the machine's load does not move
(the timed ratio moves by 0.1x or more on a shared machine), a proxy for the timed one (it leaves out waiting on the
disk, and weighs every instruction alike).

`--sessions N` times the prompt that prunes the agent sessions (`cairn.hot.session.prune`, due every few hours):
the state folder holds N sessions (a `.json` and a `.lock` each, as the hook leaves them, all recent, so each run
does the same work and none is deleted), and the prune stamp is made old before every hook run. A pruner the hook
leaves running in the background is waited for after the run (not timed), so it does not slow the next command.

It also checks that the hook imports nothing outside the standard library and Cairn (one run with
PYTHONPROFILEIMPORTTIME, against the modules a bare interpreter imports), which is why `--no-deps` is enough.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.synth import SEED, SynthCard, SynthVault, make_vault
from benchmarks.userenv import WORK, describe, machine, timing_env, user_venv

if TYPE_CHECKING:
    from collections.abc import Callable

BUDGETS = {1_000: 1.5, 10_000: 2.0, 100_000: 4.0}
IMPORT_FLOOR = "import cairn.hot.hook"


def build_index(vault: SynthVault, cache: Path, python: str) -> dict[str, float]:
    """Index the vault (`benchmarks/hookindex.py`, run by `python`: a venv with the Cairn timed and its
    dependencies), or keep the index already built for it; the seconds each step took when it was built."""
    root = vault.root
    order = root.parent / f"{root.name}.order"
    order.write_text("".join(card.path + "\n" for card in vault.cards))
    record = root.parent / f"{root.name}.index.json"
    script = str(Path(__file__).with_name("hookindex.py"))
    env = timing_env(CAIRN_CACHE_DIR=str(cache))
    done = subprocess.run(
        [python, script, str(root), str(order), str(record)], env=env, cwd=root.parent, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"Error: indexing {root} failed:\n{done.stderr[-2000:]}")
    timings: dict[str, float] = json.loads(done.stdout)
    return timings


def prompts_for(cards: list[SynthCard], n: int, wrapped: bool = False, typographic: bool = False) -> list[str]:
    """Prompts a user might type: three in four reword one card's situation; one in four fits nothing. wrapped:
    each inside an agent prompt's context and instructions (`benchmarks.wrapped.wrap`), as agents' users write
    them: the prompts recall asks sentence by sentence when the whole fits nothing (`recall._fragment_pick`).
    typographic: each in curly quotes, with a dash, as an editor or a phone types them: text that is not ASCII,
    which the tokens read NFC (`tokens.fold_letters`), where ASCII skips that."""
    if typographic:
        return [f"\u201c{prompt}\u201d \u2014 thanks" for prompt in prompts_for(cards, n, wrapped)]
    if wrapped:
        from benchmarks.wrapped import wrap

        return [wrap(str(i), prompt, False) for i, prompt in enumerate(prompts_for(cards, n))]
    rng = random.Random(5)
    out = []
    for i in range(n):
        if i % 4 == 3:
            out.append("please refactor this function to be more readable and add docstrings")
            continue
        card = rng.choice(cards)
        words = card.summary.replace(",", "").replace(";", "").split()
        out.append("I think " + " ".join(words[1:12]) + " - what should I do?")
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(args: list[str], stdin: bytes | None, env: dict[str, str], cwd: Path) -> tuple[float, float, bytes]:
    """Wall-clock seconds, CPU seconds (user + system of the child) and stdout of one command."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr.decode()[:500]}")
    return elapsed, _children_cpu() - cpu, done.stdout


def imported_modules(command: list[str], stdin: bytes | None, env: dict[str, str], cwd: Path) -> list[str]:
    """The modules a command imports, full names in the order their imports finished (`-X importtime` for an
    interpreter's command, which an isolated `-I` one heeds; PYTHONPROFILEIMPORTTIME for a script)."""
    if len(command) > 1 and command[1].startswith("-"):  # `python -I -S script`, `python -c CODE`
        command = [command[0], "-X", "importtime", *command[1:]]
    done = subprocess.run(
        command, input=stdin, capture_output=True, env=dict(env, PYTHONPROFILEIMPORTTIME="1"), cwd=cwd, check=True
    )
    names = []
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            names.append(line.rsplit("|", 1)[1].strip())
    return names


def hook_imports(
    python: str, hook: list[str], payload: bytes, env: dict[str, str], cwd: Path, bare_command: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """What a real hook run imports beyond a bare interpreter started as it is (`bare_command`: `python -c pass`, or
    without `site` when the hook runs under `-S`; full module names, for the all-imports floor), and which of them
    come from site-packages other than Cairn (a `.pth` file's modules, such as setuptools' `_distutils_hack`, are a
    bare interpreter's too): what `pip install --no-deps` would leave out."""
    bare = set(imported_modules(bare_command or [python, "-c", "pass"], None, env, cwd))
    used = [name for name in imported_modules(hook, payload, env, cwd) if name not in bare]
    tops = sorted({name.split(".")[0] for name in used} - {"cairn"})
    where = (
        "import importlib.util, json, sys, sysconfig\n"
        "site = sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']\n"
        "def origin(name):\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    return spec and (spec.origin or ''.join(spec.submodule_search_locations or ()))\n"
        "print(json.dumps(sorted(n for n in sys.argv[1:] if (o := origin(n)) and o.startswith(site))))"
    )
    done = subprocess.run([python, "-c", where, *tops], env=env, cwd=cwd, capture_output=True, check=True)
    return used, list(json.loads(done.stdout))


def all_imports(modules: list[str]) -> str:
    """Code importing `modules`: Cairn's first, in order, so each brings in its own imports the way it does in the
    hook, then the rest. A failed import (an optional module the hook tries, such as `_winapi` on POSIX, shows in
    PYTHONPROFILEIMPORTTIME too) is passed over, as the code that tried it does."""
    ordered = [m for m in modules if m.split(".")[0] == "cairn"] + [m for m in modules if m.split(".")[0] != "cairn"]
    return f"for m in {tuple(ordered)!r}:\n try: __import__(m)\n except ImportError: pass"


def instructions(args: list[str], stdin: bytes | None, env: dict[str, str], cwd: Path) -> int:
    """The instructions one run of a command executes (valgrind's callgrind, `Collected`)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        check=False,
    )
    for line in done.stderr.decode(errors="replace").splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    raise SystemExit(f"Error: valgrind gave no instruction count for {args[0]}: {done.stderr.decode()[-500:]}")


def budget_for(n_cards: int, layered: int) -> float | None:
    """One vault: its size's budget. Several: the 10,000-card budget while they hold 10,000 cards or fewer."""
    if layered == 1:
        return BUDGETS.get(n_cards)
    return BUDGETS[10_000] if n_cards * layered <= 10_000 else None


def make_sessions(folder: Path, n: int) -> None:
    """`n` recent agent sessions in `folder`, each a `.json` and a `.lock` as the hook leaves them (kept from an
    earlier run while there are enough)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    have = sum(1 for name in os.listdir(folder) if name.startswith("bench") and name.endswith(".json"))
    now = time.time()
    for i in range(n):
        for suffix, data in ((".json", b'{"injected": {}}'), (".lock", b"")):
            path = folder / f"bench{i:027x}{suffix}"
            if i >= have:
                path.write_bytes(data)
            os.utime(path, (now, now))  # recent: the prune keeps them


def wait_for_pruners(folder: Path, limit: float = 120.0) -> None:
    """Wait until no process names `folder` on its command line (the detached pruner `prune` starts)."""
    needle = str(folder).encode()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        running = False
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    running = needle in Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if running:
                    break
        if not running:
            return
        time.sleep(0.05)
    raise SystemExit(f"Error: a session pruner of {folder} still runs after {limit:.0f} s")


def configure(vaults: list[SynthVault], config: Path) -> None:
    """The user configuration listing `vaults` (each with Cairn's marker, `cairn.toml`, which the hook requires)."""
    lines = []
    for i, vault in enumerate(vaults):
        marker = vault.root / "cairn.toml"
        if not marker.exists():
            marker.write_text("")
        lines += ["[[vaults]]", f'name = "v{i}"', f"path = {json.dumps(str(vault.root.resolve()))}", ""]
    text = "\n".join(lines)
    if not config.is_file() or config.read_text() != text:
        config.write_text(text)


# What marks the file `cairn install` has the agents run under `python -S` (`cairn.install.hook_launcher`): the
# package's `cairn/__main__.py`, or in older commits Cairn's own `bin/cairn` script; commits older still run `cairn`.
NO_SITE_MARK = b"sys.flags.no_site"
# And isolated (`-I`: no PYTHON* variable counts) since `cairn.install.hook_launcher` says so.
ISOLATED_MARK = b'"-I", "-S"'


def hook_launcher(python: str, cairn: str, package: Path) -> list[str]:
    """What the agents' hook runs `cairn` with, as `cairn install` writes it for this install."""
    install = package / "install.py"
    flags = ["-I", "-S"] if install.is_file() and ISOLATED_MARK in install.read_bytes() else ["-S"]
    for script in (package / "__main__.py", Path(cairn)):
        if script.is_file() and NO_SITE_MARK in script.read_bytes()[:8192]:
            return [python, *flags, str(script)]
    return [cairn]


def import_floor(python: str, launcher: list[str], packages: str) -> Callable[[str], list[str]]:
    """A `python -c CODE` command started as the hook starts: without `site` (and Cairn's install put on sys.path,
    as the launcher does) when the hook runs under `-S`, isolated too under `-I`."""
    if "-S" not in launcher:
        return lambda code: [python, "-c", code]
    flags = ["-I", "-S"] if "-I" in launcher else ["-S"]
    return lambda code: [python, *flags, "-c", f"import sys; sys.path.append({packages!r})\n{code}"]


def bench_size(
    n_cards: int,
    runs: int,
    work: Path,
    python: str,
    launcher: list[str],
    builder: str,
    layered: int = 1,
    count_instructions: bool = False,
    wrapped: bool = False,
    floor: Callable[[str], list[str]] | None = None,
    sessions: int = 0,
    typographic: bool = False,
) -> dict[str, object]:
    floor = floor or (lambda code: [python, "-c", code])
    label = f"{n_cards}" if layered == 1 else f"{layered}x{n_cards}"
    if sessions:
        label += f"+{sessions}s"
    cache, state = work / "cache", work / f"state-{label}"
    vaults = [
        make_vault(work / (f"vault-{n_cards}" if i == 0 else f"vault-{n_cards}-seed{SEED + i}"), n_cards, seed=SEED + i)
        for i in range(layered)
    ]
    vault = vaults[0]
    build: dict[str, float] = {}
    for one in vaults:
        for key, seconds in {**one.build, **build_index(one, cache, builder)}.items():
            build[key] = build.get(key, 0.0) + seconds
    config = work / f"config-{label}.toml"
    configure(vaults, config)
    env = timing_env(CAIRN_CACHE_DIR=str(cache), CAIRN_STATE_DIR=str(state), CAIRN_CONFIG=str(config))
    prompts = prompts_for(vault.cards, runs + 2, wrapped, typographic)

    def payload(i: int) -> bytes:
        return json.dumps(
            {
                "session_id": f"bench-{n_cards}-{time.time_ns()}-{i}",
                "transcript_path": str(work / "transcript.jsonl"),
                "cwd": str(vault.root.resolve()),
                "permission_mode": "default",
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompts[i],
            }
        ).encode()

    hook = [*launcher, "hook", "--format", "claude-code"]
    timed_run(hook, payload(0), env, work)  # the first run parses the configuration and caches its JSON copy
    folder = state / "sessions"
    if sessions:
        make_sessions(folder, sessions)
        wait_for_pruners(folder)
    used, foreign = hook_imports(python, hook, payload(0), env, work, floor("pass"))
    commands = {
        "hook": hook,
        "bare": [python, "-c", "pass"],
        "import": floor(IMPORT_FLOOR),
        "imports": floor(all_imports(used)),
    }
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    injected = 0
    order = list(commands)
    for i in range(len(prompts)):
        for name in order[i % len(order) :] + order[: i % len(order)]:  # rotate: no command always runs first
            stdin = payload(i) if name == "hook" else None
            if sessions and name == "hook":
                os.utime(folder / ".pruned", (0, 0))  # the prune is due: this run is the one of every few hours
            seconds, cpu_s, out = timed_run(commands[name], stdin, env, work)
            if sessions and name == "hook":
                wait_for_pruners(folder)
            if i < 2:  # warm-up: the file cache
                continue
            wall[name].append(seconds)
            cpu[name].append(cpu_s)
            if name == "hook":
                injected += bool(out.strip())
    log = [json.loads(line) for line in (state / "hook.jsonl").read_text().splitlines()[-runs:]]
    counted: dict[str, object] = {}
    if count_instructions:  # prompts 2 to 5: three that reword a card, one that fits none (`prompts_for`)
        hook_i = statistics.median(instructions(hook, payload(i), env, work) for i in range(2, 6))
        bare_i = instructions([python, "-c", "pass"], None, env, work)
        counted = {
            "hook_instructions": int(hook_i),
            "bare_instructions": bare_i,
            "instruction_ratio": round(hook_i / bare_i, 2),
        }
    ms = {name: statistics.median(times) * 1000 for name, times in wall.items()}
    cpu_ms = {name: statistics.median(times) * 1000 for name, times in cpu.items()}
    return {
        "cards": n_cards,
        "vaults": layered,
        "label": label,
        "runs": len(wall["hook"]),
        "hook_ms": round(ms["hook"], 1),
        "bare_ms": round(ms["bare"], 1),
        "import_ms": round(ms["import"], 1),
        "imports_ms": round(ms["imports"], 1),
        "ratio": round(ms["hook"] / ms["bare"], 2),
        "import_ratio": round(ms["import"] / ms["bare"], 2),
        "imports_ratio": round(ms["imports"] / ms["bare"], 2),
        "cpu_ratio": round(cpu_ms["hook"] / cpu_ms["bare"], 2),
        "import_cpu_ratio": round(cpu_ms["import"] / cpu_ms["bare"], 2),
        "imports_cpu_ratio": round(cpu_ms["imports"] / cpu_ms["bare"], 2),
        "hook_imports": len(used),
        "budget": budget_for(n_cards, layered),
        "injected_runs": injected,
        "stale_runs": sum(bool(line.get("stale")) for line in log),
        "errors": [line["error"] for line in log if line.get("error")][:3],
        "third_party_imports": foreign,
        "build": {k: round(v, 2) for k, v in build.items()},
        **counted,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated vault sizes")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per size (at least 20)")
    parser.add_argument("--venv", type=Path, help="time this venv's cairn and python (default: a plain install)")
    parser.add_argument("--rev", help="install Cairn as of this commit (default: the working tree)")
    parser.add_argument("--work", type=Path, default=WORK / "hook", help="where vaults and caches live")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions with valgrind (load-independent)"
    )
    parser.add_argument(
        "--layered", default="", metavar="NxSIZE", help="rows with N configured vaults of SIZE cards, e.g. 3x1000"
    )
    parser.add_argument(
        "--wrapped", action="store_true", help="every prompt inside an agent wrapper (context and instructions)"
    )
    parser.add_argument(
        "--typographic", action="store_true", help="every prompt in curly quotes and with a dash (text not ASCII)"
    )
    parser.add_argument(
        "--sessions", type=int, default=0, metavar="N", help="N agent sessions kept, and their prune due every run"
    )
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (e.g. apt-get install valgrind)")
    args.work.mkdir(parents=True, exist_ok=True)
    venv = args.venv.resolve() if args.venv else user_venv(deps=False, rev=args.rev)
    builder = str((args.venv.resolve() if args.venv else user_venv(deps=True, rev=args.rev)) / "bin" / "python")
    python, cairn = str(venv / "bin" / "python"), str(venv / "bin" / "cairn")
    where = subprocess.run(
        [python, "-c", "import cairn.hot.hook as h; print(h.__file__)"],
        env=timing_env(),
        cwd=args.work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    launcher = hook_launcher(python, cairn, Path(where).parents[1])
    floor = import_floor(python, launcher, str(Path(where).parents[2]))
    print(machine())
    source = f"--venv {args.venv}" if args.venv else describe(args.rev)
    print(f"cairn: {cairn} (sources: {source}; cairn.hot.hook from {where})")
    print(f"hook: {' '.join(launcher)} hook --format claude-code (as `cairn install` writes it)")
    print("medians (ms) and ratios to `python -c pass` of the same interpreter, runs interleaved;")
    print(
        "  floor: python -c 'import cairn.hot.hook';  all imports: python -c 'import <every module a hook run imports>'"
    )
    print(
        f"{'cards':>7} {'hook':>6} {'bare':>6} {'ratio':>6} {'budget':>9}  {'floor':>13}  {'all imports':>13}"
        f"  {'CPU: ratio':>10} {'floor':>5} {'all':>5}  injected  stale  errors  3rd-party"
    )
    results = []
    rows = [(1, int(s)) for s in args.sizes.split(",") if s]
    rows += [(int(n), int(size)) for n, _, size in (spec.partition("x") for spec in args.layered.split(",") if spec)]
    for layered, size in rows:
        r = bench_size(
            size,
            max(args.runs, 20),
            args.work,
            python,
            launcher,
            builder,
            max(layered, 1),
            args.instructions,
            args.wrapped,
            floor,
            args.sessions,
            args.typographic,
        )
        results.append(r)
        budget = r["budget"]
        verdict = "" if budget is None else ("ok" if float(r["ratio"]) <= float(budget) else "OVER")  # type: ignore[arg-type]
        print(
            f"{r['label']:>7} {r['hook_ms']:>6} {r['bare_ms']:>6} {r['ratio']:>6} {str(budget) + 'x':>4} {verdict:<4}"
            f"  {r['import_ms']:>6} {str(r['import_ratio']) + 'x':>6}  {r['imports_ms']:>6} {str(r['imports_ratio']) + 'x':>6}"
            f"  {r['cpu_ratio']:>10} {r['import_cpu_ratio']:>5} {r['imports_cpu_ratio']:>5}"
            f"  {r['injected_runs']:>3}/{r['runs']:<4} {r['stale_runs']:>5}  {len(r['errors']):>6}"  # type: ignore[arg-type]
            f"  {', '.join(r['third_party_imports']) or 'none'}"  # type: ignore[arg-type]
        )
    if args.instructions:
        print("instructions (callgrind; hook: the median of four prompts), millions:")
        for r in results:
            hook_i, bare_i = int(r["hook_instructions"]), int(r["bare_instructions"])  # type: ignore[call-overload]
            print(f"{r['label']:>7}  hook {hook_i / 1e6:.1f}  bare {bare_i / 1e6:.1f}  ratio {r['instruction_ratio']}")
    print("build (s):")
    for r in results:
        b = r["build"]
        assert isinstance(b, dict)
        print(
            f"{r['label']:>7}  write {b.get('write_files_s')}  commit {b.get('git_commit_s')}  tokenize"
            f" {b.get('tokenize_s')}  write index {b.get('write_index_s')} ({b.get('index_mb', 0):.0f} MB)"
        )
    for r in results:
        if r["errors"]:
            print(f"errors at {r['cards']} cards: {r['errors']}")
        if r["stale_runs"]:  # the hook served a stale index (and started a background index): not its steady state
            print(
                f"warning: at {r['label']} cards the hook found the index stale in {r['stale_runs']} runs; not timed as served"
            )
    print(machine().replace("machine:", "after:  "))
    if args.json:
        print(json.dumps({"venv": str(venv), "results": results}, indent=2))
    failed = any(r["errors"] or r["third_party_imports"] for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
