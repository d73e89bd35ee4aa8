"""``python -m clgrad ...``: see clgrad/cli.py."""
from clgrad.cli import main

raise SystemExit(main())
