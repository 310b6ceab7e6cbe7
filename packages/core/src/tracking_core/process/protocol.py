"""The messages between the training process and the delivery process, in one place.

Every message is a tuple whose first field names its kind, so either end can dispatch on
``message[0]`` (or the class). The fields keep the order the plain tuples had. Both ends are the
same installed ``tracking_core`` (the delivery process is started from the training process's
interpreter), so the classes pickle by name like :class:`~tracking_core.intake.record.Record`, which
crosses inside :class:`Records`.

The connection opens with the set-up, a :class:`Setup` (where the run is, the delivery options, each
backend to build and where it starts; see ``run.process_mode.start_delivery_process``), answered by
:class:`Ready`.

Commands, training process -> delivery process:

- :class:`Records` — a batch of ``(record, targets)``; ``targets`` ``None`` is every backend.
- :class:`Flush` — make everything sent before it durable on the named backends, then answer
  :class:`Flushed` with the same token.
- :class:`Finish` — finish the named backends; each answers :class:`Finished`.

Events, delivery process -> training process:

- :class:`Ready` — the backends are built; records may come.
- :class:`Started` — a backend started: its resume state, start-up time and the values its tracker
  object shows (see :mod:`.remote_view`).
- :class:`Progress` — how far a backend got, for ``run.json``.
- :class:`Safe` — the training process may forget the records up to ``seq`` for this backend.
- :class:`Flushed` — the answer to a :class:`Flush`.
- :class:`Error` — a backend's error for the training process's ``on_error`` (its cause travels as
  :func:`~tracking_core.errors.portable_cause` made it).
- :class:`Finished` — a backend finished: its report and the final values of its tracker object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from ..intake.record import Record
    from ..report import BackendReport


# -- the set-up --------------------------------------------------------------------------------
class RunSetup(NamedTuple):
    """Where the run is: what every backend's ``RunContext`` in the delivery process is made of."""

    project: str
    run_id: str
    run_dir: str
    #: the run's logging folder, and the one the trackers were given (``None``: their own default)
    logging_dir: str
    tracker_logging_dir: str | None
    rank: int
    world_size: int
    group: str | None
    resumed: bool
    #: ``RewindPoint.to_json()`` of the rewind to apply, and of every earlier one (store/rewind.py)
    rewind: dict[str, Any] | None
    superseded: list[dict[str, Any]]
    #: the run asked for system samples at the backends (``RunContext.system_metrics`` of those that take them)
    system_metrics: bool = False
    #: when the run began (``RunContext.started``)
    started: float | None = None


class DeliveryOptionsSetup(NamedTuple):
    """The run's delivery options, as the training process checked them."""

    on_error: str
    flush_interval: float
    retry: tuple[float, float]
    queue_size: int
    on_full: str
    finish_timeout: float


class BackendSetup(NamedTuple):
    """One backend to build in the delivery process, and where its delivery starts."""

    #: (module, qualified name) of its tracker class, and the keyword arguments it is built with
    class_path: tuple[str, str]
    init_kwargs: dict[str, Any] | None
    resume: Any
    cursor: int
    cursor_step: int
    #: the furthest record (``seq``, step) it took in the earlier processes
    handed: tuple[int, int]
    backlog: list[str]
    backlog_before: int


class Setup(NamedTuple):
    """The first message: everything the delivery process needs to build the run's backends."""

    #: the training process's import path, and the modules that register its trackers
    sys_path: list[str]
    modules: list[str]
    context: RunSetup
    options: DeliveryOptionsSetup
    backends: list[BackendSetup]


# -- commands ---------------------------------------------------------------------------------
class Records(NamedTuple):
    kind: Literal["records"]
    items: list[tuple[Record, tuple[str, ...] | None]]


class Flush(NamedTuple):
    kind: Literal["flush"]
    token: int
    names: tuple[str, ...]


class Finish(NamedTuple):
    kind: Literal["finish"]
    names: tuple[str, ...]
    #: how the run ended (``GeneralTracker.run_end``): ``(status, ended)``
    end: tuple[str, float | None] = ("finished", None)


Command = Records | Flush | Finish


# -- events -----------------------------------------------------------------------------------
class Ready(NamedTuple):
    kind: Literal["ready"]


class Started(NamedTuple):
    kind: Literal["started"]
    name: str
    state: Any
    start_seconds: float | None
    view: dict[str, Any]


class Progress(NamedTuple):
    kind: Literal["progress"]
    name: str
    seq: int
    step: int


class Safe(NamedTuple):
    kind: Literal["safe"]
    name: str
    seq: int


class Flushed(NamedTuple):
    kind: Literal["flushed"]
    token: int


class Error(NamedTuple):
    kind: Literal["error"]
    name: str
    message: str
    cause: tuple[BaseException, str] | None


class Finished(NamedTuple):
    kind: Literal["finished"]
    name: str
    report: BackendReport
    view: dict[str, Any]


Event = Ready | Started | Progress | Safe | Flushed | Error | Finished

__all__ = [
    "BackendSetup",
    "Command",
    "DeliveryOptionsSetup",
    "Error",
    "Event",
    "Finish",
    "Finished",
    "Flush",
    "Flushed",
    "Progress",
    "Ready",
    "Records",
    "RunSetup",
    "Safe",
    "Setup",
    "Started",
]
