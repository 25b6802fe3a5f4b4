"""One process of the soak (`test_soak_bench.py`): an agent on a file store calls `work(n)` for
every n not yet answered on the thread, each result `result_text(n, size)`; at call `disk_at`
the file size limit (RLIMIT_FSIZE) is set just above the write-ahead log's size, as a full
disk, lifted three calls later or when the run fails for it, and the thread goes on in a new
run. At the start of `work(n)` the step holding result n - 1 has been committed: n - 1 is
appended to `report` (what the run has reported done). Prints its peak RSS (MB) as JSON.

    python soak_child.py DB CALLS MAX_BYTES SEED DISK_AT REPORT MEMORY_LIMIT
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import signal
import sys

from harness import Store, create_agent, tool
from harness.errors import StoreError
from harness.middleware.truncate import Truncate
from harness.models import ScriptedModel, call, reply

THREAD = "soak"
_LINE_BYTES = 50  # random bytes a line: 100 hex digits and a newline
# Runs a child may start after failures (a full disk) before it gives up.
_ATTEMPTS = 8


# A soak of 10,000 calls log-uniform up to 300 MB writes ~240 GB. To cover the whole range on a
# disk that holds less, the bulk of the calls can be capped (CTXLAB_SOAK_BULK_MB) while a few
# (CTXLAB_SOAK_HUGE) are drawn from the top half of the range, at random places.
BULK_MB = os.environ.get("CTXLAB_SOAK_BULK_MB")
HUGE = int(os.environ.get("CTXLAB_SOAK_HUGE", "0"))


def sizes(calls: int, max_bytes: int, seed: int) -> list[int]:
    """Result sizes, log-uniform from 1 KB to `max_bytes` (or to the bulk cap): most small, a
    few huge."""
    rng = random.Random(seed)
    bulk = int(float(BULK_MB) * 1_000_000) if BULK_MB else max_bytes
    low, high = math.log(1_000), math.log(min(bulk, max_bytes))
    out = [int(math.exp(rng.uniform(low, high))) for _ in range(calls)]
    for at in rng.sample(range(calls), min(HUGE, calls)):
        out[at] = rng.randint(max_bytes // 2, max_bytes)
    return out


def result_text(n: int, size: int) -> str:
    """`size` characters of lines of random hex, seeded by n: DuckDB cannot compress them
    much, so the store holds about what a real result of that size takes."""
    data = random.Random(n).randbytes(size // 2 + _LINE_BYTES)
    return data.hex("\n", _LINE_BYTES)[:size]


def call_number(call_id: str) -> int:
    """n of a call id `call-<n>.<attempt>` (each run asks again under a new id)."""
    return int(call_id.removeprefix("call-").partition(".")[0])


def answered(store: Store) -> list[int]:
    """The n of every `work` result the thread holds, in transcript order; not the placeholders
    a new run puts where a stopped one left a call unanswered (kind `cancelled`)."""
    rows = store.query(
        "SELECT tool_call_id FROM messages WHERE thread_id = ? AND role = 'tool' "
        "AND kind = 'message' ORDER BY seq",
        [THREAD],
    )
    return [call_number(r["tool_call_id"]) for r in rows]


def _lift() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def main(path: str, calls: int, max_bytes: int, seed: int, disk_at: int, report: str,
         memory_limit: str) -> None:  # fmt: skip
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    size_of = sizes(calls, max_bytes, seed)
    store = Store(path, memory_limit=memory_limit)
    reported = open(report, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    filled = []  # the disk fills once, whichever run reaches the call

    @tool
    def work(n: int) -> str:
        """Do step n."""
        if n > 0:
            reported.write(f"{n - 1}\n")
        if n == disk_at and not filled:
            filled.append(n)
            store.flush()
            # RLIMIT_FSIZE caps every file: just above the write-ahead log's size, the log's
            # next commits fail, as do writes past that offset of the larger database file.
            wal = path + ".wal"
            limit = (os.path.getsize(wal) if os.path.exists(wal) else 0) + 24_000
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        elif n == disk_at + 3:
            _lift()
        return result_text(n, size_of[n])

    # Every result but the smallest is offloaded; the window keeps the last 200-400 messages.
    params = {"offload.tool_token_limit": 200, "offload.line_chars": 60}
    for attempt in range(_ATTEMPTS):
        done = answered(store)
        start = done[-1] + 1 if done else 0
        if start >= calls:
            break
        ids = {n: f"call-{n}.{attempt}" for n in range(start, calls)}
        script = [reply("", call("work", call_id=ids[n], n=n)) for n in ids]
        agent = create_agent(
            ScriptedModel([*script, "finished"]), tools=[work], store=store,
            system_prompt="soak", strategy="offload", strategy_params=params,
            middleware=[Truncate(("messages", 400), ("messages", 200))],
            max_steps=len(script) + 1,  # one run could answer every call left
        )  # fmt: skip
        try:
            agent.run_sync("go on" if done else "go", thread_id=THREAD)
        except StoreError as exc:
            _lift()  # space comes back; the thread goes on in a new run
            print("StoreError", str(exc)[:200], file=sys.stderr)
    else:
        sys.exit(5)
    reported.write(f"{calls - 1}\n")
    store.close()
    print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), a[5], a[6])
