"""Odd values, names and secrets at the API boundary (issue 8), through the dispatcher and a memory backend."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from tracking_core import Dispatcher, TrackingWarning
from tracking_core.intake import redaction
from tracking_core.intake.config import sanitize_config
from tracking_core.intake.redaction import redact_init_kwargs, redact_text
from tracking_core.intake.values import snapshot
from tracking_core.kit.paths import check_artifact_path, check_name, name_problem
from tracking_core.testing import MemoryTracker


def _run(tmp_path, values_list):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("values")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step, values in enumerate(values_list):
            run.log(values, step=step)
    report = run.finish()
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    return MemoryTracker.runs[-1], report, messages


def test_a_dict_containing_itself_costs_only_that_key(memory, tmp_path):
    loop: dict = {"x": 1.0}
    loop["self"] = loop
    tracker, report, messages = _run(tmp_path, [{"outer": loop, "ok": 2.0}])
    assert tracker.metrics[-1][1] == {"outer/x": 1.0, "ok": 2.0}
    assert "contains itself" in report.rejected_values["outer/self"] and len(messages) == 1


def test_two_values_for_one_key_are_reported(memory, tmp_path):
    tracker, report, messages = _run(tmp_path, [{"a/b": 1, "a": {"b": 2}}])
    assert tracker.metrics[-1][1] == {"a/b": 1}
    assert "two values" in report.rejected_values["a/b"] and messages


@pytest.mark.parametrize(
    ("values", "reported"),
    [
        ({"train": {"img": np.zeros(3)}}, "train/img"),
        ({"": np.float32(1)}, ""),
        ({"q": {"": np.float64(2)}}, "q/"),
        ({"huge": 10**400}, "huge"),
        ({"big": 2**70}, "big"),
        ({"neg": -(2**64)}, "neg"),
        ({"bad\ud800": 1.0}, "bad\\ud800"),
    ],
)
def test_a_bad_value_is_refused_at_the_call_and_the_rest_is_logged(memory, tmp_path, values, reported):
    tracker, report, messages = _run(tmp_path, [{**values, "ok": 1.0}])
    assert tracker.metrics[-1][1] == {"ok": 1.0}
    assert reported in report.rejected_values, report.rejected_values
    assert len(messages) == 1


def test_plain_numbers_keep_the_fast_path_and_ints_within_64_bits_pass():
    values = {"a": 1.0, "b": 2**63 - 1, "c": -(2**63) + 1, "d": float("nan")}
    flat, rejected = snapshot(values)
    assert rejected is None and flat["b"] == 2**63 - 1 and flat is not values


def test_secret_shaped_log_strings_are_redacted(memory, tmp_path):
    tracker, _, _ = _run(tmp_path, [{"note": "token Bearer abcdefghijklmnop1234", "loss": 1.0}])
    assert tracker.metrics[-1][1] == {"note": "token Bearer <redacted>", "loss": 1.0}


def test_a_lone_surrogate_in_a_logged_string_is_replaced(memory, tmp_path):
    tracker, _, _ = _run(tmp_path, [{"note": "a\ud800b"}])
    assert tracker.metrics[-1][1] == {"note": "a?b"}


# -- config ------------------------------------------------------------------------------------
def test_a_simple_namespace_config_becomes_a_dict_with_secrets_redacted():
    cleaned = sanitize_config({"ns": types.SimpleNamespace(api_key="X", lr=0.1)})
    assert cleaned == {"ns": {"api_key": "<redacted>", "lr": 0.1}}
    assert sanitize_config(types.SimpleNamespace(api_key="X")) == {"api_key": "<redacted>"}


def test_a_plain_object_and_a_model_dump_object_become_dicts():
    class Settings:
        def __init__(self):
            self.lr, self._private, self.db = 0.1, 1, "https://me:pw123@host/db"

    class Model:
        def model_dump(self):
            return {"depth": 3}

    cleaned = sanitize_config({"settings": Settings(), "model": Model()})
    assert cleaned == {"settings": {"lr": 0.1, "db": "https://me:<redacted>@host/db"}, "model": {"depth": 3}}


def test_config_ints_beyond_64_bits_become_exact_text():
    assert sanitize_config({"seed": 2**64, "huge": 10**400, "ok": 2**63 - 1}) == {
        "seed": str(2**64),
        "huge": str(10**400),
        "ok": 2**63 - 1,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:s3cr3t@host/db", "https://user:<redacted>@host/db"),
        ("Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer <redacted>"),
        ("key=sk-abcdefghijklmnop0123", "key=<redacted>"),
        ("hf_abcdefghijklmnopqrstuvwxyz", "<redacted>"),
        ("ghp_" + "a" * 36, "<redacted>"),
        ("github_pat_" + "b" * 30, "<redacted>"),
        ("AKIAIOSFODNN7EXAMPLE", "<redacted>"),
        ("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\nrest", "<redacted>\nrest"),
        ("eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4f", "<redacted>"),
        ("https://host:8080/path", "https://host:8080/path"),
        ("a plain sentence about skiing", "a plain sentence about skiing"),
    ],
)
def test_credential_shapes_are_redacted(text, expected):
    assert redact_text(text) == expected


def test_redaction_is_configurable():
    try:
        redaction.configure(extra_patterns=[r"corp-[0-9]{6}"])
        assert redact_text("id corp-123456") == "id <redacted>"
        redaction.configure(enabled=False)
        assert redact_text("hf_abcdefghijklmnopqrstuvwxyz") == "hf_abcdefghijklmnopqrstuvwxyz"
    finally:
        redaction.configure(enabled=True, extra_patterns=[])


def test_init_kwargs_text_is_redacted_but_connection_settings_pass():
    kwargs = {
        "wandb": {"notes": "see https://u:pw9@h", "tags": ["AKIAIOSFODNN7EXAMPLE", "ok"]},
        "mlflow": {"tracking_uri": "https://u:pw9@h", "tags": {"t": "sk-abcdefghijklmnop0123"}},
        "comet_ml": {"api_key": "sk-abcdefghijklmnop0123"},
    }
    cleaned = redact_init_kwargs(kwargs)
    assert cleaned["wandb"] == {"notes": "see https://u:<redacted>@h", "tags": ["<redacted>", "ok"]}
    assert cleaned["mlflow"] == {"tracking_uri": "https://u:pw9@h", "tags": {"t": "<redacted>"}}
    assert cleaned["comet_ml"] == kwargs["comet_ml"]
    assert kwargs["wandb"]["notes"] == "see https://u:pw9@h", "the caller's dict is not changed"


# -- paths -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "a\\b", "/x", "a\x00", "a\nb", "x" * 300, "CON", "com1.txt"])
def test_the_path_rule_refuses_names_that_are_not_one_plain_name(name):
    assert name_problem(name)
    with pytest.raises(ValueError, match="project_name"):
        check_name(name, "project_name")


@pytest.mark.parametrize("name", ["run-1", "my project", "résumé", "v1.2", "a" * 128])
def test_the_path_rule_accepts_ordinary_names(name):
    assert check_name(name, "project_name") == name


def test_artifact_paths_are_relative_names():
    assert check_artifact_path("models/best/") == "models/best"
    assert check_artifact_path("") is None and check_artifact_path(None) is None
    for bad in ["../x", "a/../b", "/etc", "a//b", "a\\b"]:
        with pytest.raises(ValueError, match="artifact_path"):
            check_artifact_path(bad)


def test_a_project_name_that_is_a_path_is_refused_before_anything_is_written(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path / "runs")
    with pytest.raises(ValueError, match="project_name"):
        run.init_trackers("../../evil")
    assert not (tmp_path / "runs").exists() and not (tmp_path.parent / "evil").exists()


# -- media -------------------------------------------------------------------------------------
def _media_run(tmp_path):
    from tracking_core.backends.jsonl import JsonlTracker

    return Dispatcher(log_with=JsonlTracker, logging_dir=tmp_path).init_trackers("media")


@pytest.mark.parametrize(
    "image",
    [np.zeros((0, 0)), np.zeros((0, 10, 3)), np.full((4, 4), 2**40, dtype=np.int64), np.full((2, 2), -1)],
    ids=["0x0", "0x10x3", "int64-huge", "negative"],
)
def test_an_image_no_backend_can_take_is_refused_at_the_call(tmp_path, image):
    run = _media_run(tmp_path)
    with pytest.warns(TrackingWarning, match="not logged"):
        run.log_images({"img": image, "fine": np.zeros((4, 4), dtype=np.uint8)}, step=0)
    report = run.finish()
    assert "img" in report.rejected_values and "fine" not in report.rejected_values


@pytest.mark.parametrize(
    ("columns", "data"),
    [(["a", "b"], [[1, 2], [3]]), (["a"], [[1, 2]])],
    ids=["ragged", "header"],  # rows that are not lists at all (strings, numbers) raise a TypeError naming `data`
)
def test_a_table_that_does_not_fit_together_is_refused_at_the_call(tmp_path, columns, data):
    run = _media_run(tmp_path)
    with pytest.warns(TrackingWarning, match="not logged"):
        run.log_table("t", columns=columns, data=data, step=0)
    assert "t" in run.finish().rejected_values


@pytest.mark.parametrize("figure", [None, object(), "plot"], ids=["None", "object", "str"])
def test_a_figure_that_is_not_one_is_refused_at_the_call(tmp_path, figure):
    run = _media_run(tmp_path)
    with pytest.warns(TrackingWarning, match="not a matplotlib or plotly figure"):
        run.log_figure(figure, "fig", step=0)
    assert "fig" in run.finish().rejected_values


def test_a_table_with_repeated_column_names_is_refused_at_the_call(tmp_path):
    run = _media_run(tmp_path)
    with pytest.warns(TrackingWarning, match="duplicate column names"):
        run.log_table("t", columns=["a", "a"], data=[[1, 2]], step=0)
    assert "t" in run.finish().rejected_values


def test_links_leaving_a_logged_folder_are_named_in_one_warning(tmp_path):
    secret = tmp_path / "elsewhere" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("key")
    folder = tmp_path / "outputs"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "inside.txt").write_text("x")
    (folder / "inside-link").symlink_to(folder / "sub" / "inside.txt")
    (folder / "leak").symlink_to(secret)
    (folder / "linked-dir").symlink_to(secret.parent, target_is_directory=True)
    run = _media_run(tmp_path)
    with pytest.warns(TrackingWarning, match="symlinks leading outside") as caught:
        run.log_artifacts(folder)
    run.finish()
    message = str(caught[0].message)
    assert "leak" in message and "linked-dir" in message and "inside-link" not in message


def test_a_table_given_as_an_iterator_is_read_once(memory, tmp_path):
    run = Dispatcher(log_with="memory", logging_dir=tmp_path)
    run.init_trackers("p")
    run.log_table("t", columns=["a", "b"], data=([i, i * 2] for i in range(3)), step=0)
    run.finish()
    assert MemoryTracker.runs[-1].tables == [("t", ["a", "b"], [[0, 0], [1, 2], [2, 4]], 0)]
