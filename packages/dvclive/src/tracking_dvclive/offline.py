"""``dvclive.Live`` without its DVC repository, git and DVC Studio steps, and with whole-file writes."""

from __future__ import annotations

import os
from typing import Any


def _replace(path: str, write: Any) -> None:
    """``write(temporary path)``, then the temporary file renamed over ``path`` (atomic on one file system)."""
    temporary = f"{path}.tracking-tmp"
    write(temporary)
    os.replace(temporary, path)


def offline_live_class(live_class: type) -> type:
    """``dvclive.Live`` that never looks for a DVC repository, git or DVC Studio.

    DVCLive's start-up finds the DVC repository above the CWD, or *creates one* at the root of the git
    repository it sits in (``Repo.init``), reads git's state, and may post to DVC Studio; with
    ``DVCLIVE_TEST`` set it writes to a temporary folder instead. None of that belongs to a tracker
    told to write under ``logging_dir``: those steps are replaced by "no repository", which is the
    state DVCLive itself runs in outside a DVC project (metrics, params, plots and images unchanged).
    """

    from dvclive.error import InvalidParameterTypeError
    from dvclive.plots import NumpyEncoder
    from dvclive.serialize import dump_json, dump_yaml
    from ruamel.yaml.representer import RepresenterError

    class OfflineLive(live_class):  # type: ignore[misc]
        """Also writes ``metrics.json`` and ``params.yaml`` whole or not at all (a temporary file, then a
        rename): DVCLive rewrites them in place, so a process killed mid-write left a truncated file that
        DVCLive's resume then fails to parse. Such a file left by an earlier writer is read as empty."""

        #: files of the folder that could not be read back on resume (the tracker notes them)
        unreadable: list[str]

        def make_summary(self) -> None:
            if self._step is not None:
                self.summary["step"] = self.step
            _replace(self.metrics_file, lambda path: dump_json(self.summary, path, cls=NumpyEncoder))

        def _dump_params(self) -> None:
            try:
                _replace(self.params_file, lambda path: dump_yaml(self._params, path))
            except RepresenterError as error:
                raise InvalidParameterTypeError(error.args[0]) from error

        def read_latest(self) -> Any:
            try:
                return super().read_latest()
            except ValueError:  # json's JSONDecodeError
                self.__dict__.setdefault("unreadable", []).append(self.metrics_file)
                return {}

        def _read_params(self) -> None:
            try:
                super()._read_params()
            except Exception:  # DVCLive's YAMLFileCorruptedError, or an empty file (None)
                self.__dict__.setdefault("unreadable", []).append(self.params_file)

        def _init_dvc(self) -> None:
            self._dvc_repo = None
            self._save_dvc_exp = False
            self._dvc_file = os.path.join(self.dir, "dvc.yaml")

        def _init_test(self) -> None:  # DVCLIVE_TEST: keep the folder asked for
            self._init_dvc()

        def _init_studio(self) -> None:
            self._studio_events_to_skip.update(("start", "data", "done"))

        def post_data_to_studio(self, *args: Any, **kwargs: Any) -> None:
            """No DVC Studio: nothing is queued (DVCLive would read every metric file back at each sync)."""

    OfflineLive.__name__ = OfflineLive.__qualname__ = "OfflineLive"
    return OfflineLive
