"""TensorBoard when the disk fills up: the report counts exactly what the event file holds."""

from __future__ import annotations

import pytest
from tracking_core.testing.reliability import last_json_line, run_script, tally, waiting_steps

pytestmark = pytest.mark.reliability

FULL_DISK = """
import json, resource, signal, sys, tracking_core
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead of killing us
run = tracking_core.init("full", log_with=["tensorboard"], logging_dir=sys.argv[1])
run.get_tracker("tensorboard", unwrap=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
for step in range(3000):
    run.log({"loss": 1.0 / (step + 1), "note": "x" * 40}, step=step)
    if step % 100 == 99:
        run.flush()
report = run.finish()
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
b = report.backends["tensorboard"]
stored = [step for step, _ in run.get_tracker("tensorboard").read_back_history().get("loss", [])]
print(json.dumps({"state": b.state, "delivered": b.delivered, "spilled": b.spilled, "dropped": b.dropped,
                  "stored": stored, "run_dir": str(run.run_dir)}))
"""


def test_a_full_disk_spills_exactly_what_the_event_file_could_not_store(tmp_path):
    # the event file and the run's journal pass it part-way; a spill journal (a new file) stays under it
    limit = 200 * 1024
    result = run_script(FULL_DISK, str(tmp_path / "runs"), str(limit), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = last_json_line(result.stdout)
    spilled = waiting_steps(out["run_dir"], "tensorboard")  # in the run's journal, or a spill where it had none
    figures = tally("disk full (RLIMIT_FSIZE)", "tensorboard", range(3000), out["stored"], spilled)
    assert figures["lost"] == 0 and figures["duplicated"] == 0, figures
    assert out["dropped"] == 0 and out["spilled"] == len(spilled) > 0 and out["state"] != "finished", out
    assert out["delivered"] == len(out["stored"]), out  # counted exactly what the file holds
