"""``python3 -m ward``: see :mod:`ward.cli`."""

import sys

from .cli import main

sys.exit(main())
