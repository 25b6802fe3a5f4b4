"""Real runs turned into scenarios: a recorded ctxlab thread or another harness's trace becomes
a `ctxlab-scenario/1` file (scenarios/format.py), and a ctxlab run goes back out as a trace.

Every source takes one path. formats/ parse each format, and thread_trace.py reads a ctxlab
thread from its store, into the one `Trace` (trace.py); walk.py walks it in order (plan.py turns
the agent's steps into intentions with slots, cues.py finds the words that recognise a value);
trace_probes.py derives the probes by role (roles.py, text_roles.py, table_roles.py) under the
hygiene rules (hygiene.py), file_checks.py checks the files a replay writes itself, leaks.py
drops probes a question gives away, redact.py masks secrets, and to_scenario.py writes the
document. trace_import.py imports a trace file or folder; thread_import.py imports a thread,
adding what only its store knows (its config, skills and memory). export.py writes a ctxlab
run in other harnesses' formats. Import from the modules: this file loads nothing.
"""
