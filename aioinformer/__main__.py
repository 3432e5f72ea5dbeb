"""``python -m aioinformer COMMAND``: see :mod:`aioinformer._cli.main`."""

from __future__ import annotations

import sys

from aioinformer._cli.main import main

if __name__ == "__main__":
    sys.exit(main())
