"""The backend author's kit: helpers an adapter package imports so its ``tracker.py`` is the SDK mapping.

Nothing here knows about runs, queues or delivery; each module is a small tool with one job.

- ``adapters``: images to HWC uint8, figures to PNG or arrays, table rows, ``merge_config``,
  ``probe_http`` (documented as ``tracking_core.adapters``).
- ``paths``: the path rule — names the library turns into files stay inside ``logging_dir``.
- ``png``: dependency-free PNG encode and decode.
- ``appendfile``: all-or-nothing flushes for append-only files.
- ``filelock``: an inter-process lock for embedded stores two ranks may create at once.
- ``store_cache``: new local stores copied from an empty store the SDK made once.
- ``sdk``: what every adapter repeats, written once: SDK objects that wait for start-up
  (``sdk_object``), the resume hand-shake (``saved_resume``, ``not_resumed``), per-rank naming.
- ``gitinfo``: the commit and branch of the run's code, read from ``.git`` without running ``git``.
"""
