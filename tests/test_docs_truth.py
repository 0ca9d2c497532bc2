"""What the documents tell a user is what Cairn does: every `cairn ...` they show parses with the real command line
(its subcommand, options and choices exist), the Chinese README says what the English one says, the agent's frame
the README shows is what the hook prints, the README's figures come from benchmarks/RESULTS.md, the help's examples
name cards the template vault has, and the JSON shapes and exit codes ARCHITECTURE.md gives are the ones the
commands print."""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from cairn.cli import cli
from cairn.hot.hook import FORMATS, HELP
from helpers.cli import invoke_cli
from helpers.vaults import VaultRepo, run_cairn

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_CARDS = ROOT / "cairn" / "templates" / "vault" / "cards"
# Documents whose `cairn ...` lines a user copies: fenced shell blocks and inline code spans.
DOCUMENTS = (
    "README.md",
    "README.zh-CN.md",
    "ARCHITECTURE.md",
    "cairn/templates/vault/README.md",
    "cairn/templates/hooks/README.md",
)
HOOK_OPTIONS = {"--format", "--vault", "--scope", "-h", "--help"}
SEPARATORS = {"&&", "||", "|", ";", "<", ">", ">>", "&", "(", ")"}
ALTERNATIVE = "\u2016"  # stands for `|` between two words while a span is split into words


# --- reading command lines out of documents and help -------------------------------------------------------------


def _fences(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)


def _prose(text: str) -> str:
    return re.sub(r"^```\w*\n.*?^```", "", text, flags=re.M | re.S)


def _segments(line: str) -> Iterator[list[str]]:
    """Each simple command of a shell line (split at &&, |, ;, redirections), `$(...)` substitutions included."""
    for inner in re.findall(r"\$\((cairn [^)]*)\)", line):
        yield from _segments(inner)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segment: list[str] = []
    skip_target = False
    for token in lexer:
        if token in SEPARATORS:
            if segment:
                yield segment
            segment, skip_target = [], token in {"<", ">", ">>"}
            continue
        if skip_target:  # the file of a redirection
            skip_target = False
            continue
        segment.append(token)
    if segment:
        yield segment


def _cairn_argv(segment: list[str]) -> list[str] | None:
    if segment and (segment[0] == "cairn" or segment[0].endswith("/bin/cairn")):
        return segment[1:]
    return None


def shell_block_commands(text: str) -> list[list[str]]:
    """Every `cairn` command of the document's ```sh blocks, continuation lines joined."""
    found = []
    for language, body in _fences(text):
        if language != "sh":
            continue
        for line in body.replace("\\\n", " ").splitlines():
            for segment in _segments(line):
                argv = _cairn_argv(segment)
                if argv is not None:
                    found.append(argv)
    return found


def inline_commands(text: str) -> list[list[str]]:
    """Every inline code span of the document's prose that starts with `cairn `, as words (placeholders kept)."""
    found = []
    for span in re.findall(r"`(cairn [^`]+)`", _prose(text)):
        found += _phrase(span)
    return found


def _phrase(span: str) -> list[list[str]]:
    """The `cairn` commands of one inline span: `a|b` with no spaces is a choice of words, not a pipe."""
    span = re.sub(r"(?<=\S)\\?\|(?=\S)", ALTERNATIVE, " ".join(span.split()))
    found = []
    for segment in _segments(span):
        argv = _cairn_argv([word.replace(ALTERNATIVE, "|") for word in segment])
        if argv is not None:
            found.append(argv)
    return found


def _help_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group, info_name="cairn")
    paths: list[tuple[str, ...]] = [prefix]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        paths += _help_paths(command, (*prefix, name)) if isinstance(command, click.Group) else [(*prefix, name)]
    return paths


def _help_text(path: tuple[str, ...]) -> str:
    if path == ("hook",):
        return HELP  # the executable prints the hook's own help, not click's
    done = invoke_cli([*path, "--help"])
    assert done.returncode == 0, done.stderr
    return done.stdout


def help_example_commands(help_text: str) -> list[list[str]]:
    """The `cairn` commands of a help text's Example(s) section, each cut before its aligned explanation."""
    examples = help_text.split("Example", 1)[1].split("\nOptions:", 1)[0]
    found = []
    for line in examples.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not (line.startswith("cairn ") or "$(cairn " in line):
            continue  # a JSON payload, an MCP entry, prose
        line = re.split(r"\s{2,}(?=[(a-z])", line, maxsplit=1)[0]  # "cairn demo    the main job ..."
        for segment in _segments(line):
            argv = _cairn_argv(segment)
            if argv is not None:
                found.append(argv)
    return found


