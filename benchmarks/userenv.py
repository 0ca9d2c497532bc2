"""What the timing benchmarks run: Cairn installed the way a user installs it, and the machine they run on.

A developer's editable install (`pip install -e .`) is the wrong thing to time. It puts a `.pth` finder in
site-packages that imports `pathlib`, `re` and more at every interpreter start (a bare `python -c pass` took 34 ms
in the editable venv against 15 ms in a plain one on the benchmark machine), which inflates the baseline the
ratios divide by and hides the hook's own import cost; and a checkout has no compiled bytecode when the
environment sets PYTHONDONTWRITEBYTECODE, so every run would compile Cairn from source.

`user_venv()` makes a plain venv (`python -m venv`, then `pip install` of a snapshot of the repository: `cairn/`,
`pyproject.toml`, the README and license files), cached under `benchmarks/.work/venvs/` and keyed by a hash of the
snapshot's `cairn/` sources and `pyproject.toml` and of the interpreter's version: edit Cairn and the next run
builds a new one (the previous ones for the same flavour are deleted). `deps=False` installs with `--no-deps`:
what the hook needs, since it runs on the standard library alone (`bench_hook` checks it); `deps=True` installs the
dependencies too, for the commands that need them (`cairn index`, `cairn lint`).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / ".work"
VENVS = WORK / "venvs"
COMPLETE = ".bench-complete"


def snapshot(target: Path) -> str:
    """Copy what `pip install` needs from the repository into `target`; the hash of the copied `cairn/` sources and
    `pyproject.toml`. Copying first means the hash names exactly what gets installed, even while someone edits the
    checkout, and the build writes nothing (`build/`, `*.egg-info`) into the repository."""
    shutil.copytree(REPO / "cairn", target / "cairn", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in [REPO / "pyproject.toml", *REPO.glob("README*"), *REPO.glob("LICEN[CS]E*")]:
        if path.is_file():
            shutil.copy2(path, target / path.name)
    digest = hashlib.sha256()
    for path in sorted([*(target / "cairn").rglob("*"), target / "pyproject.toml"]):
        if path.is_file():
            digest.update(path.relative_to(target).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def user_venv(*, deps: bool) -> Path:
    """A plain venv with a non-editable install of the current sources (see the module docstring)."""
    flavour = "full" if deps else "nodeps"
    VENVS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=VENVS, prefix="src-") as src:
        source_hash = snapshot(Path(src))
        python_tag = hashlib.sha256(sys.version.encode()).hexdigest()[:6]
        venv = VENVS / f"{flavour}-{source_hash}-py{python_tag}"
        if (venv / COMPLETE).is_file():
            return venv
        for old in VENVS.glob(f"{flavour}-*"):
            shutil.rmtree(old, ignore_errors=True)
        print(f"# making {venv.relative_to(REPO)} (python -m venv; pip install {'' if deps else '--no-deps '}.)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input"]
        subprocess.run([*pip, *([] if deps else ["--no-deps"]), src], check=True, stdout=subprocess.DEVNULL)
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
