"""MLflow backend: the tracker contract mapped onto one ``MlflowClient`` per run.

=========================  ===========================================================================
contract                   MLflow call (all on ``self.client``, never the fluent global active run)
=========================  ===========================================================================
``start``                  ``get_experiment_by_name`` / ``create_experiment`` + ``create_run``
                           (or ``update_run(status="RUNNING")`` to resume ``run_id`` or the run
                           saved by ``resume_state`` in an earlier process)
``store_init_configuration`` ``log_batch(params=...)`` (flattened, stringified; a value longer than
                           MLflow takes is left out with a warning, as accelerate does) and
                           ``log_dict(config, "config.json")`` with the exact nested config
``log`` / ``log_batch``    ``log_batch(metrics=...)`` in chunks of the SDK's per-request limits; to a
                           local sqlite store, the same rows in one transaction per batch
                           (:mod:`tracking_mlflow.fast_store`);
                           ``mlflow.log_metrics``' options as ``log_kwargs``: ``synchronous``,
                           ``model_id``, ``dataset``; strings -> ``log_text`` artifact
                           ``text/<key>/step_<step>.txt``
``log_images``             ``log_image(image, key=..., step=...)`` (the UI's stepped image view)
``log_table``              ``log_table(data, artifact_file="tables/<name>/step_<step>.json")``
``log_figure``             the figure as a PNG artifact ``artifact_file`` (``.png`` added when missing)
``log_histogram``          none in MLflow: the core's summary metrics (``<name>/count``, ``/mean``, ...)
``log_artifact(s)``        ``log_artifact`` / ``log_artifacts``
``log_system_metrics``     ``system/...`` metrics at step = sample index, where MLflow's own system metrics are
``finish``                 ``set_terminated(run_id, status, end_time)``: ``FINISHED``, ``FAILED`` (an
                           exception ended the run) or ``KILLED`` (Ctrl-C, SIGTERM), at the time the run
                           ended; ``create_run(start_time=...)`` is when ``init()`` was called
per-rank runs              run name ``<run name>-rank<N>``, tags ``tracking.group`` / ``tracking.rank``
=========================  ===========================================================================

Every call is synchronous: the dispatcher's worker thread already keeps MLflow off the training loop,
so when a call returns the data is committed (sqlite) or accepted by the server, and ``flush`` has
nothing left to do.
"""

import math
import os
import time
from collections.abc import Sequence
from typing import Any

from tracking_core import GeneralTracker, PartialDelivery
from tracking_core.kit import (
    context_files,
    context_summary,
    figure_to_array,
    image_list,
    merge_config,
    sdk_object,
    table_rows,
    to_hwc_uint8,
    warn_once,
)

from . import fast_store, reader, startup, system
from .metric_options import ENTITY_OPTIONS, LOG_OPTIONS, NO_OPTIONS, metric_options
from .names import artifact_path, chunks, image_key, png_name, sanitized_key, sdk_image_separator
from .params import new_params
from .store import without_password

# How the run ended (GeneralTracker.run_end) in MLflow's RunStatus: an exception FAILED, as mlflow.start_run's
# context manager ends it; Ctrl-C, SIGTERM or a dead process KILLED, MLflow's word for a run stopped from outside.
_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}


