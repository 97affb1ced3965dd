"""``python -m tests.compat.pyflink_unit_tests``: see ``run.py``."""

import sys

from tests.compat.pyflink_unit_tests.run import main

sys.exit(main())
