"""`cairn review` as a pull-request comment: the Review record rendered to Markdown that is safe to post."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cairn.review import report
from cairn.review.report import EXIT_BLOCKED, EXIT_FAILED, CardChange, Review, Routing, visible

METRICS = (
    ("recall@1", "Recall@1"),
    ("recall@3", "Recall@3"),
    ("injection@1", "Injection@1"),
    ("injection@3", "Injection@3"),
    ("false_injection_rate", "False injection rate"),
)
_LONG_LIST = 8  # longer lists are folded into <details>
# GitHub refuses a comment over 65,536 characters; the template's workflow cuts at 60,000 (after its marker line), so
# a longer review is shortened here, its long lists first, rather than cut there in the middle of a table.
MAX_COMMENT_CHARS = 60_000
_CAPS = (None, 100, 50, 25, 10, 0)  # rows kept of each long list, tried in turn until the comment fits


def _one_line(text: object, limit: int | None) -> str:
    value = " ".join(visible(str(text)).split())
    if limit is not None and len(value) > limit:
        value = value[: limit - 1] + "…"
    return value


# Inline Markdown a value could start: backslash escapes, code spans, emphasis, strikethrough, links, images and
# footnotes (both brackets: a value's `]` could close a bracket the report puts around it), and `_` emphasis, except
# between two letters or digits (`max_cards`), where it can neither open nor close one.
_INLINE = re.compile(r"[\\`*~\[\]]|(?<![^\W_])_|_(?![^\W_])")
# What GitHub makes of a comment's text however it is escaped (it reads the rendered text, outside code): `@name`
# notifies that person or team, `#12`, `owner/repo#12` and `GH-12` link that issue and list the comment on it, `:x:`
# is an emoji (`:+1:` too; not `path:12:`, all digits, which GitHub leaves alone but for `:100:` and `:1234:`). A
# zero-width space after the `@`, `#`, `GH-` or `:` (`&#8203;`, plain in the Markdown) keeps the text as it reads and
# matches none of them.
_GITHUB_REFERENCE = re.compile(
    r"@(?=[A-Za-z0-9])|#(?=[0-9])|\bGH-(?=[0-9])|:(?=[0-9_]*[A-Za-z+-][A-Za-z0-9_+-]*:)", re.IGNORECASE
)


def cell(text: object, limit: int | None = 160) -> str:
    """Text safe inside a Markdown table cell, read as text: one line, no pipes, no HTML (a hidden comment must
    show), no inline Markdown (a card cannot make a link, an image or emphasis in the comment; each such character is
    backslash-escaped, so it renders as written), no GitHub mention, issue reference or emoji, invisible characters
    made visible (`<U+200B>`). limit: longer text is cut with `…`; None keeps it whole (what agents read is never
    cut)."""
    value = _one_line(text, limit)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _INLINE.sub(lambda m: "\\" + m.group(), value).replace("|", "\\|")
    return _GITHUB_REFERENCE.sub(lambda m: m.group() + "&#8203;", value)


def _code(text: str, table: bool = True) -> str:
    """Text as a code span, shown as it is (no escape is read inside one): fenced by more backticks than any run of
    them in it (and a space inside the fence when it starts or ends with one), so no backtick ends it early. table:
    its pipes are escaped, as the table around it needs (GFM reads `\\|` there as `|`; outside a table it shows as
    written)."""
    value = _one_line(text, 160)
    fence = "`" * (max(map(len, re.findall("`+", value)), default=0) + 1)
    pad = " " if value[:1] == "`" or value[-1:] == "`" else ""
    return fence + pad + (value.replace("|", "\\|") if table else value) + pad + fence


def render_markdown(r: Review) -> str:
    """The review as a pull-request comment: whole when it fits in `MAX_COMMENT_CHARS` (counted as GitHub's
    JavaScript counts them, in UTF-16 units), else with each long list cut to its first rows and the cards' fields
    and provenance left to `cairn review --json`, each cut saying so."""
    text = ""
    for cap in _CAPS:
        text = _render(r, cap)
        if len(text.encode("utf-16-le")) // 2 <= MAX_COMMENT_CHARS:
            break
    return text


def _first(items: Sequence[Any], cap: int | None) -> Sequence[Any]:
    return items if cap is None else items[:cap]


def _more(items: Sequence[Any], cap: int | None, what: str) -> list[str]:
    """The line saying how many of `items` a cut list leaves out, after a blank line (which ends a table)."""
    if cap is None or len(items) <= cap:
        return []
    return [
        "",
        f"… and {len(items) - cap:,} more {what}, left out to keep this comment under GitHub's size limit: "
        "`cairn review BASE..HEAD --json` lists every one.",
    ]


def _render(r: Review, cap: int | None) -> str:
    out: list[str] = []
    statuses = ("added", "changed", "renamed", "removed", "revived")
    counts = {s: sum(1 for c in r.changes if c.status == s) for s in statuses}
    what = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no cards changed"
    verdict = {"fails": "❌ **Fails**", "blocked": "⛔ **Blocked**", "passes": "✅ **Passes**"}[r.verdict]
    warnings = len(r.findings) - len(r.lint_errors)
    out.append(f"## Cairn review of {_code(f'{r.base_rev}..{r.head_rev}', table=False)}")
    out.append("")
    out.append(
        f"{verdict}: {r.n_errors} error(s), {len(r.blocked)} change(s) a maintainer must check, {warnings} lint "
        f"warning(s), {len(r.similar)} near-duplicate(s) or conflict(s){_silenced_note(r)}. Cards: {what}. "
        f"Compared `{r.base[:10]}` (merge base) with `{r.head[:10]}`."
    )
    if r.blocked:
        out += [
            "",
            "### Blocked: a maintainer must check these changes",
            "",
            "This range changes what protects every agent's prompts (the gates, the lint policy, the eval cases, a "
            "card's reach, or what runs on teammates' machines and in CI). Review cannot judge such a change on the "
            "author's word; a maintainer reads it and merges it deliberately.",
            "",
        ]
        for b in _first(r.blocked, cap):
            out.append(f"- **Blocked:** {cell(b.reason, None)}. Check: {cell(b.check, None)}.")
        out += _more(r.blocked, cap, "change(s) a maintainer must check")
    if r.prompt_injections:
        out += ["", "> [!CAUTION]", "> **Prompt injection.** These cards would put instructions into agents' prompts:"]
        for f in _first(r.prompt_injections, cap):
            out.append(f"> - {_code(f.path, table=False)} line {f.line}: {cell(f.message, 300)}")
        out += [f"> {line}" if line else ">" for line in _more(r.prompt_injections, cap, "prompt injection(s)")]
    if r.routing.unknown:
        out += [
            "",
            "> [!WARNING]",
            f"> **{len(r.routing.unknown)} eval case(s) expect a card HEAD does not hold** (`cairn eval` and "
            "`cairn calibrate` refuse them: fix the id, or the case, to the card's id at HEAD):",
        ]
        for file, case, card in r.routing.unknown[:_LONG_LIST]:
            # the id is right when HEAD holds the card and its index refuses it: the card is what to fix
            why = " (HEAD holds it, but its index leaves it out: fix the card, see Lint)"
            out.append(
                f"> - {_code(file, table=False)}: {_code(case, table=False)} expects {_code(card, table=False)}"
                + (why if card in r.routing.left_out else "")
            )
        if len(r.routing.unknown) > _LONG_LIST:
            more = len(r.routing.unknown) - _LONG_LIST
            out.append(f"> - and {more} more: `--json` lists each one (`routing.unknown_expected`)")
    new_false = r.routing.new_false_injections
    if new_false:
        out += [
            "",
            "> [!WARNING]",
            f"> **{len(new_false)} negative eval case(s) now get a card** (they should get none):",
        ]
        for c in new_false[:_LONG_LIST]:
            out.append(f"> - {_code(c.id, table=False)} gets {', '.join(_code(i, table=False) for i in c.head)}")
    out += ["", "### Cards", ""]
    if r.changes:
        out += ["| change | card | name | authors in this range |", "|---|---|---|---|"]
        for ch in _first(r.changes, cap):
            card = _code(ch.id) + (f" (was {_code(ch.old_id)})" if ch.old_id else "")
            authors = ", ".join(cell(a) for a in ch.authors) or "–"
            out.append(f"| {ch.status} | {card} | {cell(ch.name, None)} | {authors} |")
        out += _more(r.changes, cap, "card(s)")
        served = [c for c in r.changes if c.status != "removed" and (c.summary or c.name)]
        if served and cap is not None:
            out += [
                "",
                f"What agents will read of the {len(served):,} card(s), every field whole, is left out to keep this "
                "comment under GitHub's size limit: `cairn review BASE..HEAD --json` has it.",
            ]
        elif served:
            out += ["", _details("What agents will read (every field whole)", _served_lines(served), open_=True)]
    else:
        out.append("No card under `cards/` changes in this range.")
    if r.settings:
        out += ["", "### Settings", "", "`cairn.toml` changes in this range; the gates and ranking at HEAD use it:", ""]
        out += ["| setting | base | head |", "|---|---|---|"]
        for change in r.settings:
            out.append(f"| `{change.setting}` | {_value(change.base)} | {_value(change.head)} |")
    elif r.config_changed:
        out += ["", "`cairn.toml` changes in this range (no setting's value changes, or one end cannot be read)."]
    out += ["", "### Lint", ""]
    if r.findings:
        out += ["| severity | where | rule | message |", "|---|---|---|---|"]
        for f in _first(r.findings, cap):
            out.append(f"| {f.severity} | {_code(f'{f.path}:{f.line}')} | {cell(f.rule)} | {cell(f.message, 300)} |")
        out += _more(r.findings, cap, "finding(s)")
    else:
        out.append("No findings on the changed cards (linted as HEAD holds them).")
    if r.merge_note:
        out += ["", cell(r.merge_note[0].upper() + r.merge_note[1:] + ".", None)]
    out += ["", "### Near-duplicates and conflicts", ""]
    if r.similar:
        figures = ("name_similarity", "summary_similarity", "body_similarity", "summary_overlap")
        out += [
            f"| kind | changed card | other card | why | {' | '.join(figures)} |",
            "|---|---|---|---|" + "---|" * len(figures),
        ]
        for s in _first(r.similar, cap):
            kind = "**probable conflict**" if s.kind == "conflict" else "near-duplicate"
            values = " | ".join(f"{getattr(s, name):.3f}" for name in figures)
            out.append(
                f"| {kind} | {_code(s.card)} | {_code(s.other)} {cell(s.other_name, 80)} | {cell(s.why, 240)} | "
                f"{values} |"
            )
        out += _more(r.similar, cap, "near-duplicate(s) or conflict(s)")
    else:
        out.append("None found among the cards closest to each changed card.")
    if r.base_moved:
        out += [
            "",
            f"Compared with the other cards at HEAD, not with the cards {cell(r.base_rev, None)} changed after HEAD "
            f"branched off (`{r.base[:10]}`..`{r.base_tip[:10]}`): lint of the merge reads those (above), but no "
            f"probable conflict with them is looked for. Merge {cell(r.base_rev, None)} into the branch to compare "
            "them too.",
        ]
    out += ["", "### Routing impact", ""]
    out += _routing_lines(r.routing)
    out += ["", "### Cards' own questions", ""]
    out += _own_lines(r, cap)
    prov = [c for c in r.changes if c.provenance or c.commits]
    if prov and cap is not None:
        out += [
            "",
            "### Provenance",
            "",
            f"The provenance of {len(prov):,} card(s) is in `cairn review BASE..HEAD --json`.",
        ]
    elif prov:
        out += ["", "### Provenance", "", _details(f"Provenance of {len(prov)} card(s)", _provenance_lines(prov))]
    out += [
        "",
        f"<sub>`cairn review` — exit {EXIT_FAILED} on a lint error, a negative case that now gets a card or a case "
        f"expecting a card HEAD does not hold; exit {EXIT_BLOCKED} when nothing fails but a change is blocked for a "
        "maintainer.</sub>",
    ]
    return "\n".join(out) + "\n"


def _served_lines(changes: Sequence[CardChange]) -> list[str]:
    """Each card as an agent gets it (name, summary; never cut), its hidden characters and its changed fields."""
    lines: list[str] = []
    for c in changes:
        lines += [f"**{_code(c.id, table=False)}** ({c.status})", ""]
        if c.left_out:  # the index refuses it at HEAD: its fields below are what it says, not what agents read
            lines.append(f"- ⛔ **Not served**: HEAD's index leaves it out ({cell(c.left_out, None)})")
        elif c.not_served:  # held, never admitted: a draft, retired, expired or superseded card
            lines.append(f"- ⛔ **Not served**: {cell(c.not_served, None)}")
        lines.append(f"- Name: {cell(c.name, None)}{_cut_note(c.name, 'name')}")
        summary = f"{cell(c.summary, None)}{_cut_note(c.summary, 'summary')}"
        lines.append(f"- Summary ({len(c.summary):,} characters): {summary}")
        for h in c.hidden:
            lines.append(
                f"- ⚠️ Invisible characters in `{h.field}` (removed before serving): "
                f"{cell(', '.join(h.characters), None)}. As written: {cell(h.visible, None)}"
            )
        if c.was_superseded_by:
            by = ", ".join(_code(i, table=False) for i in c.was_superseded_by)
            lines.append(f"- Served again: superseded at the base by {by}, by no active card at HEAD")
        if c.status != "added" and (c.fields or c.body_changed):
            lines += ["", "| field | before | after |", "|---|---|---|"]
            for f in c.fields:
                lines.append(f"| `{f.field}` | {_value(f.before)} | {_value(f.after)} |")
            if c.body_changed:
                lines.append("| body | (changed; `cairn show` reads it) | |")
        elif c.status == "added":
            extra = [f for f in c.fields if f.field not in ("name", "summary")]
            if extra:
                lines += ["", "| field | value |", "|---|---|"]
                lines += [f"| `{f.field}` | {_value(f.after)} |" for f in extra]
        lines.append("")
    return lines


# What the hook serves of each field (cairn/hot/hook.py's context block); review shows the whole and says so.
HOOK_SERVES = {"name": 200, "summary": 2000}


def _cut_note(text: str, field: str) -> str:
    limit = HOOK_SERVES[field]
    return f" (**the hook serves its first {limit:,} characters**)" if len(text) > limit else ""


def _value(value: Any) -> str:
    """A field's value in a table cell, whole: lists as `[a, b]`, absent as `–`."""
    if value is None:
        return "–"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v, None) for v in value) + "]"
    return cell(value, None) or "''"


