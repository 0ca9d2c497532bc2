"""Bad input on the commit path (lint inside git hooks, pre-commit), in `cairn review` and in the vault's git hooks."""

from __future__ import annotations

import html
import json
import os
import re
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from helpers.vaults import BOB, VaultRepo, cairn_executable, make_vault, run_cairn_within


def _rendered(markdown: str) -> str:
    """The review as a pull-request comment renders (CommonMark with GitHub's tables and strikethrough)."""
    return str(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown))


# -- review: card text cannot forge the pull-request comment's markup ----------------------------------------------

HOSTILE_NAME = "[Approved by maintainers](https://evil.example/ok) ![x](https://evil.example/t.png) **Passes** \\"
HOSTILE_SUMMARY = "Rebase before you push a shared branch. _Reviewed_ ~~blocked~~ `code` [ref]: https://evil.example"


def test_review_markdown_renders_card_text_as_text(vault_repo: VaultRepo) -> None:
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "pr")
    vault_repo.write("git/hostile", HOSTILE_NAME, HOSTILE_SUMMARY, scope=["git"], aliases=["[a](https://evil.example)"])
    vault_repo.commit("hostile card", author=BOB)
    done = vault_repo.invoke("review", "main..pr")
    page = _rendered(done.stdout)
    assert "<a " not in page and "<img" not in page and "<em>" not in page and "<s>" not in page
    assert page.count("<strong>Passes</strong>") <= 1  # the verdict's own, never the card's
    # each hostile field reads back as written, and the cards table keeps its four columns
    for text in (HOSTILE_NAME, HOSTILE_SUMMARY):
        assert html.escape(text, quote=False) in page
    row = next(line for line in done.stdout.splitlines() if line.startswith("| added |"))
    assert len(re.findall(r"(?<!\\)\|", row.replace("\\\\", ""))) == 5, row


def _github_text(markdown: str) -> str:
    """The comment's text as GitHub reads it for mentions, issue references and emoji: outside code and links."""
    page = MarkdownIt("gfm-like", {"linkify": False}).disable("linkify").render(markdown)
    return html.unescape(re.sub(r"<code>.*?</code>|<[^>]*>", " ", page))


def test_review_markdown_neither_notifies_nor_links_what_a_card_names(vault_repo: VaultRepo) -> None:
    """GitHub reads `@name`, `#12`, `owner/repo#12`, `GH-12` and `:x:` in a comment's text however it is escaped:
    a card (or a commit's author name) that says them notified people, listed the pull request on other issues and
    drew an emoji. They read the same, and are none of these."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "pr")
    name = "Ping @octocat and @acme/security about #1, octo/repo#2 and GH-3 :tada:"
    summary = "Stash untracked files with git stash -u, as @octocat said in #12 :x: (mail ann@example.com at 12:30)."
    vault_repo.write("git/mentions", name, summary, scope=["git"])
    vault_repo.commit("A card that names people and issues", author=("@mallory", "m@example.com"))
    done = vault_repo.invoke("review", "main..pr")
    assert done.returncode == 0, done.stdout + done.stderr
    text = _github_text(done.stdout)
    assert not re.search(r"(?:^|\W)@[a-z0-9]", text, re.I), text  # GitHub's mention, its @org/team too
    assert not re.search(r"#[0-9]|\bGH-[0-9]", text, re.I), text  # an issue reference
    assert not re.search(r":[a-z0-9_+-]+:", text, re.I), text  # an emoji
    read = text.replace("\u200b", "")  # as a reader sees it: the card's words, whole
    for said in (name, summary, "@mallory"):
        assert said in read


# -- the vault template's workflow: a review that cannot run says why in the comment --------------------------------


def _workflow_step(vault: Path, name: str) -> dict[str, Any]:
    workflow = yaml.safe_load((vault / ".github" / "workflows" / "cairn.yml").read_text())
    return next(s for s in workflow["jobs"]["review"]["steps"] if s.get("name") == name)


def _run_step(vault: Path, step: dict[str, Any], env: dict[str, str], tmp: Path) -> dict[str, str]:
    """Run a workflow step's shell script as the runner does (bash -e), in the checkout; returns the step's outputs."""
    output, summary = tmp / "output", tmp / "summary"
    output.write_text("")
    path = f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"
    run_env = dict(os.environ, **env, RUNNER_TEMP=str(tmp), GITHUB_OUTPUT=str(output))
    run_env.update(GITHUB_STEP_SUMMARY=str(summary), PATH=path)
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=vault, env=run_env, check=True, timeout=300)
    return dict(line.split("=", 1) for line in output.read_text().splitlines())


def test_workflow_posts_the_error_when_review_cannot_run(tmp_path: Path) -> None:
    """A base the checkout does not hold (force-pushed away, or a shallow clone): `cairn review` printed its error
    on stderr only, so the job posted an empty comment over the last review and said "see the errors in the review
    comment"."""
    vault_repo = VaultRepo(tmp_path / "vault")
    make_vault(vault_repo)
    runner = tmp_path / "runner"
    runner.mkdir()
    step = _workflow_step(Path(__file__).resolve().parents[1] / "cairn" / "templates" / "vault", "Review")
    outputs = _run_step(vault_repo.root, step, {"BASE_SHA": "0" * 39 + "1"}, runner)
    assert outputs["status"] == "2"
    comment = (runner / "review.md").read_text()
    assert "cairn review could not run (exit 2)" in comment
    assert "Error: unknown revision" in comment
    assert comment in (runner / "summary").read_text()
    # a review that runs is posted as it is
    outputs = _run_step(vault_repo.root, step, {"BASE_SHA": vault_repo.git("rev-parse", "HEAD")}, runner)
    assert outputs["status"] == "0"
    assert (runner / "review.md").read_text().startswith("## Cairn review of ")


