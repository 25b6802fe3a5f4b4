"""Real runs turned into scenarios: a recorded ctxlab thread or another harness's trace becomes
a `ctxlab-scenario/1` file (scenarios/format.py), and a ctxlab run goes back out as a trace.

A ctxlab thread: recording.py reads it from the store, plan.py turns the agent's steps into
intentions with slots, cues.py finds the words that recognise a value, thread_probes.py derives
the probes, leaks.py drops those the plan gives away, redact.py masks secrets and
thread_import.py builds and writes the file. Another harness's trace: formats/ parse each format
into the one `Trace` (trace.py), walk.py walks it in order, trace_probes.py derives probes,
to_scenario.py writes the document and trace_import.py imports a file or folder. export.py writes
a ctxlab run in those formats. Import from the modules: this file loads nothing.
"""
