"""``python -m jext``: the same as the ``jext`` command."""

import sys

from jext._cli import main

sys.exit(main())
