"""The backend kit: what every adapter needs, written once (``sdk``: SDK objects, resume, per-rank runs)."""
