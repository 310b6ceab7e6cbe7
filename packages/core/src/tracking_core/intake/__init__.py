"""Call intake: what a call of the public API becomes, in the caller's thread, before anything is queued.

Everything here is cheap and synchronous: a value is checked, copied and made plain once, at the
call, so the backends' threads (or the delivery process) only ever see plain, immutable records.

- ``values``: ``snapshot``, the caller's values as a flat ``{str: int | float | str}`` plus rejections
  (the hot path's fast paths live here).
- ``config``: ``sanitize_config`` (what every backend's ``store_init_configuration`` receives), and the
  helpers adapters share: ``flatten_config``, ``stringify``, ``merge_config``.
- ``redaction``: secrets by key name and by value shape.
- ``media``: whether images, tables and figures are accepted — decided once for every backend.
- ``figures``: figures copied at the call and restored in each worker.
- ``preflight``: argument checks that name the parameter; missing SDKs.
- ``record``: ``Record``, the one shape a call travels in to every later layer, and ``deliver``
  (record kind -> tracker method).
"""
