"""``AccelerateParity``: a backend used as Accelerate's tracker of the same name is used, checked by reading back.

Accelerate's users call a tracker directly (``start``, ``store_init_configuration``, ``log``,
``finish`` in that order, no dispatcher) and reach the SDK object through the attribute Accelerate
gives it (``run``, ``writer``, ``experiment``...). A backend package subclasses this suite, as it
does :class:`~tracking_core.testing.TrackerContract`, with Accelerate's signatures of its tracker
and the SDK's reader; pytest then checks, against the real SDK:

* the signatures and class attributes match Accelerate's (ours may add keyword-only options);
* the SDK attributes are ``None`` before ``start()`` and one object after it, and a managed
  tracker's wait for the start in the backend's worker;
* used directly, everything logged is stored when the calls return, as in Accelerate;
* a config logged after start merges into nested sections, a changed value winning;
* every image layout a training loop hands over reads back pixel for pixel;
* per-rank runs (``per_rank=True``): one SDK run per rank, named ``<name>-rank<N>``, in one process
  and under two real rank processes.

What only one SDK has (histogram types, figure formats, tags, folders) stays in the package's
own test file beside its subclass.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..contract.registry import resolve_tracker_class
from ..contract.tracker import GeneralTracker, RunContext, has_capability
from ..errors import TrackingWarning
from ..intake.config import flatten_config, stringify
from ..run.dispatcher import init
from .images import assert_read_back, image_layouts
from .ranks import launch_ranks, per_rank_context, positional_signature

#: what each rank process of :meth:`AccelerateParity.test_per_rank_mode_end_to_end` runs
RANK_SCRIPT = r"""
import json, sys, time
import tracking_core

name, logging_dir, init_kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
run = tracking_core.init(
    "ranked", log_with=name, logging_dir=logging_dir, per_rank=True, on_error="raise", init_kwargs={name: init_kwargs}
)
tracker = run.get_tracker(name, unwrap=False)
run.log({"loss": float(tracker.run_context.rank)}, step=0)
assert run.finish(timeout=300).ok
for attempt in range(5):  # the other rank may be closing its run in the same store (Aim 3.18 drops a chunk meanwhile)
    try:
        stored = tracker.read_back_metrics()
        break
    except Exception:  # Aim's RocksIOError is no OSError
        if attempt == 4:
            raise
        time.sleep(1.0)
