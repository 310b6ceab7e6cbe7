"""One step, value and config semantic for every backend."""

from __future__ import annotations

import threading
import warnings

import pytest
from tracking_core import Dispatcher, TrackingWarning, sanitize_config
from tracking_core.testing import MemoryTracker


def _run(tmp_path, **options):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path, **options)
    run.init_trackers("p")
    return run


def test_step_none_is_previous_plus_one(memory, tmp_path):
    run = _run(tmp_path)
    run.log({"a": 0})
    run.log({"a": 1})
    run.log({"a": 5}, step=5)
    run.log({"a": 6})
    run.finish()
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == [0, 1, 5, 6]


def test_step_going_backwards_is_passed_on_with_one_warning(memory, tmp_path):
    run = _run(tmp_path)
    run.log({"a": 1}, step=10)
    with pytest.warns(TrackingWarning, match="went back from 10 to 3"):
        run.log({"a": 2}, step=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run.log({"a": 3}, step=2)  # said once only
    run.finish()
    assert [step for step, _ in MemoryTracker.runs[-1].metrics] == [10, 3, 2]


def test_values_are_snapshotted_flattened_and_made_python(memory, tmp_path):
    np = pytest.importorskip("numpy")
    run = _run(tmp_path)
    values = {"train": {"loss": np.float32(0.5), "deep": {"x": np.int64(2)}}, "flag": np.bool_(True), "n": 3}
    run.log(values, step=0)
    values["n"] = 99  # mutating after the call changes nothing that was logged
    values["train"]["loss"] = 7.0
    run.finish()
    logged = MemoryTracker.runs[-1].metrics[0][1]
    assert logged == {"train/loss": 0.5, "train/deep/x": 2, "flag": 1, "n": 3}
    assert [type(v) for v in logged.values()] == [float, int, int, int]


def test_tensor_like_scalars_are_detached_numbers(memory, tmp_path):
    class FakeTensor:
        """Quacks like a 0-d torch tensor: size() method, numel(), detach(), item()."""

        def __init__(self, value):
            self.value, self.detached = value, False

        def size(self):
            return ()

        def numel(self):
            return 1

        def detach(self):
            copy = FakeTensor(self.value)
            copy.detached = True
            return copy

        def item(self):
            assert self.detached, "item() must be called on a detached tensor"
            return self.value

    run = _run(tmp_path)
    run.log({"t": FakeTensor(1.5)}, step=0)
    run.finish()
    assert MemoryTracker.runs[-1].metrics[0][1] == {"t": 1.5}


def test_bad_values_get_one_warning_per_key_and_never_crash(memory, tmp_path):
    np = pytest.importorskip("numpy")
    run = _run(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            run.log({"ok": 1.0, "none": None, "array": np.ones(3), "obj": object(), "": 1.0, "c": 1j}, step=step)
    report = run.finish()
    messages = [str(w.message) for w in caught if w.category is TrackingWarning]
    assert len(messages) == 5, messages  # none, array, obj, empty key, complex: once each
    assert all(w.filename == __file__ for w in caught if w.category is TrackingWarning)  # points at the caller
    assert [values for _, values in MemoryTracker.runs[-1].metrics] == [{"ok": 1.0}] * 3
    assert set(report.rejected_values) == {"none", "array", "obj", "", "c"}
    assert "skipped 'none'" in str(report)


def test_nan_and_inf_pass_to_backends_that_keep_them(memory, tmp_path):
    run = _run(tmp_path)
    run.log({"nan": float("nan"), "inf": float("inf")}, step=0)
    run.finish()
    logged = MemoryTracker.runs[-1].metrics[0][1]
    assert logged["nan"] != logged["nan"] and logged["inf"] == float("inf")


def test_non_finite_skipped_for_backends_that_would_mangle_them(tmp_path):
    from tracking_core import register_tracker_class

    class Mangling(MemoryTracker):
        name = "mangling"
        accepts_non_finite = False

    register_tracker_class(Mangling)
    run = Dispatcher(log_with="mangling", logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.warns(TrackingWarning, match="'nan'"):
        run.log({"nan": float("nan"), "ok": 1.0}, step=0)
        run.flush()
    report = run.finish()
    assert MemoryTracker.runs[-1].metrics[0][1] == {"ok": 1.0}
    assert report.backends["mangling"].skipped_values == {"nan": "non-finite value"}


def test_sanitised_keys_are_warned_and_reported(tmp_path):
    from tracking_core import register_tracker_class

    class Picky(MemoryTracker):
        name = "picky"

        def sanitize_key(self, key):
            return key.replace("@", "_")

    register_tracker_class(Picky)
    run = Dispatcher(log_with="picky", logging_dir=tmp_path)
    run.init_trackers("p")
    with pytest.warns(TrackingWarning, match="stored as 'acc_1'"):
        run.log({"acc@1": 0.5}, step=0)
        run.log({"acc@1": 0.6}, step=1)
        run.flush()
    report = run.finish()
    assert [values for _, values in MemoryTracker.runs[-1].metrics] == [{"acc_1": 0.5}, {"acc_1": 0.6}]
    assert report.backends["picky"].key_map == {"acc@1": "acc_1"}


def test_config_is_sanitised_redacted_and_copied_per_backend(tmp_path):
    import dataclasses
    from pathlib import Path

    from tracking_core import register_tracker_class

    @dataclasses.dataclass
    class Opt:
        name: str = "adam"
        betas: tuple = (0.9, 0.99)

    class Mutating(MemoryTracker):
        name = "mutating"

        def store_init_configuration(self, values):
            values["injected"] = True  # a rude backend
            super().store_init_configuration(values)

    register_tracker_class(Mutating)
    register_tracker_class(type("Other", (MemoryTracker,), {"name": "other"}))
    config = {
        "opt": Opt(),
        "path": Path("/data"),
        "none": None,
        "obj": object(),
        "nested": {"api_key": "sk-1", "x": {1, 2}},
        "hub_token": "hf_x",
        "WANDB_API_KEY": "k",
        "db_password": "p",
        "token_budget_note": None,
    }
    run = Dispatcher(log_with=["mutating", "other"], logging_dir=tmp_path)
    run.init_trackers("p", config=config)
    run.finish()
    _mutated, other = (tracker.config for tracker in MemoryTracker.runs)
    assert "injected" not in other
    assert other["opt"] == {"name": "adam", "betas": [0.9, 0.99]}
    assert other["path"] == "/data" and other["none"] is None and other["obj"].startswith("<object object")
    assert other["nested"] == {"api_key": "<redacted>", "x": [1, 2]}
    assert other["hub_token"] == other["WANDB_API_KEY"] == other["db_password"] == "<redacted>"
    assert other["token_budget_note"] is None  # nothing to hide
    assert config["nested"]["api_key"] == "sk-1"  # the caller's config is untouched


def test_sanitize_config_survives_cycles_and_unprintable_objects():
    class Unprintable:
        def __str__(self):
            raise RuntimeError("no")

        __repr__ = __str__

    loop: dict = {"a": 1}
    loop["self"] = loop
    cleaned = sanitize_config({"loop": loop, "bad": Unprintable(), "huge": "x" * 100_000})
    assert cleaned["loop"]["a"] == 1 and isinstance(cleaned["loop"]["self"], str)
    assert cleaned["bad"] == "<unprintable Unprintable>"
    assert len(cleaned["huge"]) == 100_000


def test_log_is_thread_safe(memory, tmp_path):
    run = _run(tmp_path)

    def worker(offset):
        for i in range(500):
            run.log({"v": offset + i})

    threads = [threading.Thread(target=worker, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.finish()
    metrics = MemoryTracker.runs[-1].metrics
    assert len(metrics) == 2000
    assert [step for step, _ in metrics] == list(range(2000))  # unique, ordered steps
    assert sorted(values["v"] for _, values in metrics) == sorted(k * 1000 + i for k in range(4) for i in range(500))


def test_log_before_init_raises_and_after_finish_warns(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    with pytest.raises(RuntimeError, match="before init_trackers"):
        run.log({"a": 1})
    run.init_trackers("p")
    run.finish()
    with pytest.warns(TrackingWarning, match="after finish"):
        run.log({"a": 1})


def test_capabilities_fan_out_to_trackers_that_have_them(memory, tmp_path):
    np = pytest.importorskip("numpy")
    from tracking_core import GeneralTracker, register_tracker_class

    class ScalarsOnly(GeneralTracker):
        name = "scalars_only"
        requires_logging_directory = False

        def __init__(self, *a, **k):
            super().__init__()

        @property
        def tracker(self):
            return None

    register_tracker_class(ScalarsOnly)
    run = Dispatcher(log_with=["memory", "scalars_only"], logging_dir=tmp_path)
    run.init_trackers("p")
    image = np.zeros((4, 4, 3), dtype="uint8")
    run.log({"a": 1}, step=7)
    with pytest.warns(TrackingWarning, match="log_images is not supported by scalars_only"):
        run.log_images({"img": image})
    image[:] = 255  # the caller reuses its buffer: what was logged must not change
    run.log_table("t", columns=["x"], data=[[1]])
    report = run.finish()
    assert report.ok
    memory_run = MemoryTracker.runs[-1]
    step, images = memory_run.images[0]
    assert step == 7 and images["img"].max() == 0  # media without a step joins the current step
    assert memory_run.tables == [("t", ["x"], [[1]], 7)]


def test_flush_waits_for_delivery(memory, tmp_path):
    run = _run(tmp_path)
    for i in range(100):
        run.log({"a": i})
    assert run.flush(timeout=10)
    assert len(MemoryTracker.runs[-1].metrics) == 100 and MemoryTracker.runs[-1].flushes >= 1
    run.finish()


def test_drop_policy_counts_what_it_drops(tmp_path):
    from tracking_core import register_tracker_class

    gate = threading.Event()

    class Gated(MemoryTracker):
        name = "gated"

        def log_batch(self, entries):
            gate.wait(10)
            super().log_batch(entries)

    register_tracker_class(Gated)
    run = Dispatcher(log_with="gated", logging_dir=tmp_path, queue_size=10, on_full="drop")
    run.init_trackers("p")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(200):
            run.log({"a": i})
    gate.set()
    report = run.finish()
    backend = report.backends["gated"]
    assert backend.dropped > 0 and backend.delivered + backend.dropped == 200
    assert not report.ok and report.failed == ["gated"]


def test_full_queue_blocks_by_default_and_loses_nothing(tmp_path):
    from tracking_core import register_tracker_class

    class Slowish(MemoryTracker):
        name = "slowish"

        def log_batch(self, entries):
            import time

            time.sleep(0.002)
            super().log_batch(entries)

    register_tracker_class(Slowish)
    run = Dispatcher(log_with="slowish", logging_dir=tmp_path, queue_size=5)
    run.init_trackers("p")
    for i in range(300):
        run.log({"a": i})
    report = run.finish()
    assert report.ok and report.backends["slowish"].delivered == 300


def test_bad_images_are_refused_at_the_door(memory, tmp_path):
    np = pytest.importorskip("numpy")
    run = _run(tmp_path)
    with pytest.warns(TrackingWarning, match=r"'vector': image not logged: shape \(5,\)"):
        run.log_images({"vector": np.zeros(5), "good": np.zeros((2, 2))}, step=0)
    with pytest.warns(TrackingWarning, match="'text': image not logged: str is not an image"):
        run.log_images({"text": "nope"}, step=0)
    report = run.finish()
    assert [list(images) for _, images in MemoryTracker.runs[-1].images] == [["good"]]
    assert report.ok and "vector" in report.rejected_values


def test_image_batches_become_lists(memory, tmp_path):
    np = pytest.importorskip("numpy")
    run = _run(tmp_path)
    run.log_images({"batch": np.zeros((3, 8, 8, 3), dtype="uint8")}, step=0)
    run.finish()
    ((_, images),) = MemoryTracker.runs[-1].images
    assert len(images["batch"]) == 3 and images["batch"][0].shape == (8, 8, 3)


def test_trackers_can_add_notes_to_the_report(tmp_path):
    from tracking_core import register_tracker_class

    class Noting(MemoryTracker):
        name = "noting"

        def report_notes(self):
            return ["fell back to offline: the server did not answer"]

    register_tracker_class(Noting)
    run = Dispatcher(log_with="noting", logging_dir=tmp_path)
    run.init_trackers("p")
    report = run.finish()
    assert report.backends["noting"].notes == ["fell back to offline: the server did not answer"]
    assert "noting: fell back to offline: the server did not answer" in str(report)


def test_each_run_warns_and_reports_anew(memory, tmp_path):
    for _ in range(2):
        run = _run(tmp_path)
        with pytest.warns(TrackingWarning, match="'none'"):
            run.log({"none": None}, step=0)
        assert "none" in run.finish().rejected_values


def test_timestamps_are_taken_at_the_call_for_trackers_that_want_them(tmp_path):
    import time

    from tracking_core import register_tracker_class
    from tracking_core.cli.replay import replay
    from tracking_core.store.journal import read_journal

    gate = threading.Event()

    class Timed(MemoryTracker):
        name = "timed"
        wants_timestamps = True
        seen: list = []

        def start(self):
            gate.wait(5)  # records queue while the backend starts

        def log(self, values, step=None, **kwargs):
            Timed.seen.append(kwargs.get("timestamp"))
            super().log(values, step)

    register_tracker_class(Timed)
    run = Dispatcher(log_with=["timed", "jsonl"], logging_dir=tmp_path)
    run.init_trackers("p")
    before = time.time()
    run.log({"a": 1}, step=0)
    after = time.time()
    time.sleep(0.05)
    gate.set()
    run.finish()
    assert before <= Timed.seen[0] <= after  # when log() was called, not when it was delivered
    (stamp,) = [r["time"] for r in read_journal(run.run_dir) if r["type"] == "metrics"]
    assert before <= stamp <= after
    Timed.seen.clear()
    gate.set()
    replay(run.run_dir, "timed", logging_dir=tmp_path / "again", progress=False)
    assert Timed.seen == [stamp]  # a replay keeps the original time
    assert MemoryTracker.runs[-1].metrics == [(0, {"a": 1})]


def test_numbers_and_words_that_only_look_secret_are_kept():
    clean = sanitize_config(
        {
            "pad_token_id": 0,
            "max_tokens": 512,
            "average_tokens_across_devices": True,
            "tokenizer_name": "bert-base-uncased",
            "hub_token": "hf_abc",
            "HF_TOKEN": "x",
            "api_key": 12345678,  # a number under a secret key: kept (ids and counts are not secrets)
        }
    )
    assert clean["pad_token_id"] == 0 and clean["max_tokens"] == 512 and clean["average_tokens_across_devices"] is True
    assert clean["tokenizer_name"] == "bert-base-uncased"
    assert clean["hub_token"] == clean["HF_TOKEN"] == "<redacted>"
