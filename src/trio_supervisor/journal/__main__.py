"""``python -m trio_supervisor.journal``: see the package's docstring."""

import sys

from . import main

sys.exit(main())