class MLflowTracker(GeneralTracker):
    """Logs a run to MLflow through a per-run ``MlflowClient``; works with no server by default.

    Example::

        import tracking_core

        with tracking_core.init("my-experiment", log_with="mlflow", logging_dir="runs",
                                config={"lr": 3e-4}, init_kwargs={"mlflow": {"run_name": "baseline"}}) as run:
            for step in range(100):
                run.log({"train/loss": 1 / (step + 1)}, step=step)
        # then: mlflow ui --backend-store-uri sqlite:///$PWD/runs/mlflow.db

    Where data goes, first match wins: the ``tracking_uri=`` argument; ``MLFLOW_TRACKING_URI`` or a URI
    set with ``mlflow.set_tracking_uri`` before the run starts; otherwise the embedded store
    ``sqlite:///<abs logging_dir>/mlflow.db`` with artifacts in ``<logging_dir>/mlartifacts`` (the new
    experiment's ``artifact_location``). ``artifact_location=`` sets it for a new experiment on any store.

    Arguments as in ``accelerate``'s MLflowTracker, with its environment variables overriding them:
    ``experiment_name`` (``MLFLOW_EXPERIMENT_NAME``; ``MLFLOW_EXPERIMENT_ID`` selects an experiment by
    id; the project name arrives here), ``run_id`` (``MLFLOW_RUN_ID``: resume that run), ``tags`` (dict
    or JSON; ``MLFLOW_TAGS`` is a JSON object merged over them), ``nested_run`` (``MLFLOW_NESTED_RUN``,
    ``"false"``/``"0"`` mean false: nest under the MLflow run active in the thread that constructs the
    tracker, or under ``parent_run_id=``), ``run_name``, ``description`` (the run's note).

    Other SDK settings honoured as MLflow reads them: credentials and TLS (``MLFLOW_TRACKING_USERNAME``,
    ``..._PASSWORD``, ``..._TOKEN``, ``..._INSECURE_TLS``, ...), ``MLFLOW_HTTP_REQUEST_*`` (defaults of 2
    retries and a 15 s timeout are set for http(s) servers only when unset), ``MLFLOW_RUN_CONTEXT``,
    ``MLFLOW_TRUNCATE_LONG_VALUES``. ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` when neither it nor
    ``DO_NOT_TRACK`` is set. ``MLFLOW_ENABLE_ASYNC_LOGGING`` is not used: calls are synchronous in the
    dispatcher's worker thread.

    System metrics as ``mlflow.start_run`` records them: MLflow's own monitor (``system/...`` metrics every
    10 s) runs when ``MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING`` is true, off by default. With
    ``init(system_metrics=True)`` the library's samples are stored that way instead (``system/cpu.percent``, ...,
    step = sample index, each at the time it was taken) and MLflow's monitor is not started.

    Resuming: ``resume_state()`` saves the run id and tracking URI; a later process given it in
    ``run_context.resume`` reopens that run, or starts a new one (with a report note) when it is gone.
    An explicit ``run_id`` / ``MLFLOW_RUN_ID`` wins over the saved state.

    ``tracker`` (and ``active_run``, as in accelerate) is the ``mlflow.entities.Run`` created at start
    (``tracker.info.run_id``); ``client`` is the ``MlflowClient`` bound to this run's tracking URI. With
    a dispatcher they wait until the run has started. Used on its own (``start()``, ``log(...)``,
    ``finish()``), the tracker calls MLflow directly: a key MLflow refuses raises there, as in MLflow.
    """

    name = "mlflow"
    wants_timestamps = True
    requires_logging_directory = False

    def __init__(
        self,
        experiment_name: str | None = None,
        logging_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        tags: dict[str, Any] | str | None = None,
        nested_run: bool = False,
        run_name: str | None = None,
        description: str | None = None,
        *,
        tracking_uri: str | None = None,
        artifact_location: str | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        super().__init__()
        env = os.environ
        self.experiment_name = env.get("MLFLOW_EXPERIMENT_NAME") or experiment_name
        self.experiment_id = None if env.get("MLFLOW_EXPERIMENT_NAME") else env.get("MLFLOW_EXPERIMENT_ID") or None
        self.run_id = env.get("MLFLOW_RUN_ID") or run_id
        self.tags = {**startup.parse_tags(tags, "tags"), **startup.parse_tags(env.get("MLFLOW_TAGS"), "MLFLOW_TAGS")}
        raw_nested = env.get("MLFLOW_NESTED_RUN")
        self.nested_run = (
            startup.parse_bool("MLFLOW_NESTED_RUN", raw_nested) if raw_nested is not None else bool(nested_run)
        )
        self.run_name = run_name
        self.description = description
        self.logging_dir = os.path.abspath(os.fspath(logging_dir) if logging_dir is not None else "runs")
        self.tracking_uri = tracking_uri
        self.artifact_location = artifact_location
        self.parent_run_id = parent_run_id or (startup.caller_active_run_id() if self.nested_run else None)
        self.limits = dict(startup.FALLBACK_LIMITS)
        self._client: Any = None
        self._run: Any = None
        self._finished = False
        self._key_ok: Any = None
        self._keys: dict[str, str] = {}
        self._params: dict[str, str] = {}  # params in the run: MLflow keeps a param's first value for good
        self._config: dict[str, Any] = {}  # the merged config, written whole to config.json at each store
        self._image_time = 0  # last log_image timestamp (ms): strictly increasing keeps the images' order
        self._pending: list[Any] = []  # MLflow's RunOperations of metrics logged with synchronous=False
        self._writer: fast_store.MetricWriter | None = None  # a local sqlite store's metrics, below MLflow's ORM
        self._sdk_monitor: Any = None  # MLflow's SystemMetricsMonitor, when its environment variable asks

    # -- start ------------------------------------------------------------------------------------
    def start(self) -> None:
        startup.turn_off_telemetry()
        self._key_ok = startup.read_sdk_rules(self.limits)
        opened = startup.open_run(self)
        client, run, uri = opened.client, opened.run, opened.uri
        self._client, self._run = client, run
        self._params = dict(run.data.params)  # a resumed run's params cannot change
        self.tracking_uri = uri
        self._writer = startup.metric_writer(uri, run.info.run_id)
        sampled = self.run_context is not None and self.run_context.system_metrics
        if not sampled and system.sdk_monitor_wanted():  # as mlflow.start_run; the samples replace it
            self._sdk_monitor, why_not = system.start_sdk_monitor(run.info.run_id, uri, opened.resumed)
            if why_not:
                warn_once(self.name, "system-metrics", why_not, reason="sdk-monitor")
                self.add_note(why_not)
        startup.announce(run, uri, opened.embedded)

    # -- the SDK objects --------------------------------------------------------------------------
    tracker = active_run = sdk_object(
        "_run",
        "The ``mlflow.entities.Run`` created (or resumed) at start, ``active_run`` as accelerate names it; ``None`` before.",
    )
    client = sdk_object("_client", "The ``MlflowClient`` bound to this run's tracking URI.")

    @property
    def active_run_id(self) -> str | None:
        return self._run.info.run_id if self._run is not None else None

    # -- config -----------------------------------------------------------------------------------
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Params (flattened, stringified) plus the exact config as ``config.json``.

        Called again (``log_config``, or a resumed run), only new keys become params: MLflow keeps a
        param's first value for good, so a changed value is in ``config.json`` (the merged config,
        rewritten whole) with a warning and a report note, never an error.
        """
        from mlflow.entities import Param

        params = new_params(self, values, self._params)
        for chunk in chunks(list(params.items()), self.limits["MAX_PARAMS_TAGS_PER_BATCH"]):
            self._client.log_batch(self.active_run_id, params=[Param(k, v) for k, v in chunk], synchronous=True)
            self._params.update(chunk)
        self._config = merge_config(self._config, values)
        self._client.log_dict(self.active_run_id, self._config, "config.json")

    # -- keys -------------------------------------------------------------------------------------
    def sanitize_key(self, key: str) -> str:
        """Rewrite a key MLflow would refuse (``@ % ( )``, ``..``, ``//``, edge ``/``, empty, too long)."""
        cached = self._keys.get(key)
        if cached is not None:
            return cached
        text = sanitized_key(key, self._key_ok, self.limits["MAX_ENTITY_KEY_LENGTH"])
        self._keys[key] = text
        return text

    # -- metrics and text -------------------------------------------------------------------------
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        self.log_batch([(values, step, kwargs)])

    def log_batch(self, entries: Sequence[tuple[dict[str, Any], int | None, dict[str, Any]]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        points: list[fast_store.Point] = []
        options: list[dict[str, Any]] = []  # each point's Metric options (MLflow 3's model_id, dataset)
        ends = []  # len(points) after each entry
        # MLflow's async queue only when every entry of the batch asked for it (it is waited for at flush)
        synchronous = not all(kwargs.get("synchronous") is False for _, _, kwargs in entries)
        for values, step, kwargs in entries:
            step = 0 if step is None else int(step)
            # when log() was called (the dispatcher's timestamp), not when this worker delivered it
            timestamp = int(kwargs["timestamp"] * 1000) if kwargs.get("timestamp") is not None else now
            for option in kwargs:
                if option not in LOG_OPTIONS:
                    warn_once(self.name, option, "unknown log option for MLflow; ignored", reason="log-kwarg")
            entity_options = metric_options(self.name, kwargs) if ENTITY_OPTIONS.intersection(kwargs) else NO_OPTIONS
            for key, value in values.items():
                if type(value) is not float:
                    if isinstance(value, str):
                        self._client.log_text(self.active_run_id, value, f"text/{artifact_path(key)}/step_{step}.txt")
                        continue
                    value = float(value)
                if value - value != 0.0 and math.isinf(value):  # finite values skip the call
                    warn_once(self.name, key, "MLflow stores infinity as +/-1.8e308 (the largest float)", reason="inf")
                points.append((key, value, timestamp, step))
                options.append(entity_options)
            ends.append(len(points))
        # MLflow's async queue and MLflow 3's per-metric options stay with MLflow's client
        writer = self._writer if synchronous and not any(options) else None
        by_client = min(self.limits["MAX_METRICS_PER_BATCH"], self.limits["MAX_ENTITIES_PER_BATCH"])
        stored = 0
        while stored < len(points):
            chunk = points[stored : stored + (fast_store.CHUNK_POINTS if writer is not None else by_client)]
            try:
                if writer is not None:
                    if not writer.write(chunk):  # not written: MLflow decides (and says why), in its chunks
                        writer = None
                        continue
                else:
                    metrics = [Metric(*point, **option) for point, option in zip(chunk, options[stored:])]
                    operation = self._client.log_batch(self.active_run_id, metrics=metrics, synchronous=synchronous)
                    if operation is not None:  # synchronous=False: MLflow's async queue; waited for at flush
                        self._pending.append(operation)
            except Exception as error:
                # entries whose metrics all went out in earlier chunks are stored: say so, and
                # the dispatcher retries or spills exactly the rest
                raise PartialDelivery(sum(end <= stored for end in ends)) from error
            stored += len(chunk)

    # -- media ------------------------------------------------------------------------------------
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """``log_image(key=..., step=...)`` per image (HW/HWC/CHW arrays, batches, PIL), as uint8 HW/HWC."""
        step = 0 if step is None else int(step)
        if str(self.tracking_uri).startswith(("http://", "https://")) and sdk_image_separator() == "%":
            message = (
                "this MLflow release names image files with '%', which the tracking server URL-decodes: the "
                "images are stored under altered names its image view does not show (MLflow 3 names them with '+')"
            )
            warn_once(self.name, "log_images", message, reason="image-names")
            self.add_note(message)
        for key, images in values.items():
            safe = image_key(self.sanitize_key(str(key)))
            if safe != key:
                warn_once(
                    self.name, key, f"image key stored as {safe!r}: MLflow refuses the original", reason="image-key"
                )
            for image in image_list(images):
                # MLflow names the file after the timestamp: one strictly later per image keeps their order
                self._image_time = max(int(time.time() * 1000), self._image_time + 1)
                self._client.log_image(
                    self.active_run_id,
                    to_hwc_uint8(image, kwargs.get("dataformats")),
                    key=safe,
                    step=step,
                    timestamp=self._image_time,
                    synchronous=True,
                )

    def log_table(
        self,
        table_name: str,
        columns: list[str] | None = None,
        data: list[list[Any]] | None = None,
        dataframe: Any = None,
        step: int | None = None,
        **kwargs: Any,
    ) -> None:
        base = f"tables/{artifact_path(str(table_name))}"
        artifact_file = f"{base}.json" if step is None else f"{base}/step_{int(step)}.json"
        try:
            import pandas as pd
        except ImportError:  # mlflow-skinny without pandas: the same split-orient JSON MLflow writes
            names, rows = table_rows(columns, data, dataframe)
            self._client.log_dict(self.active_run_id, {"columns": names, "data": rows}, artifact_file)
            return
        if dataframe is None:
            names, rows = table_rows(columns, data, None)
            dataframe = pd.DataFrame(rows, columns=names)
        self._client.log_table(self.active_run_id, data=dataframe, artifact_file=artifact_file)

    def log_figure(  # type: ignore[override]  # accelerate's MLflowTracker calls the name `artifact_file`
        self, figure: Any, artifact_file: str, step: int | None = None, **save_kwargs: Any
    ) -> None:
        """The figure as the PNG artifact ``artifact_file`` (``.png`` added or replacing another suffix).

        ``save_kwargs`` go to ``savefig`` (``dpi=...``), also when given as ``save_kwargs={...}`` the way
        ``mlflow.log_figure`` takes them. ``step`` is accepted for the contract; MLflow artifacts have none.
        """
        save_kwargs = {**(save_kwargs.pop("save_kwargs", None) or {}), **save_kwargs}
        name = png_name(artifact_path(artifact_file))  # never leaves the run's artifacts ("../x" -> "__/x")
        if name != artifact_path(artifact_file) and os.path.splitext(artifact_file)[1]:
            warn_once(self.name, artifact_file, f"figure stored as PNG {name!r}", reason="figure-png")
        self._client.log_image(self.active_run_id, figure_to_array(figure, **save_kwargs), artifact_file=name)

    # -- artifacts --------------------------------------------------------------------------------
    def log_artifact(self, local_path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self._client.log_artifact(self.active_run_id, os.fspath(local_path), artifact_path)

    def log_artifacts(self, local_dir: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self._client.log_artifacts(self.active_run_id, os.fspath(local_dir), artifact_path)

    # -- run context (docs/run-context.md) ----------------------------------------------------------
    def log_run_context(self, context: dict[str, Any]) -> None:
        """MLflow's source tags (``mlflow.source.git.commit``/``branch``/``repoURL``, ``mlflow.source.name``,
        shown on the run's page), the other main fields as ``tracking.context.*`` tags, and the diff,
        the package list and the whole context as artifacts under ``run_context/``."""
        fields = context_summary(context)
        native = {
            "mlflow.source.git.commit": fields.get("git.commit"),
            "mlflow.source.git.branch": fields.get("git.branch"),
            "mlflow.source.git.repoURL": fields.get("git.remote_url"),
            "mlflow.source.name": fields.get("entry_point"),
        }
        limit = self.limits["MAX_PARAM_VAL_LENGTH"]
        tags = {name: value for name, value in native.items() if value is not None}
        tags.update({f"tracking.context.{name}": value[:limit] for name, value in fields.items()})
        run_id = self.active_run_id
        startup.log_tags(self._client, str(run_id), tags, self.limits["MAX_PARAMS_TAGS_PER_BATCH"])
        run_dir = self.run_context.run_dir if self.run_context is not None else None
        for path in context_files(context, run_dir):
            self._client.log_artifact(run_id, str(path), "run_context")

    def log_system_metrics(self, values: dict[str, float], index: int, timestamp: float) -> None:
        """``system/...`` metrics at step = ``index``, stamped with the sample's time, as MLflow's monitor logs them."""
        self.log_batch([system.sample_entry(values, index, timestamp)])

    # -- finish -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait for the metrics sent with ``log_kwargs={"mlflow": {"synchronous": False}}``."""
        while self._pending:
            self._pending.pop(0).wait()

    def finish(self) -> None:
        if self._run is None or self._finished:
            return
        if self._sdk_monitor is not None:  # its last metrics, before the run ends (as mlflow.end_run)
            self._sdk_monitor.finish()
            self._sdk_monitor = None
        self.flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        end = self.run_end
        ended = int(end.ended * 1000) if end.ended is not None else None
        self._client.set_terminated(self.active_run_id, _STATUS[end.outcome], end_time=ended)
        self._finished = True

    # -- resume and read-back ---------------------------------------------------------------------
    def resume_state(self) -> dict[str, Any] | None:
        """The run id plus the store holding it: the embedded store's path depends on ``logging_dir``.

        ``experiment_id`` is informational. A password in the tracking URI is left out (the state is
        saved in ``run.json``); such a store is found again through the URI the user sets on restart.
        """
        if self._run is None:
            return None
        info = self._run.info
        return {
            "run_id": info.run_id,
            "tracking_uri": without_password(str(self.tracking_uri)),
            "experiment_id": info.experiment_id,
        }

    def read_back_metrics(self) -> dict[str, dict[int, float]]:
        """Every metric series of this run per step (the last point at a step wins)."""
        return {key: dict(points) for key, points in self.read_back_history().items()}

    def read_back_system_metrics(self) -> dict[str, list[tuple[int, float]]]:
        """The run's ``system/...`` metrics (MLflow's own monitor's, or the samples at step = their index):
        MLflow keeps system metrics among the run's metrics under that prefix."""
        return {key: points for key, points in self.read_back_history().items() if key.startswith("system/")}

    def read_back_history(self) -> dict[str, list[tuple[int, float]]]:
        """Every stored point of this run, read with a fresh ``MlflowClient`` (``get_metric_history``).

        Points come in the order the store returns them (by timestamp); a step logged twice shows
        twice, except an exact repeat (same step, value and timestamp), which MLflow's store keeps once.
        """
        if self.active_run_id is None:  # (a held tracker of delivery="process" has the id, not the run)
            return {}
        return reader.history(self.tracking_uri, self.active_run_id)

    def read_back_images(self) -> dict[str, list[tuple[int, Any]]]:
        """Every image ``log_images`` stored, per key, as ``(step, HW or HWC uint8 array)`` in logging order.

        Listed and downloaded with a fresh ``MlflowClient`` (:func:`tracking_mlflow.reader.images`).
        """
        if self.active_run_id is None:
            return {}
        return reader.images(self.tracking_uri, self.active_run_id)
