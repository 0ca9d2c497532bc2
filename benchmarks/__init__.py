"""Cairn's benchmarks: scripts that print figures (see README.md and RESULTS.md in this folder).

Run them as modules from the repository root, with the interpreter of a venv where Cairn is installed (editable is
fine: the timing benchmarks time a plain install of the same sources, see `benchmarks.userenv`):
`.venv/bin/python -m benchmarks.bench_hook`.
"""
