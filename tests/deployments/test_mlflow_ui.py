"""MLflow's own UI (`mlflow ui`) shows a run this library logged as MLflow users expect: its name, status
Finished, a duration close to the run's wall time (the MLflow run starts at ``init()``), its params, its
metrics and a chart per metric (the Model metrics tab). The page is MLflow's React app, rendered by headless
Chromium (``--dump-dom`` after a virtual-time budget) and screenshot; ``TRACKING_SCREENSHOT_DIR`` keeps the
screenshots."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import tracking_core
from deploy_servers import ServerProcess, console_command, free_port, http_answers, require_module, unavailable

CHROMIUM = "/usr/bin/chromium"
CONFIG = {"lr": 0.003, "batch_size": 64, "optimizer": "adamw"}
WALL = 5.0  # seconds the run lasts


def _chromium(url: str, profile: Path, *extra: str, budget: int = 15000) -> str:
    """What headless Chromium gives for ``url`` after MLflow's app had ``budget`` ms of virtual time to render
    (its charts load Plotly lazily and draw once laid out: they need a longer budget, and every compositor
    stage run before a frame counts as drawn)."""
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--window-size=1400,1000", f"--virtual-time-budget={budget}",
            "--run-all-compositor-stages-before-draw", *extra, url,
        ],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    return done.stdout


def _rest(base: str, path: str) -> dict:
    with urllib.request.urlopen(f"{base}/api/2.0/mlflow/{path}", timeout=10) as response:
        return json.loads(response.read())


def test_mlflow_ui_shows_the_runs_name_status_duration_params_and_metric_charts(tmp_path):
    require_module("flask", "`mlflow ui` needs full mlflow (Flask), not mlflow-skinny")
    if not Path(CHROMIUM).exists():
        unavailable("headless Chromium is not installed (/usr/bin/chromium)")
    logs = tmp_path / "runs"
    began = time.time()
    run = tracking_core.init(
        "ui-check", log_with=["mlflow"], logging_dir=logs, config=CONFIG,
        init_kwargs={"mlflow": {"run_name": "baseline"}},
    )  # fmt: skip
    steps = 10
    for step in range(steps):
        run.log({"train/loss": 1.0 / (step + 1), "val/accuracy": 0.5 + step / 40}, step=step)
        time.sleep(WALL / steps)
    assert run.finish().ok
    wall = time.time() - began
    state = json.loads((Path(run.run_dir) / "run.json").read_text())["backends"]["mlflow"]
    store = state["tracking_uri"]
    assert store.startswith("sqlite:///"), store

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = ["mlflow", "ui", "--backend-store-uri", store, "--host", "127.0.0.1", "--port", str(port)]
    answers = http_answers(f"{base}/health")
    server = ServerProcess(console_command([*command, "--workers", "1"]), tmp_path, tmp_path / "ui.log", answers)
    server.start()
    try:
        stored = _rest(base, f"runs/get?run_id={state['run_id']}")["run"]
        experiment = stored["info"]["experiment_id"]
        page = f"{base}/#/experiments/{experiment}/runs/{state['run_id']}"
        shot = tmp_path / "mlflow-run.png"
        _chromium(page, tmp_path / "profile-shot", f"--screenshot={shot}")
        dom = _chromium(page, tmp_path / "profile-dom", "--dump-dom")
        charts_shot = tmp_path / "mlflow-run-charts.png"
        for attempt in range(3):  # Plotly's chunk can outlast a first visit's budget on a cold server
            charts = _chromium(f"{page}/model-metrics", tmp_path / f"charts-dom-{attempt}", "--dump-dom", budget=40000)
            if charts.count("js-plotly-plot") >= 2:
                break
        _chromium(f"{page}/model-metrics", tmp_path / "charts-shot", f"--screenshot={charts_shot}", budget=40000)
    finally:
        server.stop()
    if os.environ.get("TRACKING_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["TRACKING_SCREENSHOT_DIR"]) / "mlflow-run.png")
        shutil.copy(charts_shot, Path(os.environ["TRACKING_SCREENSHOT_DIR"]) / "mlflow-run-charts.png")
    assert shot.stat().st_size > 10_000, "Chromium painted no page"

    # What MLflow's server hands its UI (the same server, so the fallback had the page not rendered).
    info = stored["info"]
    assert info["run_name"] == "baseline" and info["status"] == "FINISHED"
    duration = (int(info["end_time"]) - int(info["start_time"])) / 1000
    assert WALL - 0.5 <= duration <= wall + 0.5, duration
    assert {p["key"]: p["value"] for p in stored["data"]["params"]} == {k: str(v) for k, v in CONFIG.items()}

    # What the rendered page says.
    text = re.sub(r"<[^>]+>", " ", dom)
    text = re.sub(r"\s+", " ", text)
    assert "baseline" in text, text[:2000]
    assert "Finished" in text, text[:2000]
    shown = re.search(r"Duration\s*(\d+(?:\.\d+)?)\s*(ms|s|min)\b", text)
    assert shown, text[:4000]
    seconds = float(shown[1]) / 1000 if shown[2] == "ms" else float(shown[1]) * (60 if shown[2] == "min" else 1)
    assert abs(seconds - duration) <= 1.0, (shown[0], duration)
    for key, value in CONFIG.items():
        assert key in text and str(value) in text, key
    for metric in ("train/loss", "val/accuracy"):
        assert metric in text, metric  # the Overview's metrics table
        assert f"baseline ({metric})" in charts, metric  # a Model metrics chart's legend: a line for the run
    assert charts.count("js-plotly-plot") == 2, "a Plotly chart per metric"