def _details(summary: str, lines: Sequence[str], open_: bool = False) -> str:
    return "\n".join([f"<details{' open' if open_ else ''}><summary>{summary}</summary>", "", *lines, "", "</details>"])


def _routing_lines(routing: Routing) -> list[str]:
    if routing.note:
        return [cell(routing.note[0].upper() + routing.note[1:] + ".", None)]
    files = ", ".join(_code(f, table=False) for f in routing.files)
    lines = [
        f"{routing.n_cases} eval case(s) from {files}, run at the merge base and at HEAD on words alone, as "
        "`CAIRN_SEMANTIC=0 cairn eval` measures them (with the semantic extra, `cairn eval` asks the cards' meaning "
        "too and may differ).",
        "",
    ]
    lines += ["| metric | base | head | change |", "|---|---|---|---|"]
    unmeasured = False
    for key, label in METRICS:
        row = _figures(routing.base, routing.head, key)
        unmeasured |= row is None
        lines.append(f"| {label} | {row or '– | – | –'} |")
    slices = sorted(set(routing.base.get("by_slice", {})) | set(routing.head.get("by_slice", {})))
    if slices:
        rows = ["| slice | metric | base | head | change |", "|---|---|---|---|---|"]
        for name in slices:
            a_s, b_s = routing.base["by_slice"].get(name, {}), routing.head["by_slice"].get(name, {})
            for key, label in (METRICS[2], METRICS[4]):
                row = _figures(a_s, b_s, key)
                unmeasured |= row is None
                rows.append(f"| {cell(name)} | {label} | {row or '– | – | –'} |")
        lines += ["", _details("By slice", rows)]
    if unmeasured:
        lines += [
            "",
            "– = no case to measure: Recall@k and Injection@k need positive cases (expect: [ids]), the false "
            "injection rate negative ones (expect: []).",
        ]
    changed = routing.changed
    lines.append("")
    if not changed:
        lines.append("No case's injected cards change.")
        return lines
    rows = ["| case | kind | expects | base injects | head injects |", "|---|---|---|---|---|"]
    for c in changed:
        kind = f"**{c.kind}**" if c.kind == "new false injection" else c.kind
        rows.append(
            f"| {_code(c.id)} | {kind} | {_ids(c.expect) or 'nothing'} | {_ids(c.base) or '–'} | "
            f"{_ids(c.head) or '–'} |"
        )
    title = f"{len(changed)} case(s) whose injected cards change"
    if len(changed) <= _LONG_LIST:
        lines += [f"**{title}:**", "", *rows]
    else:
        lines.append(_details(title, rows, open_=bool(routing.new_false_injections)))
    return lines


