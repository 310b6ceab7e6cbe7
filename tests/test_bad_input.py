"""Hostile names and planted secrets against the cell's real backend (issue 8).

Paths: every name that becomes a file or folder name is refused at the call with a ValueError that
names the parameter, and nothing is written outside ``logging_dir``. Secrets: credentials planted in
the config, in ``init_kwargs`` text fields and in ``log()`` strings are found in no file the run leaves
anywhere (``logging_dir``, ``HOME``, ``TMPDIR``, zip members included) and in none of its output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tracking_core

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"

HOSTILE_NAMES = [
    "..",
    ".",
    "",
    "../../evil",
    ABSOLUTE := "<absolute path into tmp/outside>",
    "a/b",
    "a\\b",
    "a\x00b",
    "a\nb",
    "x" * 300,
    "CON",
    "nul.txt",
    "C:evil",
    " padded ",
    "bad\ud800",
]
HOSTILE_ARTIFACT_PATHS = ["..", "../x", "a/../../x", ABSOLUTE, "a\\b", "a\x00b", "a\nb", "x" * 300, "CON/x", "a/./b"]
# init_kwargs each backend turns into a folder or file name.
PATH_KWARGS = {"tensorboard": "run_id", "trackio": "name", "wandb": "id", "swanlab": "id"}


def _shown(name: str) -> str:
    return repr(name)[:40]


def _real(name: str, sandbox: Path) -> str:
    """The absolute-path case points into ``tmp/outside``, so the sandbox check sees anything written there."""
    return str(sandbox.parent / "outside" / "evil") if name == ABSOLUTE else name


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """cwd is ``tmp/work``; the run writes to ``tmp/work/runs``; ``tmp/outside`` must stay untouched."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    monkeypatch.chdir(work)
    yield work
    assert sorted(p.name for p in outside.iterdir()) == [], "something was written outside logging_dir"
    assert not (tmp_path / "evil").exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"work", "outside"}


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=_shown)
def test_a_hostile_project_name_is_refused_at_the_call(sandbox, name):
    with pytest.raises(ValueError, match="project_name"):
        tracking_core.init(_real(name, sandbox), log_with=[CELL, "jsonl"], logging_dir=sandbox / "runs")
    leftovers = [p for p in (sandbox / "runs").rglob("*")] if (sandbox / "runs").exists() else []
    assert not [p for p in leftovers if p.is_file()], leftovers


@pytest.mark.parametrize("name", [*HOSTILE_NAMES, "../../outside"], ids=_shown)
def test_resume_takes_a_run_id_never_a_path(sandbox, name):
    outside = sandbox.parent / "outside"
    (outside / "run.json").write_text(json.dumps({"format": "tracking-run", "project": "p", "run_id": "x"}))
    try:
        with pytest.raises(ValueError, match="resume"):
            tracking_core.init("p", log_with=[CELL], logging_dir=sandbox / "runs", resume=_real(name, sandbox) or "..")
    finally:
        (outside / "run.json").unlink()


@pytest.mark.skipif(CELL not in PATH_KWARGS, reason=f"{CELL} turns no init_kwargs name into a path")
@pytest.mark.parametrize("name", [n for n in HOSTILE_NAMES if n], ids=_shown)
def test_a_hostile_name_in_init_kwargs_is_refused_at_the_call(sandbox, name):
    keyword = PATH_KWARGS[CELL]
    with pytest.raises(ValueError, match=keyword):
        tracking_core.init(
            "p", log_with=[CELL], logging_dir=sandbox / "runs", init_kwargs={CELL: {keyword: _real(name, sandbox)}}
        )


def test_hostile_artifact_paths_are_refused_and_good_ones_stay_inside(sandbox):
    artifact = sandbox / "model.txt"
    artifact.write_text("weights")
    folder = sandbox / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    run = tracking_core.init("p", log_with=[CELL, "jsonl"], logging_dir=sandbox / "runs")
    try:
        for path in HOSTILE_ARTIFACT_PATHS:
            with pytest.raises(ValueError, match="artifact_path"):
                run.log_artifact(artifact, artifact_path=_real(path, sandbox))
            with pytest.raises(ValueError, match="artifact_path"):
                run.log_artifacts(folder, artifact_path=_real(path, sandbox))
        run.log_artifact(artifact, artifact_path="models/best/")
        run.log_artifacts(folder, artifact_path="inputs")
        run.log({"loss": 1.0}, step=0)
    finally:
        report = run.finish()
    assert report.backends[CELL].state == "finished", str(report)


def test_a_symlinked_artifact_is_logged_as_its_target_content(sandbox):
    target = sandbox / "real.txt"
    target.write_text("the content")
    link = sandbox / "link.txt"
    link.symlink_to(target)
    run = tracking_core.init("p", log_with=[CELL, "jsonl"], logging_dir=sandbox / "runs")
    run.log_artifact(link)
    report = run.finish()
    assert report.backends[CELL].state == "finished" and report.backends[CELL].errors == 0, str(report)


