"""What ``finish()`` returns: per backend, what was delivered, dropped, spilled and why."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BackendReport:
    name: str
    state: str = "pending"  # starting, running, finished, quarantined, start_failed, finish_failed, timed_out
    delivered: int = 0
    dropped: int = 0
    spilled: int = 0
    errors: int = 0
    spill_path: str | None = None
    last_error: str | None = None
    key_map: dict[str, str] = field(default_factory=dict)
    skipped_values: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Everything handed to this backend arrived and the backend closed cleanly."""
        return self.state == "finished" and self.dropped == 0 and self.spilled == 0 and self.errors == 0


@dataclass
class FinishReport:
    backends: dict[str, BackendReport]
    run_dir: str | None = None
    rejected_values: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        return [name for name, backend in self.backends.items() if not backend.ok]

    @property
    def ok(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        header = ("backend", "state", "delivered", "dropped", "spilled", "errors")
        rows = [header] + [
            (b.name, b.state, str(b.delivered), str(b.dropped), str(b.spilled), str(b.errors))
            for b in self.backends.values()
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * width for width in widths))
        for backend in self.backends.values():
            if backend.spill_path:
                lines.append(f"{backend.name}: undelivered records in {backend.spill_path} (tracking replay {backend.spill_path} --to {backend.name})")
            if backend.last_error:
                lines.append(f"{backend.name}: last error: {backend.last_error}")
            for original, renamed in backend.key_map.items():
                lines.append(f"{backend.name}: key {original!r} stored as {renamed!r}")
            for key, reason in backend.skipped_values.items():
                lines.append(f"{backend.name}: skipped {key!r}: {reason}")
        for key, reason in self.rejected_values.items():
            lines.append(f"all backends: skipped {key!r}: {reason}")
        return "\n".join(lines)
