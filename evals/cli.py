"""The `scenarios`, `eval`, `report` and `check` commands of `ctxlab` (flows/cli.py calls
`register`). Heavy imports happen inside each command, so `ctxlab --help` stays fast."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from evals.stats import DEFAULT_SEEDS, TRAIN_SEEDS

# `none-unbounded` is in by default: it is the cost baseline every saving is quoted against.
STRATEGIES = (
    "none", "none-unbounded", "truncate", "mask", "offload", "summarize", "context-edit", "full",
)  # fmt: skip
# The suites of evals/check.py, named here so `--help` needs no eval import (a test keeps them
# equal).
SUITE_NAMES = ("ci",)


def register(subparsers: Any) -> None:
    """Add the eval commands to `ctxlab`'s subparsers."""
    sc = subparsers.add_parser("scenarios", help="list, describe or export the eval scenarios")
    sc.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "describe", "export", "import"),
        help="list (default), describe NAME, export NAME to files, or import THREAD_ID (a "
        "`ctxlab run` session's thread, every run of it, as a scenario file; a run or session "
        "id names its thread)",
    )
    sc.add_argument(
        "name",
        nargs="?",
        help="scenario name or file (describe, export); THREAD_ID, RUN_ID or session id (import)",
    )
    sc.add_argument("--seed", type=seed_arg, default=0, help="generation seed (default 0)")
    sc.add_argument("--scale", default="small", choices=("small", "full"),
                    help="data size (default small)")  # fmt: skip
    sc.add_argument(
        "--out",
        metavar="PATH",
        help="export: the DIRECTORY the files go to (default exports/<name>-<scale>-<seed>, "
        "git-ignored); import: the scenario FILE to write (default "
        "exports/recorded-<run id>.yaml)",
    )
    sc.add_argument("--json", action="store_true", help="machine-readable output")
    add_import_options(sc)
    sc.set_defaults(handler=_scenarios)

    ev = subparsers.add_parser("eval", help="replay a scenario under context strategies")
    ev.add_argument(
        "--scenario",
        required=True,
        help="scenario name (`ctxlab scenarios`), or a scenario file (.yaml, e.g. from "
        "`ctxlab scenarios import`)",
    )
    ev.add_argument(
        "--strategy",
        action="append",
        help=f"an arm to run (repeat; default: all of {', '.join(STRATEGIES)})",
    )
    ev.add_argument(
        "--seed",
        type=seed_arg,
        action="append",
        help=f"seed (repeat; default 0..{DEFAULT_SEEDS - 1}); not with --seeds",
    )
    ev.add_argument(
        "--seeds",
        type=count_arg,
        help=f"run seeds 0..N-1 (default {DEFAULT_SEEDS}); not with --seed",
    )
    ev.add_argument("--scale", default="small", choices=("small", "full"),
                    help="data size (default small)")  # fmt: skip
    ev.add_argument(
        "--model",
        default="simulated",
        help="simulated, or openai:... / anthropic:... to decide with a real model",
    )
    ev.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="strategy parameter, e.g. summarize.trigger=0.7 (repeat)",
    )
    add_model_options(ev)
    ev.add_argument(
        "--reader",
        default="fallible",
        choices=("fallible", "ideal"),
        help="how the simulated model reads: fallible (default; misses with length and depth, "
        "confuses look-alikes) or ideal (never misses what is in view)",
    )
    ev.add_argument("--max-usd", type=float, help="spending cap for a real model")
    ev.add_argument(
        "--judge",
        metavar="MODEL",
        help="also grade every answer with this model (prompt: evals/prompts/judge.md); "
        "verdicts and cost are stored per probe, and the cost counts against --max-usd",
    )
    ev.add_argument("--json", action="store_true", help="one JSON object per run")
    ev.add_argument("--probes", action="store_true", help="with --json: include probe results")
    ev.add_argument(
        "--summary",
        action="store_true",
        help="with --json: then one object per arm (means, 95%% intervals, paired difference "
        "against full)",
    )
    ev.add_argument(
        "--db", help="DuckDB file for the results (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    ev.add_argument("--no-save", action="store_true", help="do not store the results")
    tuned = ev.add_argument_group("tuned baselines (--tuned)")
    tuned.add_argument(
        "--tuned",
        action="store_true",
        help="compare every arm at its best setting: sweep its grid (evals/tuning.py) on the "
        "training seeds, pick the cheapest setting tied with the most accurate, and report it "
        "on held-out seeds (--seeds N: N seeds after the training ones, default "
        f"{DEFAULT_SEEDS}; or --seed S, repeat)",
    )
    tuned.add_argument(
        "--train-seeds",
        type=count_arg,
        metavar="N",
        help=f"with --tuned: choose settings on seeds 0..N-1 (default {TRAIN_SEEDS})",
    )
    tuned.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="K=V1,V2",
        help="with --tuned: the values to try for a key, instead of its default grid, for "
        "every arm that takes it (repeat)",
    )
    ev.set_defaults(handler=_eval)

    rp = subparsers.add_parser("report", help="markdown table and PNG plot under reports/")
    rp.add_argument(
        "--scenario",
        action="append",
        help="scenario (repeat; default: every scenario stored, or with --run every built-in "
        "one): a built-in name, a stored `recorded:<run>` name, or with --run a scenario file",
    )
    rp.add_argument(
        "--db", help="DuckDB file with eval results (default $CTXLAB_DB or ./ctxlab.duckdb)"
    )
    rp.add_argument("--out", default="reports", help="folder for the .md and .png files")
    rp.add_argument(
        "--run",
        action="store_true",
        help="first run every arm of each scenario (all four unless --scenario), with the "
        "fallible and the ideal reader, store it, and report only these runs",
    )
    # Reports are made at full scale, where the strategies differ most; the commands a user
    # runs by hand default to small, which takes seconds.
    rp.add_argument("--scale", default="full", choices=("small", "full"),
                    help="with --run: data size (default full, unlike eval and sweep: the "
                    "reports are measured at full scale)")  # fmt: skip
    rp.add_argument("--seeds", type=count_arg, default=DEFAULT_SEEDS,
                    help=f"with --run: seeds 0..N-1 (default {DEFAULT_SEEDS})")  # fmt: skip
    rp.add_argument("--json", action="store_true", help="print the reported settings as JSON")
    rp.set_defaults(handler=_report)

    ck = subparsers.add_parser("check", help="CI gate: run a fixed suite against a baseline")
    ck.add_argument(
        "--suite",
        default="ci",
        choices=SUITE_NAMES,
        help=f"the cell suite to run: {', '.join(SUITE_NAMES)} (default ci)",
    )
    ck.add_argument("--baseline", help="baseline JSON (default evals/baselines/ci.json)")
    ck.add_argument("--update", action="store_true", help="rewrite the baseline from this run")
    ck.add_argument(
        "--sanity",
        action="store_true",
        help="instead: run the break arms (empty window, blanked or corrupted tool results, "
        "withheld summaries) on every scenario; fails when accuracy does not follow the data",
    )
    ck.add_argument(
        "--reader", default="fallible", choices=("fallible", "ideal"), help="with --sanity"
    )
    ck.add_argument(
        "--json",
        action="store_true",
        help="print the verdict and findings as JSON (with --sanity: one object per scenario "
        "and arm)",
    )
    ck.set_defaults(handler=_check)


