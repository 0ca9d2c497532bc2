"""What the timing benchmarks run: Cairn installed the way a user installs it, and the machine they run on.

A developer's editable install (`pip install -e .`) is the wrong thing to time. It puts a `.pth` finder in
site-packages that imports `pathlib`, `re` and more at every interpreter start (a bare `python -c pass` took 34 ms
in the editable venv against 15 ms in a plain one on the benchmark machine), which inflates the baseline the
ratios divide by and hides the hook's own import cost; and a checkout has no compiled bytecode when the
environment sets PYTHONDONTWRITEBYTECODE, so every run would compile Cairn from source.

`user_venv()` makes a plain venv (`python -m venv`, then `pip install` of a snapshot of the repository: `cairn/`,
`bin/`, `pyproject.toml`, the README and license files, from the working tree or, with `rev`, from a commit),
cached under `benchmarks/.work/venvs/` and keyed by a hash of the snapshot's `cairn/` and `bin/` sources and
`pyproject.toml` and of the interpreter's version: edit Cairn and the next run builds a new one (the three most
recent are kept per flavour). `deps=False` installs with `--no-deps`: what the hook needs, since it runs on the
standard library alone (`bench_hook` checks it); `deps=True` installs the dependencies too, for the commands that
need them (`cairn index`, `cairn lint`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work"
VENVS = WORK / "venvs"
COMPLETE = ".bench-complete"
KEEP = 3  # venvs kept per flavour (e.g. a "before" commit and the working tree), the oldest deleted first


def snapshot(target: Path, rev: str | None = None) -> str:
    """Copy what `pip install` needs from the repository into `target`: from the working tree, or from commit `rev`
    (`git archive`); the hash of the copied `cairn/` and `bin/` sources and `pyproject.toml`. Copying first means the
    hash names exactly what gets installed, even while someone edits the checkout, and the build writes nothing
    (`build/`, `*.egg-info`) into the repository."""
    wanted = ("cairn", "bin", "pyproject.toml", "README*", "LICEN[CS]E*")
    if rev is None:
        for folder in wanted[:2]:
            if (REPO / folder).is_dir():  # bin/: the `cairn` script (older commits used a console-script entry point)
                shutil.copytree(REPO / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for pattern in wanted[2:]:
            for path in REPO.glob(pattern):
                if path.is_file():
                    shutil.copy2(path, target / path.name)
    else:
        listed = subprocess.run(
            ["git", "-C", str(REPO), "ls-tree", "--name-only", rev], capture_output=True, text=True, check=True
        ).stdout.split()
        names = [name for name in listed if any(fnmatch.fnmatch(name, pattern) for pattern in wanted)]
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, *names], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f"Error: git archive {rev}: {archive.stderr.decode().strip()}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(target, filter="data")
            else:  # Python before 3.10.12 / 3.11.4: our own repository's archive
                tar.extractall(target)
    digest = hashlib.sha256()
    for path in sorted([*(target / "cairn").rglob("*"), *(target / "bin").rglob("*"), target / "pyproject.toml"]):
        if path.is_file():
            digest.update(path.relative_to(target).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def describe(rev: str | None) -> str:
    """Where the installed sources came from, for the header."""
    if rev is None:
        return "the working tree"
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"commit {commit} ({rev})" if commit != rev else f"commit {commit}"


def user_venv(*, deps: bool, rev: str | None = None) -> Path:
    """A plain venv with a non-editable install of the sources, from the working tree or commit `rev` (see the
    module docstring)."""
    flavour = "full" if deps else "nodeps"
    VENVS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=VENVS, prefix="src-") as src:
        source_hash = snapshot(Path(src), rev)
        python_tag = hashlib.sha256(sys.version.encode()).hexdigest()[:6]
        venv = VENVS / f"{flavour}-{source_hash}-py{python_tag}"
        if (venv / COMPLETE).is_file():
            return venv
        for old in sorted(VENVS.glob(f"{flavour}-*"), key=lambda p: p.stat().st_mtime)[: -(KEEP - 1)]:
            shutil.rmtree(old, ignore_errors=True)
        print(f"# making {venv.relative_to(REPO)} (python -m venv; pip install {'' if deps else '--no-deps '}.)")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input"]
        done = subprocess.run([*pip, *([] if deps else ["--no-deps"]), src], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"Error: pip install into {venv} failed:\n{done.stdout}{done.stderr}")
    if not any((venv_site(venv) / "cairn" / "hot" / "__pycache__").glob("*.pyc")):
        raise SystemExit(f"Error: pip compiled no bytecode for {venv}; the timings would include compiling Cairn")
    (venv / COMPLETE).write_text(source_hash)
    return venv


def venv_site(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def timing_env(**extra: str) -> dict[str, str]:
    """The environment timed commands run in: the user's, without what a user's shell would not set. An installed
    package has compiled bytecode; a sandbox that sets PYTHONDONTWRITEBYTECODE would make a checkout's runs compile
    from source. PYTHONPATH would put other code first."""
    env = dict(os.environ, **extra)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONSTARTUP", "CAIRN_VAULT", "CAIRN_SCOPE"):
        env.pop(name, None)
    return env


def machine() -> str:
    """One line: cores, CPU model, Python version, load average (the machine is shared: a busy one is noisier)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} cores ({usable} usable), {model}; Python {platform.python_version()} "
        f"({platform.python_implementation()}); load average {load}"
    )
