"""Code for the Trackio releases older than the newest line this backend is written against (0.24 and later).

What the older releases need instead lives here, each detected at run time, not assumed:

* :mod:`.before_v0_24` -- what every release before 0.24 does differently, feature by feature: the
  dashboard a local run wrote through before 0.18 (given an in-process client here), no run ids, no flush
  hook, tables without column names, RGBA images, the store location before 0.5.2.
* :mod:`.v0_0_17` -- 0.0.17 to 0.0.20, whose ``Run.log`` takes no step: rows written with their steps.
* :mod:`.v0_0_3` -- 0.0.3 to 0.0.16, whose store keeps no step: their row writers, which keep the
  config, and 0.0.3's CSV store (its reader and importer).
"""
