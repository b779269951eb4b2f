# SPDX-License-Identifier: MIT
"""gdbif: the descriptor the preloaded hooks share with gdb (hooks/gdbif.h),
read and written in the program's memory by offset.

The installed hooks carry no debug information, so gdb cannot know the
struct's type: the layout below mirrors hooks/gdbif.h field for field,
and ctypes computes the offsets the C compiler uses (explicit widths, no
padding). Change both together and bump VERSION. The descriptor is found
by its exported symbol, msmemscope_gdb, which gdb resolves from the
library's dynamic symbol table alone."""

import ctypes
import os

import gdb

VERSION = 4
WATCH_MAX = 8
NAME_MAX = 128
LOG_PATH_MAX = 4096

HOOKS_NAME = "libmsmemscope-hooks.so"
NOT_STARTED = ("the recorder has not started yet in the program: gdb stopped it before %s (as `starti' does); "
               "`break main' and `continue' until the program reaches main(), then ask again")

REASON_NONE, REASON_WATCH, REASON_OP, REASON_STEP, REASON_FREED, REASON_GUARD, REASON_OP_END = range(7)


class Watch(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("size", ctypes.c_uint64), ("generation", ctypes.c_uint64),
                ("seen", ctypes.c_uint64), ("snapshot", ctypes.c_uint64), ("previous", ctypes.c_uint64),
                ("capacity", ctypes.c_uint64), ("changes", ctypes.c_uint64), ("tracked", ctypes.c_uint64)]


class Descriptor(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("armed", ctypes.c_uint32), ("watch", Watch * WATCH_MAX),
                ("break_op", ctypes.c_char * NAME_MAX), ("break_step", ctypes.c_uint64), ("break_end", ctypes.c_uint64),
                ("reason", ctypes.c_uint32), ("hit_watch", ctypes.c_uint32), ("op_launch", ctypes.c_uint64),
                ("op_name", ctypes.c_char * NAME_MAX), ("step", ctypes.c_uint64), ("tid", ctypes.c_uint64),
                ("launches", ctypes.c_uint64), ("log_path", ctypes.c_char * LOG_PATH_MAX)]


# The layout has no padding; a mismatch here means gdbif.h changed.
assert ctypes.sizeof(Watch) == 72
assert ctypes.sizeof(Descriptor) == 8 + 72 * WATCH_MAX + NAME_MAX + 8 + 8 + 8 + 8 + NAME_MAX + 8 * 3 + LOG_PATH_MAX


def _off(field):
    return getattr(Descriptor, field).offset


def _watch_off(slot, field):
    return _off("watch") + slot * ctypes.sizeof(Watch) + getattr(Watch, field).offset


class NotLoaded(Exception):
    """The program runs without the recorder's descriptor (not started
    under memscope.gdb, or the hooks not initialized yet)."""


def on_core(inferior=None):
    """Whether gdb looks at a core file: the inferior is a dump's image,
    which no recorder runs in and which cannot be written."""
    inferior = inferior or gdb.selected_inferior()
    if not inferior.pid:
        return False
    conn = getattr(inferior, "connection", None)
    if conn is not None:
        return conn.type == "core"
    try:
        return "core dump file" in gdb.execute("info target", to_string=True)
    except gdb.error:
        return False


def core_why(inferior=None):
    """What a memscope command says on a core file: there is no live
    recorded process; and the log the recorder wrote in the dumped run,
    when its descriptor in the dump names it."""
    inferior = inferior or gdb.selected_inferior()
    log = ""
    try:
        addr = int(gdb.parse_and_eval("(unsigned long)&msmemscope_gdb"))
        raw = bytes(inferior.read_memory(addr + _off("log_path"), LOG_PATH_MAX)).split(b"\0")[0]
        if raw:
            log = "; the dumped run's log is %s (msmemscope-replay reads it)" % \
                raw.decode("utf-8", "surrogateescape")
    except (gdb.error, ValueError):
        pass
    return ("gdb is looking at a core file, not a live recorded process: the memscope commands need the "
            "program running (`run' it)%s" % log)


