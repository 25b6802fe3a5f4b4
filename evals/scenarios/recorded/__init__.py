"""The recorded-run import (`ctxlab scenarios import`) and the `ctxlab-scenario/1` format.

recording.py reads a run from the store (types and reading), plan.py turns the agent's steps
into intentions with slots, cues.py finds the words that recognise a value, probes.py derives
the probes, redact.py masks secrets, importer.py builds the document and writes the file, and
format.py is the one model of the format, shared with the loader (scenarios/from_file.py).
Import from the modules: this file loads nothing, so the loader pulls in only format.py.
"""
