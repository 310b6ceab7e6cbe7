"""Release differences the CI floor does not reach, checked on the detection helpers themselves."""

from __future__ import annotations

import os
import sys
import types

import pytest
from tracking_trackio.older import before_v0_24 as legacy
from tracking_trackio.startup import LOCATION_ATTRIBUTES as _LOCATION_ATTRIBUTES
from tracking_trackio.startup import point_sdk_at as _point_sdk_at


def test_a_release_without_run_groups_gets_the_group_dropped_with_a_note():
    def init_without_group(project: str, name: str | None = None) -> None: ...

    def init_with_group(project: str, name: str | None = None, group: str | None = None) -> None: ...

    kwargs = {"name": "job-rank0", "group": "job"}
    note = legacy.drop_group(init_without_group, kwargs)
    assert kwargs == {"name": "job-rank0"} and note is not None and "'job'" in note
    kwargs = {"name": "job-rank0", "group": "job"}
    assert legacy.drop_group(init_with_group, kwargs) is None and kwargs["group"] == "job"


def test_a_failed_write_in_the_in_process_dashboard_is_kept_and_warned(monkeypatch: pytest.MonkeyPatch):
    def bulk_log(logs: list, hf_token: str | None) -> None:
        raise TypeError("Dict key must be str")

    monkeypatch.setitem(sys.modules, "trackio.ui.main", types.SimpleNamespace(bulk_log=bulk_log))
    client = legacy.InProcessClient("in-process", verbose=False)
    run = types.SimpleNamespace(_client=client)
    with pytest.warns(UserWarning, match="Dict key must be str"):
        assert client.predict(api_name="/bulk_log", logs=[{}], hf_token=None) is None
    assert legacy.write_failures(run) == {legacy.WRITE_FAILURE}
    assert legacy.remote_url(types.SimpleNamespace(_client=client, url="in-process")) is None


def test_the_view_setting_is_hf_home_where_the_release_ignores_trackio_dir(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Before 0.5.2 a new process of Trackio finds its store only under ``$HF_HOME/trackio``."""
    import trackio.utils

    def reads_env():
        return os.environ.get("TRACKIO_DIR")

    def ignores_env():
        return tmp_path

    store = tmp_path / "my dir" / "trackio"
    monkeypatch.setattr(trackio.utils, "_get_trackio_dir", reads_env, raising=False)
    assert legacy.reads_trackio_dir() and legacy.store_setting(store) == f"TRACKIO_DIR='{store}'"
    monkeypatch.setattr(trackio.utils, "_get_trackio_dir", ignores_env)
    assert not legacy.reads_trackio_dir() and legacy.store_setting(store) == f"HF_HOME='{store.parent}'"
    monkeypatch.delattr(trackio.utils, "_get_trackio_dir")  # 0.3.2 and older: the location is a constant
    assert not legacy.reads_trackio_dir()
    assert legacy.store_setting(tmp_path / "elsewhere") == f"TRACKIO_DIR={tmp_path / 'elsewhere'}"  # no HF_HOME fits


def test_a_location_kept_as_text_is_pointed_at_the_run_as_text(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """trackio before 0.0.20 keeps its directory as a ``str`` in each module that imported it."""
    for name, loaded in list(sys.modules.items()):  # the real trackio's locations come back after the test
        for attribute in _LOCATION_ATTRIBUTES:
            if loaded is not None and name.startswith("trackio") and attribute in vars(loaded):
                monkeypatch.setattr(loaded, attribute, vars(loaded)[attribute])
    module = types.ModuleType("trackio.early_storage")
    module.TRACKIO_DIR = "/nowhere/trackio"
    monkeypatch.setitem(sys.modules, "trackio.early_storage", module)
    _point_sdk_at(tmp_path / "runs" / "trackio")
    assert module.TRACKIO_DIR == str(tmp_path / "runs" / "trackio")


def test_an_image_made_rgba_from_a_file_that_is_not_is_told_apart(tmp_path):
    """trackio 0.2.8 to 0.3.3 convert every image to RGBA when it is made (kept on ``_pil``), a file's too."""
    image = pytest.importorskip("PIL.Image")
    grey, rgba = tmp_path / "grey.png", tmp_path / "rgba.png"
    image.new("L", (4, 3)).save(grey)
    image.new("RGBA", (4, 3)).save(rgba)
    converted = types.SimpleNamespace(_pil=image.new("RGBA", (4, 3)))
    assert legacy.made_rgba(converted, str(grey))
    assert not legacy.made_rgba(converted, str(rgba))  # nothing added to an RGBA file
    assert not legacy.made_rgba(types.SimpleNamespace(_value=str(grey)), str(grey))  # 0.3.4+: the file is copied
