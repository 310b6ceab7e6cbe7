"""Event files are framed and the hparams summaries built without the TensorFlow stub, exactly as the SDK would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tracking_tensorboard import summaries, tfrecord


@pytest.mark.parametrize("by_words", [True, False], ids=["by-words", "byte-loop"])
@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 7, 8, 9, 255, 4096])
def test_the_checksum_is_the_one_tensorboard_computes(size, by_words, monkeypatch):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    monkeypatch.setattr(tfrecord, "_BY_WORDS", by_words and tfrecord._BY_WORDS)
    data = os.urandom(size)
    assert tfrecord.masked_crc32c(data) == masked_crc32c(data)


def test_a_framed_record_is_the_one_tensorboards_record_writer_writes():
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    data = os.urandom(300)
    buffer = io.BytesIO()
    RecordWriter(buffer).write(data)
    assert tfrecord.framed(data) == buffer.getvalue()


def test_hparams_summaries_match_the_plugins_own():
    from tensorboard.plugins.hparams import api_pb2, metadata
    from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_data

    info = hparams_data.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=12.5)
    theirs = metadata.create_summary_metadata(hparams_data.HParamsPluginData(session_end_info=info))
    ours = summaries.hparams_end_value(12.5)
    assert ours.tag == metadata.SESSION_END_INFO_TAG
    assert ours.metadata.SerializeToString() == theirs.SerializeToString()
    assert ours.tensor.SerializeToString() == metadata.NULL_TENSOR.SerializeToString()
    assert summaries.hparams_start_value({}, 1.0).tag == metadata.SESSION_START_INFO_TAG
    assert summaries.hparams_experiment_value({}, {}, {}).tag == metadata.EXPERIMENT_TAG


def test_starting_the_writer_imports_neither_the_tensorflow_stub_nor_its_record_writer():
    code = "import sys, tracking_tensorboard.event_writer; print(sorted(m for m in sys.modules if m.startswith('tensorboard.')))"
    modules = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "tensorboard.compat.tensorflow_stub" not in modules
    assert "tensorboard.summary.writer" not in modules
    assert "tensorboard.compat.proto.event_pb2" in modules


@pytest.mark.parametrize(
    ("values", "step", "wall_time"),
    [
        ({"loss": 0.5, "acc": 1}, 3, 1000.25),
        ({"train/loss": -0.0, "big": 3.4028234663852886e38, "tiny": -1e-45}, 0, 1.0),
        ({"ünïcode/ключ": 2.5, "x" * 200: 7}, 2**63 - 1, 1.7e9),
        ({"neg": 1.0}, -5, 1.7e9),
        ({"neg": 1.0}, None, 12.0),
        ({f"layer{index:03d}/grad_norm": index / 7 for index in range(300)}, 123_456, 1.5e9),
    ],
    ids=["plain", "edges-of-float32", "long-and-unicode-tags", "negative-step", "no-step", "300-keys"],
)
def test_a_scalars_event_is_the_event_protobuf_serializes(values, step, wall_time):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    expected = event_pb2.Event(
        wall_time=wall_time,
        step=step or 0,
        summary=summary_pb2.Summary(value=[summaries.scalar_value_of(key, value) for key, value in values.items()]),
    ).SerializeToString()
    assert summaries.scalars_event(values, step, wall_time) == expected


@pytest.mark.parametrize(
    "values",
    [{"nan": float("nan")}, {"inf": float("inf")}, {"beyond": 3.5e38}, {"text": "a"}, {"flag": True}, {"": 1.0}, {}],
    ids=["nan", "infinity", "beyond-float32", "text", "bool", "empty-tag", "nothing"],
)
def test_values_a_scalars_event_does_not_take_go_the_general_way(values):
    assert summaries.scalars_event(values, 1, 1.0) is None


@pytest.mark.parametrize("sizes", [[146] * 200, [1, 8, 4096, 4097, 300] * 10, [146] * 3], ids=["batch", "mixed", "few"])
def test_framing_many_records_at_once_gives_the_same_bytes(sizes):
    chunks = [os.urandom(size) for size in sizes]
    assert tfrecord.framed_many(chunks) == b"".join(tfrecord.framed(chunk) for chunk in chunks)
