"""`ctxlab scenarios`: list, describe, export or import (a recorded thread as a scenario file)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flows.cli.options import add_scale_option, seed_arg, usage_errors


def add_parser(subparsers: Any) -> None:
    """Add the eval commands to `ctxlab`'s subparsers."""
    sc = subparsers.add_parser("scenarios", help="list, describe or export the eval scenarios")
    sc.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=("list", "describe", "export", "import"),
        help="list (default), describe NAME, export NAME to files, or import PATH: a trace file "
        "or folder of another harness (one scenario per trace, and a suite.json for many), or "
        "a THREAD_ID (a `ctxlab run` session's thread, every run of it, as a scenario file; a "
        "run or session id names its thread)",
    )
    sc.add_argument(
        "name",
        nargs="?",
        help="scenario name or file (describe, export); a trace FILE or FOLDER, or a THREAD_ID, "
        "RUN_ID or session id (import)",
    )
    sc.add_argument("--seed", type=seed_arg, default=0, help="generation seed (default 0)")
    add_scale_option(sc)
    sc.add_argument(
        "--out",
        metavar="PATH",
        help="export: the DIRECTORY the files go to (default exports/<name>-<scale>-<seed>, "
        "git-ignored); import: the scenario FILE to write (default "
        "exports/recorded-<run id>.yaml, or exports/trace-<name>.yaml for a trace file), or for "
        "a folder or a file of many traces the DIRECTORY (default exports/traces-<name>/)",
    )
    sc.add_argument("--json", action="store_true", help="machine-readable output")
    add_import_options(sc)
    sc.set_defaults(handler=scenarios_command)


def add_import_options(parser: argparse.ArgumentParser) -> None:
    """The options of `scenarios import`."""
    from evals.sources.formats import FORMATS

    group = parser.add_argument_group(
        "import PATH|THREAD_ID (a trace file or folder, or a recorded thread, as scenario files)"
    )
    group.add_argument("--thread", help="import this thread (THREAD_ID may then be left out)")
    group.add_argument(
        "--format",
        default="auto",
        choices=("auto", "ctxlab", *FORMATS),
        help="what PATH is: auto (default: a run id unless PATH is a file or folder, whose "
        "trace format is recognised from its head), ctxlab (a run id), or a trace format",
    )
    group.add_argument(
        "--window",
        type=int,
        metavar="N",
        help="trace import: the replay's context window in tokens (default the original "
        "model's, else 128000); a tighter one shows where compaction starts to cost",
    )
    group.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="REGEX",
        help="also replace what this regex matches with [REDACTED] (repeat); API keys, "
        "bearer tokens and e-mail addresses always are",
    )
    group.add_argument(
        "--min-probes",
        type=int,
        default=5,
        metavar="N",
        help="refuse a run, or skip a trace, that yields fewer probes, saying why (default 5)",
    )
    group.add_argument("--db", help="the store holding the run (default $CTXLAB_DB or "
                       "./ctxlab.duckdb)")  # fmt: skip
    group.add_argument("--force", action="store_true", help="overwrite the --out file if it "
                       "exists (it is replaced whole, never left half-written)")  # fmt: skip


def import_command(args: argparse.Namespace) -> int:
    """`ctxlab scenarios import`: write the scenario file and say what it holds."""
    import time

    from evals.errors import RunNotFoundError
    from evals.sources.hygiene import rejected_counts, rejections_line
    from evals.sources.redact import Redactor
    from evals.sources.thread_import import (
        check_scenario_path,
        import_run,
        write_scenario,
    )
    from evals.sources.to_scenario import PROBE_KINDS
    from harness.store import default_path

    if not args.name and not args.thread:
        args.parser.error(
            "import needs a trace FILE or FOLDER, or a THREAD_ID or RUN_ID (`ctxlab run` "
            "prints both)"
        )
    if args.format != "ctxlab" and not args.thread and _is_path(args.name, args.format):
        return import_traces_command(args)
    if args.window is not None:
        args.parser.error("--window is for a trace import (a run keeps its own window)")
    db = args.db or default_path()
    start = time.perf_counter()
    try:
        if args.out:  # before the import's work, not after
            check_scenario_path(args.out, force=args.force)
        doc = import_run(db, args.name, thread=args.thread, redactor=Redactor(args.redact),
                         min_probes=args.min_probes)  # fmt: skip
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
        "candidates": doc["probe_counts"].get("candidates", 0),
        "rejected": dict(rejected_counts(doc["probe_counts"])),
        "redactions": doc["source"]["redactions"], "seconds": round(took, 2),
    }  # fmt: skip
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    counts = doc["probe_counts"]
    kinds = ", ".join(f"{k} {counts[k]}" for k in PROBE_KINDS if counts.get(k))
    print(f"wrote {path} ({info['bytes']:,} bytes): {doc['name']}, {info['turns']} turns, "
          f"{info['replies']} recorded tool replies, {info['probes']} probes ({kinds}), "
          f"{info['redactions']} redactions, in {took:.1f} s")  # fmt: skip
    print(rejections_line(counts.get("candidates", 0), rejected_counts(counts)))
    print(f"replay it: ctxlab eval --scenario {path} --strategy full --strategy mask --seed 0")
    return 0


def _is_path(name: str, format: str) -> bool:
    """Whether import's NAME is a trace file or folder: it exists, or a trace format was given
    (then a missing path is an error about the path, not a run id not found)."""
    from pathlib import Path

    return Path(name).exists() or format != "auto"


def import_traces_command(args: argparse.Namespace) -> int:
    """`ctxlab scenarios import PATH` for a trace file or folder: the files, the suite index,
    and one line per skipped record."""
    from pathlib import Path

    from evals.sources.trace_import import import_path

    try:
        summary = import_path(
            Path(args.name), Path(args.out) if args.out else None, format=args.format,
            window=args.window, redact=args.redact, force=args.force,
            min_probes=args.min_probes,
        )  # fmt: skip
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        args.parser.error(str(exc))
    except OSError as exc:
        print(f"ctxlab: cannot write the import: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary.as_json(), indent=2))
    else:
        from harness.terminal import printable

        # File names, tool names and trace ids are the trace's words: shown, never obeyed.
        lines = [printable(line) for line in summary.lines()]
        print("\n".join(lines), file=sys.stdout if summary.ok else sys.stderr)
        if summary.ok:
            where = summary.suite.parent if summary.suite else summary.files[0]
            print(f"replay it: ctxlab eval --scenario {printable(str(where))} --strategy full "
                  "--strategy truncate --seed 0")  # fmt: skip
    return 0 if summary.ok else 1


def scenarios_command(args: argparse.Namespace) -> int:
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
