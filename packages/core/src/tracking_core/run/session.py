"""``RunSession``: the run a dispatcher writes to — its folder, its ``run.json``, where it carries on.

A new run gets a fresh id. A resumed run (``resume=True`` or a run id) keeps its folder and id and
carries on after the last record and step that any backend, the journal or a spill journal holds;
each backend that reopened its earlier run first catches up, from the journal and its own spill,
on the records it did not hold when the earlier process died (its cursor in ``run.json``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

# kept importable from here, where they were defined before
from ..contract.tracker import GeneralTracker
from ..delivery.resume import not_resumed_note as not_resumed_note
from ..delivery.resume import resume_state_of as resume_state_of
from ..delivery.spill import spill_name
from ..kit.paths import check_name
from ..notices import logger, notice
from ..store import rewind
from ..store.cursor import NOWHERE as NOWHERE
from ..store.cursor import CursorFile as CursorFile
from ..store.cursor import cursor_name as cursor_name
from ..store.journal import JOURNAL_NAME, drop_delivered_segments, journal_files, journal_segments, journal_tail
from ..store.manifest import MANIFEST_NAME, OWED_KEY, RunManifest, find_run_to_resume

if TYPE_CHECKING:
    pass


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(3).hex()


def rank_folder(rank: int) -> str:
    """A rank's run folder inside its job's folder, in per-rank mode."""
    return f"rank-{rank}"


def choose_job_run_id(project_dir: Path, resume: bool | str) -> str:
    """Rank 0's pick of the job's run id in per-rank mode: the one to resume, or a new one.

    Never raises: the other ranks are waiting for the answer, so a wrong id is reported by every
    rank alike once it has travelled.
    """
    if isinstance(resume, str):
        return resume
    if resume:
        jobs = [path.parent.parent for path in project_dir.glob(f"*/{rank_folder(0)}/{MANIFEST_NAME}")]
        if jobs:
            return max(jobs, key=lambda job: (job / rank_folder(0) / MANIFEST_NAME).stat().st_mtime).name
    return new_run_id()


def named_run_id(specs: list[Any], init_kwargs: dict[str, dict[str, Any]]) -> str | None:
    """The run id the user named, if any: the ``init_kwargs`` keyword by which a backend names its run
    folder (its class's ``run_id_keyword``, e.g. TensorBoard's ``run_id``). It becomes the run's id, so
    the journal, ``run.json`` and that backend's files share the folder, and ``resume`` can name it."""
    named = {}
    for spec in specs:  # a tracker given as an instance was built by the caller: init_kwargs do not reach it
        keyword = spec.run_id_keyword if isinstance(spec, type) and issubclass(spec, GeneralTracker) else None
        value = (init_kwargs.get(spec.name) or {}).get(keyword) if keyword else None
        if value is not None:
            named[spec.name] = str(value)
    if len(set(named.values())) > 1:
        given = ", ".join(f"{name} {value!r}" for name, value in named.items())
        raise ValueError(f"init_kwargs name two run ids ({given}); a run has one: give every backend the same")
    return next(iter(named.values()), None)


def resume_for_named(project_dir: Path, run_id: str, resume: bool | str) -> bool | str:
    """What ``resume`` means for a run whose id the user named: ``True`` resumes that run if it exists
    (else starts it), a run id must be that one, and ``False`` refuses an id that is taken.

    Refusing (rather than adding to the earlier run, as a TensorBoard folder would) keeps two runs
    apart unless the user asks for one: continuing is one option away, and says so when it happens.
    """
    check_name(run_id, "run_id")
    earlier = project_dir / run_id / MANIFEST_NAME
    if isinstance(resume, str) and resume != run_id:
        raise ValueError(f"resume={resume!r} and run_id {run_id!r} name two runs: give one of them")
    if resume is True:
        return run_id if earlier.is_file() else False
    if not resume and earlier.is_file():
        raise FileExistsError(
            f"run id {run_id!r} is taken: {earlier.parent} holds a run{_ended(earlier)}. A second run under it "
            f"would merge into it (two values at one step). Pass resume={run_id!r} to continue that run, "
            "or choose another run id (or none, for a fresh one)."
        )
    return resume


def _ended(manifest: Path) -> str:
    try:
        extra = json.loads(manifest.read_text(encoding="utf-8"))
        status, when = extra.get("status"), extra.get("ended") or extra.get("opened")
    except (OSError, ValueError, AttributeError):
        return ""
    stamp = time.strftime(", %Y-%m-%d %H:%M", time.localtime(when)) if isinstance(when, (int, float)) else ""
    return f" ({status}{stamp})" if isinstance(status, str) else ""


