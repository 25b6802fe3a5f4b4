"""Store settings that keep an in-process store's footprint bounded, and its write path."""

from __future__ import annotations

import pytest

from harness.errors import StoreError
from harness.store import FILE_MEMORY_LIMIT, StepBatch, Store, now


def _setting(store: Store, name: str) -> str:
    return str(store.scalar(f"SELECT current_setting('{name}')"))


def test_file_store_caps_duckdb_buffers_and_threads(tmp_path) -> None:
    store = Store(tmp_path / "s.duckdb")
    assert FILE_MEMORY_LIMIT == "256MB"
    assert _setting(store, "memory_limit") == "244.1 MiB"  # DuckDB reports 256 MB in MiB
    assert _setting(store, "threads") == "1"
    store.close()


def test_released_file_store_applies_its_settings_on_every_open(tmp_path) -> None:
    store = Store(tmp_path / "s.duckdb", hold=False, memory_limit="100MB", threads=2)
    assert _setting(store, "memory_limit") == "95.3 MiB"
    assert _setting(store, "threads") == "2"


def test_memory_store_is_not_capped_below_its_data_and_spills_outside_cwd(tmp_path) -> None:
    store = Store(":memory:")
    assert store.memory_limit is None
    spill = _setting(store, "temp_directory")
    assert spill.startswith(__import__("tempfile").gettempdir()) and "ctxlab-duckdb-" in spill
    assert _setting(store, "checkpoint_threshold").startswith("931.3 GiB")  # 1 TB: never
    store.close()


def test_bad_memory_limit_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="memory_limit='lots'"):
        Store(":memory:", memory_limit="lots")


def test_one_table_batch_and_many_table_batch_both_land() -> None:
    store = Store(":memory:")
    one = StepBatch()
    one.add("windows", ("t", "r", 1, 1, "[]", "x", now()))
    store.write(one)
    many = StepBatch()
    many.add("windows", ("t", "r", 2, 2, "[]", "y", now()))
    many.add(
        "model_calls", ("r", 2, "m", 1, 1, 0, 0, 5, 1.0, 0.0, "end_turn", "cl100k_base", now())
    )
    store.write(many)
    store.write(StepBatch())
    assert store.scalar("SELECT count(*) FROM windows") == 2
    assert store.scalar("SELECT count(*) FROM model_calls") == 1