HELP_PATHS = _help_paths(cli)


# --- checking a command line against the real CLI ----------------------------------------------------------------


def _placeholder(word: str) -> bool:
    """NAME, PATH, F, BASE..HEAD, NAME:ID, [FILES]: a word the reader replaces."""
    return word.startswith("[") or re.fullmatch(r"[A-Z][A-Z0-9_.:-]*", word) is not None


def _alternatives(word: str) -> list[str]:
    return word.split("|") if "|" in word and not word.startswith("|") else [word]


def problems(argv: list[str], *, complete: bool) -> list[str]:
    """What in `cairn ARGV` the real CLI would not accept: an unknown subcommand or option, a value outside a
    choice, too many arguments, and (when `complete`: a whole command line, not a phrase) a missing required one."""
    found: list[str] = []
    command: click.Command = cli
    ctx = click.Context(cli, info_name="cairn")
    words = list(argv)
    path: list[str] = []
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        name = words.pop(0)
        subs = [command.get_command(ctx, alt) for alt in _alternatives(name)]
        if any(sub is None for sub in subs):
            return [f"no command `cairn {' '.join([*path, name])}`"]
        path.append(name)
        command = subs[0]  # type: ignore[assignment]
    where = f"`cairn {' '.join(path)}`"
    if path == ["hook"]:
        for i, word in enumerate(words):
            flag = word.split("=", 1)[0]
            if word.startswith("-") and flag not in HOOK_OPTIONS:
                found.append(f"{where} has no option {flag}")
            if flag == "--format" and i + 1 < len(words):
                value = words[i + 1]
                if not _placeholder(value) and not set(_alternatives(value)) <= set(FORMATS):
                    found.append(f"{where} --format {value}: not one of {FORMATS}")
        if complete and "--format" not in {w.split("=", 1)[0] for w in words}:
            found.append(f"{where} without --format")
        return found
    if isinstance(command, click.Group):
        return [f"{where} needs a subcommand"] if complete else []
    options: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in (*param.opts, *param.secondary_opts):
                options[opt] = param
    given: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("-") and word != "-":
            name, eq, value = word.partition("=")
            if name in ("-h", "--help"):
                continue
            option = options.get(name)
            if option is None:
                found.append(f"{where} has no option {name}")
                continue
            given.add(option.name or "")
            if option.is_flag or option.count:
                continue
            if not eq:
                if i >= len(words):
                    if complete:
                        found.append(f"{where} {name} needs a value")
                    continue
                value = words[i]
                i += 1
            if isinstance(option.type, click.Choice) and not _placeholder(value):
                bad = [alt for alt in _alternatives(value) if alt not in option.type.choices]
                if bad:
                    found.append(f"{where} {name} {value}: not one of {list(option.type.choices)}")
        else:
            positional.append(word)
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if not any(a.nargs == -1 for a in arguments) and len(positional) > sum(a.nargs for a in arguments):
        found.append(f"{where} takes {len(arguments)} argument(s), given {positional}")
    for argument, value in zip(arguments, positional, strict=False):  # extra or missing ones are reported above
        if isinstance(argument.type, click.Choice) and not _placeholder(value):
            bad = [alt for alt in _alternatives(value) if alt not in argument.type.choices]
            if bad:
                found.append(f"{where} {value}: not one of {list(argument.type.choices)}")
    if complete:
        required = [a for a in arguments if a.required and a.nargs != -1]
        if len(positional) < len(required):
            found.append(f"{where} misses {[a.name for a in required[len(positional) :]]}")
        for param in command.params:
            if isinstance(param, click.Option) and param.required and param.name not in given:
                found.append(f"{where} misses {param.opts[0]}")
    return found


# --- the checker itself can fail ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "complete"),
    [
        ("cairn frobnicate", False),
        ("cairn recall --no-such-flag x", False),
        ("cairn vault add PATH --nmae me", False),
        ("cairn install cursor", False),
        ("cairn review main..HEAD --format yaml", False),
        ("cairn eval", True),
        ("cairn show", True),
        ("cairn hook --vault x", True),
        ("cairn hook --format vim", False),
        ("cairn completion bash|tcsh", False),
        ("cairn vault", True),
    ],
)
def test_the_checker_catches_what_the_cli_would_refuse(line: str, complete: bool) -> None:
    [argv] = _phrase(line)
    assert problems(argv, complete=complete), line


