"""A backend gets what the user logged: the library's own records (system samples, the run context) reach
only a tracker that declares it takes them, only when the run asks, and never among the user's counts."""

from __future__ import annotations

import json
import sys
import textwrap
import time

import pytest
from tracking_core import init, register_tracker_class

CALL_LOG = textwrap.dedent(
    '''
    """Trackers that write every call they get to a file, so a delivery process's calls can be read too."""
    import json
    import os

    from tracking_core import GeneralTracker


    class CallLog(GeneralTracker):
        name = "calllog"
        requires_logging_directory = False

        def __init__(self, project_name, **kwargs):
            super().__init__()
            self.path = os.environ["CALL_LOG"] + "." + self.name

        @property
        def tracker(self):
            return None

        def _write(self, *call):
            with open(self.path, "a") as handle:
                handle.write(json.dumps(call) + "\\n")

        def start(self):
            self._write("start", bool(self.run_context and self.run_context.system_metrics))

        def store_init_configuration(self, values):
            self._write("config", values)

        def log(self, values, step=None, **kwargs):
            self._write("log", values, step)

        def finish(self):
            self._write("finish")


    class CallLogWithSamples(CallLog):
        name = "calllog-samples"

        def log_system_metrics(self, values, index, timestamp):
            self._write("sample", index, timestamp, sorted(values))

        def log_run_context(self, context):
            self._write("context", context["format"])
    '''
)


@pytest.fixture
def call_log(tmp_path, monkeypatch):
    (tmp_path / "calllog_trackers.py").write_text(CALL_LOG)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls"))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("calllog_trackers", None)
    import calllog_trackers

    register_tracker_class(calllog_trackers.CallLog)
    register_tracker_class(calllog_trackers.CallLogWithSamples)

    def calls(name: str) -> list[list]:
        path = tmp_path / f"calls.{name}"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    return calllog_trackers, calls


def _user_run(run) -> None:
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)


USER_CALLS = [
    ["start", False],
    ["config", {"lr": 0.1}],
    ["log", {"loss": 1.0}, 0],
    ["log", {"loss": 0.5}, 1],
    ["log", {"loss": 1 / 3}, 2],
    ["finish"],
]


@pytest.mark.parametrize("delivery", ["thread", "process"])
@pytest.mark.parametrize("given", ["name", "instance"])
def test_a_custom_tracker_gets_exactly_the_users_calls_with_the_defaults(call_log, tmp_path, delivery, given):
    module, calls = call_log
    spec = "calllog" if given == "name" else module.CallLog("p")
    run = init("p", log_with=[spec], logging_dir=tmp_path / "runs", config={"lr": 0.1}, delivery=delivery)
    _user_run(run)
    report = run.finish()
    assert calls("calllog") == USER_CALLS
    backend = report.backends["calllog"]
    assert report.ok and backend.delivered == 4  # the config and three log calls: the user's records
    assert (backend.samples, backend.samples_missed, backend.context_delivered) == (0, 0, None)
    assert (run.run_dir / "system.jsonl").is_file()  # the library's samples are kept in the run folder


@pytest.mark.parametrize("delivery", ["thread", "process"])
def test_asked_for_samples_arrive_on_their_own_axis_and_are_reported_on_their_own_line(call_log, tmp_path, delivery):
    _, calls = call_log
    run = init(
        "p",
        log_with=["calllog", "calllog-samples"],
        logging_dir=tmp_path / "runs",
        config={"lr": 0.1},
        delivery=delivery,
        system_metrics=0.05,
        context=True,
    )
    _user_run(run)
    time.sleep(0.5)
    report = run.finish()
    assert calls("calllog") == USER_CALLS  # it declares neither: the run's asking changes nothing for it
    got = calls("calllog-samples")
    assert got[0] == ["start", True]  # told to switch its SDK's own monitor off
    assert [call for call in got if call[0] not in ("sample", "context")] == [["start", True], *USER_CALLS[1:]]
    samples = [call for call in got if call[0] == "sample"]
    assert [call[1] for call in samples] == list(range(len(samples))) and len(samples) >= 3
    assert all("system/memory.rss_gb" in call[3] for call in samples)
    assert [call for call in got if call[0] == "context"] == [["context", "tracking-run-context"]]
    backend = report.backends["calllog-samples"]
    assert report.ok and backend.delivered == 4  # the samples and the context are not the user's records
    assert backend.samples == len(samples) and backend.samples_missed == 0 and backend.context_delivered is True
    assert f"calllog-samples: system samples: {len(samples)} stored" in str(report)
    kept = [json.loads(line) for line in (run.run_dir / "system.jsonl").read_text().splitlines()]
    assert [sample["index"] for sample in kept] == [call[1] for call in samples]
