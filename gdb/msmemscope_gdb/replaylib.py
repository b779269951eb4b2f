# SPDX-License-Identifier: MIT
"""replaylib: ctypes bindings to libmsmemscope-replay, the one reader of
the .mms log format, for the gdb side of msmemscope.

The structures mirror include/msmemscope-replay.h field for field (ctypes
lays them out as the C compiler does); change both together. Nothing here
parses the log itself: every answer comes from the C library.

Handles (Log, Replay, Symbolizer) own what they open and close it on
close() or at the end of a with block."""

import contextlib
import ctypes
import os
import sys

u8, u16, u32, u64, i64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64
c_int, c_char_p, c_void_p, c_size_t = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t

UINT64_MAX = (1 << 64) - 1

# enum mms_event_kind
EV_SYSTEM, EV_MALLOC, EV_FREE, EV_ACCESS, EV_OP_LAUNCH, EV_KERNEL_LAUNCH, EV_MSTX, EV_STEP, EV_OWNER, \
    EV_WATCH, EV_COLLECT, EV_GUARD, EV_ALLOC_FAIL, EV_KIND_COUNT = range(1, 15)
# enum mms_mem_kind
MEM_HOST, MEM_MMAP, MEM_POOL, MEM_DEVICE, MEM_KIND_COUNT = range(5)
MEM_NAMES = ("HOST", "MMAP", "POOL", "DEVICE")


class Event(ctypes.Structure):
    _fields_ = [("id", u64), ("stamp", u64), ("time_ns", u64), ("thread", u32), ("kind", u16), ("sub", u16),
                ("mem", u16), ("device", u16), ("addr", u64), ("size", u64), ("stack", u32), ("runtime", u32),
                ("total", u64), ("used", u64), ("range_id", u64), ("name", c_char_p), ("file_offset", u64),
                ("flags", u64)]


class LogInfo(ctypes.Structure):
    _fields_ = [("version", u32), ("pid", u64), ("ppid", u64), ("exe", c_char_p), ("clock", u32),
                ("flags", u32), ("cut_errno", c_int), ("start_realtime_ns", u64), ("lost_events", u64),
                ("call_stack_depth", u32), ("threads", u32), ("nchunks", u64), ("file_size", u64),
                ("complete", c_int), ("cut", c_int), ("cut_offset", u64), ("cut_what", c_char_p),
                ("stopped", c_int), ("damaged", c_int), ("damage_offset", u64),
                ("damage", c_char_p), ("damage_error", c_int), ("damage_count", u64), ("events", u64),
                ("segments", u64), ("last_realtime_ns", u64), ("exec_away", c_int), ("bad_stacks", u64),
                ("stacks_full", c_int), ("strings_full", c_int), ("own_malloc", c_char_p),
                ("own_cxx", c_char_p), ("own_cxx_op", c_char_p),
                ("freeres", c_int), ("freeres_skipped", c_int), ("freeres_threads", u64), ("reach_scan", c_int),
                ("reach_pointers", u64), ("reach_bytes", u64), ("reach_ns", u64), ("reach_threads", u64),
                ("steps_inferred", c_int)]


class LogFork(ctypes.Structure):
    _fields_ = [("state", c_int), ("parent_pid", u64), ("parent_log", c_char_p), ("fork_event", u64),
                ("blocks", u64 * 4), ("bytes", u64 * 4), ("why", c_char_p), ("fork_step", u64),
                ("fork_in_step", c_int)]


class OpenError(ctypes.Structure):
    _fields_ = [("offset", u64), ("what", ctypes.c_char * 160)]


class KindSummary(ctypes.Structure):
    _fields_ = [("allocs", u64), ("frees", u64), ("bytes_allocated", u64), ("peak_bytes", u64),
                ("live_blocks", u64), ("live_bytes", u64)]


