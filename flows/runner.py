"""The Prefect step runner: each model call, tool call and acting middleware hook is a task.

Tasks are named after the step (`model`, `tool:pull_market_report`, `summarize`, `offload`) and
numbered in their run name (`model #3`), so the Prefect UI shows one row per step under the
flow run, which carries the run's tags. Task runs themselves carry no tags: Prefect treats
every task-run tag as a concurrency-limit name, which costs two API calls per task and, for
each new set of tags in a process, a stall of seconds (measured: 2-5 s per run).

Data stays in DuckDB: Prefect persists no results and caching is off (arguments hold messages
and store handles that must not be hashed). Model calls retry on rate limits and server errors
with backoff. Journaling (record each model and tool call, replay them on resume) wraps this
runner: see `flows.journal.JournaledRunner`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.logging.handlers import PrefectConsoleHandler
from prefect.states import State
from prefect.utilities.annotations import quote

T = TypeVar("T")

# One DEBUG line per step task started, for live progress (`ctxlab demo` counts them).
step_log = logging.getLogger("ctxlab.steps")

RETRYABLE_STATUS = frozenset({408, 429})
_TRANSIENT_NAMES = frozenset({"APIConnectionError", "APITimeoutError", "TimeoutError"})


def is_transient(exc: BaseException | None) -> bool:
    """Rate limits (429), server errors (5xx), timeouts and dropped connections, looked for on
    the error and on the SDK errors it was raised from."""
    seen = 0
    while exc is not None and seen < 8:
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and (status in RETRYABLE_STATUS or status >= 500):
            return True
        if type(exc).__name__ in _TRANSIENT_NAMES:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


class _HideToolFailures(logging.Filter):
    """A tool that raised is the model's to handle: it gets the error as text and carries on.
    The task still shows as Failed, traceback included, in the Prefect UI; this keeps the
    traceback off the terminal, where it would read as if the run had failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        task_name = str(getattr(record, "task_name", ""))
        return not (record.name == "prefect.task_runs" and task_name.startswith("tool:"))


def hide_tool_failures_on_console() -> None:
    """Filter tool-task failures out of Prefect's console output (not out of its API logs)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
            isinstance(f, _HideToolFailures) for f in handler.filters
        ):
            handler.addFilter(_HideToolFailures())


class _ToRunLogs(logging.Handler):
    """Sends harness log lines (one per middleware decision) to the Prefect run they happen
    in, task run included, whatever Prefect's own log level: the Logs tab shows each decision
    while the terminal stays quiet."""

    def __init__(self) -> None:
        from prefect.logging.handlers import APILogHandler

        super().__init__(logging.INFO)
        self.api = APILogHandler()

    def emit(self, record: logging.LogRecord) -> None:
        from prefect.context import FlowRunContext, TaskRunContext

        if TaskRunContext.get() is not None or FlowRunContext.get() is not None:
            self.api.handle(record)


@contextmanager
def harness_logs_to_prefect() -> Iterator[None]:
    """While the block runs, harness middleware decisions reach the current Prefect run's
    logs."""
    from harness.state import events_log

    handler = _ToRunLogs()
    level, propagate = events_log.level, events_log.propagate
    events_log.addHandler(handler)
    events_log.setLevel(logging.INFO)
    events_log.propagate = False  # to the run's logs, not (at INFO) to the terminal
    try:
        yield
    finally:
        events_log.removeHandler(handler)
        events_log.setLevel(level)
        events_log.propagate = propagate


def _retry_condition(_task: Task[Any, Any], _run: TaskRun, state: State[Any]) -> bool:
    return isinstance(state.data, BaseException) and is_transient(state.data)


async def _invoke(
    fn: Callable[..., Awaitable[T]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> T:
    """The body of every step task. The caller quotes the arguments so that Prefect passes
    them through without walking whole message lists looking for futures."""
    return await fn(*args, **kwargs)


class PrefectStepRunner:
    """Runs harness steps as Prefect tasks (implements `harness.steps.StepRunner`).

    numbering: the counter task run names are numbered from; share one between the runners
        of a flow run's inputs, so that its task names stay unique (`model #7` exists once).
    model_retries / retry_delays: retries of a model call on 429, 5xx, timeouts; the delays
        are seconds before each retry (the last one repeats; default 10 s each), jittered by
        up to 50%.
    """

    def __init__(
        self,
        *,
        numbering: Counter[str] | None = None,
        model_retries: int = 4,
        retry_delays: Sequence[float] = (10,),
    ) -> None:
        self.model_retries = model_retries
        self.retry_delays = list(retry_delays)
        self.counts: Counter[str] = Counter()
        self.numbering: Counter[str] = Counter() if numbering is None else numbering
        self._tasks: dict[str, Task[Any, Any]] = {}

    def _task(self, name: str) -> Task[Any, Any]:
        if name not in self._tasks:
            options: dict[str, Any] = {}
            if name == "model":
                options = {
                    "retries": self.model_retries,
                    "retry_delay_seconds": self.retry_delay,
                    "retry_jitter_factor": 0.5,
                    "retry_condition_fn": _retry_condition,
                }
            self._tasks[name] = task(
                _invoke,
                name=name,
                cache_policy=NO_CACHE,
                persist_result=False,
                **options,
            )
        return self._tasks[name]

    async def run(
        self, name: str, fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
    ) -> T:
        self.counts[name] += 1
        self.numbering[name] += 1
        number = self.numbering[name]
        step_log.debug("%s #%d", name, number, extra={"step_name": name})
        step = self._task(name).with_options(task_run_name=f"{name} #{number}")
        result: T = await step(fn, quote(args), quote(kwargs))
        return result

    def current_step_id(self) -> str | None:
        """The Prefect task run id of the step running now; None between steps."""
        ctx = TaskRunContext.get()
        return str(ctx.task_run.id) if ctx is not None else None

    def no_step_reason(self, hook: str) -> str:
        """Why an event written now has no task run id: hooks that only read (memory and
        skills loading) record what they did but run no task."""
        return f"{hook} hook between steps: it acted without a task"

    @property
    def retry_delay(self) -> float | list[float]:
        """One number when the delays do not vary: Prefect's UI shows a list as `NaN`. The
        SDK adapters already back off on their own retries; this is the second line."""
        return self.retry_delays[0] if len(set(self.retry_delays)) == 1 else self.retry_delays

    @property
    def tasks_run(self) -> int:
        return sum(self.counts.values())
