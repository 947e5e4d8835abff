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
The output bag of ``bag``, written with as few copies of the image bytes as possible.

``bag`` writes about 10.7 MB a frame at 1280x720 (four camera-size images and the copied
input). rosbags' own MCAP storage copies every message several times in Python while it holds
the GIL: into the serialized message, into a record, into the chunk, out of the chunk and into
the chunk record, before the file gets it. Here:

* :func:`image_cdr` serializes a sensor_msgs/Image as two pieces, a few dozen bytes of CDR in
  front of the pixel buffer itself: nothing is copied. The bytes are those of rosbags'
  ``Typestore.serialize_cdr`` (test/unit/tools/test_bag_writer.py checks it).
* :class:`McapStorage` is a storage plugin for rosbags' :class:`~rosbags.rosbag2.Writer`: the
  same records, chunks, message indexes and summary as rosbags' own MCAP storage, byte for
  byte (the test compares the files), but a chunk is a list of buffers written to the file
  one after the other, so a message's bytes are copied once, by the kernel, with the GIL
  released. Small records (schemas, channels, small messages) are gathered in one bytearray.
* :class:`BagWriter` is rosbags' Writer with that storage for MCAP, so ``metadata.yaml``,
  the connections, the QoS profiles and the sqlite3 storage stay rosbags' own.

A message's data may be bytes, a memoryview, or a tuple of such pieces (what
:func:`image_cdr` returns); the sqlite3 storage and message compression get the pieces
joined.

Chunk compression (``BagWriter(..., chunk_compression='zstd' or 'lz4')``, MCAP's own, which
``ros2 bag``, Foxglove, rosbags and the ``mcap`` library read) feeds each chunk's buffers to a
streaming compressor, which releases the GIL. ``compress_topic`` (topic name -> bool) leaves
some topics' chunks uncompressed: a chunk then holds messages of one kind only, and a new
chunk starts where the kind changes. Class masks compress several hundred times at almost no
cost; camera images two or three times at a few milliseconds a frame.