def preloading():
    """Whether the program was started to preload the recorder (the
    exec-wrapper memscope.gdb set names it) but gdb sees it not mapped
    yet: the program stopped before the loader mapped its libraries."""
    try:
        wrapper = gdb.parameter("exec-wrapper") or ""
    except (gdb.error, RuntimeError):
        return False
    return HOOKS_NAME in wrapper and \
        not any(os.path.basename(o.filename or "") == HOOKS_NAME for o in gdb.objfiles())


def address(inferior=None):
    """The descriptor's address in the current program, or None when the
    hooks are not loaded in it."""
    inferior = inferior or gdb.selected_inferior()
    if not inferior.pid:
        return None
    try:
        return int(gdb.parse_and_eval("(unsigned long)&msmemscope_gdb"))
    except gdb.error:
        return None


class Handle:
    """The descriptor of the running program: read() a copy, write fields
    back. Raises NotLoaded when it cannot be found or has the wrong
    version (check=False skips the version check, for use before the
    hooks' constructor ran)."""

    def __init__(self, check=True):
        self.inferior = gdb.selected_inferior()
        if on_core(self.inferior):
            raise NotLoaded(core_why(self.inferior))
        self.addr = address(self.inferior)
        if self.addr is None:
            if not self.inferior.pid:
                raise NotLoaded("the program is not running; start it with `run' or `start' first")
            if preloading():
                raise NotLoaded(NOT_STARTED % "its libraries were loaded")
            raise NotLoaded("the program has no msmemscope recorder loaded (symbol msmemscope_gdb not found); "
                            "start it under gdb -x memscope.gdb")
        if check:
            v = self.read_u32("version")
            if v != VERSION:
                if v == 0:
                    raise NotLoaded(NOT_STARTED % "the recorder's start-up ran")
                raise NotLoaded("the recorder in the program speaks gdb interface version %u; this memscope.gdb "
                                "speaks version %u: use the memscope.gdb installed with that recorder"
                                % (v, VERSION))

    def read(self):
        mem = self.inferior.read_memory(self.addr, ctypes.sizeof(Descriptor))
        return Descriptor.from_buffer_copy(bytes(mem))

    def _write(self, off, data):
        self.inferior.write_memory(self.addr + off, data)

    def read_u32(self, field):
        return int.from_bytes(bytes(self.inferior.read_memory(self.addr + _off(field), 4)), "little")

    def write_u32(self, field, value):
        self._write(_off(field), int(value).to_bytes(4, "little"))

    def write_u64(self, field, value):
        self._write(_off(field), int(value).to_bytes(8, "little"))

    def write_name(self, field, name):
        raw = name.encode("utf-8")[:NAME_MAX - 1]
        self._write(_off(field), raw + b"\0" * (NAME_MAX - len(raw)))

    def write_names(self, field, names):
        """names (utf-8 strings) as a list: each ended by a NUL, the list
        by an empty name. Raises ValueError when they do not fit."""
        raw = b"".join(n.encode("utf-8") + b"\0" for n in names)
        if len(raw) + 1 > NAME_MAX:
            raise ValueError("%d bytes of operator names, over %d" % (len(raw) + 1, NAME_MAX))
        self._write(_off(field), raw + b"\0" * (NAME_MAX - len(raw)))

    def write_watch(self, slot, field, value):
        self._write(_watch_off(slot, field), int(value).to_bytes(8, "little"))

    def arm_watch(self, slot, addr, size, generation):
        """(Re)arms slot: addr and size first, then the new generation the
        hooks see at their next boundary."""
        self.write_watch(slot, "addr", addr)
        self.write_watch(slot, "size", size)
        self.write_watch(slot, "generation", generation)

    def disarm_watch(self, slot, generation):
        self.write_watch(slot, "size", 0)
        self.write_watch(slot, "generation", generation)

    def update_armed(self):
        """Sets `armed` from what is set: any watch, break_op, break_step or
        break_end."""
        d = self.read()
        on = any(d.watch[i].size for i in range(WATCH_MAX)) or bool(d.break_op) or d.break_step != 0 or \
            d.break_end != 0
        self.write_u32("armed", 1 if on else 0)
        return on

    def read_bytes(self, addr, size):
        return bytes(self.inferior.read_memory(addr, size))
