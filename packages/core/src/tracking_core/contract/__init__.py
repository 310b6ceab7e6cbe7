"""The contract: what a backend implements, which backends exist, and how a run picks and builds them.

This is the surface ``accelerate.tracking`` users and backend authors meet; everything else in
``tracking_core`` is built on it and nothing here imports the machinery above it.

- ``tracker``: ``GeneralTracker`` (the class every backend subclasses), ``RunContext``, capabilities,
  ``on_main_process``, and the ``tracking/rewind`` marker the default ``rewind`` stores (``store_marker``).
- ``histogram``: ``Histogram``, the one shape every backend maps histograms from.
- ``distributed``: global rank and world size from the launcher's environment (no torch).
- ``noop``: stand-ins on ranks that do not log.
- ``registry``: which tracker classes exist (entry points, runtime registrations, ``LoggerType``).
- ``backends_info``: facts about the built-in backends (SDK modules, embedded defaults) and what
  ``tracking list`` shows.
- ``builtins``: the one table of the project's own backends (entry point, SDK module, embedded
  default, package); the registry, ``backends_info``, the tests and the benchmarks read it.
- ``selection``: ``log_with`` and ``init_kwargs`` turned into tracker instances, as accelerate does.
"""
