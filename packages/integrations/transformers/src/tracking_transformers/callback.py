"""``TrackingCallback``: a ``TrainerCallback`` that runs a tracking run alongside ``Trainer.train()``.

transformers registers its reporting integrations (``report_to="wandb"``...) in a fixed table inside
the library, so ``report_to="tracking"`` cannot exist without patching transformers: pass
``report_to="none"`` and this callback in ``callbacks=[...]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import tracking_core
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from .keys import trainer_keys

DEFAULT_PROJECT = "huggingface"  # the project transformers' W&B integration uses when none is set


class TrackingCallback(TrainerCallback):
    """Sends the ``Trainer``'s config, logs and (optionally) checkpoints to tracking's backends.

    At train begin, on the world's main process only: a run starts with ``TrainingArguments.to_dict()``
    merged over the model's config (``model.config.to_dict()``) as its config, secrets redacted by
    tracking. Every ``Trainer`` log (training loss, learning rate, evaluation metrics) is logged at
    ``state.global_step`` with the ``train/``, ``eval/``, ``test/`` names of transformers' own W&B and
    TensorBoard callbacks. At train end the run finishes; :attr:`report` is its
    :class:`~tracking_core.FinishReport`. A later ``trainer.evaluate()`` reopens the same run
    (``resume``), so its metrics join the training's. ``train(resume_from_checkpoint=...)`` continues
    the project's latest run under ``logging_dir`` after the checkpoint's ``global_step``: what an
    earlier process logged after it is superseded (``resume_step``, see the README's rewind table).

    ``log_with``, ``logging_dir`` (default ``<output_dir>/runs``), ``init_kwargs`` and ``options``
    (``on_error``, ``queue_size``, ...) are those of :func:`tracking_core.init`; ``project`` defaults to
    ``"huggingface"``; ``config`` adds keys of your own. ``log_checkpoints=True`` stores each saved
    checkpoint folder as an artifact in the backends that keep artifacts (off by default: checkpoints
    are large).
    """

    def __init__(
        self,
        log_with: Any = "jsonl",
        project: str | None = None,
        logging_dir: str | os.PathLike[str] | None = None,
        *,
        config: dict[str, Any] | None = None,
        init_kwargs: dict[str, Any] | None = None,
        log_checkpoints: bool = False,
        **options: Any,
    ) -> None:
        self.log_with = log_with
        self.project = project or DEFAULT_PROJECT
        self.logging_dir = logging_dir
        self.config = dict(config or {})
        self.init_kwargs = init_kwargs
        self.log_checkpoints = log_checkpoints
        self.options = options
        self.run: tracking_core.Dispatcher | None = None
        self.run_id: str | None = None
        self.report: tracking_core.FinishReport | None = None
        #: The tracker objects of the open run, or of the last one once finished (to read back, or reach the SDK).
        self.trackers: list[tracking_core.GeneralTracker] = []

    # -- the run ---------------------------------------------------------------------------------
    def _logging_dir(self, args: Any) -> str | os.PathLike[str]:
        return self.logging_dir if self.logging_dir is not None else os.path.join(args.output_dir, "runs")

    def _start(
        self, args: Any, config: dict[str, Any] | None, resume: bool | str = False, resume_step: int | None = None
    ) -> tracking_core.Dispatcher:
        options = dict(self.options)
        resume = resume or options.pop("resume", False)
        if resume_step is not None:
            options["resume_step"] = resume_step
        self.run = tracking_core.init(
            self.project,
            log_with=_fresh(self.log_with) if resume else self.log_with,
            logging_dir=self._logging_dir(args),
            config=config,
            init_kwargs=self.init_kwargs,
            resume=resume,
            **options,
        )
        self.run_id = self.run.run_id
        self.trackers = self.run.trackers
        return self.run

    def run_config(self, args: Any, model: Any = None) -> dict[str, Any]:
        """The run's config: the model's config, then the training arguments over it, then ``config``."""
        combined: dict[str, Any] = {}
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_dict"):
            combined.update(model_config.to_dict())
        combined.update(args.to_dict())
        if model is not None and hasattr(model, "num_parameters"):
            combined["model/num_parameters"] = model.num_parameters()
        combined.update(self.config)
        return combined

    # -- Trainer events ----------------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        if self.run is None and state.global_step > 0:
            # train(resume_from_checkpoint=...) restored the checkpoint's state: its run goes on after the
            # checkpoint's step (logged before it was saved); what an earlier process logged later is superseded
            self._start(
                args, self.run_config(args, model), resume=self.run_id or True, resume_step=state.global_step + 1
            )
        elif self.run is None:
            self._start(args, self.run_config(args, model))
        else:  # train() again with the run still open (a run of yours, or an interrupted train)
            self.run.log_config(self.run_config(args, model))

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or not logs:
            return
        run = self.run
        if run is None:  # evaluate()/predict() after train end: the same run, reopened
            run = self._start(args, None, resume=self.run_id or False)
        run.log(trainer_keys(logs), step=state.global_step)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not (self.log_checkpoints and state.is_world_process_zero and self.run is not None):
            return
        name = f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        folder = os.path.join(args.output_dir, name)
        if os.path.isdir(folder):
            self.run.log_artifacts(folder, artifact_path=name)
            self.run.flush()  # copied before a later save's rotation (save_total_limit) may delete the folder

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.finish()

    def finish(self) -> tracking_core.FinishReport | None:
        """Finish the open run (the ``Trainer`` calls this at train end); later calls return the same report."""
        if self.run is not None:
            self.report = self.run.finish()
            self.run = None
        return self.report


def _fresh(log_with: Any) -> Any:
    """Tracker objects serve one run: a reopened run gets new ones of the same classes, built by name."""
    if isinstance(log_with, tracking_core.GeneralTracker):
        return log_with.name
    if isinstance(log_with, Iterable) and not isinstance(log_with, str):
        return [item.name if isinstance(item, tracking_core.GeneralTracker) else item for item in log_with]
    return log_with
