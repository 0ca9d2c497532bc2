"""Commands for the people who keep a vault's judgement sound: review (a pull request's cards) and calibrate."""

from __future__ import annotations

from pathlib import Path

import click

from cairn.cli.common import (
    Day,
    FiniteFloatRange,
    echo,
    echo_json,
    errors_to_exit,
    file_given,
    json_option,
    open_vault,
    os_error_text,
    progress_stages,
    vault_option,
    warn,
)
from cairn.hot.errors import CairnError, NotAGitRepository, VaultNotFound
from cairn.index import build as indexer
from cairn.terminal import clean_line


@click.command("calibrate")
@click.option(
    "--cases",
    "cases_path",
    required=True,
    type=click.Path(dir_okay=False),
    callback=file_given,
    help="Cases file: .jsonl or .yaml (id, query, expect, slice), positives and negatives.",
)
@click.option(
    "--target-fir",
    type=FiniteFloatRange(0, 1),
    default=0.05,
    show_default=True,
    help="The highest false injection rate allowed, overall and on every slice.",
)
@click.option(
    "--folds",
    type=click.IntRange(1, 50),
    default=5,
    show_default=True,
    help="Cross-validation folds (1: fit on every case, no held-out figures).",
)
@click.option(
    "--step",
    type=click.Choice(["0.1", "0.05", "0.025"]),
    default="0.05",
    show_default=True,
    help="Grid step of each threshold.",
)
@click.option("--write", is_flag=True, help="Store the fitted thresholds in the vault's cairn.toml [recall].")
@click.option(
    "--force",
    is_flag=True,
    help="With --write: write even when the held-out false injection rate misses the target.",
)
@click.option("--worktree", is_flag=True, help="Calibrate on the working tree's cards instead of the served ref's.")
@vault_option
@json_option
@errors_to_exit
def calibrate_cmd(
    cases_path: Path,
    target_fir: float,
    folds: int,
    step: str,
    write: bool,
    force: bool,
    worktree: bool,
    vault_path: str | None,
    as_json: bool,
) -> None:
    """Fit the gate thresholds for the best Injection@1 at a target false injection rate.

    The rate must hold overall and on every slice. Cases are split into folds by a hash of their id; the
    cross-validated figures are measured on folds the thresholds were not fitted on, so trust them over the
    fitted ones. Prints the trade-off at several target rates. --write edits only min_lead, min_coverage and
    min_margin in cairn.toml (comments and other settings are kept); commit it for agents to use it. It writes
    nothing when the cross-validated false injection rate misses the target (the fit would not hold on prompts
    it was not fitted on), unless --force. The fit and its figures are on words alone (as `CAIRN_SEMANTIC=0
    cairn eval` measures them): with the semantic extra, `cairn eval` may differ.

    \b
    Example:
      cairn calibrate --cases evals/cases.yaml
      cairn calibrate --cases evals/cases.yaml --target-fir 0.02 --write
    """
    from cairn.cli.recall_cmds import check_cases, served_note
    from cairn.config import CONFIG_FILE
    from cairn.hot.errors import InvalidCases
    from cairn.hot.settings import settings_of
    from cairn.quality import calibrate
    from cairn.quality.evaluate import load_cases

    vault = open_vault(vault_path)
    cases = load_cases(cases_path)
    if not cases:
        raise InvalidCases(
            f"{cases_path}: no cases to calibrate on; add positive cases (expect: [ids]) and negative ones (expect: [])"
        )
    with progress_stages() as stage:
        with indexer.open_index(vault, worktree=worktree, warn=warn, progress=stage("index")) as index:
            check_cases(vault, index, cases, cases_path, worktree, vault_path)
            settings = settings_of(index)
            points = calibrate.gather(index, cases, settings=settings, folds=folds, progress=stage("calibrate"))
            commit = index.commit  # of the index fitted on, as `cairn eval --json` names the one it measured
        # the grid and its fits, on a bar of their own: a minute with many slices, ten folds and the finest step
        result = calibrate.calibrate(
            points,
            settings,
            target_fir=target_fir,
            folds=folds,
            step=float(step),
            progress=stage("calibrate: fitting"),
        )
    best = result.best
    # Even the strictest grid point can break the target on the cases themselves (a negative whose gate values are
    # all at the top): with one fold there is no held-out figure, and that fit must not be written silently either.
    fitted_misses = best.fitted.worst_fir > best.target_fir
    misses = fitted_misses or (best.held_out and best.cross_validated.worst_fir > best.target_fir)
    if force and not write:
        raise click.UsageError("--force only matters with --write; add --write, or leave --force out.")
    refused = write and misses and not force
    config = vault.root / CONFIG_FILE
    before = config.read_bytes() if write and config.is_file() else None
    written = calibrate.write_thresholds(vault.root, best.thresholds) if write and not refused else None
    if as_json:
        data = {"commit": commit, **result.to_dict()}
        data["written"] = str(written) if written else None
        echo_json(data)
    else:
        served_note(vault, worktree, "the fit below is on its cards; `--worktree` fits on those checked out")
        echo(render_calibration(result))
    if refused and fitted_misses:
        raise CairnError(
            f"nothing written: on the cases fitted on, even the strictest thresholds' false injection rate reaches "
            f"{best.fitted.worst_fir:.3f}, over the target {best.target_fir:g} (a negative case gets a card at any "
            "thresholds: `cairn explain` its query); fix that case or its card, or pass --force to write them anyway"
        )
    if refused:
        lower = result.holding_target()
        raise CairnError(
            f"nothing written: held out, the fitted thresholds' false injection rate reaches "
            f"{best.cross_validated.worst_fir:.3f}, over the target {best.target_fir:g}; add negative cases"
            + (f", or use --target-fir {lower:g}, whose fit holds held out" if lower is not None else "")
            + ", or pass --force to write them anyway"
        )
    if as_json:
        return
    if written and before == written.read_bytes() and best.thresholds == result.current:
        echo(f"\n{written} already holds {_inline(best.thresholds)}, as the served ref does; nothing to commit.")
    elif written:
        echo(f"\nWrote {_inline(result.best.thresholds)} to {written}; commit it for agents to use them.")
    else:
        echo("\nNothing written; --write stores the fitted thresholds in cairn.toml [recall].")