The file itself is a :class:`DirectFile`: written with ``O_DIRECT`` where the file system
allows it, so that the kernel does not copy each frame's megabytes into the page cache.
"""

import errno
import fcntl
import functools
from importlib.metadata import version as package_version
import mmap
import os
import queue
import struct
import sys
import threading

import numpy as np
from rosbags.interfaces import MessageDefinitionFormat
from rosbags.rosbag2 import CompressionMode, StoragePlugin, Writer

#: messages queued for the writer thread at most (about 5 frames of outputs): memory stays flat
WRITE_QUEUE = 24

#: records in a chunk before it is written: rosbags' own limit, so the files are identical
CHUNK_BYTES = 2 ** 20
#: a piece at least this long is written from its own buffer; shorter ones are gathered
GATHER_BYTES = 64 * 1024
MAGIC = b'\x89MCAP0\r\n'
#: no message yet: rosbags' initial start and end times
NO_START, NO_END = 2 ** 63 - 1, 0

_U16 = struct.Struct('<H')
_U32 = struct.Struct('<I')
_U64 = struct.Struct('<Q')
_MESSAGE = struct.Struct('<BQHIQQ')   # opcode, record length, channel, sequence, two times
_TIME = struct.Struct('<iI')
_IMAGE_DIMS = struct.Struct('<II')
#: MCAP chunk compressions written: name -> zstd level (rosbag2's zstd_fast preset uses the
#: fastest levels too) or, for lz4, the lz4 frame's fast mode
CHUNK_COMPRESSIONS = ('none', 'lz4', 'zstd')
ZSTD_LEVEL = 1


def chunk_compressor(name):
    """
    Return ``compress(pieces, size) -> [bytes]`` for an MCAP chunk compression, or None.

    The pieces (the chunk's buffers, ``size`` bytes in all) are fed to a streaming compressor
    one after the other, so the chunk is never joined into one buffer; the frame records the
    size, as one-shot compression would. zstd is the standard library's from Python 3.14 and
    its backport before (what rosbags reads MCAP with); lz4 is the lz4 frame format.
    """
    if name in ('', 'none', None):
        return None
    if name == 'zstd':
        if sys.version_info >= (3, 14):
            from compression import zstd
        else:
            from backports import zstd

        def compress(pieces, size):
            packer = zstd.ZstdCompressor(level=ZSTD_LEVEL)
            packer.set_pledged_input_size(size)
            return [packer.compress(piece) for piece in pieces] + [packer.flush()]
        return compress
    if name == 'lz4':
        import lz4.frame

        def compress(pieces, size):
            packer = lz4.frame.LZ4FrameCompressor(compression_level=0, content_checksum=False)
            return [packer.begin(source_size=size)] + \
                [packer.compress(piece) for piece in pieces] + [packer.flush()]
        return compress
    raise ValueError(f'unknown chunk compression {name!r} '
                     f'(one of {", ".join(CHUNK_COMPRESSIONS)})')


def _string(text):
    data = text.encode()
    return _U32.pack(len(data)) + data


def _record(opcode, body):
    return bytes((opcode,)) + _U64.pack(len(body)) + body


def _cdr_string(out, text):
    """Append a CDR string (aligned length with the terminating NUL, bytes, NUL)."""
    data = text.encode()
    out += _U32.pack(len(data) + 1)
    out += data
    out += b'\0'


def _align4(out):
    """Pad ``out`` (CDR after the 4-byte encapsulation header) to a multiple of 4."""
    out += b'\0' * (-len(out) % 4)


class DirectFile:
    """
    A new file written in order, around the page cache (``O_DIRECT``) where the system lets it.

    ``bag`` writes about 5-10 MB a frame. Through the page cache the kernel copies every byte
    into freshly allocated cache pages, which costs several milliseconds of CPU a frame on a
    small machine (measured from 0.3 to 3 GB/s on the same disk) and competes with the
    model for the cores. With ``O_DIRECT`` the disk reads the bytes from this process's
    memory: here a page-aligned staging buffer of :data:`STAGING_BYTES` that the writes fill
    (one copy in memory) and that goes to the file whenever it is full. :meth:`close` writes
    the last partial block padded and truncates the file to its true length. Where the file
    system refuses ``O_DIRECT`` (tmpfs, some network file systems; no such flag on macOS),
    or refuses the first aligned write, it falls back to plain writes of the same bytes.
    """

    #: size of the aligned staging buffer, a multiple of :data:`BLOCK`
    STAGING_BYTES = 8 << 20
    #: alignment of O_DIRECT offsets, lengths and buffers (the page size covers every disk)
    BLOCK = 4096

    def __init__(self, path, direct=True):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_CLOEXEC', 0)
        odirect = getattr(os, 'O_DIRECT', 0) if direct else 0
        self.fd = None
        if odirect:
            try:
                self.fd = os.open(path, flags | odirect, 0o644)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
        self.direct = self.fd is not None
        if self.fd is None:
            self.fd = os.open(path, flags, 0o644)
        self.size = 0        # bytes written so far, as the file will hold them
        self.fill = 0        # bytes in the staging buffer
        self.staging = mmap.mmap(-1, self.STAGING_BYTES) if self.direct else None
        self.view = memoryview(self.staging) if self.direct else None

    def write(self, data):
        """Append ``data`` (bytes, bytearray or a memoryview of bytes)."""
        view = memoryview(data)
        if view.format != 'B' or view.ndim != 1:
            view = view.cast('B')
        n = view.nbytes
        self.size += n
        if not self.direct:
            self._write_all(view)
            return
        done = 0
        while done < n:
            take = min(n - done, self.STAGING_BYTES - self.fill)
            self.view[self.fill:self.fill + take] = view[done:done + take]
            self.fill += take
            done += take
            if self.fill == self.STAGING_BYTES:
                self._flush_staging(self.fill)
                self.fill = 0

    def _write_all(self, view):
        while view.nbytes:
            view = view[os.write(self.fd, view):]

    def _flush_staging(self, length):
        """Write the first ``length`` bytes of the staging buffer (a multiple of BLOCK)."""
        try:
            self._write_all(self.view[:length])
        except OSError as e:
            if e.errno != errno.EINVAL or os.lseek(self.fd, 0, os.SEEK_CUR) != 0:
                raise
            # The file system took the flag but not the write: write this file plainly.
            fcntl.fcntl(self.fd, fcntl.F_SETFL,
                        fcntl.fcntl(self.fd, fcntl.F_GETFL) & ~getattr(os, 'O_DIRECT', 0))
            self.direct = False
            self._write_all(self.view[:length])

    def close(self):
        """Write what is staged and close; the file is exactly the bytes written."""
        if self.fd is None:
            return
        try:
            if self.direct and self.fill:
                padded = -(-self.fill // self.BLOCK) * self.BLOCK
                self.view[self.fill:padded] = bytes(padded - self.fill)
                self._flush_staging(padded)
                os.ftruncate(self.fd, self.size)
            self.fill = 0
        finally:
            self._release()

    def abort(self):
        """Close without writing what is staged (the file is incomplete anyway)."""
        if self.fd is not None:
            self._release()

    def _release(self):
        os.close(self.fd)
        self.fd = None
        if self.staging is not None:
            self.view.release()
            self.staging.close()
            self.view = self.staging = None


def image_cdr(header, encoding, array):
    """
    Return a sensor_msgs/Image as CDR pieces: ``(prefix bytes, the pixel buffer)``.

    ``array`` is a C-contiguous uint8 (H, W) or (H, W, C) array; the message has its height,
    width and ``step = W * C``, ``is_bigendian`` 0 and ``header``'s stamp and frame_id (a
    std_msgs/Header of the rosbags typestore, or anything with ``stamp.sec``,
    ``stamp.nanosec`` and ``frame_id``). ``b''.join`` of the pieces is what rosbags'
    ``serialize_cdr(msg, 'sensor_msgs/msg/Image')`` returns on a little-endian machine; the
    pixel buffer is the array's own memory, so the caller must not change the array after.
    """
    if array.dtype != 'uint8' or not array.flags.c_contiguous or array.ndim not in (2, 3):
        raise ValueError(f'image_cdr needs a C-contiguous uint8 (H, W[, C]) array, got '
                         f'{array.dtype} {array.shape}')
    height, width = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    # Little-endian CDR; the encapsulation header is not counted in the alignment.
    out = bytearray(b'\0\x01\0\0')
    body = bytearray(_TIME.pack(header.stamp.sec, header.stamp.nanosec))
    _cdr_string(body, header.frame_id)
    _align4(body)
    body += _IMAGE_DIMS.pack(height, width)
    _cdr_string(body, encoding)
    body += b'\0'                        # is_bigendian
    _align4(body)
    body += _U32.pack(width * channels)  # step
    body += _U32.pack(array.size)        # data's length; it is aligned after step
    out += body
    return bytes(out), memoryview(array.reshape(-1))   # a flat view, format 'B'


def join_pieces(data):
    """Return ``data`` as one bytes-like object (a tuple of pieces is joined)."""
    return b''.join(data) if isinstance(data, tuple) else data


class McapStorage:
    """
    rosbags' MCAP storage (``rosbags.rosbag2.storage_mcap.McapWriter``) without its copies.

    The same interface (``add_msgtype``, ``add_connection``, ``write``, ``close``, ``abort``)
    and the same file: the header record, then chunks of at most :data:`CHUNK_BYTES` of
    records (a chunk is closed after the message that passes the limit) holding the schemas,
    channels and messages, each chunk followed by its message indexes, then a metadata record
    with the ``rosbag2`` serialized metadata, data end, and the summary (schemas, channels,
    chunk indexes, metadata index, statistics, summary offsets, footer). CRCs are 0 (not
    computed), as rosbags writes them. With ``chunk_compression`` 'lz4' or 'zstd' the chunks
    of the channels ``compress_topic`` picks (all without it) are compressed, and a chunk holds
    compressed or uncompressed channels, not both (rosbags' ``CompressionMode.STORAGE`` is
    left to its own storage, see :class:`BagWriter`). The file is a :class:`DirectFile`
    (``direct_io``).
    """

    def __init__(self, path, compression=None, chunk_compression='none', compress_topic=None,
                 direct_io=True):
        self.compressor = chunk_compressor(chunk_compression)
        self.chunk_compression = chunk_compression if self.compressor is not None else ''
        self.compress_topic = compress_topic
        self.compressed_channels = set()   # channel ids whose chunks are compressed
        self.path = path / f'{path.name}.mcap'
        self.file = DirectFile(self.path, direct_io)
        self.pos = 0
        self.schemas = {}         # msgtype -> (schema id, record bytes)
        self.channels = []        # channel record bytes, in id order
        self.channel_counts = {}  # channel id -> messages
        self.chunk_indexes = []   # chunk index record bodies
        self.message_start = NO_START
        self.message_end = NO_END
        self._new_chunk()
        self._write(MAGIC)
        library = f'rosbags-{package_version("rosbags")}'   # rosbags' own, as the file is
        self._write(_record(0x01, _string('ros2') + _string(library)))

    def _new_chunk(self):
        self.pieces = []           # buffers of the chunk's records, in order
        self.gather = bytearray()  # the small records after the last large piece
        self.size = 0              # bytes of records in the chunk
        self.chunk_start = NO_START
        self.chunk_end = NO_END
        self.index = {}            # channel id -> bytearray of (log time, offset) pairs
        self.chunk_kind = None     # compressed (True) or not (False); None: no message yet

    def _write(self, data):
        self.file.write(data)
        self.pos += len(data) if isinstance(data, (bytes, bytearray)) else \
            memoryview(data).nbytes

    def _add(self, data):
        """Append a record piece to the chunk."""
        n = len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes
        if n >= GATHER_BYTES:
            if self.gather:
                self.pieces.append(self.gather)
                self.gather = bytearray()
            self.pieces.append(data)
        else:
            self.gather += data
        self.size += n

    def add_msgtype(self, connection):
        """Add the schema of ``connection.msgtype`` (to the chunk and the summary)."""
        encoding = 'ros2idl' if connection.msgdef.format == MessageDefinitionFormat.IDL \
            else 'ros2msg'
        schema_id = len(self.schemas) + 1
        data = connection.msgdef.data.encode()
        record = _record(0x03, _U16.pack(schema_id) + _string(connection.msgtype) +
                         _string(encoding) + _U32.pack(len(data)) + data)
        self.schemas[connection.msgtype] = (schema_id, record)
        self._add(record)

    def add_connection(self, connection, offered_qos_profiles):
        """Add a channel for ``connection`` with its serialized QoS profiles."""
        metadata = _string('offered_qos_profiles') + _string(offered_qos_profiles)
        record = _record(0x04, _U16.pack(connection.id) +
                         _U16.pack(self.schemas[connection.msgtype][0]) +
                         _string(connection.topic) +
                         _string(connection.ext.serialization_format) +
                         _U32.pack(len(metadata)) + metadata)
        self.channels.append(record)
        self.channel_counts[connection.id] = 0
        if self.compressor is not None and (self.compress_topic is None or
                                            self.compress_topic(connection.topic)):
            self.compressed_channels.add(connection.id)
        self._add(record)

    def write(self, connection, timestamp, data):
        """Add one message (bytes, memoryview or a tuple of pieces) at ``timestamp``."""
        pieces = data if isinstance(data, tuple) else (data,)
        n = sum(len(p) if isinstance(p, (bytes, bytearray)) else memoryview(p).nbytes
                for p in pieces)
        cid = connection.id
        if self.compressor is not None:
            kind = cid in self.compressed_channels
            if self.chunk_kind is not None and kind != self.chunk_kind:
                self._close_chunk()
            self.chunk_kind = kind
        self.message_start = min(timestamp, self.message_start)
        self.message_end = max(timestamp, self.message_end)
        self.channel_counts[cid] += 1
        self.chunk_start = min(timestamp, self.chunk_start)
        self.chunk_end = max(timestamp, self.chunk_end)
        index = self.index.get(cid)
        if index is None:
            index = self.index[cid] = bytearray()
        index += _U64.pack(timestamp) + _U64.pack(self.size)
        self._add(_MESSAGE.pack(0x05, 22 + n, cid, 0, timestamp, timestamp))
        for piece in pieces:
            self._add(piece)
        if self.size > CHUNK_BYTES:
            self._close_chunk()

    def _close_chunk(self):
        if self.gather:
            self.pieces.append(self.gather)
        compression, stored = '', self.size
        # A chunk without messages (schemas and channels only, at the end) is compressed.
        if self.compressor is not None and self.chunk_kind is not False:
            packed = [piece for piece in self.compressor(self.pieces, self.size) if piece]
            packed_size = sum(len(piece) for piece in packed)
            if packed_size < self.size:
                compression, stored, self.pieces = self.chunk_compression, packed_size, packed
        start = self.pos
        name = _string(compression)
        self._write(bytes((0x06,)) + _U64.pack(8 + 8 + 8 + 4 + len(name) + 8 + stored) +
                    _U64.pack(self.chunk_start) + _U64.pack(self.chunk_end) +
                    _U64.pack(self.size) + _U32.pack(0) + name + _U64.pack(stored))
        for piece in self.pieces:
            self._write(piece)
        end = self.pos
        offsets = bytearray()
        for cid, entries in self.index.items():
            offsets += _U16.pack(cid) + _U64.pack(self.pos)
            self._write(_record(0x07, _U16.pack(cid) + _U32.pack(len(entries)) + entries))
        self.chunk_indexes.append(
            _U64.pack(self.chunk_start) + _U64.pack(self.chunk_end) + _U64.pack(start) +
            _U64.pack(end - start) + _U32.pack(len(offsets)) + offsets +
            _U64.pack(self.pos - end) + name + _U64.pack(stored) + _U64.pack(self.size))
        self._new_chunk()

    def close(self, version, metadata):
        """Write the last chunk, the rosbag2 metadata record and the summary; close."""
        if self.size:
            self._close_chunk()
        metadata_start = self.pos
        entries = _string('serialized_metadata') + _string(metadata)
        self._write(_record(0x0C, _string('rosbag2') + _U32.pack(len(entries)) + entries))
        metadata_end = self.pos
        self._write(_record(0x0F, _U32.pack(0)))
        schema_start = self.pos
        for _, record in self.schemas.values():
            self._write(record)
        channel_start = self.pos
        for record in self.channels:
            self._write(record)
        chunk_start = self.pos
        for body in self.chunk_indexes:
            self._write(_record(0x08, body))
        metadata_index_start = self.pos
        self._write(_record(0x0D, _U64.pack(metadata_start) +
                            _U64.pack(metadata_end - metadata_start) + _string('rosbag2')))
        statistics_start = self.pos
        counts = b''.join(_U16.pack(cid) + _U64.pack(n)
                          for cid, n in sorted(self.channel_counts.items()))
        self._write(_record(0x0B, _U64.pack(sum(self.channel_counts.values())) +
                            _U16.pack(len(self.schemas)) + _U32.pack(len(self.channels)) +
                            _U32.pack(0) + _U32.pack(1) + _U32.pack(len(self.chunk_indexes)) +
                            _U64.pack(self.message_start) + _U64.pack(self.message_end) +
                            _U32.pack(len(counts)) + counts))
        summary_offset_start = self.pos
        groups = ((0x03, schema_start, channel_start), (0x04, channel_start, chunk_start),
                  (0x08, chunk_start, metadata_index_start))
        for opcode, begin, end in groups:
            if begin != end:
                self._write(_record(0x0E, bytes((opcode,)) + _U64.pack(begin) +
                                    _U64.pack(end - begin)))
        self._write(_record(0x0E, b'\x0d' + _U64.pack(metadata_index_start) +
                            _U64.pack(statistics_start - metadata_index_start)))
        self._write(_record(0x0E, b'\x0b' + _U64.pack(statistics_start) +
                            _U64.pack(summary_offset_start - statistics_start)))
        self._write(_record(0x02, _U64.pack(schema_start) + _U64.pack(summary_offset_start) +
                            _U32.pack(0)))
        self._write(MAGIC)
        self.file.close()

    def abort(self):
        """Close without the summary (the file is not a complete MCAP)."""
        self.file.abort()


class BagWriter(Writer):
    """
    rosbags' :class:`~rosbags.rosbag2.Writer` with :class:`McapStorage` for MCAP.

    Everything else (metadata.yaml, connections, sqlite3, file and message compression) is
    rosbags' own; a tuple of pieces given to :meth:`write` is joined where the storage needs
    one buffer. ``chunk_compression`` ('none', 'lz4' or 'zstd') and ``compress_topic`` go to
    :class:`McapStorage` (MCAP only; sqlite3 has no chunks).
    """

    STORAGE_PLUGINS = {**Writer.STORAGE_PLUGINS, StoragePlugin.MCAP: McapStorage}

    def __init__(self, path, *args, chunk_compression='none', compress_topic=None,
                 direct_io=True, **kwargs):
        chunk_compressor(chunk_compression)   # an unknown name fails here, before any file
        super().__init__(path, *args, **kwargs)
        self.STORAGE_PLUGINS = {
            **self.STORAGE_PLUGINS,
            StoragePlugin.MCAP: functools.partial(McapStorage,
                                                  chunk_compression=chunk_compression,
                                                  compress_topic=compress_topic,
                                                  direct_io=direct_io)}

    def set_compression(self, mode, fmt):
        """Enable compression; compressed MCAP chunks are left to rosbags' own storage."""
        super().set_compression(mode, fmt)
        if mode == CompressionMode.STORAGE:
            self.STORAGE_PLUGINS = Writer.STORAGE_PLUGINS

    def write(self, connection, timestamp, data):
        """Write a message; ``data`` is bytes, a memoryview or a tuple of pieces."""
        if isinstance(data, tuple) and (not isinstance(self.storage, McapStorage) or
                                        self.compression_mode == CompressionMode.MESSAGE):
            data = b''.join(data)
        super().write(connection, timestamp, data)