def test_the_checker_accepts_what_the_cli_takes() -> None:
    for line in (
        "cairn vault add ~/my-notes --name me --scope python --project ~/work/acme --first",
        "cairn init ~/team-lessons --no-register --no-git-hooks",
        "cairn review main..HEAD --format=json --today 2026-01-01",
        "cairn hook --format claude-code --vault ~/team-lessons",
        "cairn completion bash|zsh|fish",
        "cairn bench longmemeval|locomo FILE",
    ):
        [argv] = _phrase(line)
        assert problems(argv, complete=True) == [], line


def test_the_readers_find_commands_where_users_see_them() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ["demo"] in shell_block_commands(readme)
    assert ["doctor"] in shell_block_commands(readme)
    assert ["completion", "fish"] in shell_block_commands("```sh\ncairn completion fish > x.fish  # once\n```\n")
    assert ["completion", "bash"] in shell_block_commands('```sh\neval "$(cairn completion bash)"\n```\n')
    assert ["vault", "add", "--ref"] in inline_commands(readme)  # a span broken across two lines
    assert any(argv[:1] == ["bench"] for argv in inline_commands(readme))
    assert ["explain", "-"] in help_example_commands(_help_text(("explain",)))


# --- the documents ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_every_command_a_document_shows_parses_with_the_real_cli(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks, spans = shell_block_commands(text), inline_commands(text)
    assert blocks or spans, f"{doc} shows no cairn command: the check would test nothing"
    wrong = [f"cairn {shlex.join(a)}: {p}" for a in blocks for p in problems(a, complete=True)]
    wrong += [f"`cairn {' '.join(a)}`: {p}" for a in spans for p in problems(a, complete=False)]
    assert wrong == [], f"{doc} shows commands the CLI refuses"


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda p: " ".join(("cairn", *p)))
def test_every_help_example_parses_with_the_real_cli(path: tuple[str, ...]) -> None:
    examples = help_example_commands(_help_text(path))
    assert examples, f"`cairn {' '.join(path)} --help` shows no example command"
    wrong = [f"cairn {shlex.join(a)}: {p}" for a in examples for p in problems(a, complete=path != ())]
    assert wrong == []


def _template_ids() -> set[str]:
    return {str(p.relative_to(TEMPLATE_CARDS).with_suffix("")) for p in TEMPLATE_CARDS.rglob("*.md")}


def test_help_examples_name_cards_the_template_vault_has() -> None:
    """A new user's vault is the template (`cairn init`): `cairn show git/force-push-rebase`, the example before, was
    no card of it, so the example failed as written."""
    ids = _template_ids()
    named: list[str] = []
    for path in HELP_PATHS:
        for argv in help_example_commands(_help_text(path)):
            words = [w for w in argv if not w.startswith("-")]
            if words[:1] == ["show"] and len(words) > 1:
                named.append(words[1].split(":", 1)[-1])
            named += [w[len("cards/") : -len(".md")] for w in argv if re.fullmatch(r"cards/[\w/.-]+\.md", w)]
    assert "git/force-push-safely" in named  # the check reads the examples it means to
    assert sorted(set(named) - ids) == []


# --- the Chinese README says what the English one says -----------------------------------------------------------


def _sections(text: str) -> list[str]:
    return re.split(r"^## ", _fenced_blank(text), flags=re.M)


def _fenced_blank(text: str) -> str:
    """The text with `## ` lines inside fenced blocks neutralised (a card's body may hold headings)."""
    return re.sub(r"^```\w*\n.*?^```", lambda m: m.group(0).replace("\n## ", "\n##\u00a0"), text, flags=re.M | re.S)


def _signatures(text: str) -> set[tuple[str, ...]]:
    """Each `cairn` command the text shows, as its words that are subcommands or options."""
    found = set()
    for argv in shell_block_commands(text) + inline_commands(text):
        found.add(tuple(w.split("=", 1)[0] for w in argv if re.fullmatch(r"-{1,2}[a-z][\w-]*(=.*)?|[a-z][a-z-]+", w)))
    return found


def _figures(text: str) -> set[str]:
    """Decimal figures and ranges (0.368, 1.50–1.52, 10.6–12.8): what a translation must not change."""
    return set(re.findall(r"\d+\.\d+(?:–\d+(?:\.\d+)?)?|\d+–\d+(?:\.\d+)?", text))