def render_calibration(result: object) -> str:
    from cairn.quality.calibrate import Calibration
    from cairn.quality.evaluate import shown
    from cairn.quality.metrics import Metrics

    assert isinstance(result, Calibration)

    def fir(m: Metrics) -> str:
        return f"{m.false_injection_rate:.3f}" if m.n_neg else "-"  # no negative: no rate to give

    def slices(m: Metrics) -> str:
        if not m.by_slice:
            return ""
        return " (" + ", ".join(f"{shown(n, 24)} {fir(s)}" for n, s in sorted(m.by_slice.items())) + ")"

    best = result.best
    held_out = best.held_out
    n_pos, n_neg = result.current_measure.n_pos, result.current_measure.n_neg
    slice_names = [shown(name, 24) for name in sorted(result.current_measure.by_slice)]
    lines = [
        f"{result.n_cases} cases ({n_pos} positive, {n_neg} negative"
        + (f"; slices {', '.join(slice_names)}" if slice_names else "")
        + f"), {result.folds} folds, grid step {result.step:g}.",
        "Trade-off: thresholds fitted on all cases at each target; cv = measured on held-out folds."
        if held_out
        else "Trade-off: thresholds fitted on all cases at each target; one fold: no case held out, so no cv "
        "figures (--folds 2 or more measures the fit on cases it was not fitted on).",
        "Every figure is on words alone, as `CAIRN_SEMANTIC=0 cairn eval` measures them: the semantic channel's veto "
        "and picks are not replayed, so with the semantic extra `cairn eval` may differ.",
        "",
        f"{'target':>6}  {'min_lead':>8}  {'min_coverage':>12}  {'min_margin':>10}  {'Inj@1':>6}  {'FIR':>6}"
        f"  {'worst':>6}  {'cv Inj@1':>8}  {'cv FIR':>6}  {'cv worst':>8}",
    ]
    for p in result.tradeoff:
        t, f, cv = p.thresholds, p.fitted, p.cross_validated
        mark = "  <- target" if p is best else ""
        cv_columns = (
            f"{cv.injection_at_1:8.3f}  {cv.false_injection_rate:6.3f}  {cv.worst_fir:8.3f}"
            if p.held_out
            else f"{'-':>8}  {'-':>6}  {'-':>8}"
        )
        lines.append(
            f"{p.target_fir:6.3f}  {t.min_lead:8.3g}  {t.min_coverage:12.3g}  {t.min_margin:10.3g}  "
            f"{f.injection_at_1:6.3f}  {f.false_injection_rate:6.3f}  {f.worst_fir:6.3f}  {cv_columns}{mark}"
        )
    now, cm = result.current, result.current_measure
    lines += [
        "",
        "Inj@1, Inj@3 = injection@1, injection@3; FIR = false_injection_rate; worst = worst_false_injection_rate, the "
        "highest false injection rate overall or on any slice (the names --json uses).",
        "",
        f"Current ({_inline(now)}): Inj@1 {cm.injection_at_1:.3f}, Inj@3 {cm.injection_at_3:.3f}, "
        f"FIR {fir(cm)}{slices(cm)}",
        f"Fitted at FIR <= {best.target_fir:g}: {_inline(best.thresholds)}",
        f"  on the cases fitted on: Inj@1 {best.fitted.injection_at_1:.3f}, Inj@3 {best.fitted.injection_at_3:.3f}, "
        f"FIR {fir(best.fitted)}{slices(best.fitted)}",
        f"  cross-validated:        Inj@1 {best.cross_validated.injection_at_1:.3f}, "
        f"Inj@3 {best.cross_validated.injection_at_3:.3f}, "
        f"FIR {fir(best.cross_validated)}{slices(best.cross_validated)}"
        if held_out
        else "  cross-validated:        not measured: one fold holds no case out (--folds 2 or more)",
    ]
    if any(not s.n_neg for s in cm.by_slice.values()):
        lines.append("A slice's FIR is - when it has no negative case: the target cannot hold or fail on it.")
    if held_out and best.cross_validated.worst_fir > best.target_fir:
        lower = result.holding_target()
        lines.append(
            f"  Held-out FIR exceeds the target ({best.cross_validated.worst_fir:.3f}): the fit is optimistic on "
            "these cases; "
            + (
                f"--target-fir {lower:g} fits thresholds that hold held out, or add negative cases."
                if lower is not None
                else "no lower target of the trade-off holds held out either: add negative cases."
            )
        )
    return "\n".join(lines)