# -- secrets ------------------------------------------------------------------------------------
# Every planted secret holds a marker no SDK would write by itself; the test greps for the markers.
SECRETS = {
    "url": "postgres://admin:UrlPassMarker42@db.example.com:5432/prod",
    "bearer": "Authorization: Bearer BearerMarker0123456789",
    "openai": "sk-SkMarker0123456789abcdefXYZ",
    "hf": "hf_HfMarker0123456789abcdefghijk",
    "ghp": "ghp_GhpMarker0123456789abcdefghijklmnopq",
    "github_pat": "github_pat_PatMarker_0123456789abcdefghij",
    "aws": "AKIAMARKERAWS0123456",
    "slack": "xoxb-SlackMarker-0123456789",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJKwtMarker0123.SigMarker456789",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nPEMBODYMARKER0123\nabcdef\n-----END RSA PRIVATE KEY-----",
}
KEY_NAMED = {"api_key": "KeyNamedMarker1", "hub_token": "KeyNamedMarker2", "db_password": "KeyNamedMarker3"}
MARKERS = [
    "UrlPassMarker",
    "BearerMarker",
    "SkMarker",
    "HfMarker",
    "GhpMarker",
    "PatMarker",
    "MARKERAWS",
    "SlackMarker",
    "KwtMarker",
    "SigMarker",
    "PEMBODYMARKER",
    "KeyNamedMarker",
]
SHORT = ["AKIAMARKERAWS0123456", "hf_HfMarker0123456789abcdefghijk"]  # fit in any SDK's tag length limit
# The text fields each backend takes in init_kwargs (names, notes, descriptions, tags).
TEXT_KWARGS = {
    "wandb": lambda: {"notes": " ".join(SECRETS.values()), "tags": SHORT},
    "mlflow": lambda: {"description": " ".join(SECRETS.values()), "tags": {"owner": SECRETS["url"]}},
    "aim": lambda: {"description": " ".join(SECRETS.values()), "tags": SHORT},
    "trackio": lambda: {"group": SECRETS["openai"]},
    "comet_ml": lambda: {"tags": SHORT},
    "clearml": lambda: {"tags": SHORT},
    "swanlab": lambda: {"description": " ".join(SECRETS.values()), "tags": SHORT},
}

SECRETS_RUN = """
import json, sys, types
import tracking_core
cell = sys.argv[1]
# On stdin, and no secret in this source: W&B and SwanLab store the command line (argv, ``-c`` text included).
secrets, key_named, text_kwargs = json.load(sys.stdin)
config = {
    "lr": 0.1,
    "canary_config": "CanaryConfigVisible",
    "shapes": dict(secrets),
    "nested": {"list": list(secrets.values()), **key_named},
    "ns": types.SimpleNamespace(api_key=key_named["api_key"] + "-ns", note=secrets["url"]),
}
backends = [cell, "jsonl"] if cell != "jsonl" else ["jsonl"]
init_kwargs = {cell: text_kwargs} if text_kwargs else None
run = tracking_core.init("secrets", log_with=backends, logging_dir="runs", config=config, init_kwargs=init_kwargs)
for step in range(3):
    run.log({"loss": 1.0 / (step + 1), "canary_text": "CanaryLogVisible", **{f"text/{k}": v for k, v in secrets.items()}},
            step=step)
run.log({"nested": {"secret_text": secrets["bearer"]}, "plain": 1.0}, step=3)
report = run.finish()
print(json.dumps({"state": report.backends[cell].state, "report": str(report)}))
"""


def _readable_files(root: Path):
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:
                continue
            yield path, data
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    for member in archive.namelist():
                        yield Path(f"{path}!{member}"), archive.read(member)


def test_planted_secrets_are_stored_nowhere(tmp_path):
    """The run lives in a process whose HOME, TMPDIR and cwd are under tmp_path: every file it leaves is there."""
    home, temp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for folder in (home, temp, work):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    text_kwargs = TEXT_KWARGS.get(CELL, lambda: {})()
    result = subprocess.run(
        [sys.executable, "-c", SECRETS_RUN, CELL],
        input=json.dumps([SECRETS, KEY_NAMED, text_kwargs]),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=work,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["state"] == "finished", outcome["report"]
    hits = []
    canaries = set()
    for path, data in _readable_files(tmp_path):
        for marker in MARKERS:
            if marker.encode() in data:
                hits.append(f"{marker} in {path.relative_to(tmp_path)}")
        canaries.update(c for c in ("CanaryConfigVisible", "CanaryLogVisible") if c.encode() in data)
    output = result.stdout + result.stderr
    hits += [f"{marker} in the output" for marker in MARKERS if marker in output]
    assert not hits, "\n".join(hits)
    assert canaries == {"CanaryConfigVisible", "CanaryLogVisible"}, "the grep did not see what the run stored"
    assert "redacted" in result.stderr, "no notice said what was redacted"
