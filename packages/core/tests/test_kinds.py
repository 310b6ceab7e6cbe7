"""``KINDS``, the one table of data-record kinds, agrees with each place that acts on a kind."""

from __future__ import annotations

import pickle

import numpy as np
from tracking_core import CAPABILITIES, GeneralTracker
from tracking_core.backends.jsonl import JsonlTracker
from tracking_core.contract.histogram import histogram_of
from tracking_core.delivery.worker import MANAGED_METHODS
from tracking_core.intake.figures import copy_figure
from tracking_core.intake.record import KINDS, Record, deliver
from tracking_core.store.journal import read_journal, record_from_entry


def _payloads(tmp_path):
    artifact = tmp_path / "model.txt"
    artifact.write_text("weights")
    folder = tmp_path / "outputs"
    folder.mkdir()
    return {
        "log": {"loss": 0.5},
        "config": {"lr": 0.1},
        "images": {"sample": [np.zeros((2, 2, 3), dtype=np.uint8)]},
        "table": ("scores", ["a"], [[1]], None),
        "figure": None,  # made below: needs matplotlib
        "histogram": ("weights", histogram_of([1.0, 2.0, 3.0])[0]),
        "artifact": (str(artifact), None),
        "artifacts": (str(folder), None),
    }


class Calls(GeneralTracker):
    """Records which contract method each record reached."""

    name = "calls"
    requires_logging_directory = False

    def __init__(self) -> None:
        super().__init__()
        self.called: list[str] = []

    @property
    def tracker(self) -> Calls:
        return self

    def __getattribute__(self, name: str):
        if name in {kind.method for kind in KINDS.values()}:
            object.__getattribute__(self, "called").append(name)
            return lambda *args, **kwargs: None
        return object.__getattribute__(self, name)


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure()
    payload = (copy_figure(figure)[0], "plot")
    plt.close(figure)
    return payload


def test_each_kind_reaches_the_tracker_method_the_table_names(tmp_path):
    payloads = _payloads(tmp_path)
    payloads["figure"] = _figure()
    tracker = Calls()
    for kind, payload in payloads.items():
        deliver(tracker, Record(kind, payload, 0, {}, None, 1))
    assert tracker.called == [KINDS[kind].method for kind in payloads]


def test_each_kind_is_written_as_the_journal_line_the_table_names(tmp_path):
    payloads = _payloads(tmp_path)
    payloads["figure"] = _figure()
    journal = JsonlTracker("kinds", run_dir=tmp_path / "run", run_id="r")
    journal.start()
    for seq, (kind, payload) in enumerate(payloads.items()):
        deliver(journal, Record(kind, payload, 0, {}, None, seq))
    journal.finish()
    types = [entry["type"] for entry in read_journal(journal.journal_path)]
    assert types[1:-1] == [KINDS[kind].journal_type for kind in payloads]
    # and each line reads back as a record of its kind (a figure comes back as the image the journal drew)
    back = [record_from_entry(entry, journal.journal_path.parent) for entry in read_journal(journal.journal_path)]
    kinds = [record.kind for record in back if record is not None]
    assert kinds == [kind if kind != "figure" else "images" for kind in payloads]


def test_the_table_names_every_method_a_held_tracker_routes_and_every_capability():
    assert set(MANAGED_METHODS) == {kind.method for kind in KINDS.values()} | {"flush", "finish"}
    assert set(CAPABILITIES) <= {kind.method for kind in KINDS.values()}
    assert pickle.loads(pickle.dumps(KINDS)) == KINDS