class Block(ctypes.Structure):
    _fields_ = [("addr", u64), ("size", u64), ("mem", u16), ("fn", u16), ("thread", u32), ("stack", u32),
                ("alloc_id", u64), ("alloc_event", u64), ("step", u64), ("op_launch", u64), ("op", c_char_p),
                ("kernel_launches", u64), ("owner", c_char_p), ("pool", c_char_p), ("free_event", u64),
                ("free_thread", u32), ("inherited", c_int), ("origin_pid", u64), ("origin_event", u64),
                ("runtime", u32), ("free_stack", u32), ("device", u32), ("reach", u32),
                ("indirect_blocks", u64), ("indirect_bytes", u64)]


class Where(ctypes.Structure):
    _fields_ = [("position", u64), ("events", u64), ("step", u64), ("in_step", c_int), ("op_launches", u64),
                ("kernel_launches", u64), ("op", c_char_p), ("op_launch", u64), ("thread", u32),
                ("mem", KindSummary * MEM_KIND_COUNT), ("live_bytes", u64), ("peak_bytes", u64),
                ("unmatched_frees", u64), ("double_allocs", u64), ("double_frees", u64), ("invalid_frees", u64),
                ("mismatched_frees", u64), ("unchecked_frees", u64),
                ("gap_event", u64)]


CONFIG_STEPS_MAX, CONFIG_NAME_MAX = 5, 64


class ConfigWatch(ctypes.Structure):
    _fields_ = [("on", c_int), ("full_content", c_int), ("out", c_int), ("start", ctypes.c_char * CONFIG_NAME_MAX),
                ("end", ctypes.c_char * CONFIG_NAME_MAX)]


class Config(ctypes.Structure):
    """mms_config_t (include/msmemscope/config.h): the recording
    configuration a log keeps."""
    _fields_ = [("call_stack", u32), ("events", u32), ("python_stack", u32), ("deferred", c_int), ("nsteps", u32),
                ("steps", u32 * CONFIG_STEPS_MAX), ("follow_exec", c_int), ("log_level", c_int), ("freeres", c_int),
                ("reach", c_int), ("watch", ConfigWatch), ("log_limit", u64), ("clock", c_int), ("log_thread", c_int),
                ("unwind", c_int), ("unwind_check", c_int), ("guard", c_int), ("guard_redzone", u32),
                ("guard_quarantine", u64), ("torch_ops", c_int), ("free_stack", c_int), ("devices", u64), ("unknown", u32),
                ("bad", u32)]


class GuardFinding(ctypes.Structure):
    """mms_guard_finding_t (include/msmemscope/analysis.h): one finding of
    guard mode, with the window in which the damage happened."""
    _fields_ = [("kind", ctypes.c_uint), ("event", u64), ("thread", u32), ("addr", u64), ("size", u64),
                ("family", ctypes.c_uint), ("alloc_fn", ctypes.c_uint), ("alloc_stack", u32), ("free_stack", u32),
                ("at_stack", u32), ("alloc_event", u64), ("free_event", u64), ("since", ctypes.c_uint),
                ("since_event", u64), ("steps_in_window", u64), ("launches_in_window", u64), ("offset", i64),
                ("length", u64), ("bytes", u8 * 8), ("nbytes", ctypes.c_uint), ("last_launch", u64),
                ("last_op", c_char_p), ("found_by", ctypes.c_uint)]


class Guard(ctypes.Structure):
    _fields_ = [("findings", ctypes.POINTER(GuardFinding)), ("nfindings", c_size_t), ("by_kind", u64 * 8),
                ("checks", u64), ("guard_on", c_int), ("status", c_int)]


# enum mms_guard_finding_kind and enum mms_guard_window
GUARD_KINDS = {1: "overflow", 2: "underflow", 3: "write after free", 4: "double free", 5: "invalid free",
               6: "mismatched free"}
GUARD_SINCE_ALLOCATION, GUARD_SINCE_FREEING, GUARD_SINCE_LAST_CHECK, GUARD_NO_WINDOW = range(4)


# enum mms_reach: what a block live at exit was to the program then (the
# recorder's scan at exit), in valgrind's words.
REACH_WORDS = {1: "definitely lost", 2: "indirectly lost", 3: "possibly lost", 4: "still reachable",
               5: "allocated before recording stopped: freed later or not, the log cannot tell"}
