"""The core contract suite against the real ClearML SDK in offline mode, read back from the session zip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracking_clearml.reader import OfflineSession
from tracking_core.testing import ContractRun, TrackerContract


def session_of(run: ContractRun) -> OfflineSession:
    folder = run.tracker.offline_folder
    assert folder is not None, "the run was not an offline session"
    assert folder.is_relative_to(run.logging_dir), f"session {folder} is not under logging_dir {run.logging_dir}"
    zip_path = Path(f"{folder}.zip")
    assert zip_path.is_file(), f"no session zip at {zip_path}"
    return OfflineSession(zip_path)


class TestClearMLContract(TrackerContract):
    backend_name = "clearml"

    def env(self, tmp_path: Path) -> dict[str, str]:
        # No credentials and no mode: the embedded default (an offline session under logging_dir).
        return {"CLEARML_CONFIG_FILE": str(tmp_path / "no-clearml.conf")}

    def read_metrics(self, run: ContractRun) -> dict[str, dict[int, float]]:
        return session_of(run).scalars()

    def read_config(self, run: ContractRun) -> dict[str, Any]:
        session = session_of(run)
        exact = session.configuration("General")
        hyper = session.hyperparameters("General")
        # Both sections hold the config; the flat hyperparameters must agree with the exact JSON.
        assert hyper["lr"] == str(exact["lr"]) and hyper["model/depth"] == str(exact["model"]["depth"]), (hyper, exact)
        assert hyper.get("scheduler") == "" and exact["scheduler"] is None, (hyper, exact)  # ClearML: None -> ""
        return exact

    def read_texts(self, run: ContractRun) -> dict[str, dict[int, str]]:
        return session_of(run).texts()

    def read_images(self, run: ContractRun) -> dict[str, list[int]]:
        session = session_of(run)
        names = set(session.names())
        out: dict[str, list[int]] = {}
        for key, items in session.images().items():
            for step, _series, url in items:
                relative = url.split(f"{run.tracker.offline_folder.name}/", 1)[-1]
                assert relative in names, f"image file {relative} missing from the session zip"
                out.setdefault(key, []).append(step)
        return out

    def read_tables(self, run: ContractRun) -> dict[str, list[list[Any]]]:
        return session_of(run).tables()