def test_workflow_says_what_to_set_when_cairn_cannot_be_installed(tmp_path: Path) -> None:
    """No package index holds cairn-lessons (Cairn installs from a clone): the template's pin failed with pip's "No
    matching distribution found" deep in the log, and the pull request's comment said only "cairn: command not
    found". The step now names CAIRN_REQUIREMENT, where to set it, and what to pin, as an error GitHub shows."""
    template = Path(__file__).resolve().parents[1] / "cairn" / "templates" / "vault"
    requirement = "cairn-lessons==0.0.0"  # not the one this venv holds, which pip would find "already satisfied"
    empty = tmp_path / "no-index"
    empty.mkdir()
    # pip finds nothing and so installs nothing: no index, no links but an empty folder
    env = dict(os.environ, CAIRN_REQUIREMENT=requirement, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(empty))
    env["PATH"] = f"{Path(cairn_executable()).parent}{os.pathsep}{os.environ['PATH']}"  # its `python`
    step = _workflow_step(template, "Install Cairn")
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    error = next(line for line in done.stdout.splitlines() if line.startswith("::error "))
    assert f"pip could not install {requirement}." in error
    assert "Set CAIRN_REQUIREMENT in .github/workflows/cairn.yml on the base branch" in error
    assert '"cairn-lessons @ git+https://.../cairn@COMMIT"' in error


