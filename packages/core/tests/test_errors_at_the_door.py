"""Bad arguments fail at the call that received them, with an error that names the parameter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tracking_core
from tracking_core import BackendNotInstalledError


@pytest.mark.parametrize("value", [123, 4.5, ["runs"], b"runs"])
def test_logging_dir_of_the_wrong_type_is_named(value):
    with pytest.raises(TypeError, match=r"logging_dir must be a path \(str or os\.PathLike\)"):
        tracking_core.init("p", logging_dir=value)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
def test_logging_dir_that_cannot_be_created_is_named():
    with pytest.raises(FileNotFoundError, match=r"logging_dir '/proc/x' cannot be created"):
        tracking_core.init("p", logging_dir="/proc/x")


def test_logging_dir_that_is_a_file_is_named(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OSError, match=r"logging_dir '.*file' cannot be created"):
        tracking_core.init("p", logging_dir=tmp_path / "file")


def test_a_good_logging_dir_still_works(tmp_path):
    with tracking_core.init("p", logging_dir=tmp_path / "deep" / "runs") as run:
        run.log({"a": 1}, step=0)
    assert (run.run_dir / "journal.jsonl").is_file()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"data": 5}, r"`data` must be a list of rows.*got int"),
        ({"data": "abc"}, r"`data` must be a list of rows.*got str"),
        ({"data": [1, 2]}, r"`data\[0\]` must be a row.*got int"),
        ({"data": [[1], "ab"]}, r"`data\[1\]` must be a row.*got str"),
        ({"data": [[1]], "columns": 5}, r"`columns` must be a list of column names.*got int"),
        ({"data": [[1]], "columns": "a"}, r"`columns` must be a list of column names.*got str"),
    ],
)
def test_log_table_names_the_bad_argument(tmp_path, kwargs, message):
    with tracking_core.init("p", logging_dir=tmp_path) as run:
        with pytest.raises(TypeError, match=message):
            run.log_table("t", **kwargs)
        run.log_table("t", columns=("a", "b"), data=((1, 2), [3, 4]))  # tuples are rows too
    assert run.finish().ok


def _fake_backend_without_sdk(site: Path) -> None:
    """An installed tracking-mlflow whose SDK is not installed (as after ``pip uninstall mlflow-skinny``)."""
    package = site / "tracking_mlflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from tracking_core import GeneralTracker

            class MLflowTracker(GeneralTracker):
                name = "mlflow"
                requires_logging_directory = False

                def __init__(self, run_name=None, **kwargs):
                    super().__init__()

                @property
                def tracker(self):
                    return None

                def start(self):
                    import mlflow  # noqa: F401

                def log(self, values, step=None, **kwargs):
                    pass
            """
        )
    )
    dist_info = site / "tracking_mlflow-0.1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.4\nName: tracking-mlflow\nVersion: 0.1.0\n"
        "Requires-Dist: tracking-core<0.2,>=0.1\nRequires-Dist: mlflow-skinny>=3.17\n"
        "Requires-Dist: sqlalchemy<3,>=2.0\nRequires-Dist: mlflow>=3.17; extra == 'ui'\n"
    )
    (dist_info / "entry_points.txt").write_text("[tracking.backends]\nmlflow = tracking_mlflow:MLflowTracker\n")


def test_backend_without_its_sdk_is_reported_at_init_with_the_install_command(tmp_path):
    _fake_backend_without_sdk(tmp_path / "site")
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mlflow"] = None  # the SDK is not installed (whatever this environment holds)
        import tracking_core
        try:
            tracking_core.init("p", log_with=["jsonl", "mlflow"], logging_dir=sys.argv[1])
        except tracking_core.BackendNotInstalledError as error:
            print("ERROR", error)
        print("runs:", sorted(p.name for p in __import__("pathlib").Path(sys.argv[1]).glob("*/*")))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path])}
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR" in result.stdout, result.stdout + result.stderr
    assert "'mlflow'" in result.stdout and "SDK" in result.stdout
    assert 'pip install "mlflow-skinny>=3.17"' in result.stdout
    assert "runs: []" in result.stdout  # refused before any run folder was made


def test_sdk_check_imports_no_sdk_and_skips_custom_trackers(memory, tmp_path):
    from tracking_core.intake.preflight import missing_sdks

    class Custom(tracking_core.GeneralTracker):  # a user's own tracker named like a built-in
        name = "wandb"
        requires_logging_directory = False

        @property
        def tracker(self):
            return None

        def log(self, values, step=None, **kwargs):
            pass

    assert missing_sdks([memory, Custom]) == {}
    assert BackendNotInstalledError.__mro__[1] is ImportError


@pytest.mark.parametrize(("typo", "meant"), [("mlfow", "mlflow"), ("tensorbaord", "tensorboard"), ("jsnol", "jsonl")])
def test_a_misspelt_backend_name_is_answered_with_the_name_it_is_close_to(tmp_path, typo, meant):
    """Built-in names count whether installed or not: the user may mean one they have yet to install."""
    with pytest.raises(ValueError, match=rf"Unknown tracker '{typo}'.*did you mean '{meant}'\?"):
        tracking_core.init("p", log_with=[typo], logging_dir=tmp_path)


def test_a_name_close_to_nothing_gets_no_suggestion(tmp_path):
    with pytest.raises(ValueError, match="Unknown tracker 'zzzzzz'") as raised:
        tracking_core.init("p", log_with="zzzzzz", logging_dir=tmp_path)
    assert "did you mean" not in str(raised.value)
