"""Reports: markdown.py writes the tables under reports/, plot.py the figures."""
