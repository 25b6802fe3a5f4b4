"""`python -m flows.cli`, as the `ctxlab` script."""

import sys

from flows.cli import main

sys.exit(main())
