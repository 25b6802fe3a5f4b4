"""Reports: markdown.py writes the tables under reports/, suite.py a suite's, plot.py the
figures (matplotlib, PNG and SVG), html.py the page `--out DIR` writes; terminal.py fits tables
and prose to the terminal, eval_table.py is `ctxlab eval`'s table."""