class OutputMessages:
    """``bag``'s outputs (the node's) as rosbags messages, serialized for the writer."""

    def __init__(self, store):
        self.store = store
        t = store.types
        self.Grid = t['nav_msgs/msg/OccupancyGrid']
        self.Scan = t['sensor_msgs/msg/LaserScan']
        self.Meta = t['nav_msgs/msg/MapMetaData']
        self.Pose = t['geometry_msgs/msg/Pose']
        self.Point = t['geometry_msgs/msg/Point']
        self.Quaternion = t['geometry_msgs/msg/Quaternion']
        self.Header = t['std_msgs/msg/Header']

    def image(self, array, encoding, header):
        """
        Serialize an Image as CDR pieces, the pixels not copied (:func:`image_cdr`).

        The bytes are those of ``serialize_cdr``; the array must not change after (every
        output is a fresh array of its frame).
        """
        return image_cdr(header, encoding, np.ascontiguousarray(array, np.uint8))

    def grid(self, grid, spec, header, frame_id):
        """Serialize an OccupancyGrid as :func:`freespace_seg.nodes.msgs.grid_to_msg` fills one."""
        info = self.Meta(map_load_time=header.stamp, resolution=float(spec.resolution),
                         width=int(spec.nx), height=int(spec.ny),
                         origin=self.Pose(position=self.Point(x=float(spec.origin[0]),
                                                              y=float(spec.origin[1]), z=0.0),
                                          orientation=self.Quaternion(x=0.0, y=0.0, z=0.0,
                                                                      w=1.0)))
        msg = self.Grid(header=self.Header(stamp=header.stamp, frame_id=frame_id), info=info,
                        data=np.ascontiguousarray(grid, np.int8).reshape(-1))
        return self.store.serialize_cdr(msg, 'nav_msgs/msg/OccupancyGrid')

    def scan(self, ranges, layout, header, frame_id):
        """Serialize a LaserScan as :func:`freespace_seg.nodes.msgs.scan_to_msg` fills one."""
        msg = self.Scan(header=self.Header(stamp=header.stamp, frame_id=frame_id),
                        angle_min=layout.angle_min, angle_max=layout.angle_max,
                        angle_increment=layout.angle_increment, time_increment=0.0,
                        scan_time=0.0, range_min=layout.range_min, range_max=layout.range_max,
                        ranges=np.ascontiguousarray(ranges, np.float32).reshape(-1),
                        intensities=np.zeros(0, np.float32))
        return self.store.serialize_cdr(msg, 'sensor_msgs/msg/LaserScan')


