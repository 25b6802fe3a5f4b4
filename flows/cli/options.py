"""What the commands of `ctxlab` share: the option types, the model options (`--window`,
`--price`, `--profile`), usage errors and the writable-store check."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from evals.analysis.stats import DEFAULT_SEEDS, TRAIN_SEEDS

# `none-unbounded` is in by default: it is the cost baseline every saving is quoted against.
STRATEGIES = (
    "none", "none-unbounded", "truncate", "mask", "offload", "summarize", "context-edit", "full",
)  # fmt: skip
# The suites of evals/gate/check.py, named here so `--help` needs no eval import (a test keeps them
# equal).
SUITE_NAMES = ("ci",)
__all__ = ["DEFAULT_SEEDS", "STRATEGIES", "SUITE_NAMES", "TRAIN_SEEDS"]


def count_arg(text: str) -> int:
    """An argparse type: a number of seeds, 1 or more (`--seeds 0` would run nothing)."""
    return whole_number(text, 1)


@dataclass(frozen=True)
class Seeds:
    """What `--seeds` said: a count (`5`: the first five seeds from where the command starts,
    0 unless it says otherwise) or the seeds themselves (`10,11,12`, `10-14`, `0-2,7`)."""

    text: str
    count: int | None = None
    listed: tuple[int, ...] = ()

    def resolve(self, start: int = 0) -> tuple[int, ...]:
        """The seeds to run; a count starts at `start`."""
        if self.count is not None:
            return tuple(range(start, start + self.count))
        return self.listed

    def __str__(self) -> str:
        return self.text


def seeds_arg(text: str) -> Seeds:
    """An argparse type for `--seeds`: one number is a count (1 or more; `--seeds 0` would run
    nothing), else a comma-separated list of seeds and ranges (`10,11,12`, `10-14`), each seed
    0 or more and none twice."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return Seeds(text, count=whole_number(text, 1))
    seeds: list[int] = []
    for part in text.split(","):
        span = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if span is None:
            raise argparse.ArgumentTypeError(
                f"expected a count (5), seeds (10,11,12) or a range (10-14), got {text!r}"
            )
        low, high = int(span[1]), int(span[2] if span[2] is not None else span[1])
        if high < low:
            raise argparse.ArgumentTypeError(
                f"range {part.strip()!r} runs backwards; write {high}-{low}"
            )
        seeds += range(low, high + 1)
    repeated = sorted(s for s, n in Counter(seeds).items() if n > 1)
    if repeated:
        raise argparse.ArgumentTypeError(
            f"seed(s) {', '.join(map(str, repeated))} given twice in {text!r}"
        )
    return Seeds(text, listed=tuple(seeds))


def seed_arg(text: str) -> int:
    """An argparse type: a seed, 0 or more."""
    return whole_number(text, 0)


def whole_number(text: str, minimum: int, unit: str = "", too_small: str = "") -> int:
    """The core of an argparse type: `text` as a whole number of at least `minimum`, refused
    in a message that names the `unit` (and says `too_small` when it is below)."""
    of = f" of {unit}" if unit else ""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number{of}, got {text!r}") from None
    if value < minimum:
        said = too_small or f"must be {minimum} or more"
        raise argparse.ArgumentTypeError(f"{said}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return whole_number(text, 1, "tokens", "must be a positive number of tokens")


def one_way_to_seeds(args: argparse.Namespace) -> None:
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


def add_scale_option(
    parser: argparse.ArgumentParser, default: str = "small", help: str = "data size (default small)"
) -> None:
    """`--scale`: how much data a generated scenario has."""
    parser.add_argument("--scale", default=default, choices=("small", "full"), help=help)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--window, --max-output, --price and --profile: run a model ctxlab has no profile for."""
    group = parser.add_argument_group("a model without a built-in profile, or served elsewhere")
    group.add_argument(
        "--window",
        type=_positive_int,
        metavar="TOKENS",
        help="the context window: a model without a profile gets it as its own; a known "
        "model's window is capped at it (thresholds and overflow computed against it, so a "
        "1M-window live model is compacted as the simulated one is); in `eval`, absolute-"
        "token thresholds nobody --set scale with it (offload at an eighth: evals/README.md, "
        "Window scaling) and none-unbounded stays uncapped",
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
    group.add_argument(
        "--base-url",
        metavar="URL",
        help="the server of an openai-compatible:NAME model (vLLM, Ollama, OpenRouter, a "
        "gateway), e.g. http://127.0.0.1:8000/v1; its key from $OPENAI_COMPATIBLE_API_KEY",
    )


def use_model_options(args: argparse.Namespace) -> None:
    """Make `--model` known from --window/--max-output/--price or --profile, and reachable at
    --base-url, for this process and the workers it starts (through `$CTXLAB_MODELS` and
    `$OPENAI_COMPATIBLE_BASE_URL`)."""
    import hashlib
    import os
    import tempfile
    from pathlib import Path

    from harness.profiles import PROFILES_ENV, profile_toml

    _use_base_url(args)
    files = []
    if args.profile:
        if not Path(args.profile).is_file():
            args.parser.error(f"no profile file {args.profile}")
        files.append(str(Path(args.profile).resolve()))
    if args.window is not None or args.max_output is not None or args.price is not None:
        try:
            text = profile_toml(args.model, window=args.window, max_output=args.max_output,
                                price=args.price)  # fmt: skip
        except ValueError as exc:
            args.parser.error(str(exc))
        folder = Path(tempfile.gettempdir()) / "ctxlab"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"models-{hashlib.sha256(text.encode()).hexdigest()[:16]}.toml"
        path.write_text(text)
        files.append(str(path))
    if files:
        before = os.environ.get(PROFILES_ENV, "")
        os.environ[PROFILES_ENV] = os.pathsep.join([*filter(None, [before]), *files])


def _use_base_url(args: argparse.Namespace) -> None:
    """`--base-url` for this process and its workers, through the variable the
    openai-compatible adapter reads."""
    if args.base_url is None:
        # Before the import below: it loads the OpenAI SDK (~1 s), which offline runs never need.
        return
    import os

    from harness.models.compatible import BASE_URL_ENV

    if not str(args.model).startswith("openai-compatible:"):
        args.parser.error(
            f"--base-url is for --model openai-compatible:NAME, not {args.model!r} (an openai: "
            "model takes $OPENAI_BASE_URL)"
        )
    if not re.match(r"^https?://[^/\s]+", args.base_url):
        args.parser.error(f"--base-url must be an http:// or https:// URL, got {args.base_url!r}")
    os.environ[BASE_URL_ENV] = args.base_url


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
