"""The fault points proving_ground.cli_process installs fire where they say, whatever arguments
the library's write methods take: a fault that never fires makes a fault trial test nothing.
Each case runs the module in a child process with the lake's writers replaced by stubs (no JVM):
the child must die by SIGKILL right after the named table's write, not before nor later."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from proving_ground.cli_process import ROOT

pytestmark = pytest.mark.fast

# The child: the Spark writers stubbed (each returns 3 rows), the CLI replaced by writes of two
# models, the second the one named to die after.
_CHILD = """
import sys
import offsets_platform.cli as cli
from offsets_platform.lake import Lake

Lake.spark_overwrite = lambda self, name, data, via_arrow=False: 3
Lake.spark_merge = lambda self, name, data, via_arrow=False, delete_when=None: 3
method = sys.argv[1]

def refresh(argv):
    print("wrote other", getattr(Lake, method)(None, "other_model", None, via_arrow=True), flush=True)
    print("wrote target", getattr(Lake, method)(None, "target_model", None, via_arrow=True), flush=True)
    print("still alive", flush=True)
    return 0

cli.main = refresh
from proving_ground.cli_process import main
sys.argv = ["cli_process", "--die-after-model-write", "target_model", "--", "models"]
sys.exit(main())
"""


@pytest.mark.parametrize("method", ["spark_overwrite", "spark_merge"])
def test_die_after_model_write_kills_right_after_that_models_write(method):
    child = subprocess.run([sys.executable, "-c", _CHILD, method], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert child.stdout.splitlines() == ["wrote other 3"], child.stdout
