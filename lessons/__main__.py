"""``python -m lessons``: list the steps, or run one (``3``), by name, or ``all``."""

import sys

from lessons._course.runner import main

sys.exit(main())