def _inline(t: object) -> str:
    from cairn.quality.calibrate import Thresholds

    assert isinstance(t, Thresholds)
    return f"min_lead = {t.min_lead:g}, min_coverage = {t.min_coverage:g}, min_margin = {t.min_margin:g}"


@click.command("review")
@click.argument("range_spec", metavar="BASE..HEAD")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="Markdown reads as a pull-request comment; JSON is for tools. --format json is the same as --json.",
)
@json_option
@click.option(
    "--today",
    type=Day(),
    envvar="CAIRN_TODAY",
    default=None,
    help="Judge dates (expiry, staleness) as of this day, YYYY-MM-DD (default: today; also $CAIRN_TODAY).",
)
@vault_option
@errors_to_exit
def review_cmd(range_spec: str, fmt: str, as_json: bool, today: object, vault_path: str | None) -> None:
    """Review the cards a range adds, changes or removes: lint, near-duplicates and conflicts, provenance,
    routing impact (the vault's evals/ cases run at the base and at HEAD), and cards' own questions (each changed
    card and its closest cards asked their name, summary and aliases at the base and at HEAD: a card they no
    longer find is listed as silenced).

    BASE..HEAD and BASE...HEAD both compare HEAD with the merge base of BASE and HEAD, as a pull request does;
    everything is read from git, not from the working tree. Every served field is shown whole, invisible
    characters as <U+200B>, and each changed field of a changed card before and after. A Markdown review longer
    than a pull-request comment holds (60,000 characters) keeps each long list's first rows, says how many it
    leaves out, and leaves the cards' fields and provenance to --json, which has every one.

    \b
    Exit codes:
      0  passes
      1  fails: a lint error in a changed card or in cairn.toml, a
         negative eval case (expect: []) that gets a card at HEAD and did
         not at the base, or an eval case expecting a card HEAD does not
         hold (a typo, a card renamed or removed); the author fixes it
      3  blocked (nothing failed): a change a maintainer must check, listed
         under "Blocked:" with the reason: weaker gates or lint policy in
         cairn.toml ([sanitize] patterns removed too), cairn.toml removed,
         eval cases files or negative cases removed or changed, a card
         removed, retired, made a draft, expired, superseded or given
         not_when words, or a file touched that runs code or decides what
         runs: git hooks, pre-commit, lefthook and mise files, .envrc,
         CI workflows, CODEOWNERS, agent settings and instructions
         (.claude/, .mcp.json, CLAUDE.md, AGENTS.md, ...), editor and
         container tasks (.vscode/, .devcontainer/), .gitattributes,
         .gitmodules, or the .mailmap
      2  usage error, or the review could not run: a revision git does
         not know, a shallow clone whose history stops before the merge
         base, no vault, no git repository, a full disk or a system limit

    \b
    Example:
      cairn review origin/main..HEAD
      cairn review main..feature/new-lessons --json
    """
    import datetime as dt

    ctx = click.get_current_context()
    if not range_spec.strip() or range_spec.strip().startswith(".."):
        # "", "..", "..HEAD": no base, so HEAD..HEAD, an empty review that passes whatever the branch holds (a CI
        # step's "$BASE..HEAD" with the variable unset)
        raise click.BadParameter(
            f"{range_spec!r} names no base to compare with; give the range to review, e.g. origin/main..HEAD "
            "(in CI, check that the variable holding the base is set)",
            param_hint="'BASE..HEAD'",
        )
    if as_json and fmt == "markdown" and ctx.get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--json and --format markdown ask for different outputs; give one of them.")

    from cairn.review import markdown as review_markdown
    from cairn.review import report as review

    day = today.date() if isinstance(today, dt.datetime) else None
    try:
        vault = open_vault(vault_path)
        with progress_stages() as stage:
            result = review.review(vault, range_spec, today=day, progress=stage)
    except (review.RangeError, NotAGitRepository, VaultNotFound, OSError) as exc:  # exit 2: the review did not run
        # (the system's refusal too: a full disk, `ulimit -n`; not the author's to fix, as exit 1 said, and a cases
        # file the range breaks stays exit 1)
        if isinstance(exc, BrokenPipeError):
            raise  # a reader gone away: `errors_to_exit`'s quiet 141
        text = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        echo(f"Error: {clean_line(text)}", err=True)
        raise SystemExit(2) from None
    if as_json or fmt == "json":
        echo_json(result.to_dict())
    else:
        echo(review_markdown.render_markdown(result).rstrip("\n"))
    if result.exit_code:
        raise SystemExit(result.exit_code)
