"""Entry point for ``python -m freespace_seg``."""

import sys

from freespace_seg.cli import main

sys.exit(main())
