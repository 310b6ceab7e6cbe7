"""Property-based: random nested values, configs and media through the public API on the cell's backend.

One run per module (starting an SDK per example would take minutes): every example logs at its own
step under its own prefix and never raises; the last test finishes the run and checks that every
finite number is read back from the backend's own storage and every other value is in the report.
"""

from __future__ import annotations

import json
import math
import os
import types

import numpy as np
import pytest
import tracking_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracking_core.intake.config import sanitize_config

CELL = os.environ.get("TRACKING_BACKEND") or "jsonl"
BOUNDED = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# Named functions, not lambdas: Hypothesis describes a lambda by reading its source, which walks
# sys.modules while the backends' threads may be importing.
def _not_finite(value: float) -> bool:
    return not math.isfinite(value)


def _beyond_64_bits(value: int) -> int:
    return value * 2**70


def _float_array(size: int) -> np.ndarray:
    return np.arange(size, dtype=np.float32)


def _namespace(items: list) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{f"k{index}": item for index, item in enumerate(items)})


def _dicts(children):
    return st.dictionaries(safe_keys, children, max_size=3)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), children, max_size=3),
        st.builds(_namespace, st.lists(children, max_size=3)),
    )


safe_keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=5)
numbers = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False),
    st.booleans(),
)
odd_leaves = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True).filter(_not_finite),
    st.integers().map(_beyond_64_bits),
    st.just(10**400),
    st.binary(max_size=4),
    st.lists(st.integers(0, 9), max_size=3),
    st.complex_numbers(allow_nan=False, max_magnitude=10),
    st.builds(_float_array, st.integers(0, 4)),
    st.builds(np.float32, st.floats(-1e3, 1e3, allow_nan=False)),
    st.text(max_size=12),
)
hostile_keys = st.one_of(st.text(max_size=8), st.sampled_from(["", "/", "a/", "..", "a\nb", "\ud800", "x" * 300]))
value_trees = st.recursive(
    st.one_of(numbers, odd_leaves),
    _dicts,
    max_leaves=8,
)
configs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10), st.binary(max_size=4)),
    _containers,
    max_leaves=10,
)

HOSTILE_CONFIG = {
    "seed": 2**64,
    "huge": 10**400,
    "nan": float("nan"),
    "ns": types.SimpleNamespace(api_key="x", depth=3),
    "surrogate\ud800": "text\udcff",
    "set": {3, 1, 2},
    "nested": {"tuple": (1, "a", None), "empty": {}, "": 1},
    "object": object(),
}


class Ledger:
    """What the examples logged: finite numbers by (key, step), and keys that must be in the report."""

    def __init__(self, run):
        self.run = run
        self.step = 0
        self.numbers: dict[tuple[str, int], float] = {}
        self.must_report: set[str] = set()
        self.non_finite: set[str] = set()

    def next_step(self) -> int:
        self.step += 1
        return self.step


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    root = tmp_path_factory.mktemp("properties")
    previous = os.getcwd()
    os.chdir(root)
    try:
        run = tracking_core.init("properties", log_with=[CELL], logging_dir=root / "runs", config=HOSTILE_CONFIG)
        yield Ledger(run)
    finally:
        os.chdir(previous)


def _expect(ledger: Ledger, key: str, value, step: int) -> None:
    if isinstance(value, dict):
        for inner_key, inner in value.items():
            _expect(ledger, f"{key}/{inner_key}", inner, step)
    elif isinstance(value, bool) or (type(value) is int and abs(value) < 2**63):
        ledger.numbers[(key, step)] = float(value)
    elif type(value) is float and math.isfinite(value):
        ledger.numbers[(key, step)] = value
    elif type(value) is float:
        ledger.non_finite.add(key)
    elif isinstance(value, np.float32):
        ledger.numbers[(key, step)] = float(value)
    elif not isinstance(value, str) and not (isinstance(value, np.ndarray) and value.size == 1):
        ledger.must_report.add(key)


@BOUNDED
@given(
    tree=st.dictionaries(safe_keys, value_trees, min_size=1, max_size=4),
    hostile=st.dictionaries(hostile_keys, st.one_of(numbers, odd_leaves), max_size=3),
)
def test_random_values_never_raise_out_of_log(ledger, tree, hostile):
    step = ledger.next_step()
    ledger.run.log({f"p{step}": tree, f"h{step}": hostile}, step=step)
    _expect(ledger, f"p{step}", tree, step)


@BOUNDED
@given(
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    dtype=st.sampled_from(["uint8", "float32", "int64", "bool", "complex64"]),
    scale=st.sampled_from([1, 255, 2**40, -1]),
)
def test_random_images_never_raise_out_of_log_images(ledger, shape, dtype, scale):
    image = (np.ones(shape) * scale).astype(dtype) if dtype != "complex64" else np.ones(shape, dtype=dtype)
    ledger.run.log_images({f"img{ledger.next_step()}": image}, step=ledger.step)


@BOUNDED
@given(
    rows=st.lists(st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=4), st.none()), max_size=3), max_size=3),
    columns=st.one_of(st.none(), st.lists(st.text(alphabet="abc", min_size=1, max_size=3), max_size=3)),
)
def test_random_tables_never_raise_out_of_log_table(ledger, rows, columns):
    ledger.run.log_table(f"table{ledger.next_step()}", columns=columns, data=rows, step=ledger.step)


@pytest.mark.parametrize("figure", [None, object(), "not a figure", 3.0])
def test_a_non_figure_never_raises_out_of_log_figure(ledger, figure):
    ledger.run.log_figure(figure, f"fig{ledger.next_step()}", step=ledger.step)


@BOUNDED
@given(config=configs)
def test_any_config_becomes_json(config):
    json.dumps(sanitize_config(config), allow_nan=True)


def test_every_finite_number_is_read_back_and_the_rest_is_reported(ledger):
    report = ledger.run.finish()
    backend = report.backends[CELL]
    assert backend.state == "finished" and backend.errors == 0 and backend.spilled == 0, str(report)
    for key in ledger.must_report:
        assert key in report.rejected_values, (key, report.rejected_values)
    stored = ledger.run.get_tracker(CELL).read_back_metrics()
    missing = []
    for (key, step), value in ledger.numbers.items():
        found = stored.get(backend.key_map.get(key, key), {}).get(step)
        if found is None or not math.isclose(found, value, rel_tol=1e-6, abs_tol=1e-30):
            missing.append((key, step, value, found))
    assert not missing, missing[:10]