def _readmes() -> tuple[str, str]:
    return (ROOT / "README.md").read_text(encoding="utf-8"), (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def test_the_chinese_readme_has_the_english_ones_sections() -> None:
    """The Chinese README lacked the English one's "A card" section (the card's format, review's exit codes)."""
    en, zh = (_sections(text) for text in _readmes())
    assert len(zh) == len(en), [s.splitlines()[0] for s in zh]
    for english, chinese in zip(en, zh, strict=True):
        assert len(_fences(chinese)) == len(_fences(english)), (english.splitlines()[0], chinese.splitlines()[0])


def test_the_chinese_readme_shows_the_same_commands_section_by_section() -> None:
    en, zh = (_sections(text) for text in _readmes())
    for english, chinese in zip(en, zh, strict=True):
        assert _signatures(chinese) == _signatures(english), english.splitlines()[0]


def test_the_chinese_readme_quotes_the_same_figures() -> None:
    en, zh = _readmes()
    assert len(_figures(en)) > 60  # the measured tables are read
    assert _figures(zh) == _figures(en)


def _whole_numbers(text: str) -> Counter[str]:
    """Every number of the text that is no decimal (1,338, 127, 250 MB, 18 of 28), each as often as it occurs."""
    return Counter(re.findall(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\d.])|(?<![\w.,-])\d+(?![\w.,]?\d)", text))


def test_the_chinese_readme_quotes_the_same_whole_numbers() -> None:
    """The figures check read decimals only: a count (1,338 negatives, 127 prompts, 1 of 16) could change in the
    translation unseen."""
    en, zh = (_whole_numbers(text) for text in _readmes())
    zh["5"] -= 1  # "5%" is said twice in Chinese: on every suite, and on the follow-ups on every vault
    assert sum(en.values()) > 60
    assert +en == +zh, (sorted((en - zh).items()), sorted((zh - en).items()))


def _code_spans(section: str) -> Counter[str]:
    """Every inline code span of a section's prose (a span broken over two lines joined), each as often as it is
    given: the commands, flags, file names, variables, settings keys and rule ids a reader copies."""
    return Counter(" ".join(span.split()) for span in re.findall(r"`([^`\n]+(?:\n[^`\n]+)?)`", _prose(section)))


def test_the_chinese_readme_names_the_same_files_flags_and_settings_section_by_section() -> None:
    """The command check reads only `cairn ...` spans, as subcommand and option words: a file the English README
    names (`~/.codex/hooks.json`), a variable (`$CAIRN_CONFIG`), a setting (`[recall] min_evidence`), a rule id, or a
    flag's value could change in one README and not the other. A translation keeps every code span as it is."""
    en, zh = (_sections(text) for text in _readmes())
    assert sum(len(_code_spans(section)) for section in en) > 200  # the prose is read
    for english, chinese in zip(en, zh, strict=True):
        only_en, only_zh = _code_spans(english) - _code_spans(chinese), _code_spans(chinese) - _code_spans(english)
        assert (sorted(only_en), sorted(only_zh)) == ([], []), english.splitlines()[0]


def _blocks(section: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of a section, those indented in a list item too (the agent's frame,
    which `_fences` does not see). A shell block without its comments and without the text of its quoted strings
    (a translation writes its own card and prompt); every other block word for word."""
    found = []
    for _, language, body in re.findall(r"^( *)```(\w*)\n(.*?)^\1```", section, re.M | re.S):
        if language == "sh":
            lines = body.replace("\\\n", " ").splitlines()
            body = "\n".join(" ".join(re.sub(r"\s#.*", "", re.sub(r'"[^"]*"', '"..."', x)).split()) for x in lines)
        found.append((language, body))
    return found


def test_the_chinese_readme_shows_the_same_blocks_section_by_section() -> None:
    """The section check counted the blocks at the start of a line only, and the command check reads `cairn` words:
    the agent's frame (indented in a list item), the card's format, and the `pipx`, `pre-commit` and `git` steps
    of the shell blocks could differ between the READMEs unseen."""
    en, zh = (_sections(text) for text in _readmes())
    assert any(language == "text" for section in en for language, _ in _blocks(section))  # the indented frame is read
    for english, chinese in zip(en, zh, strict=True):
        assert _blocks(chinese) == _blocks(english), english.splitlines()[0]


def test_the_readmes_agent_frame_is_what_the_hook_prints_for_the_readmes_card(tmp_path: Path) -> None:
    """The README's "What the agent reads" shows the frame an agent gets for the card of "A card", from a vault
    registered as `team` at /home/me/team-lessons. Nothing checked it against the hook: the README's card, committed
    into such a vault and asked through `cairn hook` as Claude Code runs it, gets that frame, line for line (the
    nonce, the folder, the summary's cut, `…`, and the notice's line breaks aside)."""
    en = _readmes()[0]
    card = re.search(r"\n## A card\n\n```markdown\n(.*?)^```", en, re.M | re.S)
    frame = re.search(r"^  ```text\n(.*?)^  ```", en, re.M | re.S)
    assert card and frame
    notice, notes = frame[1].split("\n  <cairn-notes ", 1)  # the notice is one line, wrapped in the README
    shown = " ".join(notice.split()) + "\n" + "\n".join(line[2:] for line in f"  <cairn-notes {notes}".splitlines())
    nonce = re.search(r'nonce="([0-9a-f]{8})"', shown)
    card_id = re.search(r"whole card: `cairn show (\S+) --vault (\S+)`", shown)
    assert nonce and card_id
    vault = VaultRepo(tmp_path / "team-lessons")
    vault.write_raw("cairn.toml", "")
    # verified today: past its review_after the README's card (verified 2026-10-02) is expired, never served
    text = re.sub(r"^verified_at: .*$", f"verified_at: {dt.date.today().isoformat()}", card[1], count=1, flags=re.M)
    vault.write_raw(f"cards/{card_id[1]}.md", text)
    vault.commit("Lesson: pull --rebase after a force-push")
    for args in (("vault", "add", str(vault.root), "--name", "team"), ("index", "--vault", "team")):
        done = run_cairn(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    prompt = "git pull --rebase after a teammate force-pushed the shared branch"
    payload = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    hooked = run_cairn("hook", "--format", "claude-code", cwd=tmp_path, input=json.dumps(payload))
    assert (hooked.returncode, hooked.stderr) == (0, ""), hooked.stderr
    context = json.loads(hooked.stdout)["hookSpecificOutput"]["additionalContext"]
    got = re.sub(r'nonce="[0-9a-f]{8}"', f'nonce="{nonce[1]}"', context).replace(str(vault.root), card_id[2])
    pattern = "\n".join(re.escape(line).replace(re.escape(" …"), " .+") for line in shown.splitlines())
    assert re.fullmatch(pattern + "\n", got), got


HAN = "\u3400-\u9fff"
FULL_WIDTH_PUNCTUATION = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u201c\u201d"  # 。，、；：（）“” and the like


def test_the_chinese_readme_never_breaks_a_line_where_a_browser_would_show_a_space() -> None:
    """A line break inside a paragraph is a space once rendered (GitHub in Chrome, among others): between two Chinese
    characters (收到 / 提示词) or after full-width punctuation it shows as a stray gap, which Chinese text never has.
    The Chinese README broke 60 lines so; a paragraph is now one line there, or breaks beside Latin text only."""
    zh = _readmes()[1]
    prose = re.sub(r"^ *```\w*\n.*?^ *```", "", zh, flags=re.M | re.S)
    breaks = re.findall(
        rf"[{HAN}{FULL_WIDTH_PUNCTUATION}]\n *[{HAN}{FULL_WIDTH_PUNCTUATION}]|[{FULL_WIDTH_PUNCTUATION}]\n *(?![-|#\s])\S",
        prose,
    )
    assert breaks == [], breaks


# --- the figures come from benchmarks/RESULTS.md ------------------------------------------------------------------

# Figures the README quotes that benchmarks/RESULTS.md does not hold (measured, by the commit that added them, but
# not written up). When RESULTS.md gains one, take it off this list.
NOT_IN_RESULTS: set[str] = set()


def _measured_figures() -> set[str]:
    measured = _readmes()[0].split("\n## Measured\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"\d[\d,]*\.\d+(?:–\d+(?:\.\d+)?)?|\d+(?:,\d{3})+|\d+–\d+(?:\.\d+)?", measured))


def _in_results(figure: str, results: str) -> bool:
    """The figure as RESULTS.md writes it (ranges with a hyphen); a range of decimals the README draws from several
    runs (1.76–1.82x from runs of 1.82, 1.79 and 1.76) counts when RESULTS.md holds both ends."""

    def holds(text: str) -> bool:
        return re.search(rf"(?<![\d.]){re.escape(text)}(?!\d)", results) is not None

    if holds(figure.replace("–", "-")):
        return True
    ends = figure.split("–")
    return len(ends) == 2 and all("." in end and holds(end) for end in ends)


def test_the_readmes_figures_are_in_the_results() -> None:
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8").replace("–", "-")
    figures = _measured_figures()
    assert len(figures) > 60
    missing = {f for f in figures if not _in_results(f, results)}
    assert missing - NOT_IN_RESULTS == set(), "README figures that benchmarks/RESULTS.md does not hold"
    assert NOT_IN_RESULTS - missing == set(), "now in RESULTS.md (or gone from the README): update NOT_IN_RESULTS"


# --- which commands take --vault ----------------------------------------------------------------------------------


def _commands_without_vault() -> set[str]:
    ctx = click.Context(cli, info_name="cairn")
    without = set()
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        if name == "hook":  # its own parser: --format, --vault, --scope
            continue
        subcommands = (
            [c for n in command.list_commands(ctx) if (c := command.get_command(ctx, n)) is not None]
            if isinstance(command, click.Group)
            else [command]
        )
        if not all(any("--vault" in getattr(p, "opts", ()) for p in c.params) for c in subcommands):
            without.add(name)
    return without


@pytest.mark.parametrize(
    ("doc", "pattern"),
    [
        ("README.md", r"works on a vault \(all but (.+?)\)"),
        ("README.zh-CN.md", r"命令（除 (.+?) 之外的所有命令）"),
        ("ARCHITECTURE.md", r"works on a vault \(all but (.+?)\)"),
    ],
)
def test_the_commands_said_to_take_no_vault_are_those_without_one(doc: str, pattern: str) -> None:
    text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
    match = re.search(pattern, text)
    assert match, f"{doc} no longer says which commands take no --vault"
    assert set(re.findall(r"`([a-z-]+)`", match[1])) == _commands_without_vault()


# --- JSON shapes and exit codes (ARCHITECTURE.md, "Output shapes") ------------------------------------------------


@pytest.fixture
def template_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "team-lessons"
    done = invoke_cli(["init", str(vault), "--no-register", "--no-git-hooks"])
    assert done.returncode == 0, done.stdout + done.stderr
    return vault


def _git(vault: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=vault, check=True, capture_output=True)


def test_recall_json_has_the_documented_shape(template_vault: Path) -> None:
    prompt = "git pull --rebase after a force-push"
    done = invoke_cli(["recall", "--json", "--vault", str(template_vault), prompt])
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"cards", "abstained", "commit"} and data["abstained"] is False
    # DESIGN's {id, name, summary, path, score}, and `file` (ARCHITECTURE: the card's file in full)
    assert [set(card) for card in data["cards"]] == [{"id", "name", "summary", "path", "score", "file"}]
    again = [invoke_cli(["recall", "--json", "--session", "s1", "--vault", str(template_vault), prompt]) for _ in "12"]
    first, second = (json.loads(d.stdout) for d in again)
    assert set(first) == {"cards", "abstained", "commit", "already_injected"} and first["already_injected"] == []
    assert second["cards"] == [] and second["already_injected"] == ["git/force-push-safely"]


def test_index_json_gives_the_documented_ignored_note(template_vault: Path) -> None:
    """`cairn index --json` and `cairn import --json` gained `"ignored"` (the note on card files git ignores;
    `test_import` and `test_index` check its value) with no word of it in ARCHITECTURE's JSON shapes."""
    said = " ".join((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    assert '`cairn index --json` and `cairn import --json` give `"ignored"`' in said
    indexed = invoke_cli(["index", "--json", "--vault", str(template_vault)])
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["ignored"] is None, indexed.stdout


def test_review_blocks_a_removed_card_with_exit_3_and_the_documented_json(template_vault: Path) -> None:
    _git(template_vault, "switch", "-q", "-c", "remove-card")
    _git(template_vault, "rm", "-q", "cards/git/force-push-safely.md")
    cases = template_vault / "evals" / "cases.yaml"  # and the cases expecting it, which would fail the review
    items = cases.read_text().split("\n- ")
    cases.write_text("\n- ".join(item for item in items if "git/force-push-safely" not in item))
    _git(template_vault, "commit", "-q", "--no-verify", "-am", "remove a card and its cases")
    done = invoke_cli(["review", "main..HEAD", "--json"], cwd=template_vault)
    assert done.returncode == 3, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert (report["verdict"], report["exit_code"]) == ("blocked", 3)
    assert report["blocked"] and all(set(entry) == {"kind", "path", "reason", "check"} for entry in report["blocked"])
    assert any(entry["reason"] == "removes the card git/force-push-safely" for entry in report["blocked"])
    assert invoke_cli(["review", "main..HEAD"], cwd=template_vault).returncode == 3


def test_eval_reads_the_served_ref_and_worktree_the_working_tree(template_vault: Path) -> None:
    """`cairn eval --help` said it read HEAD: it reads the served ref, so a card committed on a branch counts only
    with --worktree (or once merged)."""
    _git(template_vault, "switch", "-q", "-c", "lesson")
    card = template_vault / "cards" / "docker" / "dockerignore-node-modules.md"
    card.write_text(
        "---\nname: Docker build context includes node_modules\nsummary: Without a .dockerignore, docker build "
        "sends node_modules to the daemon and the build is slow; list node_modules in .dockerignore.\n"
        "scope: [docker]\n---\n\n# Docker build context includes node_modules\n\nThe build sent 2 GB.\n",
        encoding="utf-8",
    )
    _git(template_vault, "add", "cards")
    _git(template_vault, "commit", "-q", "--no-verify", "-m", "lesson")
    cases = template_vault.parent / "cases.yaml"
    cases.write_text(
        "- id: d1\n  query: docker build sends node_modules to the daemon and is slow\n"
        "  expect: [docker/dockerignore-node-modules]\n",
        encoding="utf-8",
    )
    served = invoke_cli(["eval", "--cases", str(cases)], cwd=template_vault)
    assert served.returncode == 1 and "the index does not hold" in served.stderr, served.stdout + served.stderr
    worktree = invoke_cli(["eval", "--cases", str(cases), "--worktree", "--json"], cwd=template_vault)
    assert worktree.returncode == 0, worktree.stderr
    assert json.loads(worktree.stdout)["recall@1"] == 1.0
    assert "instead of the served ref" in _help_text(("eval",))


def test_a_lesson_under_a_heading_with_no_latin_letters_goes_where_the_readme_says(
    template_vault: Path, tmp_path: Path
) -> None:
    """The README said only "the scope is the section heading's slug": a CLAUDE.md in Chinese (`## 踩坑`) has no
    slug, so its lessons got no scope and went under cards/lessons/, which the README now says; this holds it to it."""
    en, zh = _readmes()
    said = re.search(
        r"or with no Latin letters, such as `(## [^`]+)`,\s+gives none, and its cards go under `([^`]+)`", en
    )
    assert said and f"例如 `{said[1]}`，就没有 scope，卡片放在 `{said[2]}` 下" in zh
    notes = tmp_path / "CLAUDE.md"
    notes.write_text(
        f"# 项目\n\n{said[1]}\n\n- 在 CI 里并行跑 pytest 时，测试共用 /tmp/out.csv 会导致偶发失败；每个测试用 tmp_path。\n",
        encoding="utf-8",
    )
    done = invoke_cli(["import", str(notes), "--dry-run"], cwd=template_vault)
    assert done.returncode == 0, done.stdout + done.stderr
    [card] = [line for line in done.stdout.splitlines() if "would write " in line]
    assert f"would write {said[2]}" in card and "| scope: none |" in card, card


def test_both_readmes_say_when_import_dates_a_card_today() -> None:
    """The Chinese README said only "today when the file is not committed as it stands"; the English one, since
    import caps a commit dated ahead at today (`test_import.test_notes_committed_with_a_date_ahead_are_dated_today`),
    says "or its commit is dated after today" too."""
    en, zh = (" ".join(text.split()) for text in _readmes())
    assert "today when the file is not committed as it stands, or its commit is dated after today" in en
    assert "（文件的当前内容尚未提交，或那次提交的日期晚于今天时，取当天）" in zh


def test_the_architecture_says_which_checkouts_are_the_served_card() -> None:
    """ARCHITECTURE said a card's `file` is null when its git object id is not the indexed blob's; a checkout in
    UTF-16 (`test_served_ref.test_a_checkout_in_utf_16_is_the_served_card`) or with CRLF line ends never hashes as
    the blob, and `serve.served_file` takes both for the served card."""
    said = " ".join((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    passage = said[said.index("`file` is null when") :][:400]
    assert "CRLF line ends" in passage and "UTF-16 from `working-tree-encoding`" in passage, passage


def test_both_readmes_say_recall_refuses_an_index_behind_its_branch_with_an_error() -> None:
    """The READMEs said `recall` and `explain` "serve nothing" from an index behind its branch while another process
    updates it, as the hook does; they exit 1 with an error to try again
    (`test_index.test_an_index_behind_its_branch_is_read_or_refused_at_once_while_another_process_updates_it`),
    which a script reading `--json` for `"abstained"` must expect, and `eval` reads the older commit as `list` does."""
    en, zh = (" ".join(text.split()) for text in _readmes())
    said = (
        "`list`, `show` and `eval` read the older commit after 2 s and say so, and `recall`, `explain` and the MCP "
        "tools refuse it with an error (exit 1: try again in a moment)"
    )
    assert said in en
    assert (
        "`list`、`show` 和 `eval` 等待 2 秒后读取较旧的提交并加以说明，`recall`、`explain` 和 MCP 工具则报错拒绝（退出码 1"
        in zh
    )


def test_the_architecture_names_every_reader_of_the_id_order() -> None:
    """ARCHITECTURE said the index's id order is read "only when a tie reaches the cut"; since 263aa59 the phrase step
    reads it too, to take a phrase's holders in id order within its budget. Each function of `cairn/hot/recall.py`
    that reads it is named beside that claim."""
    said = " ".join((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    claim = said[said.index("through the index's id order, read only when") :][:300]
    source = (ROOT / "cairn" / "hot" / "recall.py").read_text(encoding="utf-8")
    readers = set()
    for function in re.split(r"\n(?=def )", source)[1:]:
        if "index.id_order()" in function:
            readers.add(function[4 : function.index("(")])
    assert readers == {"_ties_by_id", "rare_phrases"}, readers
    assert all(f"`recall.{name}`" in claim for name in readers), claim


# --- the template's cairn.toml ------------------------------------------------------------------------------------


def test_the_template_cairn_toml_suggests_a_disable_a_vault_may_make(tmp_path: Path) -> None:
    """Bug fixed: the template's cairn.toml suggested `disable = ["prompt-injection"]` "for a vault of security
    lessons", which lint refuses to honour (security-disable: only the user's own configuration can allow it)."""
    vault = tmp_path / "team-lessons"
    assert run_cairn("init", str(vault), "--no-register", "--no-git-hooks", cwd=tmp_path).returncode == 0
    toml = vault / "cairn.toml"
    [example] = re.findall(r"switches off, e\.g\. (\[[^\]]*\])", toml.read_text(encoding="utf-8"))
    toml.write_text(toml.read_text(encoding="utf-8").replace("\ndisable = []\n", f"\ndisable = {example}\n"))
    done = run_cairn("lint", "--strict", cwd=vault)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout
    assert "0 warnings" in done.stderr and "security-disable" not in done.stderr, done.stderr


@pytest.mark.parametrize("doc", ["README.md", "README.zh-CN.md", "ARCHITECTURE.md"])
def test_the_admission_order_the_documents_give_is_the_one_recall_checks(doc: str, vault_repo: VaultRepo) -> None:
    """The READMEs gave admission as "…, `not_when`, scope" while recall checks scope first: a card both out of the
    asked scope and refused by a `not_when` word is refused as out of scope."""
    vault_repo.write(
        "k8s/drain",
        "Node drain loses pods in the scheduler",
        "Cordon the node and wait for the controller before you drain it.",
        scope=["k8s"],
        not_when=["flimflam"],
    )
    vault_repo.commit("a card")
    done = vault_repo.cairn("explain", "--json", "--scope", "git", "node drain loses pods flimflam")
    [row] = [row for row in json.loads(done.stdout)["candidates"] if row["id"] == "k8s/drain"]
    assert row["reason"] == "out_of_scope"
    listed = (ROOT / doc).read_text(encoding="utf-8")
    found = re.search(r"(?:admission|admits in ranking order|准入)\s*[(（]([^)）]*)", listed)
    assert found and found[1].index("scope") < found[1].index("`not_when`"), found


def test_the_documents_give_the_logs_limits_the_code_sets() -> None:
    """The hook's log and semantic.log rotate (one old file kept) at limits only code comments gave: the READMEs,
    where they describe the state folder, and ARCHITECTURE, beside the hook log, say them as the code sets them."""
    from cairn.hot import hook, semantic

    hook_mib, semantic_mib = hook.MAX_LOG_BYTES // 2**20, semantic.MAX_LOG_BYTES // 2**20
    en, zh = (" ".join(text.split()) for text in _readmes())
    architecture = " ".join((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    assert f"past {hook_mib} MiB the hook's `hook.jsonl` becomes `hook.jsonl.1`" in en
    assert f"past {semantic_mib} MiB the semantic extra's `semantic.log` becomes `semantic.log.1`" in en
    assert f"`hook.jsonl` 超过 {hook_mib} MiB 后改名为 `hook.jsonl.1`" in zh
    assert f"`semantic.log` 超过 {semantic_mib} MiB 后改名为 `semantic.log.1`" in zh
    assert f"Past {hook_mib} MiB (`hook.MAX_LOG_BYTES`) `hook.jsonl` becomes `hook.jsonl.1`" in architecture
    assert f"past {semantic_mib} MiB, `semantic.MAX_LOG_BYTES`" in architecture
