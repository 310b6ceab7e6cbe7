"""Code for the SwanLab releases older than the newest line this backend is written against.

The tracker's mapping is written against SwanLab 0.9.1 and later. What the older releases need instead
lives here, one module or sub-package per release line, each named after the first release it serves:

* :mod:`.v0_8_0` -- 0.8.0 to 0.9.0 (``swanlab.sdk``, the current SDK): a SIGINT handler set off the
  main thread, which these releases' run refuses.
* :mod:`.v0_6_2` -- 0.6.2 to 0.7.x, the SDK line before ``swanlab.sdk`` (offline runs in
  ``backup.swanlab``): its own start, run object, writer flush, reader and importer. 0.5.8 to 0.6.1
  start through it too.
* :mod:`.v0_5_8` -- 0.5.8 to 0.6.1, which have no offline mode: a run without an account is written in
  SwanLab's local mode (swanboard's store), with that store's start, flush, reader and importer.

Which line is installed is detected at ``start()`` (``v0_6_2.in_use()``, ``v0_5_8.in_use()``), not assumed.
"""
