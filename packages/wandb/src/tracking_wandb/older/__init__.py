"""Code for the W&B releases older than 0.31, the line this backend is written against.

* :mod:`.v0_19` -- W&B 0.19.10 (the floor) to 0.30: the process setup and credential lookup of 0.19,
  the settings fields before 0.31, each detected from the installed SDK.

The run-metadata message of 0.19.10 to 0.20 (``MetadataRequest``) is one of the two generations
:mod:`tracking_wandb.run_metadata` detects and sends.
"""
