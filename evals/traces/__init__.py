"""Real agent runs from other harnesses: parsed into one `Trace` (model.py), turned into
replayable scenario files, and ctxlab runs exported back into those formats."""
