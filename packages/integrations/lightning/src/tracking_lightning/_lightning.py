"""The Lightning names the logger is built on, from ``lightning.pytorch`` or else ``pytorch_lightning``.

Both distributions take ``rank_zero_only`` from ``lightning_utilities``, so the rank either ``Trainer``
sets is the one this logger reads, whichever package the base class came from.
"""

from __future__ import annotations

try:
    from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
    from lightning.pytorch.utilities.rank_zero import rank_zero_only
except ImportError:  # only the older distribution is installed
    try:
        from pytorch_lightning.loggers.logger import Logger, rank_zero_experiment
        from pytorch_lightning.utilities.rank_zero import rank_zero_only
    except ImportError as error:
        raise ImportError(
            "tracking_lightning.TrackingLogger needs Lightning: pip install lightning (or pytorch-lightning)"
        ) from error

__all__ = ["Logger", "rank_zero_experiment", "rank_zero_only"]