REACH_UNKNOWN, REACH_REACHABLE, REACH_UNRECORDED = 0, 4, 5
REACH_SCAN_WHOLE = 1  # enum mms_reach_scan_state
# What a heap block without a verdict is where the others have theirs.
UNJUDGED = "not judged (made by a thread still running while the scan at exit read memory)"


# What a group of live blocks that are not heap blocks is (the scan at
# exit judges heap blocks only), by enum mms_mem_kind.
NOT_HEAP_WORDS = {MEM_MMAP: "a mapping", MEM_POOL: "pool memory"}


def not_heap(group):
    """Whether a group of live blocks is mappings, pool memory or device
    memory: still live at exit, never judged leaked by the scan."""
    return group["mem"] != MEM_HOST


def reach_judged(info):
    """Whether the scan at exit gave the heap blocks live at the end of
    the log of info their verdicts (replay/core/reach.c's scan_whole()):
    then one with none (REACH_UNKNOWN) was made as the scan ran."""
    return info.reach_scan == REACH_SCAN_WHOLE and info.complete and not info.cut and not info.damaged


def unjudged(group, judged):
    """Whether a group of live blocks is heap blocks without a verdict in
    a log whose scan gave verdicts (reach_judged())."""
    return judged and group["reach"] == REACH_UNKNOWN and group["mem"] == MEM_HOST


PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, u64, u64)


class ReplayOptions(ctypes.Structure):
    _fields_ = [("index_path", c_char_p), ("no_index_file", c_int), ("checkpoint_every", u64),
                ("forward_only", c_int), ("progress", c_void_p), ("progress_ctx", c_void_p)]


class StackGroup(ctypes.Structure):
    _fields_ = [("stack", u32), ("blocks", u64), ("bytes", u64), ("addr", u64), ("size", u64), ("step", u64),
                ("op", c_char_p), ("runtime", u32), ("mem", u32), ("device", u32), ("reach", u32),
                ("indirect_blocks", u64), ("indirect_bytes", u64)]


class Frame(ctypes.Structure):
    _fields_ = [("ip", u64), ("function", c_char_p), ("file", c_char_p), ("line", u32), ("module", c_char_p),
                ("module_offset", u64), ("inlined", c_int), ("python", c_int)]


_lib = None
_libc = None


class ReplayError(Exception):
    """A call into the replay library failed; str() explains it."""


