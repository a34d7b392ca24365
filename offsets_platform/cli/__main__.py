"""`python -m offsets_platform.cli`: the same as the `offsets-platform` command."""

import sys

from offsets_platform.cli import main

sys.exit(main())