class RunSession:
    def __init__(
        self,
        project_dir: Path,
        project: str,
        resume: bool | str,
        *,
        writes: bool,
        replay: bool = False,
        run_id: str | None = None,
    ):
        run_dir = find_run_to_resume(project_dir, resume) if resume else None
        self.resumed = run_dir is not None
        #: the run's rewinds so far (``resume_step``, rewind.py), oldest first
        self.rewinds: tuple[rewind.RewindPoint, ...] = ()
        if run_dir is None:
            if resume:
                notice(f"resume: no earlier run of {project!r} in {project_dir}; starting a new run")
            run_id = run_id or new_run_id()
            self.manifest = RunManifest(project_dir / run_id, project, run_id)
            self.last_seq = self.last_step = -1
        else:
            self.manifest = RunManifest.load(run_dir)
            self.rewinds = rewind.points_of(self.manifest.extra.get("rewinds"))
            self.last_seq, self.last_step = self._where_it_stopped()
            if not replay:
                notice(f"resume: continuing run {self.manifest.run_id} of {project!r} after step {self.last_step}")
        self.writes = writes
        #: progress comes from every backend's thread: one of them drops segments at a time
        self._dropping = threading.Lock()
        if writes:
            if not replay:
                self.manifest.opened = time.time()
                self.manifest.mark_running()
            self.manifest.write()

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    @property
    def run_dir(self) -> Path:
        return self.manifest.path.parent

    def _where_it_stopped(self) -> tuple[int, int]:
        """The last seq and step of the earlier process: run.json, or a journal that got further."""
        last_seq, last_step = self.manifest.last_seq, self.manifest.last_step
        journal = self.run_dir / JOURNAL_NAME
        # a journal sealed just now holds only its header: its newest segment says how far it got
        journals = [*journal_segments(journal)[-1:], journal, *sorted(self.run_dir.glob(spill_name("*")))]
        for path in journals:
            seq, step = journal_tail(path)
            last_seq, last_step = max(last_seq, seq), max(last_step, step)
        # what each backend may hold: the records its last call was handed (a buffering SDK may have stored
        # them). Not the journal's: its lines say how far it got, and a write the kill cut short stored none.
        cursor_files = [path for path in self.run_dir.glob(cursor_name("*")) if path.name != cursor_name("jsonl")]
        for path in cursor_files:
            _, _, seq, step = CursorFile.read(path) or NOWHERE
            last_seq, last_step = max(last_seq, seq), max(last_step, step)
        if self.rewinds:  # steps the earlier timeline reached past a rewind are not where the run stopped
            last_step = rewind.last_step(self.manifest, journals, cursor_files, self.rewinds)
        return last_seq, last_step

    def rewind_to(self, step: int) -> rewind.RewindPoint | None:
        """``resume_step``: the run carries on at ``step``. When an earlier process got further, what it
        logged from ``step`` on is superseded: the point is kept in run.json and returned (``None``: nothing
        to supersede)."""
        point = None
        if self.resumed and step <= self.last_step:
            point = rewind.new_point(step, self.last_seq)
            self.rewinds = (*self.rewinds, point)
            self.manifest.extra["rewinds"] = [p.to_json() for p in self.rewinds]
            self.manifest.last_step = step - 1
            if self.writes:
                self.manifest.write()
            notice(
                f"resume: run {self.run_id} goes back from step {self.last_step} to step {step}; "
                f"what was logged from step {step} on is superseded"
            )
        elif self.resumed and step > self.last_step + 1:
            notice(
                f"resume: run {self.run_id} carries on at step {step} (the earlier process stopped at {self.last_step})"
            )
        self.last_step = step - 1
        return point

    # -- per backend --------------------------------------------------------------------------
    def resume_state(self, backend: str) -> dict[str, Any] | None:
        return self.manifest.backends.get(backend) if self.resumed else None

    def cursor(self, backend: str) -> int:
        return -1 if (cursor := self._known_cursor(backend)) is None else cursor

    def _known_cursor(self, backend: str) -> int | None:
        if not self.resumed:
            return None
        cursor = self.manifest.cursor(backend)
        on_file = self._on_file(backend)
        if on_file is not None:
            cursor = max(cursor if cursor is not None else -1, on_file[0])
        return cursor

    def cursor_step(self, backend: str) -> int:
        """The last metric step the backend holds durably, with its cursor (``-1``: none, or not known)."""
        if not self.resumed:
            return -1
        entry = self.manifest.progress.get(backend) or {}
        on_file = self._on_file(backend)
        steps = [rewind.cap_step(int(entry.get("seq", -1)), int(entry.get("step", -1)), self.rewinds)]
        if on_file is not None:
            steps.append(rewind.cap_step(on_file[0], on_file[1], self.rewinds))
        return max(steps)

    def handed(self, backend: str) -> tuple[int, int]:
        """The furthest record the backend took in the earlier processes, and its step (``-1``: none, or not
        known)."""
        on_file = self._on_file(backend) if self.resumed else None
        cursor = (self.cursor(backend), self.cursor_step(backend))
        if on_file is None:
            return cursor
        # a step reached before a rewind counts up to the step before the rewind point only
        return max(cursor, (on_file[2], rewind.cap_step(on_file[2], on_file[3], self.rewinds)))

    def _on_file(self, backend: str) -> tuple[int, int, int, int] | None:
        return CursorFile.read(self.run_dir / cursor_name(backend))

    def cursor_file(self, backend: str) -> CursorFile | None:
        return CursorFile(self.run_dir / cursor_name(backend)) if self.writes else None

    def backlog(self, backend: str) -> list[Path]:
        """Where a resumed backend finds the records it missed: the journal and its own spill.

        Only for a backend that reopened its earlier run and whose cursor is known; a backend
        starting a new run gets the new records only.
        """
        if not self.resumed or self.resume_state(backend) is None or self._known_cursor(backend) is None:
            return []
        return self.sources(backend)

    def sources(self, backend: str) -> list[Path]:
        """The files that hold every record of the run a backend may not have: the journal (but for the
        journal itself) and the backend's spill."""
        paths = [self.run_dir / spill_name(backend)]
        if backend != "jsonl":
            paths[:0] = journal_files(self.run_dir / JOURNAL_NAME)
        return [path for path in paths if path.is_file()]

    def name_backends(self, names: list[str]) -> None:
        if self.writes:
            self.manifest.name_backends(names)

    def backend_started(self, backend: str, state: Any) -> None:
        """Keep how to reopen ``backend``'s run (its ``resume_state``), if run.json can hold it."""
        if not self.writes:
            return
        try:
            json.dumps(state)
        except (TypeError, ValueError) as error:
            logger.warning("backend %r: resume_state() is not JSON (%s); this run cannot resume it", backend, error)
            state = None
        self.manifest.set_backend(backend, state)

    def progress(self, backend: str, seq: int, step: int) -> None:
        if self.writes:
            self.manifest.set_progress(backend, seq, step)
            self._drop_delivered_segments()

    def _drop_delivered_segments(self) -> None:
        """A journal written in segments (``segment_mb``) loses each once every backend of the run holds it;
        a backend that has not reported progress yet (starting, or failed to start) holds none."""
        journal = self.run_dir / JOURNAL_NAME
        if not journal_segments(journal):
            return
        named = [name for name in self.manifest.named if name != "jsonl"]
        cursor = min((self.manifest.progress.get(name, {}).get("seq", -1) for name in named), default=-1)
        with self._dropping:
            try:
                for segment in drop_delivered_segments(journal, cursor):
                    logger.debug("journal segment %s dropped: every backend holds its records", segment.name)
            except OSError as error:  # a segment left behind costs disk, never records
                logger.warning("could not drop a delivered journal segment: %s", error)

    def close(
        self, last_step: int, status: str = "finished", ended: float | None = None, owed: dict[str, int] | None = None
    ) -> None:
        """The run ends with ``status`` (``finished``, or ``crashed: ...``/``killed: ...``) at ``ended`` (default:
        now) in run.json; a replay leaves the status of the run it completes as it was. ``owed``: how many
        records each backend of this process ended without (``tracking runs`` lists them; a replay that
        delivers them clears its backend's count)."""
        if self.writes:
            self.manifest.last_step = max(last_step, self.manifest.last_step)
            if owed:
                counts = {**self.manifest.extra.get(OWED_KEY, {}), **owed}
                self.manifest.extra[OWED_KEY] = {name: count for name, count in counts.items() if count}
            if self.manifest.extra.get("status") == "running" and self.manifest.extra.get("pid") == os.getpid():
                self.manifest.extra["status"] = status
                self.manifest.extra["ended"] = time.time() if ended is None else ended
            self.manifest.write()