def load(path):
    """Loads the replay library at path (once) and declares its functions.
    Raises OSError when it cannot be loaded."""
    global _lib, _libc
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(path)
    P = ctypes.POINTER
    protos = {
        "mms_strerror": (c_char_p, [c_int]),
        "mms_runtime_name": (c_char_p, [ctypes.c_uint]),
        "mms_runtime_what": (c_char_p, [ctypes.c_uint]),
        "mms_runtime_what_live": (c_char_p, [ctypes.c_uint]),
        "mms_alloc_func_name": (c_char_p, [ctypes.c_uint]),
        "mms_free_func_name": (c_char_p, [ctypes.c_uint]),
        "mms_log_open_ex": (c_int, [c_char_p, P(c_void_p), P(OpenError)]),
        "mms_log_follow": (c_int, [c_char_p, P(c_void_p), P(OpenError)]),
        "mms_log_close": (None, [c_void_p]),
        "mms_log_get_info": (None, [c_void_p, P(LogInfo)]),
        "mms_log_own_operators": (c_int, [c_void_p, P(c_char_p), P(c_char_p)]),
        "mms_log_fork": (c_int, [c_void_p, P(LogFork)]),
        "mms_log_stack": (c_int, [c_void_p, u32, P(u64), c_size_t]),
        "mms_log_thread": (c_int, [c_void_p, u32, P(u64), P(c_char_p)]),
        "mms_log_config": (c_int, [c_void_p, P(Config)]),
        "mms_config_format": (c_size_t, [P(Config), c_char_p, c_size_t]),
        "mms_replay_open_ex": (c_int, [c_void_p, P(ReplayOptions), P(c_void_p)]),
        "mms_replay_close": (None, [c_void_p]),
        "mms_replay_seek": (c_int, [c_void_p, u64]),
        "mms_replay_follow_refresh": (c_int, [c_void_p]),
        "mms_replay_where": (None, [c_void_p, P(Where)]),
        "mms_replay_steps": (u64, [c_void_p]),
        "mms_replay_step_range": (c_int, [c_void_p, u64, P(u64), P(u64)]),
        "mms_replay_block_at": (c_int, [c_void_p, u64, P(Block)]),
        "mms_replay_freed_block_at": (c_int, [c_void_p, u64, P(Block)]),
        "mms_replay_group_live": (c_int, [c_void_p, u64, u64, P(P(StackGroup)), P(c_size_t)]),
        "mms_iter_open": (c_int, [c_void_p, P(c_void_p)]),
        "mms_iter_next": (c_int, [c_void_p, P(Event)]),
        "mms_iter_close": (None, [c_void_p]),
        "mms_symbolizer_open": (c_int, [c_void_p, P(c_void_p)]),
        "mms_stack_mixed": (c_int, [c_void_p, P(u64), c_size_t]),
        "mms_symbolizer_close": (None, [c_void_p]),
        "mms_symbolize": (c_int, [c_void_p, u64, P(Frame), c_size_t]),
        "mms_frame_format": (c_int, [P(Frame), ctypes.c_char_p, c_size_t]),
        "mms_guard_run": (c_int, [c_void_p, c_void_p, P(P(Guard))]),
        "mms_guard_free": (None, [P(Guard)]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    libc = ctypes.CDLL(None)
    libc.free.restype = None
    libc.free.argtypes = [c_void_p]
    _lib, _libc = lib, libc
    return lib


def strerror(rc):
    return _lib.mms_strerror(rc).decode("utf-8", "replace")


def func_name(kind, fn):
    """The allocating (kind EV_MALLOC) or releasing (EV_FREE) function fn
    of a heap event by name: "malloc", "new[]", "delete", ...; "?" for one
    the library does not know."""
    s = (_lib.mms_alloc_func_name if kind == EV_MALLOC else _lib.mms_free_func_name)(fn)
    return s.decode() if s else "?"


def runtime_what(kind, at_exit=True):
    """What a runtime that keeps a block for itself is, in words
    ("CPython's, at exit: ..."; with at_exit False, for a process that
    has not exited: "CPython's: ..."); "" for the program's (kind 0)."""
    w = (_lib.mms_runtime_what if at_exit else _lib.mms_runtime_what_live)(kind) if kind else None
    return w.decode("utf-8", "replace") if w else ""


def split_runtime(groups):
    """The program's groups, and those of blocks a runtime keeps for
    itself (not leaks)."""
    return [g for g in groups if not g["runtime"]], [g for g in groups if g["runtime"]]


def text(b):
    """A C string of the library as str (None stays None)."""
    return None if b is None else b.decode("utf-8", "replace")


class Log:
    """An open log (mms_log_open_ex; with follow, mms_log_follow: a log
    its program is still writing, which a forward-only Replay can follow
    as it grows). Raises ReplayError when the file cannot be read as a
    log."""

    def __init__(self, path, follow=False):
        self.path = path
        self.h = c_void_p()
        err = OpenError()
        opener = _lib.mms_log_follow if follow else _lib.mms_log_open_ex
        rc = opener(os.fsencode(path), ctypes.byref(self.h), ctypes.byref(err))
        if rc:
            what = err.what.decode("utf-8", "replace")
            raise ReplayError("cannot read the log %s: %s%s" % (path, strerror(rc), ": " + what if what else ""))
        self._sym = None
        self._sym_failed = False
        self._threads = {}

    def close(self):
        if self._sym:
            _lib.mms_symbolizer_close(self._sym)
            self._sym = None
        if self.h:
            _lib.mms_log_close(self.h)
            self.h = c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def info(self):
        info = LogInfo()
        _lib.mms_log_get_info(self.h, ctypes.byref(info))
        return info

    def _fork(self):
        """The log's LogFork (mms_log_fork), or None for no fork child."""
        fork = LogFork()
        if _lib.mms_log_fork(self.h, ctypes.byref(fork)) or not fork.state:
            return None
        return fork

    def fork_parent(self):
        """The pid of the process this log's process is a fork child of
        (its log says so whether or not its parent's log was found), or 0
        when it is no fork child."""
        fork = self._fork()
        return fork.parent_pid if fork else 0

    def fork_step(self):
        """(parent pid, step, "in" or "after") of the parent's step this
        log's process was forked in (or after, between two "step start"
        ranges), which its step numbers go on from, or None (no fork
        child, no step before the fork, or the parent's log not read)."""
        fork = self._fork()
        if not fork or not fork.fork_step:
            return None
        return fork.parent_pid, fork.fork_step, "in" if fork.fork_in_step else "after"

    def own_operators(self):
        """(module, operator) of the module that calls its own copy of a
        C++ allocation operator (operator None: a stripped copy of the C++
        runtime), or None (mms_log_own_operators: reads the modules' files
        at the first call)."""
        mod, op = c_char_p(), c_char_p()
        if _lib.mms_log_own_operators(self.h, ctypes.byref(mod), ctypes.byref(op)) != 1:
            return None
        return text(mod.value), text(op.value)

    def config(self):
        """(Config, text) of the recording configuration the log keeps,
        the text as the library writes it (MSMEMSCOPE_CONFIG's form); None
        when the log keeps none (cut before the recorder wrote it)."""
        cfg = Config()
        if _lib.mms_log_config(self.h, ctypes.byref(cfg)):
            return None
        buf = ctypes.create_string_buffer(1024)
        _lib.mms_config_format(ctypes.byref(cfg), buf, len(buf))
        return cfg, text(buf.value)

    def thread(self, index):
        """(tid, name or None) of thread number index in the log."""
        if index not in self._threads:
            tid, name = u64(), c_char_p()
            if _lib.mms_log_thread(self.h, index, ctypes.byref(tid), ctypes.byref(name)):
                self._threads[index] = (0, None)
            else:
                self._threads[index] = (tid.value, text(name.value))
        return self._threads[index]

    def thread_label(self, index):
        """"t2" or "t2 'worker'", as msmemscope-replay writes a thread."""
        name = self.thread(index)[1]
        return "t%u '%s'" % (index, name) if name else "t%u" % index

    def operator_names(self):
        """The names of the operators launched so far, sorted (for
        completion)."""
        it, ev, names = c_void_p(), Event(), set()
        if _lib.mms_iter_open(self.h, ctypes.byref(it)):
            return []
        try:
            while _lib.mms_iter_next(it, ctypes.byref(ev)) == 1:
                if ev.kind == EV_OP_LAUNCH and ev.sub == 0 and ev.name:
                    names.add(text(ev.name))
        finally:
            _lib.mms_iter_close(it)
        return sorted(names)

    def last_release(self, tid):
        """(event id, address) of the last FREE event (free, munmap, the
        old block of a realloc) of the thread whose OS id is tid, or
        None."""
        it, ev, last = c_void_p(), Event(), None
        if _lib.mms_iter_open(self.h, ctypes.byref(it)):
            return None
        try:
            while _lib.mms_iter_next(it, ctypes.byref(ev)) == 1:
                if ev.kind == EV_FREE and self.thread(ev.thread)[0] == tid:
                    last = (ev.id, ev.addr)
        finally:
            _lib.mms_iter_close(it)
        return last

    def frees_of(self, addr, first=0):
        """[(event id, thread index, stack id)] of the FREE events of address addr
        from event first on, up to the next allocation at addr: after a
        block's free, the frees that followed it are double frees."""
        it, ev, out = c_void_p(), Event(), []
        if _lib.mms_iter_open(self.h, ctypes.byref(it)):
            return out
        try:
            while _lib.mms_iter_next(it, ctypes.byref(ev)) == 1:
                if ev.id < first or ev.addr != addr:
                    continue
                if ev.kind == EV_MALLOC:
                    break
                if ev.kind == EV_FREE:
                    out.append((ev.id, ev.thread, ev.stack))
        finally:
            _lib.mms_iter_close(it)
        return out

    def event_at(self, n):
        """(kind, addr, sub, mem) of event n, or None."""
        it, ev = c_void_p(), Event()
        if _lib.mms_iter_open(self.h, ctypes.byref(it)):
            return None
        try:
            while _lib.mms_iter_next(it, ctypes.byref(ev)) == 1:
                if ev.id == n:
                    return ev.kind, ev.addr, ev.sub, ev.mem
        finally:
            _lib.mms_iter_close(it)
        return None

    def guard_findings(self):
        """The findings of guard mode in the log, in log order, as
        GuardFinding copies. Raises ReplayError when the analysis fails."""
        out = ctypes.POINTER(Guard)()
        rc = _lib.mms_guard_run(self.h, None, ctypes.byref(out))
        if rc:
            raise ReplayError("reading guard mode's findings: %s" % strerror(rc))
        try:
            g = out.contents
            return [GuardFinding.from_buffer_copy(g.findings[i]) for i in range(g.nfindings)]
        finally:
            _lib.mms_guard_free(out)

    def stack(self, stack_id, limit=256):
        """The instruction pointers of a recorded stack, innermost first;
        with Python frames (bit 63 set), in the mixed order the replay
        prints: each run of the interpreter's eval loop replaced by the
        Python frames it ran (mms_stack_mixed())."""
        if not stack_id:
            return []
        ips = (u64 * limit)()
        n = _lib.mms_log_stack(self.h, stack_id, ips, limit)
        if n < 0:
            raise ReplayError("stack %u: %s" % (stack_id, strerror(n)))
        n = min(n, limit)
        if any(ip >> 63 for ip in ips[:n]) and self._symbolizer() is not None:
            m = _lib.mms_stack_mixed(self._sym, ips, n)
            if m >= 0:
                n = m
        return list(ips[:n])

    def _symbolizer(self):
        """The log's symbolizer, opened once; None when it cannot be."""
        if self._sym is None and not self._sym_failed:
            sym = c_void_p()
            if _lib.mms_symbolizer_open(self.h, ctypes.byref(sym)):
                self._sym_failed = True
            else:
                self._sym = sym
        return self._sym

    def symbolize(self, ip):
        """The frames of one recorded ip as (text, inlined) pairs, innermost
        inlined function first, formatted by mms_frame_format()."""
        if self._symbolizer() is None:
            return [("0x%x" % ip, False)]
        frames = (Frame * 16)()
        n = _lib.mms_symbolize(self._sym, ip, frames, 16)
        if n <= 0:
            return [("0x%x" % ip, False)]
        out = []
        buf = ctypes.create_string_buffer(1024)
        for k in range(n):
            _lib.mms_frame_format(ctypes.byref(frames[k]), buf, len(buf))
            out.append((text(buf.value), bool(frames[k].inlined)))
        return out


class _Interrupts:
    """Ctrl-C while the library replays: gdb raises KeyboardInterrupt in
    the next Python code that runs, the replay's progress callback, out
    of which ctypes lets no exception go: it hands it to
    sys.unraisablehook, which notes it here, and the callback's next call
    asks the library to stop (-ECANCELED: the replay stands where it
    stopped). catching() puts the hook in place around one call and
    raises KeyboardInterrupt after it (gdb's "Quit")."""

    def __init__(self):
        self.hit = False
        self.callback = PROGRESS_FN(self._progress)

    def _progress(self, ctx, done, total):
        return 1 if self.hit else 0

    @contextlib.contextmanager
    def catching(self):
        prev = sys.unraisablehook

        def hook(unraisable):
            if issubclass(unraisable.exc_type, KeyboardInterrupt):
                self.hit = True
            else:
                prev(unraisable)

        self.hit = False
        sys.unraisablehook = hook
        try:
            yield
        finally:
            sys.unraisablehook = prev
        if self.hit:
            self.hit = False
            raise KeyboardInterrupt


_interrupts = _Interrupts()


class Replay:
    """A replay of an open log (mms_replay_open_ex). forward_only replays
    go forward once, without an index; indexed ones can seek and know the
    steps. Raises ReplayError when the replay cannot be opened."""

    def __init__(self, log, forward_only=True):
        self.log = log
        self.h = c_void_p()
        opt = ReplayOptions()
        opt.forward_only = 1 if forward_only else 0
        # Ctrl-C stops an index's build and a seek's replay (_Interrupts).
        opt.progress = ctypes.cast(_interrupts.callback, c_void_p)
        with _interrupts.catching():
            rc = _lib.mms_replay_open_ex(log.h, ctypes.byref(opt), ctypes.byref(self.h))
        if rc:
            raise ReplayError("cannot replay the log %s: %s" % (log.path, strerror(rc)))

    def close(self):
        if self.h:
            _lib.mms_replay_close(self.h)
            self.h = c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def seek(self, pos):
        """Moves to position pos; returns 0 or the library's error code
        (the state then stands where the replay stopped). Raises
        KeyboardInterrupt when Ctrl-C stopped it."""
        with _interrupts.catching():
            rc = _lib.mms_replay_seek(self.h, pos)
        return rc

    def follow_refresh(self):
        """A forward-only replay of a followed log: reads what was written
        since (mms_replay_follow_refresh), so that seek() goes on to the
        new end without replaying the rest again. Raises ReplayError when
        it cannot (a thread's records written late, damage): the replay
        is then of no further use."""
        rc = _lib.mms_replay_follow_refresh(self.h)
        if rc < 0:
            raise ReplayError("cannot follow the log %s: %s" % (self.log.path, strerror(rc)))
        return rc

    def where(self):
        w = Where()
        _lib.mms_replay_where(self.h, ctypes.byref(w))
        return w

    def steps(self):
        return _lib.mms_replay_steps(self.h)

    def step_range(self, step):
        """(begin, end) positions of step, or None when the log has no such step."""
        b, e = u64(), u64()
        if _lib.mms_replay_step_range(self.h, step, ctypes.byref(b), ctypes.byref(e)):
            return None
        return b.value, e.value

    def block_at(self, addr):
        """The live block containing addr, or None."""
        b = Block()
        return b if _lib.mms_replay_block_at(self.h, addr, ctypes.byref(b)) == 1 else None

    def freed_block_at(self, addr):
        """The last block containing addr freed before here, or None."""
        b = Block()
        rc = _lib.mms_replay_freed_block_at(self.h, addr, ctypes.byref(b))
        if rc < 0:
            raise ReplayError("looking for a freed block at 0x%x: %s" % (addr, strerror(rc)))
        return b if rc == 1 else None

    def group_live(self, step_lo=0, step_hi=UINT64_MAX):
        """Live blocks allocated in steps step_lo..step_hi grouped by
        allocation stack, largest bytes first: a list of dicts."""
        out = ctypes.POINTER(StackGroup)()
        n = c_size_t()
        rc = _lib.mms_replay_group_live(self.h, step_lo, step_hi, ctypes.byref(out), ctypes.byref(n))
        if rc:
            raise ReplayError("grouping the live blocks: %s" % strerror(rc))
        try:
            return [{"stack": g.stack, "blocks": g.blocks, "bytes": g.bytes, "addr": g.addr, "size": g.size,
                     "step": g.step, "op": text(g.op), "runtime": g.runtime, "mem": g.mem, "device": g.device,
                     "reach": g.reach, "indirect_blocks": g.indirect_blocks, "indirect_bytes": g.indirect_bytes}
                    for g in (out[i] for i in range(n.value))]
        finally:
            _libc.free(ctypes.cast(out, c_void_p))
