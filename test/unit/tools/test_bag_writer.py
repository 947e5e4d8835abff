# Copyright 2026 freespace_seg maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
``bag``'s writer (tools/bag_writer.py) writes what rosbags' own Writer writes.

The hand-made Image CDR against ``serialize_cdr``; the MCAP file and metadata.yaml against
rosbags' Writer with the same messages, byte for byte and as read back; and a write that
fails in the middle of ``bag`` leaves nothing at OUT. Chunk compression and the O_DIRECT file
read back alike.
"""

import argparse
import errno
import importlib
from importlib.metadata import version
import io
import os
import sys

from freespace_seg.tools import bag
import numpy as np
import pytest

pytest.importorskip('rosbags', reason='the bag command needs rosbags: pip install rosbags')
from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness,  # noqa: E402
                                QosReliability, QosTime)
from rosbags.rosbag2 import Reader, StoragePlugin, Writer  # noqa: E402
from rosbags.typesys import get_typestore, Stores  # noqa: E402
from support import write_tiny_model  # noqa: E402

bag_writer = importlib.import_module('freespace_seg.tools.bag_writer')   # needs rosbags
BagWriter, image_cdr = bag_writer.BagWriter, bag_writer.image_cdr
KILTED = get_typestore(Stores.ROS2_KILTED)
#: the rosbags release whose MCAP storage McapStorage reproduces byte for byte
MIRRORED_ROSBAGS = '0.11.'


def _header(store, sec, nanosec, frame_id):
    t = store.types
    return t['std_msgs/msg/Header'](stamp=t['builtin_interfaces/msg/Time'](sec=sec,
                                                                           nanosec=nanosec),
                                    frame_id=frame_id)


def _rosbags_image(store, header, encoding, array):
    channels = 1 if array.ndim == 2 else array.shape[2]
    msg = store.types['sensor_msgs/msg/Image'](
        header=header, height=array.shape[0], width=array.shape[1], encoding=encoding,
        is_bigendian=0, step=array.shape[1] * channels, data=array.reshape(-1))
    return bytes(store.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


@pytest.mark.skipif(sys.byteorder != 'little', reason='serialize_cdr writes big-endian here')
@pytest.mark.parametrize('distro', ['ROS2_HUMBLE', 'ROS2_JAZZY', 'ROS2_KILTED'])
def test_image_cdr_equals_serialize_cdr(distro):
    """Odd widths and channel counts, encodings and frame_ids of every length mod 4."""
    store = get_typestore(getattr(Stores, distro))
    rng = np.random.default_rng(0)
    cases = [((1, 1), 'mono8'), ((3, 5), 'mono8'), ((7, 3, 3), 'rgb8'), ((2, 5, 4), 'bgra8'),
             ((1, 7, 2), '8UC2'), ((4, 9, 3), 'bgr8'), ((720, 1281, 3), 'rgb8'),
             ((0, 0), 'mono8'), ((2, 3), ''), ((2, 3), 'x' * 13)]
    frame_ids = ['', 'a', 'ab', 'abc', 'cam_optical', 'kamera_ü']
    for n, (shape, encoding) in enumerate(cases):
        array = rng.integers(0, 256, shape, dtype=np.uint8)
        for sec, frame_id in zip((0, 1, -5, 2 ** 31 - 1, 1_700_000_000, 7), frame_ids):
            header = _header(store, sec, 999_999_999 - n, frame_id)
            pieces = image_cdr(header, encoding, array)
            assert isinstance(pieces, tuple) and len(pieces) == 2
            assert np.shares_memory(np.frombuffer(pieces[1], np.uint8), array) or \
                array.size == 0   # the pixels are not copied
            assert b''.join(pieces) == _rosbags_image(store, header, encoding, array), \
                (shape, encoding, frame_id)


def test_image_cdr_refuses_what_it_cannot_write():
    header = _header(KILTED, 1, 2, 'cam')
    for bad in (np.zeros((2, 3), np.uint16), np.zeros((4, 6), np.uint8)[:, ::2],
                np.zeros(5, np.uint8)):
        with pytest.raises(ValueError):
            image_cdr(header, 'mono8', bad)


def _write(cls, path, storage, **options):
    """
    Write a bag with ``cls`` (rosbags' Writer or BagWriter); return the messages written.

    ``options`` go to BagWriter (chunk compression, direct I/O).

    Large images (each closes a chunk), small messages that fill a chunk of their own, two
    connections of one type, QoS profiles, a connection added after messages were written,
    bag times out of order, and an empty-topic connection.
    """
    store = KILTED
    t = store.types
    rng = np.random.default_rng(1)
    never = QosTime(sec=2147483647, nsec=4294967295)
    qos = Qos(history=QosHistory.KEEP_LAST, depth=5, reliability=QosReliability.BEST_EFFORT,
              durability=QosDurability.VOLATILE, deadline=never, lifespan=never,
              liveliness=QosLiveliness.AUTOMATIC, liveliness_lease_duration=never,
              avoid_ros_namespace_conventions=False)
    writer = cls(path, version=9, storage_plugin=StoragePlugin[storage.upper()], **options)
    writer.open()
    image = writer.add_connection('/cam/image_raw', 'sensor_msgs/msg/Image', typestore=store,
                                  offered_qos_profiles=[qos])
    mask = writer.add_connection('/cam/segmentation/mask', 'sensor_msgs/msg/Image',
                                 typestore=store)
    chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=store)
    writer.add_connection('/never', 'std_msgs/msg/Bool', typestore=store)
    written = []

    def put(conn, stamp, data):
        expect = bytes(b''.join(data) if isinstance(data, tuple) else data)
        writer.write(conn, stamp, data)
        written.append((conn.topic, stamp, expect))

    for i in range(6):
        stamp = 1_000_000_000 * (i + 1)
        header = _header(store, 100 + i, 5, 'cam_optical')
        rgb = rng.integers(0, 256, (480, 640 + i, 3), dtype=np.uint8)
        put(image, stamp, store.serialize_cdr(t['sensor_msgs/msg/Image'](
            header=header, height=480, width=640 + i, encoding='rgb8', is_bigendian=0,
            step=(640 + i) * 3, data=rgb.reshape(-1)), 'sensor_msgs/msg/Image'))
        mono = rng.integers(0, 2, (48 + i, 65), dtype=np.uint8)
        if cls is BagWriter:
            put(mask, stamp, image_cdr(header, 'mono8', mono))
        else:
            put(mask, stamp, _rosbags_image(store, header, 'mono8', mono))
        for k in range(3):
            put(chatter, stamp - 10 * k, store.serialize_cdr(
                t['std_msgs/msg/String'](data=f'hi {i} {k}' * (k + 1)), 'std_msgs/msg/String'))
    for i in range(3000):   # small messages alone: more than one chunk of them
        put(chatter, 9_000_000_000 + i, store.serialize_cdr(
            t['std_msgs/msg/String'](data='x' * (i % 700)), 'std_msgs/msg/String'))
    late = writer.add_connection('/late', 'std_msgs/msg/Header', typestore=store)
    put(late, 5, store.serialize_cdr(_header(store, 1, 2, 'late'), 'std_msgs/msg/Header'))
    writer.close()
    return written


def _read(path):
    """Return (connections, messages, metadata) of a bag as rosbags reads it back."""
    with Reader(path) as reader:
        conns = [(c.id, c.topic, c.msgtype, c.msgdef.data, c.digest, c.msgcount,
                  c.ext.serialization_format, c.ext.offered_qos_profiles)
                 for c in reader.connections]
        messages = [(c.topic, stamp, bytes(raw)) for c, stamp, raw in reader.messages()]
        meta = (reader.duration, reader.start_time, reader.end_time, reader.message_count)
    return conns, messages, meta


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_bag_writer_reads_back_as_rosbags_writer(tmp_path, storage):
    """The same messages through rosbags' Writer and BagWriter read back alike, bit for bit."""
    old = _write(Writer, tmp_path / 'old' / 'bag', storage)
    new = _write(BagWriter, tmp_path / 'new' / 'bag', storage)
    assert old == new
    got_old, got_new = _read(tmp_path / 'old' / 'bag'), _read(tmp_path / 'new' / 'bag')
    assert got_new == got_old
    conns, messages, meta = got_new
    assert sorted(messages) == sorted(new)   # every message, once, with its topic and time
    assert meta[3] == len(new)
    assert [c[1] for c in conns] == ['/cam/image_raw', '/cam/segmentation/mask', '/chatter',
                                     '/never', '/late']
    assert conns[0][7] and conns[0][7][0].depth == 5


def test_mcap_file_is_rosbags_own_byte_for_byte(tmp_path):
    """The very file that rosbags' MCAP storage writes (McapStorage), and metadata.yaml."""
    _write(Writer, tmp_path / 'old' / 'bag', 'mcap')
    _write(BagWriter, tmp_path / 'new' / 'bag', 'mcap')
    names = ['bag.mcap', 'metadata.yaml']
    assert sorted(os.listdir(tmp_path / 'old' / 'bag')) == names
    assert sorted(os.listdir(tmp_path / 'new' / 'bag')) == names
    same = {name: (tmp_path / 'old' / 'bag' / name).read_bytes() ==
            (tmp_path / 'new' / 'bag' / name).read_bytes() for name in names}
    if not all(same.values()) and not version('rosbags').startswith(MIRRORED_ROSBAGS):
        pytest.skip(f'rosbags {version("rosbags")} writes MCAP its own way now ({same}); '
                    'the files read back alike (test_bag_writer_reads_back_as_rosbags_writer)')
    assert same == {'bag.mcap': True, 'metadata.yaml': True}


def test_mcap_library_reads_the_summary(tmp_path):
    """The mcap library's reader: the summary, chunk indexes, schemas and messages."""
    mcap_reader = pytest.importorskip('mcap.reader', reason='pip install mcap')
    written = _write(BagWriter, tmp_path / 'bag', 'mcap')
    with open(tmp_path / 'bag' / 'bag.mcap', 'rb') as f:
        reader = mcap_reader.make_reader(f)
        summary = reader.get_summary()
        assert summary.statistics.message_count == len(written)
        assert len(summary.chunk_indexes) == summary.statistics.chunk_count > 1
        assert {s.encoding for s in summary.schemas.values()} == {'ros2msg'}
        assert {c.message_encoding for c in summary.channels.values()} == {'cdr'}
        got = [(c.topic, m.log_time, bytes(m.data))
               for _, c, m in reader.iter_messages(log_time_order=False)]
    assert sorted(got) == sorted(written)


def _chunks(path):
    """Return [(compression, compressed size, uncompressed size, topics)] of an MCAP's chunks."""
    from mcap.reader import make_reader

    with open(path, 'rb') as f:
        summary = make_reader(f).get_summary()
    topics = {cid: c.topic for cid, c in summary.channels.items()}
    return [(c.compression, c.compressed_size, c.uncompressed_size,
             {topics[cid] for cid in c.message_index_offsets})
            for c in summary.chunk_indexes]


@pytest.mark.parametrize('compression', ['zstd', 'lz4'])
def test_compressed_chunks_read_back(tmp_path, compression):
    """
    Chunk compression: rosbags and mcap read every message back, bit for bit.

    With ``compress_topic`` the camera images' chunks stay raw and hold no other topic; the
    others are compressed and smaller.
    """
    pytest.importorskip('mcap.reader', reason='pip install mcap')
    from mcap.reader import make_reader

    plain = _write(BagWriter, tmp_path / 'plain' / 'bag', 'mcap')
    packed = _write(BagWriter, tmp_path / 'packed' / 'bag', 'mcap',
                    chunk_compression=compression,
                    compress_topic=lambda topic: topic != '/cam/image_raw')
    assert packed == plain
    got_plain, got_packed = _read(tmp_path / 'plain' / 'bag'), _read(tmp_path / 'packed' / 'bag')
    assert got_packed[0] == got_plain[0] and got_packed[2] == got_plain[2]
    assert sorted(got_packed[1]) == sorted(plain)
    chunks = _chunks(tmp_path / 'packed' / 'bag' / 'bag.mcap')
    raw = [c for c in chunks if '/cam/image_raw' in c[3]]
    assert len(raw) == 6 and all(c[0] == '' and c[1] == c[2] and c[3] == {'/cam/image_raw'}
                                 for c in raw)
    rest = [c for c in chunks if '/cam/image_raw' not in c[3]]
    assert rest and all(c[0] == compression and c[1] < c[2] for c in rest)
    assert all(c[0] == '' for c in _chunks(tmp_path / 'plain' / 'bag' / 'bag.mcap'))
    with open(tmp_path / 'packed' / 'bag' / 'bag.mcap', 'rb') as f:
        got = [(c.topic, m.log_time, bytes(m.data))
               for _, c, m in make_reader(f).iter_messages(log_time_order=False)]
    assert sorted(got) == sorted(plain)
    # Everything compressed: no raw chunk left, the same messages.
    _write(BagWriter, tmp_path / 'all' / 'bag', 'mcap', chunk_compression=compression)
    assert {c[0] for c in _chunks(tmp_path / 'all' / 'bag' / 'bag.mcap')} == {compression}
    assert sorted(_read(tmp_path / 'all' / 'bag')[1]) == sorted(plain)


def test_unknown_chunk_compression_is_refused_before_any_file(tmp_path):
    with pytest.raises(ValueError, match='unknown chunk compression'):
        BagWriter(tmp_path / 'bag', version=9, storage_plugin=StoragePlugin.MCAP,
                  chunk_compression='gzip')
    assert not (tmp_path / 'bag').exists()


@pytest.mark.parametrize('direct', [True, False])
def test_direct_file_holds_exactly_the_bytes_written(tmp_path, monkeypatch, direct):
    """
    DirectFile: pieces of any size, across staging buffers, give the file their bytes exactly.

    A staging buffer of three blocks makes the pieces cross it; with ``direct`` the file is
    written with O_DIRECT where the file system takes it (and plainly where not), the last
    block padded and truncated.
    """
    monkeypatch.setattr(bag_writer.DirectFile, 'STAGING_BYTES', 3 * 4096)
    rng = np.random.default_rng(3)
    pieces = [rng.integers(0, 256, n, dtype=np.uint8).tobytes()
              for n in (0, 1, 4095, 4096, 4097, 3 * 4096, 20000, 7)]
    pieces.append(memoryview(rng.integers(0, 256, (10, 33, 3), dtype=np.uint8)))
    pieces.append(bytearray(b'tail'))
    path = tmp_path / 'f'
    out = bag_writer.DirectFile(path, direct)
    for piece in pieces:
        out.write(piece)
    out.close()
    assert path.read_bytes() == b''.join(bytes(p) for p in pieces)
    out.close()   # twice is harmless
    with pytest.raises(FileExistsError):
        bag_writer.DirectFile(path, direct)
    if direct and sys.platform.startswith('linux') and str(tmp_path).startswith('/tmp'):
        print(f'O_DIRECT taken on {tmp_path}: {out.direct}')


def test_direct_file_abort_closes_without_the_rest(tmp_path):
    out = bag_writer.DirectFile(tmp_path / 'f')
    out.write(b'x' * 10)
    out.abort()
    assert out.fd is None
    assert (tmp_path / 'f').stat().st_size <= 10


def _bag_args(*argv):
    parser = argparse.ArgumentParser()
    bag.add_arguments(parser)
    return parser.parse_args([str(a) for a in argv])


def _input_bag(path, frames):
    """Write a small input bag: 64x48 rgb8 frames, the lower half green (free floor)."""
    t = KILTED.types
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[:24, :, 0] = 200
    rgb[24:, :, 1] = 200
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection('/cam/image_raw', 'sensor_msgs/msg/Image',
                                     typestore=KILTED)
        for i in range(frames):
            msg = t['sensor_msgs/msg/Image'](header=_header(KILTED, i, 0, 'cam'), height=48,
                                             width=64, encoding='rgb8', is_bigendian=0,
                                             step=64 * 3, data=rgb.reshape(-1))
            writer.write(conn, 1_000_000_000 * (i + 1),
                         KILTED.serialize_cdr(msg, 'sensor_msgs/msg/Image'))
    return path


def test_failed_write_leaves_nothing_at_out(tmp_path, monkeypatch):
    """A write that fails in the middle of ``bag`` (a full disk): no OUT, no partial dir."""
    (tmp_path / 'model').mkdir()
    model = write_tiny_model(tmp_path / 'model')
    src = _input_bag(tmp_path / 'in', 6)
    calls = []
    real = bag_writer.McapStorage.write

    def fail_later(self, connection, timestamp, data):
        calls.append(connection.topic)
        if len(calls) > 12:
            raise OSError(errno.ENOSPC, 'No space left on device')
        real(self, connection, timestamp, data)

    monkeypatch.setattr(bag_writer.McapStorage, 'write', fail_later)
    out = tmp_path / 'out'
    with pytest.raises(OSError, match='No space left'):
        bag.process_bag(_bag_args(src, out, '--model', model, '--num-threads', '1', '--jobs',
                                  '2'), out=io.StringIO())
    assert len(calls) > 12
    assert not out.exists()
    assert not [p.name for p in tmp_path.iterdir() if '.partial-' in p.name]
    monkeypatch.setattr(bag_writer.McapStorage, 'write', real)
    text = io.StringIO()
    bag.process_bag(_bag_args(src, out, '--model', model, '--num-threads', '1'), out=text)
    assert '6 frames segmented' in text.getvalue()
    assert (out / 'metadata.yaml').exists()


def test_bag_compression_options(tmp_path):
    """
    ``bag --compression``: zstd (the default) and none write the same messages.

    By default the masks' chunks are compressed and the input image and overlay chunks are
    not; ``--compress all`` compresses those too; ``--no-direct-io`` changes nothing written.
    """
    pytest.importorskip('mcap.reader', reason='pip install mcap')
    (tmp_path / 'model').mkdir()
    model = write_tiny_model(tmp_path / 'model')
    src = _input_bag(tmp_path / 'in', 4)
    got = {}
    for name, extra in (('zstd', ()), ('none', ('--compression', 'none')),
                        ('all', ('--compress', 'all')), ('lz4', ('--compression', 'lz4')),
                        ('plain', ('--no-direct-io',))):
        out = tmp_path / name
        bag.process_bag(_bag_args(src, out, '--model', model, '--num-threads', '1', *extra),
                        out=io.StringIO())
        got[name] = (_read(out), _chunks(out / f'{name}.mcap'))
    messages = sorted(got['none'][0][1])
    assert len(messages) == 4 * 5   # the input and the four image outputs, 4 frames
    for name in ('zstd', 'all', 'lz4', 'plain'):
        assert sorted(got[name][0][1]) == messages
    assert got['plain'][1] == got['zstd'][1]   # through the page cache: the same chunks
    assert {c[0] for c in got['none'][1]} == {''}
    photos = {'/cam/image_raw', '/cam/segmentation/overlay'}
    for name, kind in (('zstd', 'zstd'), ('lz4', 'lz4')):
        for compression, _, _, topics in got[name][1]:
            assert compression == ('' if topics & photos else kind)
            assert not topics & photos or topics <= photos
        assert {c[0] for c in got[name][1]} == {'', kind}
    assert {c[0] for c in got['all'][1]} == {'zstd'}


def test_bench_bag_writer_only(tmp_path, capsys):
    """``bench-bag --writer-only``: the three writers, the bytes a frame, its table."""
    from freespace_seg.tools.bench import bag as bench_bag

    parser = argparse.ArgumentParser()
    bench_bag.add_arguments(parser)
    args = parser.parse_args(['--writer-only', '--frames', '2', '--repeats', '1', '--width',
                              '320', '--height', '240', '--work-dir', str(tmp_path / 'work'),
                              '--out', str(tmp_path / 'writer.md')])
    assert bench_bag.run(args) == 0
    rows = [line for line in (tmp_path / 'writer.md').read_text().splitlines()
            if line.startswith('| rosbags') or line.startswith('| bag') or
            line.startswith('| BagWriter')]
    assert len(rows) == 3
    mb = [float(row.split('|')[-2]) for row in rows]   # MB a frame
    assert mb[0] == mb[1] and mb[2] < mb[1]             # the same bytes; the masks compressed
    assert not os.listdir(tmp_path / 'work')
    assert 'bag writer, run 1' in capsys.readouterr().out
