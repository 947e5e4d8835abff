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
Catch what the image decoders print to stderr, so that the node can log it throttled.

libpng and libjpeg (inside OpenCV's ``cv2.imdecode``) write their complaints about corrupt
data straight to file descriptor 2, one or more lines per frame (``libpng error: IDAT:
incorrect data check``, ``Corrupt JPEG data: 447 extraneous bytes before marker 0xd9``...),
past Python and past the ROS logger. At 30 Hz of corrupt frames that is 30 unthrottled lines a
second. :func:`capture_decoder_output` points fd 2 at a temporary file for the duration of one
decode, puts it back, and sorts what was written: lines from the decoders (recognised by
:data:`DECODER_LINE`) are returned to the caller, who logs them its own (throttled) way;
anything else (another thread's log line written during the window) is written back to the
real stderr unchanged, so nothing else is lost. :func:`decode_capturing` does this around
one decoder call, for the segmentation node.

Costs and rules:

* Per window: ``dup``, two ``dup2``, ``close``, ``fstat`` and two ``lseek`` (about 5 us in
  all on a 2-core x86); the file is read only when something was written. The temporary
  file is created once per process (unlinked, so nothing is left behind) and reused; a file
  rather than a pipe, so a decoder that prints a lot can never block on a full pipe.
* fd 2 belongs to the whole process, so windows are serialized by one process-wide lock: two
  threads decoding at once take turns for the decode itself. The lock is reentrant, and a
  window opened inside another one (same thread) gets its own lines; its other output goes
  on to the outer window, which writes it back.
* The window restores fd 2 when its body raises, and hands over what was captured all the
  same. If someone else re-points fd 2 during a window (pytest's capture does between test
  phases), the window leaves their choice in place.
* A native crash inside a window would write its report into the temporary file, which dies
  with the process. :func:`enable_faulthandler` (called by the nodes' ``spin_node``) points
  Python's fault handler at a duplicate of the original stderr, so the stacks of every thread
  still reach the real stderr; only what a C library prints just before crashing (e.g.
  glibc's ``free(): invalid pointer``) is lost when that happens inside a window.
* A child process started by another thread during a window inherits the temporary file as
  its stderr, and decoder lines printed by another thread that decodes without a window are
  taken for this window's. POSIX only (Linux, macOS); Windows is not a target.
"""

import contextlib
import faulthandler
import fcntl
import os
import re
import tempfile
import threading

__all__ = ['DECODER_LINE', 'Captured', 'capture_decoder_output', 'decode_capturing',
           'enable_faulthandler', 'summarize']

#: A line printed by an image decoder, matched at its start: libpng (``libpng error:``,
#: ``libpng warning:``), libjpeg's warnings (``Corrupt JPEG data: ...``, ``Premature end of
#: JPEG file``, ``Invalid SOS parameters for sequential JPEG``, ``Warning: unknown JFIF
#: revision number``, ``Inconsistent progression sequence...``, ``Unknown Adobe color
#: transform code``, ``Application transferred too many scanlines``, and ``Bogus ...``
#: should a build print its errors too) and OpenCV's own imgcodecs log lines (``[ WARN:0@1.2]
#: global grfmt_png.cpp:793 ...``), which appear where OpenCV's logging is not turned down.
DECODER_LINE = re.compile(
    r'(?:libpng (?:error|warning)\b|Corrupt JPEG data\b|Premature end of JPEG\b|'
    r'Invalid SOS parameters\b|Warning: (?:unknown JFIF|thumbnail image)\b|'
    r'Inconsistent progression\b|Unknown Adobe\b|Application transferred too\b|Bogus |'
    r'\[ ?(?:VERBOSE|DEBUG|INFO|WARN|ERROR|FATAL)\b[^\]]*\] global '
    r'(?:grfmt_\w+|loadsave|bitstrm|exif)\.cpp\b)')

_lock = threading.RLock()
_file = None          # fd of the reused, unlinked temporary file (3 or above)
_file_id = None       # its (st_dev, st_ino)
_fault_fd = None      # the duplicate of stderr given to faulthandler


def _reset_after_fork():
    # A child must not share the parent's file (and its offset) or a lock held by a thread
    # that does not exist in the child.
    global _lock, _file, _file_id
    _lock = threading.RLock()
    if _file is not None:
        os.close(_file)
    _file = _file_id = None


os.register_at_fork(after_in_child=_reset_after_fork)


def _capture_file():
    global _file, _file_id
    if _file is None:
        with tempfile.TemporaryFile(prefix='freespace_seg_stderr_', buffering=0) as tmp:
            # Never 0, 1 or 2, even where one of them was closed when the file was made.
            _file = fcntl.fcntl(tmp.fileno(), fcntl.F_DUPFD_CLOEXEC, 3)
        info = os.fstat(_file)
        _file_id = (info.st_dev, info.st_ino)
    return _file


def _refers_to_capture_file(fd):
    try:
        info = os.fstat(fd)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == _file_id


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError:
            return  # stderr closed or gone: nowhere left to put it
        view = view[written:]


class Captured:
    """What one window caught: :attr:`lines`, the decoder lines, filled when it closes."""

    __slots__ = ('lines', 'passed_on')

    def __init__(self):
        self.lines = []
        #: bytes of other output written back to the real stderr
        self.passed_on = 0

    def _sort(self, data, fd):
        """Keep the decoder lines of ``data``; write everything else to ``fd`` unchanged."""
        other = []
        for line in data.splitlines(keepends=True):
            text = line.decode('utf-8', 'replace').rstrip('\r\n')
            if DECODER_LINE.match(text):
                if text.strip():
                    self.lines.append(text.strip())
            else:
                other.append(line)
        if other:
            rest = b''.join(other)
            self.passed_on += len(rest)
            _write_all(fd, rest)


@contextlib.contextmanager
def capture_decoder_output():
    """
    Point fd 2 at a temporary file for the body of the ``with``; yield a :class:`Captured`.

    On exit (also when the body raises) fd 2 is restored, the decoder lines written during
    the window are put in ``Captured.lines`` (stripped, in order), and every other byte is
    written back to the restored fd 2 unchanged. With fd 2 closed, nothing is redirected and
    the result stays empty.
    """
    captured = Captured()
    with _lock:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all: nothing to capture, nothing to restore
            saved = None
        if saved is None:
            yield captured
            return
        fd = _capture_file()
        start = os.lseek(fd, 0, os.SEEK_CUR)  # non-zero inside another window
        try:
            os.dup2(fd, 2)
            yield captured
        finally:
            if _refers_to_capture_file(2):
                os.dup2(saved, 2)
            os.close(saved)
            end = os.lseek(fd, 0, os.SEEK_CUR)
            if end > start:
                data = os.pread(fd, end - start, start)
                os.ftruncate(fd, start)
                os.lseek(fd, start, os.SEEK_SET)
                captured._sort(data, 2)


def summarize(lines, limit=3):
    """Join decoder lines for a log message: the first ``limit``, then how many more."""
    text = '; '.join(lines[:limit])
    if len(lines) > limit:
        text += f'; and {len(lines) - limit} more'
    return text


def decode_capturing(decode, msg):
    """
    Return ``(rgb, lines)``: ``decode(msg)`` and the decoder lines printed while it ran.

    When ``decode`` raises :class:`ImageCodecError` and the decoder printed something, the
    error is raised again with those lines appended in parentheses, e.g. ``CompressedImage:
    could not decode 1234 bytes as png (libpng error: IDAT: incorrect data check)``.
    """
    # Imported here: the other nodes use enable_faulthandler without loading OpenCV.
    from freespace_seg.perception.image_codec import ImageCodecError
    failure = None
    with capture_decoder_output() as captured:
        try:
            rgb = decode(msg)
        except ImageCodecError as exc:
            failure = exc
    if failure is not None:
        if captured.lines:
            raise ImageCodecError(f'{failure} ({summarize(captured.lines)})') from None
        raise failure
    return rgb, captured.lines


def enable_faulthandler():
    """
    Enable :mod:`faulthandler` on a duplicate of the current stderr, for every thread.

    A fatal signal during a :func:`capture_decoder_output` window then still prints the Python
    stacks to the real stderr rather than into the temporary file. Calling it again re-enables
    it on the same duplicate. Returns the duplicate's file descriptor.
    """
    global _fault_fd
    if _fault_fd is None:
        _fault_fd = os.dup(2)
    faulthandler.enable(file=_fault_fd, all_threads=True)
    return _fault_fd