_GITHUB_SCRIPT = """
const calls = [];
const github = {paginate: async () => [], rest: {issues: {listComments: null,
  createComment: async (call) => calls.push(call), updateComment: async (call) => calls.push(call)}}};
const context = {repo: {owner: 'o', repo: 'r'}, payload: {pull_request: {number: 1}}};
(async () => {
SCRIPT
})().then(() => process.stdout.write(calls[0].body));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="the post step is actions/github-script's JavaScript")
def test_workflow_cuts_a_long_review_with_a_note_outside_any_folded_block(tmp_path: Path) -> None:
    """A review over 60,000 characters is cut for GitHub's comment cap: the note saying so went inside a folded
    <details> when the cut fell there (the provenance is one), so the comment hid that it was cut."""
    template = Path(__file__).resolve().parents[1] / "cairn" / "templates" / "vault"
    script = _workflow_step(template, "Post the review on the pull request")["with"]["script"]
    rows = "".join(f"| `cards/git/card-{i:05d}` | `0123abcd` Ann Author 2026-12-01 |\n" for i in range(2000))
    (tmp_path / "review.md").write_text(
        "## Cairn review\n\n<details><summary>Provenance</summary>\n\n| card | commits |\n|---|---|\n"
        + rows
        + "\n</details>\n"
    )
    (tmp_path / "post.js").write_text(_GITHUB_SCRIPT.replace("SCRIPT", script))
    done = subprocess.run(
        ["node", str(tmp_path / "post.js")],
        env=dict(os.environ, RUNNER_TEMP=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    body = done.stdout
    assert len(body) < 65536
    assert body.rstrip("*").endswith("the full review is in the job summary)"), body[-300:]
    before = body[: body.rindex("(cut: ")]
    assert before.count("<details>") == before.count("</details>"), before[-300:]  # the note is in no folded block
    page = _rendered(body)
    assert "</details>\n<p><strong>(cut: the comment holds at most 60,000 characters;" in page, page[-300:]
    assert "card-00000" in page and "Ann Author 2026-12-01</td>\n</tr>\n</tbody>\n</table>" in page  # whole rows


# -- review: a symlinked card is not followed out of the checkout ----------------------------------------------------


def _limit_memory() -> None:
    """At most 2 GiB of address space: a review reading /dev/zero fails here instead of taking the machine's."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_review_never_reads_the_file_a_symlinked_card_points_at(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """A pull request adding `cards/ops/leak.md -> /some/file` and `cards/ops/zero.md -> /dev/zero`: review showed the
    outside file's name and summary (and every field) in its report, the CI comment, and read /dev/zero until the
    memory ran out. The index refuses both and lint says so; review shows no text for them."""
    make_vault(vault_repo)
    outside = tmp_path / "outside" / "notes.md"
    outside.parent.mkdir()
    outside.write_text('---\nname: Deploy notes\nsummary: "the staging password is hunter2-not-real"\n---\nbody\n')
    vault_repo.git("checkout", "-q", "-b", "pr")
    (vault_repo.root / "cards" / "ops").mkdir()
    (vault_repo.root / "cards" / "ops" / "leak.md").symlink_to(outside)
    (vault_repo.root / "cards" / "ops" / "zero.md").symlink_to("/dev/zero")
    vault_repo.commit("two symlinked cards", author=BOB)
    done = subprocess.run(
        [cairn_executable(), "review", "main..pr", "--json"],
        cwd=vault_repo.root,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_memory,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # lint's file-symlink errors fail it
    report = json.loads(done.stdout)
    assert {c["id"]: (c["name"], c["summary"], c["fields"]) for c in report["cards"]} == {
        "ops/leak": ("", "", []),
        "ops/zero": ("", "", []),
    }
    assert "hunter2" not in done.stdout
    assert {(f["path"], f["rule"]) for f in report["lint"]} == {
        ("cards/ops/leak.md", "file-symlink"),
        ("cards/ops/zero.md", "file-symlink"),
    }


# -- a card lint passes is one every command can name ---------------------------------------------------------------


def test_a_card_whose_file_name_is_long_in_bytes_is_shown_as_the_hook_says(vault_repo: VaultRepo) -> None:
    """A 72-character Chinese file name is 216 bytes (ext4 takes 255): lint passed it and the hook served it with
    `cairn show ID` to read the whole card, which refused the id ("is not a card id"): only ids of cards to write
    must leave room for `.md` and a temporary name's affixes."""
    make_vault(vault_repo)
    slug = "在共享分支上强制推送之后使用拉取变基可能会悄悄丢掉你本地的提交所以先用引用日志比较一下再拉取远端的更新内容并且确认没有丢失任何东西以免后悔莫及啊"
    assert len(slug.encode()) > 200
    vault_repo.write(
        f"zh/{slug}",
        "强制推送之后拉取变基会丢提交",
        "共享分支被强制推送后，拉取变基可能悄悄丢掉本地提交；先用引用日志比较。",
    )
    vault_repo.commit("a card with a long Chinese file name")
    assert vault_repo.cairn("lint").returncode == 0
    assert vault_repo.cairn("index").returncode == 0
    for args in ((), ("--worktree",)):
        shown = vault_repo.cairn("show", f"zh/{slug}", *args)
        assert shown.returncode == 0, shown.stderr
        assert "强制推送之后拉取变基会丢提交" in shown.stdout
    too_long = vault_repo.cairn("show", "zh/" + "长" * 90, "--worktree")  # 270 bytes: no file can have the name
    assert too_long.returncode == 1 and too_long.stderr.startswith("Error: ") and "Traceback" not in too_long.stderr


def test_the_lint_cache_never_carries_a_file_names_verdict_to_the_same_text_elsewhere(vault_repo: VaultRepo) -> None:
    """Bug fixed: the facts of the vault-wide rules are cached by blob, and a card file whose name holds a control
    character reads as no card. The same bytes later under a card's name came back from the cache as no card, so
    `cairn lint` of another card (what pre-commit runs) passed a name both cards use."""
    text = "---\nname: Same name\nsummary: The first lesson about caches.\n---\n\nBody one.\n"
    vault_repo.write_raw("cairn.toml", "")
    vault_repo.write_raw("cards/t/bad\x01.md", text)
    assert vault_repo.cairn("lint").returncode == 1  # file-name: and the facts of its blob are cached
    (vault_repo.root / "cards" / "t" / "bad\x01.md").unlink()
    vault_repo.write_raw("cards/t/one.md", text)
    vault_repo.write("t/two", "Same name", "Another lesson, on another matter.")
    done = vault_repo.cairn("lint", "cards/t/two.md")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cards/t/two.md:2: name-unique the name is also used by cards/t/one.md" in done.stdout


def test_review_under_a_low_open_file_limit_says_to_raise_it(vault_repo: VaultRepo) -> None:
    """Bug fixed: under a low limit of open files (`ulimit -n 16`) review's git processes and pipes ran out of
    descriptors and it said only "Error: Too many open files", with nothing to do; the line names the limit, and
    once it is raised the review runs. It exits 2, could not run (nothing was reviewed), not 1, which tells the
    author to fix the change; its CI step says which."""
    make_vault(vault_repo)
    vault_repo.git("checkout", "-q", "-b", "pr")
    vault_repo.write("ci/stale-cache", "Stale caches break CI", "Clear the runner's cache when CI fails.", scope=["ci"])
    vault_repo.commit("a card", author=BOB)
    done = run_cairn_within(resource.RLIMIT_NOFILE, 16, "review", "main..pr", cwd=vault_repo.root)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: Too many open files") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "raise its limit (`ulimit -n`" in done.stderr, done.stderr
    assert vault_repo.cairn("review", "main..pr").returncode == 0
