"""`python -m cairn`, and the file the agents' hook runs: `PYTHON -I -S /path/to/cairn/__main__.py hook ...`
(`cairn.install.hook_launcher`; `-I` keeps PYTHONPATH, which could name the agent's project, out).

Without `site` the interpreter skips its start-up work (the `.pth` files of every package installed beside Cairn,
user site folders), paid on every prompt: about 4% of the hook's instructions in a plain venv, more where many
packages are installed. Run as a file, Python puts this package's own folder first on `sys.path`; that folder goes
(its modules are not top-level ones), and the folder holding the package is put after the standard library, as
`site` would put `site-packages`: a package installed beside Cairn never stands for a standard one. Nothing else is
imported before `cairn.entry`, which runs `cairn hook` on the standard library alone; any other command run so
(`doctor` checks the hook's launcher with `--version`) gets `site` after all, as an editable install needs it.

The `cairn` command is a console-script entry point (`cairn.entry:main`), not this file: pip writes its launcher
so that it starts from any folder, a venv whose path holds a space included (a first line it cannot write there).
"""

import sys

if not __package__:  # run as a file, not as `python -m cairn`
    import os

    _here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == os.path.realpath(_here):
        del sys.path[0]
    sys.path.append(os.path.dirname(_here))
    if sys.flags.no_site and sys.argv[1:2] != ["hook"]:  # only the hook goes without: the rest needs click & co.
        import site

        site.main()

from cairn.entry import main  # noqa: E402

if __name__ == "__main__":  # not when a worker process of `cairn index` imports it as `__mp_main__`
    main()
