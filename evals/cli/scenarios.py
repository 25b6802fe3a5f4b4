"""`ctxlab scenarios`: list, describe, export or import (a recorded thread as a scenario file)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evals.cli.options import seed_arg, usage_errors


def add_parser(subparsers: Any) -> None:
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
    sc.set_defaults(handler=scenarios_command)


def add_import_options(parser: argparse.ArgumentParser) -> None:
    """The options of `scenarios import`."""
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