metrics = {key: {str(step): value for step, value in series.items()} for key, series in stored.items()}
print(json.dumps({"group": tracker.run_context.group, "rank": tracker.run_context.rank, "metrics": metrics}))
"""


def _positional(function: Callable[..., Any]) -> list[str]:
    """The positional parameters of ``function`` (positional-only ones included), as ``name`` or ``name=default``."""
    parts = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            default = "" if parameter.default is parameter.empty else f"={parameter.default!r}"
            parts.append(parameter.name + default)
    return parts


class AccelerateParity:
    """Subclass in a backend package's tests; set the class attributes and fill in the readers.

    Required: ``backend_name`` and ``accelerate_signatures``. ``read_metrics`` defaults to the
    tracker's ``read_back_metrics()``; ``read_config`` and ``run_names`` are optional (leave them
    unimplemented to skip what they read).
    """

    backend_name: ClassVar[str] = ""
    #: Accelerate's signature of each method, as :func:`~tracking_core.testing.ranks.positional_signature` prints it
    accelerate_signatures: ClassVar[dict[str, str]] = {}
    #: True: the positional parameters are exactly Accelerate's; False: Accelerate's come first (names, and
    #: defaults where the table gives one), ours may follow
    exact_signatures: ClassVar[bool] = True
    #: the names the SDK object goes by (``tracker`` plus Accelerate's: ``run``, ``writer``...)
    sdk_attributes: ClassVar[tuple[str, ...]] = ("tracker",)
    #: Accelerate's class attributes, checked when not None
    accelerate_requires_logging_directory: ClassVar[bool | None] = None
    accelerate_main_process_only: ClassVar[bool | None] = None
    #: the image layouts test: ``image_layouts(extra=...)``; None skips it (the package tests its own way)
    image_layouts_extra: ClassVar[bool | None] = False
    #: a port of its own for the two rank processes (``MASTER_PORT`` names the job); 0 skips that test
    rank_port: ClassVar[int] = 0
    #: prefixes of environment variables removed for every test and the rank processes (an SDK's settings)
    unset_env: ClassVar[tuple[str, ...]] = ()
    #: prefixes of environment variables the rank processes do not inherit (default: ``unset_env``)
    rank_unset_env: ClassVar[tuple[str, ...] | None] = None

    # -- to fill in ---------------------------------------------------------------------------
    def env(self, tmp_path: Path) -> dict[str, str]:
        """Environment variables for every test and the rank processes."""
        return {}

    def init_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        """``init_kwargs`` of the runs made through a dispatcher."""
        return {}

    def direct_tracker(self, tmp_path: Path, run_name: str) -> GeneralTracker:
        """The tracker as an Accelerate user constructs it (default: its files under ``tmp_path/logs``)."""
        cls: Callable[..., GeneralTracker] = self.tracker_class()
        if self.tracker_class().requires_logging_directory:
            return cls(run_name, tmp_path / "logs", **self.init_kwargs(tmp_path))
        return cls(run_name, logging_dir=tmp_path / "logs", **self.init_kwargs(tmp_path))

    def read_metrics(self, tracker: GeneralTracker) -> dict[str, dict[int, float]]:
        """``{key: {step: value}}`` the SDK holds for the finished ``tracker``'s run."""
        return tracker.read_back_metrics()

    def read_config(self, tracker: GeneralTracker) -> dict[str, Any]:
        """The config the SDK holds for the finished ``tracker``'s run (nested, or flattened with ``/``)."""
        raise NotImplementedError

    def run_names(self, trackers: list[GeneralTracker]) -> list[str]:
        """The run name the SDK stored for each finished tracker."""
        raise NotImplementedError

    # -- machinery ----------------------------------------------------------------------------
    def tracker_class(self) -> type[GeneralTracker]:
        return resolve_tracker_class(self.backend_name)

    @pytest.fixture(autouse=True)
    def _parity_environment(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        for name in list(os.environ):
            if self.unset_env and name.startswith(self.unset_env):
                monkeypatch.delenv(name)
        for key, value in self.env(tmp_path).items():
            monkeypatch.setenv(key, value)
        (tmp_path / "work").mkdir(exist_ok=True)
        monkeypatch.chdir(tmp_path / "work")  # an SDK default folder lands in the test's folder
        yield

    def managed_run(self, tmp_path: Path, project: str, **options: Any) -> Any:
        options.setdefault("on_error", "raise")
        return init(
            project,
            log_with=self.backend_name,
            logging_dir=tmp_path / "logs",
            init_kwargs={self.backend_name: self.init_kwargs(tmp_path)},
            **options,
        )

    def _optional(self, reader: Callable[..., Any], *args: Any) -> Any:
        try:
            return reader(*args)
        except NotImplementedError:
            pytest.skip(f"{type(self).__name__} does not implement {reader.__name__}")

    def per_rank_context(self, tmp_path: Path, rank: int, group: str = "job-7") -> RunContext:
        """The run context the dispatcher gives rank ``rank`` of a per-rank job."""
        return per_rank_context(tmp_path / "logs", "ranks", group, rank)

    # -- the suite ----------------------------------------------------------------------------
    def test_signatures_match_accelerate(self) -> None:
        cls = self.tracker_class()
        wrong = {}
        for method, expected in self.accelerate_signatures.items():
            ours = positional_signature(getattr(cls, method))
            if self.exact_signatures:
                matches = ours == expected
            else:
                theirs = [part for part in expected.split(", ") if part and not part.startswith("*")]
                mine = _positional(getattr(cls, method))
                matches = len(mine) >= len(theirs) and all(
                    part == have or ("=" not in part and have.split("=")[0] == part) for part, have in zip(theirs, mine)
                )
                for star in (part for part in expected.split(", ") if part.startswith("**")):
                    matches = matches and star in ours.split(", ")
            if not matches:
                wrong[method] = f"ours ({ours}) != accelerate's ({expected})"
        assert not wrong, wrong

    def test_class_attributes_match_accelerate(self) -> None:
        cls = self.tracker_class()
        assert cls.name == self.backend_name
        if self.accelerate_requires_logging_directory is not None:
            assert cls.requires_logging_directory is self.accelerate_requires_logging_directory
        if self.accelerate_main_process_only is not None:  # the dispatcher itself runs it on rank 0 only
            assert cls.main_process_only is self.accelerate_main_process_only

    def test_direct_use_is_synchronous_as_in_accelerate(self, tmp_path: Path) -> None:
        """No dispatcher, Accelerate's calls in Accelerate's order: everything is stored when they return."""
        tracker = self.direct_tracker(tmp_path, "direct")
        assert all(getattr(tracker, name) is None for name in self.sdk_attributes)  # nothing before start()
        tracker.start()
        assert getattr(tracker, self.sdk_attributes[0]) is not None
        assert len({id(getattr(tracker, name)) for name in self.sdk_attributes}) == 1  # one object, many names
        tracker.store_init_configuration({"lr": 0.1})
        tracker.log({"loss": 0.5}, step=0)
        tracker.log({"loss": 0.25}, step=1)
        tracker.finish()
        assert self.read_metrics(tracker)["loss"] == {0: 0.5, 1: 0.25}
        try:
            config = flatten_config(self.read_config(tracker))
        except NotImplementedError:
            return
        assert stringify(config.get("lr")) == "0.1", config

    def test_managed_tracker_waits_for_its_start_and_takes_direct_calls(self, tmp_path: Path) -> None:
        """Through a dispatcher ``start()`` runs in the worker: the SDK object read right after init waits
        for it, and the tracker's own methods called from the script (as Accelerate users do) reach the run."""
        run = self.managed_run(tmp_path, "managed")
        tracker = run.get_tracker(self.backend_name, unwrap=False)
        assert all(getattr(tracker, name) is not None for name in self.sdk_attributes)
        tracker.log({"loss": 0.5}, step=0)
        run.log({"loss": 0.25}, step=1)
        assert run.finish(timeout=180).ok
        assert self.read_metrics(tracker)["loss"] == {0: 0.5, 1: 0.25}

    def test_config_logged_after_start_is_merged_and_a_changed_value_wins(self, tmp_path: Path) -> None:
        run = self.managed_run(tmp_path, "late-config", config={"lr": 0.1, "model": {"depth": 2}})
        run.log({"loss": 1.0}, step=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TrackingWarning)  # an SDK whose params are write-once says so
            run.log_config({"batch_size": 32, "model": {"width": 64}, "lr": 0.2})
            assert run.finish(timeout=180).ok
        stored = flatten_config(self._optional(self.read_config, run.trackers[0]))
        assert {key: stringify(stored.get(key)) for key in ("lr", "model/depth", "model/width", "batch_size")} == {
            "lr": "0.2",
            "model/depth": "2",
            "model/width": "64",
            "batch_size": "32",
        }, stored

    def test_every_image_layout_reads_back_pixel_for_pixel(self, tmp_path: Path) -> None:
        if self.image_layouts_extra is None or not has_capability(self.tracker_class(), "log_images"):
            pytest.skip("no image layouts test for this backend here")
        pytest.importorskip("numpy")
        pytest.importorskip("PIL")
        images = image_layouts(extra=self.image_layouts_extra)
        tracker = self.direct_tracker(tmp_path, "layouts")
        tracker.start()
        tracker.log_images(images, step=3)
        tracker.finish()
        assert_read_back(tracker.read_back_images(), images, step=3)

    def test_per_rank_runs_are_one_run_per_rank_named_by_rank(self, tmp_path: Path) -> None:
        trackers = []
        for rank in (0, 1):
            tracker = self.direct_tracker(tmp_path, "ranks")
            tracker.run_context = self.per_rank_context(tmp_path, rank)
            tracker.start()
            tracker.log({"loss": float(rank)}, step=0)
            tracker.finish()  # one after the other: some SDKs hold one active run per process
            trackers.append(tracker)
        assert [self.read_metrics(tracker)["loss"] for tracker in trackers] == [{0: 0.0}, {0: 1.0}]
        try:
            names = self.run_names(trackers)
        except NotImplementedError:
            return
        assert names == ["job-7-rank0", "job-7-rank1"]

    def test_per_rank_mode_end_to_end(self, tmp_path: Path) -> None:
        """Two rank processes as a launcher starts them: one run each, in one group, each with its own data."""
        if not self.rank_port:
            pytest.skip("no rank_port set")
        results = launch_ranks(
            RANK_SCRIPT,
            self.backend_name,
            str(tmp_path / "logs"),
            json.dumps(self.init_kwargs(tmp_path), default=str),
            port=self.rank_port,
            cwd=tmp_path / "work",
            drop_env=self.unset_env if self.rank_unset_env is None else self.rank_unset_env,
            env=self.env(tmp_path),
            timeout=300,
        )
        assert [result["rank"] for result in results] == [0, 1]
        assert len({result["group"] for result in results}) == 1 and results[0]["group"]
        assert [result["metrics"]["loss"] for result in results] == [{"0": 0.0}, {"0": 1.0}]