class WriterThread:
    """
    Writes messages in a thread, in the order given, while the next frame is segmented.

    Writing about 10 MB a frame at 1280x720 takes the kernel's copy into the file; ONNX
    Runtime and file writes release the GIL, so the two overlap. The queue is bounded, so a
    slow disk holds the reader back instead of filling memory.
    With ``threaded`` false (sqlite3, whose connection belongs to the thread that made it)
    every write happens at once in the caller's thread.
    """

    def __init__(self, writer, threaded=True):
        self.writer = writer
        self.error = None
        self.thread = None
        if threaded:
            self.queue = queue.Queue(maxsize=WRITE_QUEUE)
            self.thread = threading.Thread(target=self._loop, name='bag-writer', daemon=True)
            self.thread.start()

    def _loop(self):
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is None:
                try:
                    conn, stamp, data = item
                    self.writer.write(conn, stamp, data() if callable(data) else data)
                except BaseException as e:  # noqa: B902 - handed to the main thread
                    self.error = e

    def write(self, conn, stamp, data):
        """Queue a message; ``data`` is bytes or a function that serializes it (there)."""
        if self.thread is None:
            self.writer.write(conn, stamp, data() if callable(data) else data)
            return
        if self.error is not None:
            raise self.error
        self.queue.put((conn, stamp, data))

    def close(self):
        """Write what is queued, stop the thread; re-raise a write error."""
        if self.thread is None:
            return
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error