def add_import_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("import THREAD_ID (a recorded thread as a scenario file)")
    group.add_argument("--thread", help="import this thread (THREAD_ID may then be left out)")
    group.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="also replace what this regex matches with [REDACTED] (repeat); API keys, "
        "bearer tokens and e-mail addresses always are",
    )
    group.add_argument("--db", help="the store holding the run (default $CTXLAB_DB or "
                       "./ctxlab.duckdb)")  # fmt: skip
    group.add_argument("--force", action="store_true", help="overwrite the --out file if it "
                       "exists (it is replaced whole, never left half-written)")  # fmt: skip


def import_command(args: argparse.Namespace) -> int:
    """`ctxlab scenarios import`: write the scenario file and say what it holds."""
    import time

    from evals.scenarios.recorded.importer import (
        check_scenario_path,
        import_run,
        write_scenario,
    )
    from evals.scenarios.recorded.recording import RunNotFoundError
    from evals.scenarios.recorded.redact import Redactor
    from harness.store import default_path

    if not args.name and not args.thread:
        args.parser.error("import needs a THREAD_ID or RUN_ID (`ctxlab run` prints both)")
    db = args.db or default_path()
    start = time.perf_counter()
    try:
        if args.out:  # before the import's work, not after
            check_scenario_path(args.out, force=args.force)
        doc = import_run(db, args.name, thread=args.thread, redactor=Redactor(args.redact))
    except (RunNotFoundError, ValueError, FileExistsError) as exc:
        args.parser.error(f"{exc} ({db})" if isinstance(exc, RunNotFoundError) else str(exc))
    out = args.out or f"exports/{doc['name'].replace(':', '-')}.yaml"
    try:
        path = write_scenario(doc, out, force=args.force)
    except (ValueError, FileExistsError) as exc:
        args.parser.error(str(exc))
    except OSError as exc:
        print(f"ctxlab: cannot write {out}: {exc} (nothing was changed there)", file=sys.stderr)
        return 1
    took = time.perf_counter() - start
    info = {
        "file": str(path), "name": doc["name"], "bytes": path.stat().st_size,
        "turns": len(doc["turns"]), "replies": len(doc["replies"]),
        "probes": len(doc["probes"]), "probe_counts": doc["probe_counts"],
        "redactions": doc["source"]["redactions"], "seconds": round(took, 2),
    }  # fmt: skip
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    counts = ", ".join(f"{k} {v}" for k, v in doc["probe_counts"].items())
    print(f"wrote {path} ({info['bytes']:,} bytes): {doc['name']}, {info['turns']} turns, "
          f"{info['replies']} recorded tool replies, {info['probes']} probes ({counts}), "
          f"{info['redactions']} redactions, in {took:.1f} s")  # fmt: skip
    print(f"replay it: ctxlab eval --scenario {path} --strategy full --strategy mask --seed 0")
    return 0


