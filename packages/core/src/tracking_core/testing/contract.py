"""``TrackerContract``: the behaviour every backend owes its users, checked by reading back."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..contract.registry import resolve_tracker_class
from ..contract.tracker import GeneralTracker, has_capability
from ..errors import TrackingWarning
from ..intake.config import flatten_config, stringify
from ..report import FinishReport
from ..run.dispatcher import Dispatcher


@dataclass
class ContractRun:
    """One finished run of the backend under test, for the harness's read-back methods."""

    tmp_path: Path
    logging_dir: Path
    project: str
    dispatcher: Dispatcher
    report: FinishReport | None = None

    @property
    def tracker(self) -> GeneralTracker:
        return self.dispatcher.trackers[0]


@dataclasses.dataclass
class _OptimizerConfig:
    name: str = "adamw"
    betas: tuple[float, ...] = (0.9, 0.999)


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque object>"


def contract_config(tmp_path: Path) -> dict[str, Any]:
    """A config with every shape that crashes other libraries' start-up."""
    return {
        "lr": 0.001,
        "batch_size": 32,
        "use_amp": True,
        "scheduler": None,
        "layers": [64, 32],
        "optimizer": _OptimizerConfig(),
        "output_dir": tmp_path / "out",
        "callback": _Opaque(),
        "model": {"name": "mlp", "depth": 2},
        "hub_token": "hf_should_never_leave_the_process",
    }