def _silenced_note(r: Review) -> str:
    silenced = sorted({q.card for q in r.own if q.kind == "silenced"})
    return f", {len(silenced)} card(s) their own questions no longer find" if silenced else ""


def _own_lines(r: Review, cap: int | None = None) -> list[str]:
    asked = "Each card this range adds or changes, and the cards closest to it, asked its name, its summary's first sentence and its aliases"
    if not any(c.status != "removed" for c in r.changes):
        return ["No card is added or changed, so none was asked its own questions."]
    # past the cap, the cards left are unchecked: "each is found" must not cover them
    unasked = (
        f"{r.own_unasked} more card(s) were not asked (a review asks at most {report.MAX_OWN_CARDS}): their own "
        "questions are unchecked."
        if r.own_unasked
        else ""
    )
    if not r.own:
        each = "each card asked" if unasked else "each"
        found = f"{asked}: {each} is found by them at HEAD as at the merge base, and every added or changed card by its name."
        return [found, *(["", unasked] if unasked else [])]
    lines = [f"{asked}, at the merge base and at HEAD. No eval case may cover these:", ""]
    lines += ["| card | kind | asked | base injects | head injects | why |", "|---|---|---|---|---|---|"]
    for q in _first(r.own, cap):
        kind = f"**{q.kind}**" if q.kind == "silenced" else q.kind
        base = "(not there)" if q.base is None else _ids(q.base) or "–"
        lines.append(
            f"| {_code(q.card)} | {kind} | {q.field}: {cell(q.query, 120)} | {base} | {_ids(q.head) or '–'} | "
            f"{cell(q.why, 240)} |"
        )
    lines += _more(r.own, cap, "card question(s)")
    if len(r.own) > _LONG_LIST:
        lines = [lines[0], "", _details(f"{len(r.own)} card question(s)", lines[2:], open_=True)]
    return lines + (["", unasked] if unasked else [])


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(_code(i) for i in ids)


