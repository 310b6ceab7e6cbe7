"""What only older Aim releases need, one module per release line (the newest line needs none of it).

- :mod:`.v3_18`: Aim 3.18, which has no run artifacts and indexes only a run with a progress file;
- :mod:`.v3_25`: Aim 3.19 to 3.25, whose ``Run.artifacts_uri`` fails on a run that has none.
"""