class TrackerContract:
    """Subclass in a backend package's tests; fill in the ``read_*`` methods with the SDK's reader.

    Required: ``backend_name`` and ``read_metrics``. Optional: ``read_config``, ``read_texts``,
    ``read_images``, ``read_tables`` (leave them unimplemented to skip those tests),
    ``init_kwargs``, ``env``.
    """

    backend_name: str = ""
    #: False when the backend drops strings (it must then warn once per key).
    supports_text: bool = True
    #: Relative tolerance for numbers read back (backends storing float32 need ~1e-6).
    rel_tol: float = 1e-6

    # -- to fill in ---------------------------------------------------------------------------
    def env(self, tmp_path: Path) -> dict[str, str]:
        """Environment variables for the run (the SDK's own offline switches are NOT needed)."""
        return {}

    def init_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {}

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        """``{key: {step: value}}`` of every numeric series the backend stored for this run."""
        raise NotImplementedError

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        """The stored configuration, nested or flattened with ``/``."""
        raise NotImplementedError

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        raise NotImplementedError

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        """``{key: [steps]}`` of stored images."""
        raise NotImplementedError

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        """``{table name: rows}`` (values may come back as strings)."""
        raise NotImplementedError

    # -- machinery ----------------------------------------------------------------------------
    @pytest.fixture(autouse=True)
    def _contract_environment(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        for key, value in self.env(tmp_path).items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(tmp_path)  # an SDK that writes into the CWD writes into the test's folder
        yield

    def start_run(self, tmp_path: Path, project: str = "contract", config: Any = None, **options: Any) -> ContractRun:
        logging_dir = tmp_path / "logs"
        options.setdefault("on_error", "raise")
        dispatcher = Dispatcher(log_with=[self.backend_name], logging_dir=logging_dir, **options)
        dispatcher.init_trackers(project, config=config, init_kwargs={self.backend_name: self.init_kwargs(tmp_path)})
        return ContractRun(tmp_path, logging_dir, project, dispatcher)

    def finish(self, run: ContractRun) -> ContractRun:
        run.report = run.dispatcher.finish(timeout=180)
        backend = run.report.backends[self.backend_name]
        assert backend.state == "finished", (
            f"{self.backend_name} ended as {backend.state}: {backend.last_error}\n{run.report}"
        )
        assert backend.errors == 0 and backend.spilled == 0, str(run.report)
        return run

    def _optional(self, reader: str, run: ContractRun) -> Any:
        try:
            return getattr(self, reader)(run)
        except NotImplementedError:
            pytest.skip(f"{type(self).__name__} does not implement {reader}")

    def assert_series(self, stored: dict[int, Any], expected: dict[int, float], key: str) -> None:
        assert sorted(stored) == sorted(expected), f"{key}: steps {sorted(stored)} != {sorted(expected)}"
        for step, value in expected.items():
            assert math.isclose(float(stored[step]), value, rel_tol=self.rel_tol, abs_tol=1e-9), (
                key,
                step,
                stored[step],
                value,
            )

    # -- the contract -------------------------------------------------------------------------
    def test_construction_does_no_io(self, tmp_path: Path) -> None:
        cls = resolve_tracker_class(self.backend_name)
        logging_dir = tmp_path / "logs"
        kwargs = dict(self.init_kwargs(tmp_path))
        build: Callable[..., GeneralTracker] = cls  # a backend's constructor, not the base class's
        tracker = (
            build("contract", logging_dir, **kwargs) if cls.requires_logging_directory else build("contract", **kwargs)
        )
        assert tracker.name == self.backend_name
        assert not logging_dir.exists() or not any(logging_dir.rglob("*")), "constructing a tracker wrote files"

    def test_scalars_round_trip(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path)
        expected: dict[str, dict[int, float]] = {"train/loss": {}, "train/acc": {}, "lr": {}}
        for step in range(40):
            values = {"train/loss": 1.0 / (step + 1), "train/acc": step / 40, "lr": 0.001 * 0.99**step}
            run.dispatcher.log(values, step=step)
            for key, value in values.items():
                expected[key][step] = value
        metrics = self.read_metrics(self.finish(run))
        assert run.report is not None
        assert run.report.backends[self.backend_name].delivered >= 40
        for key, series in expected.items():
            assert key in metrics, f"{key} missing; stored keys: {sorted(metrics)}"
            self.assert_series(metrics[key], series, key)

    def test_step_none_counts_on_from_previous(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path)
        for value in (1.0, 2.0, 3.0):
            run.dispatcher.log({"auto": value})
        run.dispatcher.log({"auto": 10.0}, step=10)
        run.dispatcher.log({"auto": 11.0})
        metrics = self.read_metrics(self.finish(run))
        self.assert_series(metrics["auto"], {0: 1.0, 1: 2.0, 2: 3.0, 10: 10.0, 11: 11.0}, "auto")

    def test_nested_and_numpy_values(self, tmp_path: Path) -> None:
        np = pytest.importorskip("numpy")
        run = self.start_run(tmp_path)
        run.dispatcher.log(
            {"eval": {"loss": np.float32(0.25), "top": {"k1": np.float64(0.5)}}, "count": np.int64(3), "flag": True},
            step=0,
        )
        metrics = self.read_metrics(self.finish(run))
        self.assert_series(metrics["eval/loss"], {0: 0.25}, "eval/loss")
        self.assert_series(metrics["eval/top/k1"], {0: 0.5}, "eval/top/k1")
        self.assert_series(metrics["count"], {0: 3.0}, "count")
        self.assert_series(metrics["flag"], {0: 1.0}, "flag")

    def test_bad_values_warn_and_never_crash(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run.dispatcher.log({"good": 1.0, "none": None, "obj": object(), "vector": [1, 2, 3]}, step=0)
            run.dispatcher.log({"good": 2.0, "nan": float("nan"), "inf": float("inf")}, step=1)
            run.dispatcher.log({"good": 3.0, "x" * 300: 1.0, "odd key (1)@%": 2.0}, step=2)
            self.finish(run)
        messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
        for key in ("none", "obj", "vector"):
            assert sum(f"{key!r}" in message for message in messages) == 1, (key, messages)
        metrics = self.read_metrics(run)
        self.assert_series(metrics["good"], {0: 1.0, 1: 2.0, 2: 3.0}, "good")
        assert run.report is not None
        backend = run.report.backends[self.backend_name]
        for key in ("nan", "inf"):  # stored faithfully, or skipped with a warning and in the report
            assert key in metrics or key in backend.skipped_values, (key, sorted(metrics), backend.skipped_values)

    def test_text_values(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run.dispatcher.log({"note": "first words", "loss": 1.0}, step=2)
            run.dispatcher.log({"note": "later words", "loss": 0.5}, step=3)
            self.finish(run)
        if not self.supports_text:
            messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
            assert sum("'note'" in message for message in messages) == 1, messages
            return
        texts = self._optional("read_texts", run)
        assert texts["note"] == {2: "first words", 3: "later words"}

    def test_config_never_breaks_start(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path, config=contract_config(tmp_path))
        run.dispatcher.log({"loss": 1.0}, step=0)
        self.finish(run)
        stored = flatten_config(self._optional("read_config", run))
        assert stringify(stored.get("lr")) in ("0.001", "0.0010"), stored
        assert str(stored.get("optimizer/name")) == "adamw", stored
        assert str(stored.get("model/depth")) == "2", stored
        assert "hf_should_never_leave_the_process" not in repr(stored), "a secret-looking key reached the backend"

    def test_config_logged_later_merges_into_nested_sections(self, tmp_path: Path) -> None:
        """``log_config`` after start adds to a nested section: it never replaces the section whole."""
        run = self.start_run(tmp_path, config=contract_config(tmp_path))
        run.dispatcher.log({"loss": 1.0}, step=0)
        run.dispatcher.log_config({"model": {"width": 128}, "seed": 7})
        run.dispatcher.log({"loss": 0.5}, step=1)
        self.finish(run)
        stored = flatten_config(self._optional("read_config", run))
        assert str(stored.get("model/name")) == "mlp" and str(stored.get("model/depth")) == "2", stored
        assert str(stored.get("model/width")) == "128" and str(stored.get("seed")) == "7", stored

    def test_images(self, tmp_path: Path) -> None:
        np = pytest.importorskip("numpy")
        if not has_capability(resolve_tracker_class(self.backend_name), "log_images"):
            pytest.skip("backend has no log_images")
        run = self.start_run(tmp_path)
        image = (np.arange(32 * 48 * 3) % 255).astype("uint8").reshape(32, 48, 3)
        run.dispatcher.log({"loss": 1.0}, step=1)
        run.dispatcher.log_images({"samples": [image, image[..., 0]]}, step=1)
        images = self._optional("read_images", self.finish(run))
        assert 1 in images.get("samples", []), images

    def test_tables(self, tmp_path: Path) -> None:
        if not has_capability(resolve_tracker_class(self.backend_name), "log_table"):
            pytest.skip("backend has no log_table")
        run = self.start_run(tmp_path)
        run.dispatcher.log_table("predictions", columns=["input", "label"], data=[["a", 1], ["b", 0]], step=0)
        tables = self._optional("read_tables", self.finish(run))
        rows = tables["predictions"]
        assert [str(cell) for cell in rows[0]] == ["a", "1"] and len(rows) == 2, rows

    def test_finish_twice_is_harmless(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path)
        run.dispatcher.log({"loss": 1.0}, step=0)
        first = self.finish(run).report
        assert run.dispatcher.finish() is first
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run.dispatcher.log({"loss": 2.0}, step=1)  # after finish: ignored with a warning, no crash

    def test_two_runs_in_one_process(self, tmp_path: Path) -> None:
        first = self.start_run(tmp_path, project="contract-a")
        first.dispatcher.log({"only_a": 1.0}, step=0)
        self.finish(first)
        second = self.start_run(tmp_path, project="contract-b")
        second.dispatcher.log({"only_b": 2.0}, step=0)
        self.finish(second)
        metrics_a, metrics_b = self.read_metrics(first), self.read_metrics(second)
        assert "only_a" in metrics_a and "only_b" not in metrics_a, sorted(metrics_a)
        assert "only_b" in metrics_b and "only_a" not in metrics_b, sorted(metrics_b)

    def test_blocking_mode(self, tmp_path: Path) -> None:
        run = self.start_run(tmp_path, blocking=True)
        for step in range(5):
            run.dispatcher.log({"sync": float(step)}, step=step)
        metrics = self.read_metrics(self.finish(run))
        self.assert_series(metrics["sync"], {step: float(step) for step in range(5)}, "sync")

    def test_tracker_reads_its_own_data_back(self, tmp_path: Path) -> None:
        """``read_back_metrics`` (used by ``tracking demo``) agrees with what was logged."""
        run = self.start_run(tmp_path)
        for step in range(5):
            run.dispatcher.log({"readback/loss": step / 10}, step=step)
        self.finish(run)
        try:
            stored = run.tracker.read_back_metrics()
        except NotImplementedError:
            pytest.skip(f"{self.backend_name} does not implement read_back_metrics")
        self.assert_series(stored["readback/loss"], {step: step / 10 for step in range(5)}, "readback/loss")
