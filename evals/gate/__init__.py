"""The eval's gates: check.py (the CI suite against baselines/ci.json), sanity.py (`check
--sanity`: accuracy must follow the data) and pytest_plugin.py (the `ctxlab_gate` fixture)."""
