"""Scoring a replay: answers.py decides whether an answer is right, records.py holds what one
replay produced (`ProbeResult`, `Replay`), results.py reduces it to an `EvalResult`, and
storage.py keeps results in `eval_runs`/`eval_probes`."""
