"""`cairn demo`: the main job, start to end, on a temporary copy of the bundled example vault."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from cairn.cli.common import Folder, echo, errors_to_exit, folder_given
from cairn.cli.recall_cmds import add_missing, explain_rows, render_explain
from cairn.hot.recall import prompt_weights, recall
from cairn.hot.vault import find_vault
from cairn.index import build as indexer

SAMPLE_PROMPT = (
    "Before you change anything, read the README. Question from a teammate: I rebased my feature branch and "
    "git rejects the push as non-fast-forward; others push to this branch too. Is `git push --force` fine?"
)
OFF_TOPIC_PROMPT = "How do I center a div with CSS grid?"
FOLLOW_UP_PROMPT = "ok, run the tests"  # most prompts an agent gets are not questions: nothing to inject


@click.command()
@click.option(
    "--keep", type=Folder(), callback=folder_given, default=None, help="Make the demo vault here and keep it."
)
@errors_to_exit
def demo(keep: Path | None) -> None:
    """Make a vault from the template, index it, and show what Cairn does with it.

    \b
    Example:
      cairn demo
    """
    from cairn.cards import authoring  # with the lint runner and PyYAML: not for `cairn --help`, which lists demo

    with tempfile.TemporaryDirectory(prefix="cairn-demo-") as scratch, _own_folders(None if keep else Path(scratch)):
        root = keep or Path(scratch) / "vault"
        commit = authoring.init_vault(root, again="cairn demo")
        vault = find_vault(root)
        echo(f"1. Made a vault from the template at {root} (commit {commit[:8]}).")
        report = indexer.build_index(vault)
        echo(f"2. Indexed {report.n_cards} committed cards in {report.seconds:.2f}s.")
        with indexer.open_index(vault) as index:
            hit = recall(index, SAMPLE_PROMPT)
            miss = recall(index, OFF_TOPIC_PROMPT, examine_all=True)
            follow_up = recall(index, FOLLOW_UP_PROMPT)
            hit_all = recall(index, SAMPLE_PROMPT, examine_all=True)
            weights = prompt_weights(index, SAMPLE_PROMPT, hit_all.settings)
        echo(f"3. An agent receives this prompt:\n     {SAMPLE_PROMPT}")
        if hit.injected:
            echo("   Cairn injects:")
            for c in hit.injected:
                echo(f"     - {c.card.name} [{c.card.id}]\n       {c.card.summary}")
        else:
            echo("   Cairn injects nothing.")
        echo("4. Why (cairn explain):")
        rows = add_missing(explain_rows(hit_all, SAMPLE_PROMPT), weights)
        table = render_explain(hit_all, rows, query=SAMPLE_PROMPT)
        echo("\n".join("     " + line for line in table.splitlines()))
        echo(f"5. An off-topic prompt: {OFF_TOPIC_PROMPT}")
        echo("   Cairn stays silent." if miss.abstained else f"   Cairn injects {miss.injected[0].card.id}.")
        echo(f"6. A follow-up, as agents mostly get: {FOLLOW_UP_PROMPT}")
        echo(
            "   Cairn stays silent: cards hold these words, but two everyday words weigh too little to go on."
            if follow_up.abstained
            else f"   Cairn injects {follow_up.injected[0].card.id}."
        )
        # --register, not init's question and then `cairn vault add`: a user who answers yes at the terminal, as
        # most do, would have that `vault add` refused (the vault is already configured).
        echo(
            "Next: `cairn init my-vault --register` (a vault of your own, served in every project: it prints every"
            " step that follows), then `cairn install claude-code --user` (or codex, gemini) to serve it to your agent."
        )


@contextmanager
def _own_folders(scratch: Path | None) -> Iterator[None]:
    """Without --keep, the demo vault's index (and any state) goes into the scratch folder, removed with it, not
    into the user's cache; with --keep (scratch None), into the user's cache, where `cairn` finds it later."""
    if scratch is None:
        yield
        return
    saved = {name: os.environ.get(name) for name in ("CAIRN_CACHE_DIR", "CAIRN_STATE_DIR")}
    os.environ["CAIRN_CACHE_DIR"] = str(scratch / "cache")
    os.environ["CAIRN_STATE_DIR"] = str(scratch / "state")
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
