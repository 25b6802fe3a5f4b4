"""Running an eval cell: arms.py maps arms to harness strategies (oracle.py the lower bound),
cell.py validates a `Cell` and runs it, replay.py replays a scenario through the harness,
judge.py grades answers with an LLM, tuning.py chooses a setting on training seeds
(`eval --tuned`)."""
