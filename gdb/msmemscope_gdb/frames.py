# SPDX-License-Identifier: MIT
"""The recorder's frames in a backtrace at a memscope stop.

At a stop of memscope's (a watch, a guard finding, `memscope break`), the
program stands in msmemscope_gdb_stopped(), under the recorder's frames
that made the check; memscope selects the program's frame that crossed
the boundary. This frame filter folds the recorder's frames under that
one: `bt` starts with the program's code, the recorder's frames indented
beneath it; `bt -hide` leaves them out, `bt -no-filters` shows the stack
as it is, and `disable frame-filter global memscope-recorder` turns the
filter off. Any other stop's backtrace is left alone (a breakpoint on
malloc stops in the recorder's malloc, and shows it)."""

import gdb
from gdb.FrameDecorator import FrameDecorator

from .session import in_hooks
from .variables import STOP_FUNCTION


class _Program(FrameDecorator):
    """The program's innermost frame, with the recorder's above it."""

    def __init__(self, fobj, hidden):
        super().__init__(fobj)
        self._hidden = hidden

    def elided(self):
        return iter(self._hidden)


def _is_stop(decorator):
    try:
        return decorator.inferior_frame().name() == STOP_FUNCTION
    except gdb.error:
        return False


def _in_recorder(decorator):
    try:
        return in_hooks(decorator.inferior_frame().pc())
    except gdb.error:
        return False


def _fold(frames):
    first = next(frames, None)
    if first is None:
        return
    if not _is_stop(first):
        yield first
        yield from frames
        return
    hidden = [first]
    for d in frames:
        if _in_recorder(d):
            hidden.append(d)
            continue
        yield _Program(d, hidden)
        break
    else:
        # No frame of the program's: the stack as it is.
        yield from hidden
        return
    yield from frames


class RecorderFrames:
    """The frame filter (gdb.frame_filters["memscope-recorder"])."""

    def __init__(self):
        self.name = "memscope-recorder"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frame_iter):
        return _fold(iter(frame_iter))