def _figures(base: dict[str, Any], head: dict[str, Any], key: str) -> str | None:
    """A figure's base, head and change cells, or None when it has no case to be a share of (as `cairn eval` shows
    `-`: its 0.0 is no measure). Both ends run HEAD's cases, so they have the same positives and negatives."""
    if not head.get("n_neg" if key == "false_injection_rate" else "n_pos"):
        return None
    a, b = base.get(key, 0.0), head.get(key, 0.0)
    return f"{a:.3f} | {b:.3f} | {_delta(b - a, key)}"


def _delta(value: float, key: str) -> str:
    if abs(value) < 5e-5:
        return "0"
    worse = value > 0 if key == "false_injection_rate" else value < 0
    return f"{value:+.3f}" + (" ⚠️" if worse else "")


def _provenance_lines(changes: Sequence[CardChange]) -> list[str]:
    lines = [
        "| card | in this range | created | last changed | summary last changed | authors |",
        "|---|---|---|---|---|---|",
    ]
    for c in changes:
        p = c.provenance or {}
        in_range = "; ".join(f"`{rc.commit[:8]}` {cell(rc.author)} {rc.date[:10]}" for rc in c.commits) or "–"
        authors = ", ".join(f"{cell(a.get('name', ''))} ({a.get('commits', 0)})" for a in p.get("authors", [])) or "–"
        lines.append(
            f"| {_code(c.id)} ({c.status}) | {in_range} | {_ref(p.get('created'))} | {_ref(p.get('last_changed'))} | "
            f"{_ref(p.get('summary_changed'))} | {authors} |"
        )
    return lines


def _ref(ref: dict[str, Any] | None) -> str:
    if not ref:
        return "–"
    signed = "signed" if ref.get("signed") else "unsigned"
    return f"`{str(ref['commit'])[:8]}` {cell(ref.get('author', ''))} {str(ref.get('date', ''))[:10]} ({signed})"
