"""Event files are framed and the hparams summaries built without the TensorFlow stub, exactly as the SDK would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tracking_tensorboard import _events, _records


@pytest.mark.parametrize("by_words", [True, False], ids=["by-words", "byte-loop"])
@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 7, 8, 9, 255, 4096])
def test_the_checksum_is_the_one_tensorboard_computes(size, by_words, monkeypatch):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    monkeypatch.setattr(_records, "_BY_WORDS", by_words and _records._BY_WORDS)
    data = os.urandom(size)
    assert _records.masked_crc32c(data) == masked_crc32c(data)


def test_a_framed_record_is_the_one_tensorboards_record_writer_writes():
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    data = os.urandom(300)
    buffer = io.BytesIO()
    RecordWriter(buffer).write(data)
    assert _records.framed(data) == buffer.getvalue()


def test_hparams_summaries_match_the_plugins_own():
    from tensorboard.plugins.hparams import api_pb2, metadata
    from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_data

    info = hparams_data.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=12.5)
    theirs = metadata.create_summary_metadata(hparams_data.HParamsPluginData(session_end_info=info))
    ours = _events.hparams_end_value(12.5)
    assert ours.tag == metadata.SESSION_END_INFO_TAG
    assert ours.metadata.SerializeToString() == theirs.SerializeToString()
    assert ours.tensor.SerializeToString() == metadata.NULL_TENSOR.SerializeToString()
    assert _events.hparams_start_value({}, 1.0).tag == metadata.SESSION_START_INFO_TAG
    assert _events.hparams_experiment_value({}, {}, {}).tag == metadata.EXPERIMENT_TAG


def test_starting_the_writer_imports_neither_the_tensorflow_stub_nor_its_record_writer():
    code = "import sys, tracking_tensorboard._events; print(sorted(m for m in sys.modules if m.startswith('tensorboard.')))"
    modules = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "tensorboard.compat.tensorflow_stub" not in modules
    assert "tensorboard.summary.writer" not in modules
    assert "tensorboard.compat.proto.event_pb2" in modules
