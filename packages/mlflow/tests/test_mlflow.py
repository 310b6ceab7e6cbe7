"""MLflow-specific behaviour, read back with ``MlflowClient`` (get_metric_history, get_run, artifacts)."""

from __future__ import annotations

import copy
import json
import math
import os
import shlex
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest
import tracking_core
from tracking_core import TrackingWarning
from tracking_core.testing.reliability import waiting_steps
from tracking_mlflow import MLflowTracker
from tracking_mlflow.names import sdk_image_separator

from .mlflow_server import free_port


def _started(tmp_path: Path, *args, **kwargs) -> MLflowTracker:
    kwargs.setdefault("logging_dir", tmp_path / "logs")
    tracker = MLflowTracker(*args, **kwargs)
    tracker.start()
    return tracker


# -- where data goes ------------------------------------------------------------------------------
def test_embedded_store_lives_under_logging_dir(tmp_path, monkeypatch, reader_of):
    monkeypatch.chdir(tmp_path)
    tracker = _started(tmp_path, "embedded")
    tracker.log({"loss": 0.5}, step=0)
    tracker.log_artifact(__file__)
    tracker.finish()
    logs = (tmp_path / "logs").resolve()
    assert tracker.tracking_uri == f"sqlite:///{logs}/mlflow.db"
    artifact_uri = reader_of(tracker).run.info.artifact_uri
    assert artifact_uri.startswith((logs / "mlartifacts").as_uri()), artifact_uri
    assert any((logs / "mlartifacts").rglob(Path(__file__).name))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"], "MLflow wrote into the working directory"
    # the store, its artifacts, and the lock that lets the ranks of a per-rank job create the store one at a time
    assert sorted(p.name for p in logs.iterdir()) == [".mlflow.db.lock", "mlartifacts", "mlflow.db"]


@pytest.mark.parametrize("flask_installed", [True, False])
def test_start_up_notice_names_full_mlflow_at_the_skinny_version_only_where_mlflow_ui_cannot_run(
    tmp_path, caplog, monkeypatch, flask_installed
):
    """mlflow-skinny has no server (``mlflow ui`` needs Flask): only there does the notice say what to install."""
    import importlib.util

    if importlib.util.find_spec("flask") is None:
        pytest.skip("this environment has mlflow-skinny: the case with the server cannot be set up")
    if not flask_installed:
        monkeypatch.setitem(sys.modules, "flask", None)  # what find_spec answers where Flask is not installed
    caplog.set_level("INFO", logger="tracking")
    tracker = _started(tmp_path, "notice")
    tracker.finish()
    (line,) = [r.getMessage() for r in caplog.records if "mlflow ui" in r.getMessage()]
    import importlib.metadata

    assert f"mlflow ui --backend-store-uri {shlex.quote(tracker.tracking_uri)}" in line
    # full mlflow at exactly mlflow-skinny's version: an extra or a range would let the resolver move it
    hint = f"pip install mlflow=={importlib.metadata.version('mlflow-skinny')})"
    if flask_installed:
        assert hint not in line and "full mlflow" not in line, line
    else:
        assert hint in line and "full mlflow" in line, line  # works from here


def test_explicit_tracking_uri_beats_environment(tmp_path, monkeypatch, reader_of):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/from-env.db")
    explicit = f"sqlite:///{tmp_path}/explicit.db"
    tracker = _started(tmp_path, "uri", tracking_uri=explicit, artifact_location=(tmp_path / "art").as_uri())
    tracker.log({"x": 1.0}, step=0)
    tracker.finish()
    assert tracker.tracking_uri == explicit and (tmp_path / "explicit.db").exists()
    assert not (tmp_path / "from-env.db").exists()
    assert reader_of(tracker).metrics() == {"x": {0: 1.0}}


