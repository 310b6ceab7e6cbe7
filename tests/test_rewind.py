"""A job killed between two checkpoints and resumed from the older one (``resume_step``), with the real
backend of this cell: steps 0..149 logged, a checkpoint at step 100, SIGKILL at step 150, then the resumed
job logs 100..199. Read back with the backend's own reader, each step is there once where the SDK can drop
or overwrite what the earlier process logged after the checkpoint; elsewhere the earlier points stay
beside a marker, as the README's rewind table says (as many of them as the SDK had written when the kill came).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter

from tracking_core.testing.reliability import last_json_line, run_script, start_in_own_session, tally

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"

#: backends whose reader shows each step once after a rewind; the others keep the earlier points too
EACH_STEP_ONCE = {"jsonl", "tensorboard", "aim", "dvclive"}
TRAIN = """
import json, sys, time, tracking_core
cell, phase = sys.argv[1], sys.argv[2]
resume = {"resume": True, "resume_step": 100} if phase == "resume" else {}
run = tracking_core.init("rewind", log_with=[cell, "jsonl"], logging_dir="runs", **resume)
for step in range(100 if resume else 0, 200 if resume else 150):
    run.log({"train/loss": 1.0 / (step + 1) + (1.0 if resume else 0.0)}, step=step)
if not resume:
    run.flush(timeout=120)
    print("ready", flush=True)
    time.sleep(600)  # killed here, at step 150
report = run.finish()
history = run.get_tracker(cell).read_back_history()
print(json.dumps({"loss": history.get("train/loss", []), "marker": history.get("tracking/rewind", []),
                  "ok": report.ok, "notes": report.backends[cell].notes}), flush=True)
"""


def test_a_job_resumed_from_an_older_checkpoint_holds_each_step_once(tmp_path):
    process = start_in_own_session(TRAIN, CELL, "first", cwd=tmp_path)
    assert process.stdout is not None
    deadline = time.monotonic() + 240
    while process.stdout.readline().strip() != "ready":
        assert time.monotonic() < deadline and process.poll() is None, "the first process never got going"
    os.killpg(process.pid, signal.SIGKILL)  # the job and every process it started (an SDK's service too)
    process.wait(60)
    result = run_script(TRAIN, CELL, "resume", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    out = last_json_line(result.stdout)
    assert out["ok"], out
    (run_dir,) = (tmp_path / "runs" / "rewind").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert [point["step"] for point in manifest["rewinds"]] == [100]
    steps = [step for step, _ in out["loss"]]
    rewound = [step for step, value in out["loss"] if value > 1.0]  # logged by the resumed job
    assert sorted(rewound) == list(range(100, 200)), "the resumed job's points"
    assert any("rewound to step 100" in note for note in out["notes"]), out["notes"]
    if CELL in EACH_STEP_ONCE:
        figures = tally("SIGKILL at 150, resume_step=100", CELL, range(200), steps)
        assert figures["lost"] == 0 and figures["duplicated"] == 0, (figures, Counter(steps))
        assert all(value > 1.0 for step, value in out["loss"] if step >= 100), "an earlier point after 100 stayed"
    else:  # append-only: the earlier points from 100 on stay, and the marker says where the job went back
        earlier = Counter(step for step, value in out["loss"] if value <= 1.0)
        # after the checkpoint, what the SDK had written when the kill came (W&B keeps its last step open)
        assert set(earlier) <= set(range(150)) and max(earlier.values()) == 1, earlier
        before = [step for step in earlier if step < 100]
        figures = tally("SIGKILL at 150, resume_step=100: before 100", CELL, range(100), before)
        assert figures["duplicated"] == 0, figures
        assert figures["lost"] == 0, figures
        assert [step for step, _ in out["marker"]] == [100], out["marker"]