def count_arg(text: str) -> int:
    """An argparse type: a number of seeds, 1 or more (`--seeds 0` would run nothing)."""
    return _whole_arg(text, 1)


def seed_arg(text: str) -> int:
    """An argparse type: a seed, 0 or more."""
    return _whole_arg(text, 0)


def _whole_arg(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of tokens, got {text!r}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, got {value}")
    return value


# -- scenarios -------------------------------------------------------------------------------


def _scenarios(args: argparse.Namespace) -> int:
    from evals.scenarios import (
        export_scenario,
        get_scenario,
        list_scenarios,
        scenario_summary,
    )

    if args.action == "import":
        return import_command(args)
    if args.action == "list":
        rows = [scenario_summary(n) for n in list_scenarios()]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for row in rows:
                print(f"{row['name']:<22} {row['title']}")
        return 0
    if not args.name:
        args.parser.error(
            f"{args.action} needs a scenario name: one of {', '.join(list_scenarios())}"
        )
    with usage_errors(args):
        scenario = get_scenario(args.name, args.seed, args.scale)
    if args.action == "describe":
        info = scenario.describe()
        if args.json:
            print(json.dumps(info, indent=2))
        else:
            for key, value in info.items():
                print(f"{key:<16} {value}")
        return 0
    out = args.out or f"exports/{args.name}-{args.scale}-{args.seed}"
    written = export_scenario(scenario, out)
    print(f"exported {args.name} ({args.scale}, seed {args.seed}): {len(written)} files in {out}")
    return 0


# -- eval ------------------------------------------------------------------------------------


def _one_way_to_seeds(args: argparse.Namespace) -> None:
    """`--seed 3 --seeds 2` would be read as one of them, silently: refuse the pair."""
    if args.seed and args.seeds:
        args.parser.error(
            "give --seeds N (seeds 0..N-1) or --seed S (repeat), not both; "
            f"got --seeds {args.seeds} and --seed {', '.join(map(str, args.seed))}"
        )


def check_scenario_path(name: str) -> None:
    """A directory given as a scenario is named as one, not as a missing file."""
    from pathlib import Path

    if Path(name).is_dir():
        raise ValueError(
            f"scenario {name!r} is a directory: give a scenario name (`ctxlab scenarios`) or a "
            "scenario file (.yaml)"
        )


def _eval(args: argparse.Namespace) -> int:
    from evals.arms import params_by_arm
    from evals.runner import grid, parse_setting
    from harness.store import default_path

    if args.summary and not args.json:
        args.parser.error("--summary adds to --json output; give --json too")
    if args.tuned:
        return _eval_tuned(args)
    if args.grid or args.train_seeds is not None:
        args.parser.error("--grid and --train-seeds choose the settings of --tuned; give --tuned")
    _one_way_to_seeds(args)
    use_model_options(args)
    with usage_errors(args):
        check_scenario_path(args.scenario)
        params = dict(parse_setting(s) for s in args.set)
        seeds = range(args.seeds) if args.seeds else (args.seed or range(DEFAULT_SEEDS))
        # A parameter goes to the arms whose stack takes it: `summarize.trigger` to
        # summarize and full, not to none (refused when no arm run here takes it).
        by_arm = params_by_arm(params, args.strategy or STRATEGIES)
        cells = [
            cell
            for arm, arm_params in by_arm.items()
            for cell in grid(args.scenario, [arm], seeds=seeds, scale=args.scale,
                             model=args.model, params=arm_params, reader=args.reader)
        ]  # fmt: skip
        if args.window is not None or args.judge is not None:
            cells = [replace(cell, window=args.window, judge=args.judge) for cell in cells]
        check_cells(cells)
    db = args.db or default_path()
    if not args.no_save:
        writable_store(db)
    finished: list = []
    try:
        results = _run_with_progress(
            cells, max_usd=args.max_usd, quiet=args.json, finished=finished
        )
    except KeyboardInterrupt:
        _store_on_interrupt(args, None if args.no_save else db, cells, finished)
        raise
    if not args.no_save:
        from evals.storage import save_or_dump

        batch = save_or_dump(db, results)
        if not args.json:
            print(f"stored {plural(len(results), 'run')} (batch {batch}) in {db}")
    if args.json:
        for r in results:
            print(r.to_json(probes=args.probes))
        if args.summary:
            from evals.metrics import summaries

            for row in summaries(results):
                print(json.dumps({"summary": True, **row}, sort_keys=True))
    else:
        _print_table(results)
    return 0


@contextmanager
def usage_errors(args: argparse.Namespace) -> Iterator[None]:
    """What goes wrong while checking the options (an unknown scenario, strategy, parameter or
    model) is the user's to fix: one line, exit 2, before any work."""
    from harness.errors import HarnessError, ModelError, StoreError, UnknownModelError
    from harness.profiles import known_models

    try:
        yield
    except (StoreError, ModelError):
        raise
    except UnknownModelError as exc:
        if not str(exc).startswith("no profile for model"):
            args.parser.error(str(exc))
        args.parser.error(
            f"no profile for model {getattr(args, 'model', '')!r}; known: "
            f"{', '.join(known_models())}; for another model give --window TOKENS (and "
            "--max-output TOKENS, --price IN,CACHED,OUT) or --profile FILE"
        )
    except (ValueError, LookupError, HarnessError) as exc:
        args.parser.error(str(exc))


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--window, --max-output, --price and --profile: run a model ctxlab has no profile for."""
    group = parser.add_argument_group("a model without a built-in profile (e.g. openai:gpt-4o)")
    group.add_argument(
        "--window",
        type=_positive_int,
        metavar="TOKENS",
        help="the context window: a model without a profile gets it as its own; a known "
        "model's window is capped at it (thresholds and overflow computed against it, so a "
        "1M-window live model is compacted as the simulated one is)",
    )
    group.add_argument(
        "--max-output", type=int, metavar="TOKENS", help="its output cap (default 8000)"
    )
    group.add_argument(
        "--price",
        metavar="IN,CACHED,OUT",
        help="USD per million input, cached input and output tokens (default 0,0,0)",
    )
    group.add_argument(
        "--profile", metavar="TOML", help="model profiles in the format of harness/data/models.toml"
    )


def use_model_options(args: argparse.Namespace) -> None:
    """Make `--model` known from --window/--max-output/--price or --profile, for this process
    and the workers it starts (through `$CTXLAB_MODELS`)."""
    import hashlib
    import os
    import tempfile
    from pathlib import Path

    from harness.profiles import PROFILES_ENV

    files = []
    if args.profile:
        if not Path(args.profile).is_file():
            args.parser.error(f"no profile file {args.profile}")
        files.append(str(Path(args.profile).resolve()))
    if args.window is not None or args.max_output is not None or args.price is not None:
        text = _profile_toml(args)
        folder = Path(tempfile.gettempdir()) / "ctxlab"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"models-{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
        path.write_text(text)
        files.append(str(path))
    if files:
        before = os.environ.get(PROFILES_ENV, "")
        os.environ[PROFILES_ENV] = os.pathsep.join([*filter(None, [before]), *files])


def _profile_toml(args: argparse.Namespace) -> str:
    """A profile for `--model` from the flags. A known model keeps what the flags leave out
    (its prices and their source): `--window` alone caps its window, so a 1M-window model is
    compacted as the simulated one is."""
    from harness.errors import UnknownModelError
    from harness.profiles import get_profile

    try:
        known = get_profile(args.model)
    except UnknownModelError:
        known = None
    window = args.window if args.window is not None else known and known.context_window
    if not window:
        args.parser.error("--max-output and --price need --window TOKENS (a positive number)")
    max_output = args.max_output or (known.max_output_tokens if known else 8_000)
    if max_output < 1:
        args.parser.error(f"--max-output must be positive, got {max_output}")
    if args.price is None and known is not None:
        prices = [known.input, known.cached_input, known.output]
        cache_write, source = known.cache_write, known.source
        as_of = known.prices_as_of
    else:
        try:
            prices = [float(p) for p in (args.price or "0,0,0").split(",")]
        except ValueError:
            prices = []
        if len(prices) != 3 or any(p < 0 for p in prices):
            args.parser.error(f"--price expects IN,CACHED,OUT in USD per million tokens, e.g. "
                              f"2.5,1.25,10; got {args.price!r}")  # fmt: skip
        cache_write, source, as_of = prices[0], "the command line (--price)", "command line"
    encoding = f'encoding = "{known.encoding}"\n' if known else ""
    return (
        f"[models.{json.dumps(args.model)}]\ncontext_window = {window}\n"
        f"max_output_tokens = {max_output}\n{encoding}input = {prices[0]}\n"
        f"cached_input = {prices[1]}\ncache_write = {cache_write}\noutput = {prices[2]}\n"
        f"prices_as_of = {json.dumps(as_of)}\nsource = {json.dumps(source)}\n"
    )


def check_cells(cells: Sequence[Any]) -> None:
    """Raise on the first cell whose scenario, strategy, parameters or model is unknown (or a
    parameter out of its range), so a mistake in the last arm does not surface after the
    others have run."""
    from evals.arms import get_arm
    from evals.scenarios import scenario_summary
    from evals.scenarios.base import check_scale
    from harness.models import resolve_model
    from harness.profiles import get_profile
    from harness.strategies import build_stack

    for cell in {
        (c.scenario, c.strategy, c.scale, c.model, repr(c.params)): c for c in cells
    }.values():
        scenario_summary(cell.scenario)
        check_scale(cell.scale)
        # Building the stack checks every key and range-checks every value (a ValueError
        # naming the key), so `offload.tool_token_limit=-5` is refused before any run.
        build_stack(get_arm(cell.strategy).strategy, cell.params)
        if ":" not in cell.model:  # a bare name resolves or fails at once, with no SDK call
            resolve_model(cell.model)
        get_profile(cell.model)


def writable_store(path: str) -> str:
    """Open the store for writing now: an unwritable location or a damaged file fails before
    minutes of work, not when the results are saved."""
    from harness.errors import StoreError
    from harness.store import Store

    try:
        Store(path, hold=False)
    except OSError as exc:
        raise StoreError(f"cannot write store {path}: {exc}") from exc
    return path


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _store_on_interrupt(
    args: argparse.Namespace, db: str | None, cells: Sequence[Any], finished: list
) -> None:
    """After Ctrl-C: store the runs that finished (unless `db` is None, --no-save) and say on
    stderr which runs are stored and which are not, so the user knows what to re-run."""
    done = {(r.strategy, r.seed) for r in finished}
    left = [c for c in cells if (c.label or c.strategy, c.seed) not in done]
    prog = args.parser.prog
    if finished and db is not None:
        from evals.storage import save_or_dump

        batch = save_or_dump(db, finished)
        print(f"{prog}: interrupted; stored the {plural(len(finished), 'finished run')} "
              f"(batch {batch}) in {db}: {_runs(finished)}", file=sys.stderr)  # fmt: skip
    elif finished:
        print(f"{prog}: interrupted; stored nothing (--no-save); finished: {_runs(finished)}",
              file=sys.stderr)  # fmt: skip
    else:
        print(f"{prog}: interrupted before the first run finished; stored nothing",
              file=sys.stderr)  # fmt: skip
    if left:
        print(f"{prog}: not stored (not run or cut short): {_runs(left)}", file=sys.stderr)


def _runs(runs: Sequence[Any]) -> str:
    """Runs (cells or results) as `full seeds 0-4; mask seed 0`, one part per arm."""
    from evals.tuning import seed_span

    seeds: dict[str, list[int]] = {}
    for run in runs:
        label = getattr(run, "label", None) or run.strategy
        seeds.setdefault(label, []).append(run.seed)
    return "; ".join(
        f"{arm} seed{'s' if len(s) > 1 else ''} {seed_span(s)}" for arm, s in seeds.items()
    )


@contextmanager
def _interrupt_at_once() -> Iterator[None]:
    """The first Ctrl-C stops the run where it is. `asyncio.run` otherwise takes it over and
    only cancels its task, which waits for the running step to yield: a step busy in a loop
    would ignore every Ctrl-C but the second."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    interrupted = threading.Event()

    def interrupt(signum: int, frame: Any) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except Exception as exc:
        # A library can turn the interrupt into its own error (DuckDB: "Query interrupted").
        if interrupted.is_set():
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _run_with_progress(
    cells: list, *, max_usd: float | None, quiet: bool, finished: list | None = None
) -> list:
    """Run `cells` under a progress bar; each result is also appended to `finished` as it
    comes, so an interrupted batch still knows what it completed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from evals.runner import run_cells

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    console = _console()
    hidden = quiet or not console.is_terminal  # else a stray blank line when piped
    with Progress(*columns, transient=True, disable=hidden, console=console) as bar:
        overall = bar.add_task("runs", total=len(cells))
        turns = bar.add_task("turns", total=1)

        def step(cell: Any, done: int, total: int) -> None:
            bar.update(
                turns, completed=done, total=total, description=f"{cell.strategy} seed {cell.seed}"
            )

        def done(cell: Any, result: Any) -> None:
            if finished is not None:
                finished.append(result)
            bar.advance(overall)

        with _interrupt_at_once():
            return run_cells(cells, max_usd=max_usd, on_result=done, progress=step)


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _print_table(
    results: list, *, base_params: dict[str, Any] | None = None, note: str = ""
) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from evals.metrics import aggregate, pareto_front, recommend, summaries

    settings = aggregate(results)
    rows = summaries(results, base_params=base_params)
    front = {p.label for p in pareto_front(settings)}
    picked = recommend(settings)
    candidates = {c.label for c in picked.candidates} if picked else set()
    simulated = all(r.simulated for r in results)
    readers = "/".join(sorted({r.reader for r in results}))
    label = f", simulated, {readers} reader" if simulated else ""
    title = f"{results[0].scenario} ({results[0].scale}{label}{note})"
    table = Table(
        title=escape(title),
        caption="accuracy: mean (95% bootstrap interval over seeds); vs full: paired "
        "difference on the same seeds and probes; tied: interval overlaps the best's",
    )
    for col in (
        "setting",
        "seeds",
        "accuracy (95% CI)",
        "vs full (95% CI)",
        "input tok (95% CI)",
        "cached",
        "peak ctx",
        "calls",
        "retrievals",
        "cost $ (95% CI)",
        "overflow",
        "lost to overflow",
        "reached acc.",
        "",
    ):
        # A setting folds rather than losing the parameter that varies behind an ellipsis.
        overflow = "fold" if col == "setting" else "ellipsis"
        table.add_column(
            col, justify="left" if col in ("setting", "") else "right", overflow=overflow
        )
    for s, row in zip(settings, rows, strict=True):
        marks = [
            "recommended" if picked and s.label in picked.labels else "",
            "tied" if s.label in candidates and len(candidates) > 1 else "",
            "front" if s.label in front else "",
        ]
        diff = row["accuracy_vs_full_ci95"]
        vs_full = (
            "-"
            if diff is None
            else f"{row['accuracy_vs_full_mean']:+.1%} ({diff[0]:+.0%} to {diff[1]:+.0%})"
        )
        table.add_row(
            escape(s.label),
            str(len(s.seeds)),
            f"{s.accuracy.mean:.1%} ({s.accuracy.low:.0%}-{s.accuracy.high:.0%})",
            vs_full,
            f"{s.input_tokens.mean:,.0f} ({s.input_tokens.low:,.0f}-{s.input_tokens.high:,.0f})",
            f"{s.cached_input_tokens:,.0f}",
            f"{s.peak_context_tokens:,.0f}",
            f"{s.model_calls:,.0f}",
            f"{s.retrieval_calls:,.0f}",
            f"{s.cost_usd.mean:.4f} ({s.cost_usd.low:.4f}-{s.cost_usd.high:.4f})",
            f"{s.overflow_rate:.0%}",
            f"{s.lost_to_overflow:.1f}",
            "-" if s.reached_accuracy is None else f"{s.reached_accuracy.mean:.1%}",
            " ".join(m for m in marks if m),
        )
    console = Console()
    if not console.is_terminal:  # piped: print the whole table rather than squeeze it
        console = Console(width=240)
    console.print(table)
    if picked is not None:
        print(picked.explain())
    if simulated:
        print(
            "Simulated results: they compare strategies, not models; not comparable with "
            "published numbers."
        )


# -- eval --tuned ----------------------------------------------------------------------------


def _eval_tuned(args: argparse.Namespace) -> int:
    """Each arm at its best setting: its grid on the training seeds, the recommended setting on
    the held-out seeds (evals/tuning.py). Only the held-out runs are reported and stored."""
    from evals.runner import Cell, parse_grid, parse_setting
    from evals.tuning import HELDOUT_SEEDS, plan, seed_span
    from harness.store import default_path

    _one_way_to_seeds(args)
    train = range(args.train_seeds or TRAIN_SEEDS)
    heldout = (
        range(len(train), len(train) + args.seeds)
        if args.seeds
        else args.seed or range(len(train), len(train) + HELDOUT_SEEDS)
    )
    use_model_options(args)
    with usage_errors(args):
        check_scenario_path(args.scenario)
        base = Cell(
            args.scenario, "full", dict(parse_setting(s) for s in args.set), scale=args.scale,
            model=args.model, reader=args.reader, window=args.window, judge=args.judge,
        )  # fmt: skip
        tuning = plan(
            base,
            args.strategy or STRATEGIES,
            train_seeds=train,
            heldout_seeds=heldout,
            overrides=parse_grid(args.grid),
        )
        check_cells(tuning.every_setting())
    db = args.db or default_path()
    if not args.no_save:
        writable_store(db)
    say = print if not args.json else (lambda *_: None)
    training_cells = tuning.training_cells()
    say(f"Tuning on seeds {seed_span(train)}: {plural(len(training_cells), 'run')}; "
        f"held-out seeds {seed_span(heldout)}")  # fmt: skip
    trained: list = []
    try:
        training = _run_with_progress(
            training_cells, max_usd=args.max_usd, quiet=args.json, finished=trained
        )
    except KeyboardInterrupt:
        print(f"{args.parser.prog}: interrupted while tuning ({len(trained)} of "
              f"{plural(len(training_cells), 'training run')} done); stored nothing: --tuned "
              "stores only the held-out runs, which had not started", file=sys.stderr)  # fmt: skip
        raise
    choices = tuning.choose(training)
    spent = sum(r.live_cost_usd for r in training)
    left = None if args.max_usd is None else max(args.max_usd - spent, 0.0)
    heldout_cells = tuning.heldout_cells(choices)
    finished: list = []
    try:
        results = tuning.mark(
            _run_with_progress(heldout_cells, max_usd=left, quiet=args.json, finished=finished),
            choices,
        )
    except KeyboardInterrupt:
        stored = tuning.mark(finished, choices)
        _store_on_interrupt(args, None if args.no_save else db, heldout_cells, stored)
        raise
    if not args.no_save:
        from evals.storage import save_or_dump

        batch = save_or_dump(db, results)
        say(f"stored {plural(len(results), 'held-out run')} (batch {batch}) in {db}")
    base_params = next((r.params for r in results if r.strategy == "full"), None)
    if not args.json:
        _print_table(results, base_params=base_params,
                     note=f", tuned on seeds {seed_span(train)}, held-out seeds "
                     f"{seed_span(heldout)}")  # fmt: skip
        print("Settings, chosen on the training seeds (recommendation over each arm's grid):")
        for choice in choices:
            print(f"  {choice.describe()}")
        return 0
    for r in results:
        print(r.to_json(probes=args.probes))
    if args.summary:
        from evals.metrics import summaries

        by_arm = {c.arm: c for c in choices}
        for row in summaries(results, base_params=base_params):
            choice = by_arm[row["strategy"]]
            extra = {
                "tuned": choice.tuned,
                "train_seeds": list(tuning.train_seeds) if choice.tuned else [],
                "chosen": choice.setting,
                "training": choice.training(),
            }
            print(json.dumps({"summary": True, **row, **extra}, sort_keys=True))
    return 0


# -- report and check -----------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    from evals.report import write_report
    from evals.runner import grid
    from evals.scenarios import get_scenario, is_scenario_file, list_scenarios
    from evals.storage import results_from_frame, save_or_dump
    from harness.store import default_path

    db = args.db or default_path()
    known = list_scenarios()
    unknown = [
        n
        for n in args.scenario or ()
        if n not in known and not n.startswith("recorded:") and not is_scenario_file(n)
    ]
    if unknown:
        args.parser.error(
            f"unknown scenario {unknown[0]!r}; choose one of {', '.join(known)}, a stored "
            "recorded:<run>, or a scenario file (.yaml)"
        )
    # A scenario file replays like a built-in; its results carry the file's scenario name.
    with usage_errors(args):
        names = {n: get_scenario(n).name if is_scenario_file(n) else n for n in args.scenario or ()}
    if args.run:
        if any(n.startswith("recorded:") for n in names):
            args.parser.error("--run replays a built-in scenario or a scenario file, not a name")
        writable_store(db)
        cells = [
            cell
            for name in names or known
            for reader in ("fallible", "ideal")
            for cell in grid(
                name, STRATEGIES, seeds=range(args.seeds), scale=args.scale, reader=reader
            )
        ]
        results = _run_with_progress(cells, max_usd=None, quiet=args.json)
        save_or_dump(db, results)
        wanted = list(names.values()) or known
    else:
        from pathlib import Path

        if not Path(db).is_file():
            args.parser.error(f"no store at {db}: give --db FILE, or --run to make the results")
        results = latest(results_from_frame(_stored_runs(db)))
        if not results:
            print(f"{args.parser.prog}: no eval results in {db}: run `ctxlab eval` or "
                  "`ctxlab report --run` first", file=sys.stderr)  # fmt: skip
            return 1
        # Built-in scenarios in their usual order, then imported ones (`recorded:<run>`).
        stored = list(dict.fromkeys(r.scenario for r in results))
        everything = [n for n in known if n in stored] + [n for n in stored if n not in known]
        wanted = list(names.values()) or everything
        recorded = [n for n in stored if n not in known]
        absent = [n for n in wanted if n not in known and n not in stored]
        if absent:
            args.parser.error(
                f"no stored results for {absent[0]!r} in {db}; recorded scenarios stored there: "
                f"{', '.join(recorded) or 'none'}"
            )
    missing = [n for n in wanted if not any(r.scenario == n for r in results)]
    if missing:
        print(f"{args.parser.prog}: no stored results for {', '.join(missing)} in {db}",
              file=sys.stderr)  # fmt: skip
        return 1
    chosen = [r for r in results if r.scenario in wanted]
    written = write_report(chosen, args.out)
    if args.json:
        print(json.dumps(_report_json(chosen, written), indent=2, default=str))
        return 0
    for path in written:
        print(f"wrote {path}")
    return 0


def _stored_runs(db: str) -> Any:
    """Every stored eval run, read without creating or changing anything."""
    import polars as pl

    from harness.store import read_only

    con = read_only(db)
    try:
        tables = {row[0] for row in con.execute("SHOW TABLES").fetchall()}
        if "eval_runs" not in tables:
            return pl.DataFrame()
        return con.sql("SELECT * FROM eval_runs ORDER BY created_at, run_key").pl()
    finally:
        con.close()


def _report_json(results: list, written: list) -> dict[str, Any]:
    from dataclasses import asdict

    from evals.metrics import aggregate

    return {
        "files": [str(p) for p in written],
        "settings": [{**asdict(s), "label": s.label} for s in aggregate(results)],
    }


def latest(results: list) -> list:
    """The newest stored run of each setting and seed (older re-runs are left out)."""
    by_key = {}
    for r in results:
        by_key[(r.config, r.seed)] = r
    return list(by_key.values())


def _check(args: argparse.Namespace) -> int:
    from evals.check import DEFAULT_BASELINE, SUITES, run_check

    if args.sanity:
        from evals.sanity import run_sanity

        return run_sanity(reader=args.reader, as_json=args.json)
    if args.suite not in SUITES:
        args.parser.error(f"unknown suite {args.suite!r}; choose one of {', '.join(SUITES)}")
    baseline = args.baseline or DEFAULT_BASELINE
    if not args.json:
        return run_check(args.suite, baseline, update=args.update)
    lines: list[str] = []
    code = run_check(args.suite, baseline, update=args.update, say=lines.append)
    doc = {"suite": args.suite, "baseline": str(baseline), "passed": code == 0, "lines": lines}
    print(json.dumps(doc, indent=2))
    return code