def test_environment_tracking_uri_beats_embedded_default(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/from-env.db")
    tracker = _started(tmp_path, "env-uri", artifact_location=(tmp_path / "art").as_uri())
    tracker.finish()
    assert tracker.tracking_uri.endswith("from-env.db") and not (tmp_path / "logs").exists()


# -- metrics ----------------------------------------------------------------------------------------
def test_large_batches_are_split_at_the_sdk_limit(tmp_path, reader_of):
    tracker = _started(tmp_path, "batches")
    limit = tracker.limits["MAX_METRICS_PER_BATCH"]
    steps = limit + 300  # two keys per step: more than two requests' worth
    tracker.log_batch([({"a": float(s), "b": -float(s)}, s, {}) for s in range(steps)])
    tracker.finish()
    history = reader_of(tracker).client.get_metric_history(tracker.active_run_id, "a")
    assert sorted(m.step for m in history) == list(range(steps))
    assert all(m.value == float(m.step) for m in history)


def test_step_none_is_step_zero_and_nan_round_trips(tmp_path, reader_of):
    tracker = _started(tmp_path, "steps")
    tracker.log({"plain": 2.5, "nan": float("nan"), "int": 7})
    with pytest.warns(TrackingWarning, match="infinity"):
        tracker.log({"inf": float("inf")}, step=1)
    tracker.finish()
    metrics = reader_of(tracker).metrics()
    assert tracker.read_back_metrics().keys() == metrics.keys()
    assert metrics["plain"] == {0: 2.5} and metrics["int"] == {0: 7.0}
    assert math.isnan(metrics["nan"][0])
    assert metrics["inf"][1] == sys.float_info.max  # MLflow's own representation, announced by the warning


def test_same_key_twice_in_one_batch(tmp_path, reader_of):
    tracker = _started(tmp_path, "dupes")
    tracker.log_batch([({"k": 1.0}, 3, {}), ({"k": 1.0}, 3, {}), ({"k": 2.0}, 3, {})])
    tracker.finish()
    values = sorted(m.value for m in reader_of(tracker).client.get_metric_history(tracker.active_run_id, "k"))
    assert values[-1] == 2.0 and set(values) == {1.0, 2.0}


def test_a_step_logged_twice_shows_twice_in_the_history(tmp_path):
    tracker = _started(tmp_path, "twice")
    tracker.log({"a": 1.0}, step=3)
    tracker.log({"a": 2.0}, step=3)
    tracker.finish()
    assert tracker.read_back_history()["a"] == [(3, 1.0), (3, 2.0)]
    assert tracker.read_back_metrics()["a"] == {3: 2.0}  # the last point at a step wins


def test_keys_mlflow_refuses_are_sanitized_and_stored(tmp_path, reader_of):
    bad = [
        "a@b",
        "loss (val)",
        "x%y",
        "/lead",
        "trail/",
        "a//b",
        "../up",
        "a/../b",
        "..",
        "",
        "k" * 300,
        "k" * 300 + "z",
    ]
    run = tracking_core.init("keys", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log({key: 1.0 for key in bad if key}, step=0)  # the dispatcher maps what MLflow would refuse
        assert run.finish().ok
    tracker = run.trackers[0]
    mapped = {key: tracker.sanitize_key(key) for key in bad}
    assert len(set(mapped.values())) == len(bad), mapped  # distinct keys stay distinct
    assert all(0 < len(value) <= 250 for value in mapped.values())
    assert tracker.sanitize_key("train/loss: top-1.5") == "train/loss: top-1.5"  # valid keys are untouched
    assert tracker.sanitize_key("ünïcode") == "ünïcode"
    assert set(reader_of(tracker).metrics()) == {mapped[key] for key in bad if key}


def test_direct_use_passes_keys_to_mlflow_as_given(tmp_path):
    from mlflow.exceptions import MlflowException

    tracker = _started(tmp_path, "direct-keys")
    with pytest.raises(Exception) as raised:
        tracker.log({"a@b": 1.0}, step=0)  # MLflow's own refusal, as with accelerate's tracker
    assert isinstance(raised.value.__cause__ or raised.value, MlflowException)
    tracker.finish()


def test_dispatcher_reports_the_key_mapping(tmp_path):
    run = tracking_core.init("map", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log({"acc@1": 0.5}, step=0)
        report = run.finish()
    assert report.backends["mlflow"].key_map == {"acc@1": "acc_1"}
    assert run.trackers[0].tracker.data.tags["tracking.run_id"] == run.run_id  # not mistaken for an MLflow run id


def test_model_id_on_an_mlflow_without_logged_models_is_warned_about_and_the_points_kept(tmp_path):
    """MLflow 2.x's ``Metric`` takes no ``model_id``: the points are logged without it, with one warning
    (runs in the oldest cell, on a real MLflow 2.16)."""
    import inspect

    from mlflow.entities import Metric

    if "model_id" in inspect.signature(Metric.__init__).parameters:
        pytest.skip("this MLflow's metrics take model_id (the oldest cell runs this on MLflow 2.x)")
    run = tracking_core.init("kwargs-2x", log_with="mlflow", logging_dir=tmp_path / "logs")
    with pytest.warns(tracking_core.TrackingWarning, match="take no model_id"):
        for step in range(3):
            run.log({"loss": 1.0 / (step + 1)}, step=step, log_kwargs={"mlflow": {"model_id": "m-1"}})
        run.flush(timeout=120)
    report = run.finish()
    assert report.ok, str(report)
    assert sorted(run.get_tracker("mlflow").read_back_metrics()["loss"]) == [0, 1, 2]


def test_log_kwargs_reach_mlflow_like_log_metrics_options(tmp_path):
    """``log_kwargs={"mlflow": {...}}`` takes ``mlflow.log_metrics``' options, as accelerate's tracker forwards them."""
    import mlflow

    if not hasattr(mlflow.MlflowClient, "create_logged_model"):
        pytest.skip(f"MLflow {mlflow.__version__} has no logged models (MLflow 3 does): model_id is warned about there")
    np = pytest.importorskip("numpy")
    run = tracking_core.init("kwargs", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise")
    dataset = mlflow.data.from_numpy(np.arange(4.0), name="eval-set")
    tracker = run.get_tracker("mlflow")
    model = tracker.client.create_logged_model(tracker.tracker.info.experiment_id)  # waits for the start
    run.log({"loss": 0.5}, step=1, log_kwargs={"mlflow": {"synchronous": False}})  # MLflow's async queue
    run.log({"acc": 0.9}, step=2, log_kwargs={"mlflow": {"model_id": model.model_id, "dataset": dataset}})
    report = run.finish()
    assert report.ok, str(report)
    client = tracker.client
    (loss,) = client.get_metric_history(tracker.active_run_id, "loss")  # waited for before the run finished
    assert (loss.step, loss.value) == (1, 0.5)
    stored = client.get_run(tracker.active_run_id).data
    assert stored.metrics == {"loss": 0.5, "acc": 0.9}
    (acc,) = client.get_logged_model(model.model_id).metrics  # the model's metrics, with the dataset
    assert (acc.key, acc.value, acc.step) == ("acc", 0.9, 2)
    assert (acc.dataset_name, acc.dataset_digest) == ("eval-set", dataset.digest)


# -- config -----------------------------------------------------------------------------------------
def test_config_params_and_exact_artifact(tmp_path, reader_of):
    tracker = _started(tmp_path, "config")
    limit = tracker.limits["MAX_PARAM_VAL_LENGTH"]
    config = {
        "lr": 0.001,
        "flag": True,
        "none": None,
        "layers": [64, 32],
        "model": {"name": "mlp", "dims": {"in": 3}},
        "huge": "x" * (limit + 10),
        "odd(key)": 1,
        **{f"p{i}": i for i in range(150)},  # more than one params batch
    }
    original = copy.deepcopy(config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.store_init_configuration(config)
    messages = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert any("'huge'" in m and "not a param" in m for m in messages), messages  # left out, as accelerate
    assert any("'odd(key)'" in m and "'odd_key_'" in m for m in messages), messages
    tracker.finish()
    assert config == original, "the config was mutated"
    reader = reader_of(tracker)
    params = reader.run.data.params
    assert params["lr"] == "0.001" and params["flag"] == "True" and params["none"] == "None"
    assert params["layers"] == "[64, 32]" and params["model/dims/in"] == "3" and params["p149"] == "149"
    assert "huge" not in params and params["odd_key_"] == "1"  # a cut value would read as the real one
    assert any("param huge left out" in note for note in tracker.report_notes())  # and the report says so
    assert reader.json("config.json") == original  # nothing lost: the full config, renamed keys too


# -- text, media, files -------------------------------------------------------------------------------
def test_text_values_become_text_artifacts(tmp_path, reader_of):
    tracker = _started(tmp_path, "text")
    tracker.log({"sample/output": "hello", "loss": 1.0}, step=4)
    tracker.log({"sample/output": "world"}, step=5)
    tracker.finish()
    reader = reader_of(tracker)
    assert reader.texts() == {"sample/output": {4: "hello", 5: "world"}}
    assert "sample/output" not in reader.run.data.metrics


def test_images_tables_figures_and_artifacts(tmp_path, reader_of):
    np = pytest.importorskip("numpy")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    tracker = _started(tmp_path, "media")
    image = np.zeros((16, 24, 3), dtype="uint8")
    with pytest.warns(TrackingWarning, match="image key"):
        tracker.log_images({"val/pred@1": [image, image[..., 0]], "single": image}, step=7)
    tracker.log_table("scores", columns=["name", "score"], data=[["a", 0.5], ["b", 1.5]], step=2)
    figure, axes = plt.subplots()
    axes.plot([0, 1], [1, 0])
    tracker.log_figure(figure, "curves", step=3)
    plt.close(figure)
    (tmp_path / "folder" / "sub").mkdir(parents=True)
    (tmp_path / "folder" / "sub" / "b.txt").write_text("bee")
    (tmp_path / "one.txt").write_text("one")
    tracker.log_artifact(tmp_path / "one.txt", "files")
    tracker.log_artifacts(tmp_path / "folder", "tree")
    tracker.finish()
    reader = reader_of(tracker)
    images = reader.images()
    assert sorted(images["val/pred_1"]) == [7, 7] and images["single"] == [7]
    assert reader.tables() == {"scores": [["a", 0.5], ["b", 1.5]]}
    assert "curves.png" in reader.files()
    assert reader.text("files/one.txt") == "one" and reader.text("tree/sub/b.txt") == "bee"
    assert reader.run.data.tags["mlflow.loggedImages"] == "True"


def test_table_without_pandas_writes_mlflows_table_format(tmp_path, monkeypatch, reader_of):
    tracker = _started(tmp_path, "no-pandas")
    monkeypatch.setitem(sys.modules, "pandas", None)  # as with mlflow-skinny alone
    tracker.log_table("rows", columns=["x"], data=[[1], [2]])
    tracker.finish()
    assert reader_of(tracker).json("tables/rows.json") == {"columns": ["x"], "data": [[1], [2]]}


def test_finish_twice_and_no_threads_left(tmp_path, reader_of):
    before = {t.ident for t in threading.enumerate()}
    tracker = _started(tmp_path, "finish")
    tracker.log({"x": 1.0}, step=0)
    tracker.finish()
    tracker.finish()
    assert reader_of(tracker).run.info.status == "FINISHED"
    left = [t.name for t in threading.enumerate() if t.ident not in before and not t.daemon]
    assert left == [], left


# -- environment variables (accelerate's, without its bugs) --------------------------------------------
def test_nested_run_false_string_is_false(tmp_path, monkeypatch, reader_of):
    import mlflow

    monkeypatch.setenv("MLFLOW_NESTED_RUN", "false")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/parent.db")
    try:
        with mlflow.start_run() as parent:
            tracker = MLflowTracker("nested", tracking_uri=f"sqlite:///{tmp_path}/parent.db")
            assert tracker.nested_run is False
            tracker.start()
            tracker.finish()
            assert "mlflow.parentRunId" not in reader_of(tracker).run.data.tags
            monkeypatch.setenv("MLFLOW_NESTED_RUN", "1")
            child = MLflowTracker("nested", tracking_uri=f"sqlite:///{tmp_path}/parent.db")
        child.start()  # in another thread in real use: the parent was captured at construction
        child.finish()
        assert reader_of(child).run.data.tags["mlflow.parentRunId"] == parent.info.run_id
    finally:
        mlflow.set_tracking_uri(None)
    monkeypatch.setenv("MLFLOW_NESTED_RUN", "maybe")
    with pytest.raises(ValueError, match="MLFLOW_NESTED_RUN"):
        MLflowTracker("nested")


def test_experiment_name_with_quotes_from_env_is_found_again(tmp_path, monkeypatch, reader_of):
    name = 'it\'s a "quoted" name'
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", name)
    monkeypatch.setenv("MLFLOW_TAGS", json.dumps({"team": "vision", "try": 2}))
    first = _started(tmp_path, "ignored-project", tags={"team": "nlp", "owner": "me"}, description="first try")
    first.finish()
    second = _started(tmp_path, "ignored-project")
    second.finish()
    run = reader_of(first).run
    assert reader_of(first).client.get_experiment(run.info.experiment_id).name == name
    assert run.info.experiment_id == reader_of(second).run.info.experiment_id
    tags = run.data.tags
    assert tags["team"] == "vision" and tags["try"] == "2" and tags["owner"] == "me"
    assert tags["mlflow.note.content"] == "first try"


def test_run_id_from_env_resumes_the_run(tmp_path, monkeypatch, reader_of):
    first = _started(tmp_path, "resume", run_name="original")
    first.store_init_configuration({"lr": 0.1})
    first.log({"loss": 1.0}, step=0)
    first.finish()
    monkeypatch.setenv("MLFLOW_RUN_ID", first.active_run_id)
    second = _started(tmp_path, "resume", run_id="20240101-000000-abcdef")  # the dispatcher's id loses to the env
    with pytest.warns(TrackingWarning, match="cannot change"):
        second.store_init_configuration({"lr": 0.2, "new": 1})  # params are immutable in MLflow
    second.log({"loss": 0.5}, step=1)
    second.finish()
    reader = reader_of(second)
    assert second.active_run_id == first.active_run_id
    assert reader.metrics()["loss"] == {0: 1.0, 1: 0.5}
    assert reader.run.data.params == {"lr": "0.1", "new": "1"} and reader.run.info.status == "FINISHED"
    assert reader.json("config.json") == {"lr": 0.2, "new": 1}


# -- processes: telemetry, concurrent import, servers ---------------------------------------------------
def _run_python(code: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "DO_NOT_TRACK"))}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_no_sdk_import_at_construction_and_no_telemetry_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    result = _run_python(
        f"""
        import sys
        from tracking_mlflow import MLflowTracker
        tracker = MLflowTracker("telemetry", logging_dir={str(tmp_path / "logs")!r})
        assert "mlflow" not in sys.modules, "constructing the tracker imported mlflow"
        tracker.start()
        tracker.log({{"x": 1.0}}, step=0)
        tracker.finish()
        print("OK")
        """,
        {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")},
    )
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-3000:]
    assert not any(home.rglob("*")), sorted(str(p) for p in home.rglob("*"))


def test_start_in_worker_while_main_thread_imports_mlflow(tmp_path):
    result = _run_python(
        f"""
        import threading, tracking_core
        run = tracking_core.init("race", log_with="mlflow", logging_dir={str(tmp_path / "logs")!r}, on_error="raise")
        import mlflow                      # races with the worker's own import in start()
        from mlflow import MlflowClient
        for step in range(20):
            run.log({{"x": float(step)}}, step=step)
        report = run.finish()
        assert report.ok, str(report)
        tracker = run.trackers[0]
        history = MlflowClient(tracker.tracking_uri).get_metric_history(tracker.active_run_id, "x")
        assert sorted(m.step for m in history) == list(range(20)), history
        print("OK")
        """,
        {"MLFLOW_DISABLE_TELEMETRY": "true"},
    )
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-3000:]


def test_unreachable_server_fails_fast_and_spills(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")  # nothing listens: refused
    import mlflow  # noqa: F401 - measure the connection attempts, not the import

    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = tracking_core.init("down", log_with="mlflow", logging_dir=tmp_path / "logs", config={"lr": 1})
        run.log({"loss": 1.0}, step=0)
        run.log({"loss": 0.5}, step=1)
        report = run.finish(timeout=60)
    elapsed = time.monotonic() - started
    backend = report.backends["mlflow"]
    assert elapsed < 30, f"start-up against a refused port took {elapsed:.1f} s"
    assert backend.state == "start_failed" and "mlflow" in report.failed, str(report)
    assert backend.spilled == 3, str(report)  # the config and both points wait for `tracking replay`
    assert waiting_steps(run.run_dir, "mlflow") == [0, 1]
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "2"  # the bounded default was applied


@pytest.mark.mlflow_server
def test_remote_tracking_server(tmp_path, monkeypatch, mlflow_server, reader_of):
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)  # the session's server (conftest.py)
    run = tracking_core.init(
        "remote",
        log_with="mlflow",
        logging_dir=tmp_path / "logs",
        on_error="raise",
        config={"lr": 0.01, "model": {"depth": 4}},
    )
    for step in range(30):
        run.log({"loss": 1 / (step + 1), "note": "hi" if step == 29 else 0.0}, step=step)
    if sdk_image_separator() == "+":  # MLflow 2.x's server may refuse the "%" names outright ("Invalid path")
        run.log_images({"img": np.zeros((8, 8, 3), dtype="uint8")}, step=29)
    run.log_table("t", columns=["a"], data=[[1]], step=29)
    report = run.finish()
    assert report.ok, str(report)
    tracker = run.trackers[0]
    assert tracker.tracking_uri == mlflow_server.url and not (tmp_path / "logs" / "mlflow.db").exists()
    reader = reader_of(tracker)
    assert reader.metrics()["loss"] == {step: 1 / (step + 1) for step in range(30)}
    assert reader.run.data.params["model/depth"] == "4" and reader.json("config.json")["lr"] == 0.01
    assert reader.texts() == {"note": {29: "hi"}}
    if sdk_image_separator() == "+":
        assert reader.images() == {"img": [29]}
    assert reader.tables() == {"t": [[1]]}
    served = [
        path for path in (mlflow_server.folder / "served").rglob("config.json") if tracker.active_run_id in path.parts
    ]
    assert served, "artifacts did not go through the server"


def test_metric_timestamps_are_when_log_was_called(tmp_path, reader_of):
    run = tracking_core.init("stamps", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise")
    before = int(time.time() * 1000)
    run.log({"loss": 1.0}, step=0)  # queued for seconds while MLflow starts in the worker
    after = int(time.time() * 1000)
    run.finish()
    reader = reader_of(run.trackers[0])
    (point,) = reader.client.get_metric_history(reader.run_id, "loss")
    assert before <= point.timestamp <= after + 1


def test_a_key_with_a_control_character_is_rewritten_not_refused_by_the_store(tmp_path, reader_of):
    """MLflow's own name regex ends in ``$``, which lets ``"a\\nb"`` through; its store then refuses the batch."""
    run = tracking_core.init("control", log_with="mlflow", logging_dir=tmp_path / "logs", on_error="raise")
    tracker = run.trackers[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrackingWarning)
        run.log({"a\nb": 1.0, "ok": 2.0}, step=0)
        assert run.finish().ok
    assert tracker.sanitize_key("a\nb") == "a_b" and tracker.sanitize_key("tab\tkey") == "tab_key"
    assert set(reader_of(tracker).metrics()) == {"a_b", "ok"}


def test_a_figure_name_never_leaves_the_run_artifacts(tmp_path, reader_of):
    plt = pytest.importorskip("matplotlib.pyplot")
    tracker = _started(tmp_path, "figure-name")
    figure, axes = plt.subplots()
    axes.plot([1, 2])
    tracker.log_figure(figure, "../../escaped", step=0)
    plt.close(figure)
    tracker.finish()
    (stored,) = tmp_path.parent.rglob("escaped.png")
    assert tmp_path / "logs" in stored.parents, stored


def test_a_chw_image_is_stored(tmp_path, reader_of):
    np = pytest.importorskip("numpy")
    tracker = _started(tmp_path, "chw")
    tracker.log_images({"chw": np.zeros((3, 4, 5), dtype=np.uint8)}, step=0)
    tracker.finish()
    assert list(tmp_path.rglob("chw[+%]step[+%]0[+%]*.png")), "the CHW image was not stored"  # "%" in MLflow 2.x


def test_sqlalchemy_2_1_under_an_old_mlflow_names_the_fix():
    from tracking_mlflow.store import sqlalchemy_mismatch

    raised = ImportError("cannot import name 'FallbackAsyncAdaptedQueuePool' from 'sqlalchemy.pool'")
    error = sqlalchemy_mismatch(raised)
    assert error is not None and "sqlalchemy<2.1" in str(error) and "MLflow 3.9" in str(error)
    assert sqlalchemy_mismatch(ImportError("No module named 'sqlalchemy'")) is None


def test_a_resumed_embedded_run_leaves_the_working_directory_alone(tmp_path):
    """MLflow 2.x makes ./mlruns whenever a process opens a database store, the saved store of a resumed run too."""
    code = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from tracking_core.testing.resume import finished_run
        from tracking_mlflow import MLflowTracker

        state = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
        tracker = finished_run(MLflowTracker, Path("logs"), range(2), state)
        print(json.dumps(tracker.resume_state()))
        """
    )

    def run(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run()
    second = run(json.dumps(first))
    assert second["run_id"] == first["run_id"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"], "MLflow wrote into the working directory"
