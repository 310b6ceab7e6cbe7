"""A TrackingWarning points at the user's line, never at the library's own files."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import tracking_core
from tracking_core.errors import TrackingWarning

from .helpers import PickyTracker

CORE = Path(tracking_core.__file__).parent


def test_a_warning_about_a_value_points_at_the_log_call(tmp_path):
    run = tracking_core.init("p", logging_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        run.log({"loss": None}, step=0)
        run.log({"loss": 1.0}, step=5)
        run.log({"loss": 1.0}, step=2)  # back in steps
    run.finish()
    ours = [w for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(ours) == 2, [str(w.message) for w in ours]
    assert {(Path(w.filename), w.lineno) for w in ours} == {(Path(__file__), line), (Path(__file__), line + 2)}


def test_a_warning_raised_in_a_worker_thread_names_the_thread_not_a_library_file(tmp_path):
    tracking_core.register_tracker_class(PickyTracker)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = tracking_core.init("p", log_with=["picky"], logging_dir=tmp_path)
            run.log({"refused": 1.0, "kept": 2.0}, step=0)
            run.finish()
    finally:
        from tracking_core.contract import registry

        registry.unregister_tracker_class("picky")
    ours = [w for w in caught if issubclass(w.category, TrackingWarning)]
    assert ours, "the refusal was not warned about"
    for warning in ours:
        assert not Path(warning.filename).is_relative_to(CORE), (warning.filename, str(warning.message))
        assert warning.filename.startswith("<tracking: "), warning.filename


def test_a_float_image_outside_0_1_is_logged_with_one_warning(tmp_path):
    numpy = __import__("pytest").importorskip("numpy")
    run = tracking_core.init("p", logging_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            run.log_images({"bright": numpy.linspace(0, 7.0, 16).reshape(4, 4)}, step=step)
        run.log_images({"fine": numpy.linspace(0, 1.0, 16).reshape(4, 4)}, step=0)
    run.finish()
    ours = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(ours) == 1, ours
    assert "'bright'" in ours[0] and "0..7" in ours[0] and "clipped" in ours[0]
    images = [line for line in (run.run_dir / "journal.jsonl").read_text().splitlines() if '"images"' in line]
    assert len(images) == 4  # logged all the same
