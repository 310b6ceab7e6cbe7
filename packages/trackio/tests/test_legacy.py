"""Release differences the CI floor (0.5.2) does not reach, checked on the detection helpers themselves."""

from __future__ import annotations

import sys
import types

import pytest
from tracking_trackio import legacy


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
