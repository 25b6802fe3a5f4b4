"""Reports: markdown.py writes the tables under reports/, suite.py a suite's, plot.py the
figures."""
