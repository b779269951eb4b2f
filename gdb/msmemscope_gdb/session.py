# SPDX-License-Identifier: MIT
"""session: what one gdb session of memscope holds: where the recorder,
the launcher and the replay library are, the folder the program's logs go
to, the watches and breaks gdb armed in the program, and the internal
breakpoint on msmemscope_gdb_stopped() with the report printed when it
stops."""

import contextlib
import os
import select
import shlex
import signal
import time

import gdb

from . import fmt, gdbif, replaylib

HOOKS_NAME = gdbif.HOOKS_NAME


def default_log_top():
    """Where the sessions' log folders go by default: the user's state
    folder, $XDG_STATE_HOME/msmemscope/gdb (~/.local/state/msmemscope/gdb),
    not the current folder."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.path.abspath(base), "msmemscope", "gdb")


def apply_setting(param, setter, current):
    """Runs setter(param.value) for a `set memscope ...' parameter, then
    shows what the session now holds (current()); on a refusal, the
    parameter shows the old value again and the error goes to gdb."""
    try:
        setter(param.value)
    except gdb.GdbError:
        param.value = current()
        raise
    param.value = current()
    return param.value


class Error(gdb.GdbError):
    """A command failed for a reason the user can act on."""


def _dquote(s):
    """s escaped for the inside of a shell's double quotes."""
    return "".join("\\" + c if c in '\\"$`' else c for c in s)


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command's name (the state
    first), or [] when the process is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return []
    return stat[stat.rfind(b")") + 2:].split()


def alive(pid):
    """Whether process pid runs (it exists and is no zombie)."""
    return _stat_fields(pid)[:1] not in ([b"Z"], [b"X"], [])


def ended_on_its_own(pid):
    """Whether process pid has ended, not from SIGKILL, and waits for its
    parent to reap it (a zombie; its wait status is the 52nd field of its
    stat, Linux 3.5 on)."""
    fields = _stat_fields(pid)
    if fields[:1] != [b"Z"] or len(fields) < 50 or not fields[49].isdigit():
        return False
    return int(fields[49]) & 0x7f != 9


def exit_signal():
    """The signal the last process gdb saw end died from ($_exitsignal),
    0 when none."""
    try:
        v = gdb.convenience_variable("_exitsignal")
        return int(v) if v is not None else 0
    except (gdb.error, ValueError, TypeError):
        return 0


def non_stop():
    try:
        return bool(gdb.parameter("non-stop"))
    except (gdb.error, RuntimeError):
        return False


def inferior_of_pid(pid):
    return next((inf for inf in gdb.inferiors() if pid and inf.pid == pid), None)


def signal_words(num):
    """"SIGSEGV (Segmentation fault)" for 11; "signal 77" for a number
    Python does not name."""
    try:
        name = signal.Signals(num).name
    except ValueError:
        return "signal %d" % num
    what = signal.strsignal(num)
    return "%s (%s)" % (name, what) if what else name


def env_value(pid, name):
    """The value of variable name (bytes) in process pid's environment as
    it started, as a str; None when it is not there or cannot be read."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(name + b"="):
                    return os.fsdecode(kv[len(name) + 1:]) or None
    except OSError:
        pass
    return None


def recorded(pid):
    """Whether process pid runs with the recorder in its memory."""
    try:
        with open("/proc/%d/maps" % pid, "rb") as f:
            return any(line.rstrip().endswith(b"/" + HOOKS_NAME.encode()) for line in f)
    except OSError:
        return False


def in_hooks(pc):
    name = gdb.solib_name(pc)
    return bool(name) and os.path.basename(name) == HOOKS_NAME


class Captured:
    """What run_capture() got: returncode, stdout and stderr (bytes)."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_capture(cmd, env):
    """Runs cmd (cmd[0] a path) with env and no input, and returns its
    Captured output; raises OSError when it cannot start. (subprocess.run
    without the subprocess module, whose import is a fifth of the time
    memscope.gdb takes to load.)"""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    writers = [out_w, err_w]
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        writers.append(null)
        pid = os.posix_spawn(cmd[0], cmd, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)])
    except OSError:
        for fd in writers + [out_r, err_r]:
            os.close(fd)
        raise
    for fd in writers:
        os.close(fd)
    try:
        got = {out_r: [], err_r: []}
        poll = select.poll()
        for fd in got:
            poll.register(fd, select.POLLIN)
        open_fds = set(got)
        while open_fds:
            for fd, _ in poll.poll():
                data = os.read(fd, 65536)
                if data:
                    got[fd].append(data)
                else:
                    poll.unregister(fd)
                    open_fds.discard(fd)
    finally:
        os.close(out_r)
        os.close(err_r)
        _, status = os.waitpid(pid, 0)
    return Captured(os.waitstatus_to_exitcode(status), b"".join(got[out_r]), b"".join(got[err_r]))


def one_line_error(e):
    """An exception that is not the user's fault as a one-line message:
    its type and text, never a traceback."""
    text = " ".join(str(e).split()) or "(no message)"
    return "%s: %s" % (type(e).__name__, text)


def event_handler(fn):
    """fn as a gdb event handler: a Ctrl-C that cuts it short (the report
    at exit replays the whole log) says "Quit", as gdb does for a command,
    instead of gdb's "Python Exception <class 'KeyboardInterrupt'>" line."""
    def handle(*args):
        try:
            return fn(*args)
        except KeyboardInterrupt:
            gdb.write("Quit\n")
            return None
    return handle


class SessionParameter(gdb.Parameter):
    """A `set memscope NAME' setting of the session's attribute attr (its
    value is the session's at the start)."""

    def __init__(self, session, name, kind, attr, *enum):
        super().__init__("memscope " + name, gdb.COMMAND_DATA, kind, *enum)
        self.s = session
        self.attr = attr
        self.value = getattr(session, attr)

    def apply_spec(self, usage, setter):
        """`set': a string the launcher checks, through setter; an empty
        one is a usage error."""
        def set_spec(value):
            spec = (value or "").strip()
            if not spec:
                raise Error(usage)
            setter(spec)

        apply_setting(self, set_spec, lambda: getattr(self.s, self.attr))


class Command(gdb.Command):
    """A memscope command: run() does the work. Every command's invoke
    goes through here: errors that are not the user's (gdb could not read
    a value, the log could not be replayed) become messages, and anything
    unexpected a one-line internal error; never a Python traceback, and
    the session goes on."""

    def __init__(self, name, *args, **kwargs):
        self._name = name
        if hasattr(self, "complete"):
            self.complete = self._safe_complete(self.complete)
        super().__init__(name, *args, **kwargs)

    @staticmethod
    def _safe_complete(complete):
        """complete() that offers nothing rather than raise: tab must never
        print a traceback."""
        def wrapper(text, word):
            try:
                return complete(text, word)
            except Exception:  # noqa: BLE001 -- no completion is better than a traceback
                return []
        return wrapper

    def invoke(self, arg, from_tty):
        self.dont_repeat()
        try:
            self.run(arg, from_tty)
        except gdb.GdbError:
            raise
        except gdb.MemoryError as e:
            raise Error("memscope: cannot read the program's memory: %s" % e)
        except gdb.error as e:
            raise Error("memscope: %s" % e)
        except replaylib.ReplayError as e:
            raise Error("memscope: %s" % e)
        except gdbif.NotLoaded as e:
            raise Error("memscope: %s." % e)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 -- the promise: no command ends the session or shows a traceback
            raise Error("memscope: internal error in `%s': %s (please report it)"
                        % (self._name, one_line_error(e)))

    def run(self, arg, from_tty):
        raise NotImplementedError


class StopBreakpoint(gdb.Breakpoint):
    """The breakpoint on msmemscope_gdb_stopped(): the hooks call it only
    when gdb must stop (a watched block changed, a break began), so stop()
    checks the reason and the session prints the report at the stop."""

    def __init__(self, session):
        super().__init__("msmemscope_gdb_stopped", internal=True)
        self.silent = True
        self.s = session

    def stop(self):
        """Stops for a watch, and for the step `at step N' waits for. At a
        step stop, arms the next step a breakpoint waits for (the
        `memscope break' breakpoints stop by their own conditions)."""
        try:
            h = gdbif.Handle(check=False)
            d = h.read()
            if d.reason == gdbif.REASON_STEP:
                from . import breaks
                breaks.arm(self.s, h, after_step=d.step)
                return bool(self.s.at_target) and d.step >= self.s.at_target
            if d.reason == gdbif.REASON_GUARD:
                return not self.s.guard_quiet
            if d.reason == gdbif.REASON_OP_END:
                from . import pinpoint
                return pinpoint.ending(self.s, d)
            if d.reason == gdbif.REASON_WATCH and (d.hit_watch, d.op_launch, d.tid) in self.s.merged:
                self.s.merged.discard((d.hit_watch, d.op_launch, d.tid))
                return False  # shown at the stop for another watch
            return d.reason in (gdbif.REASON_WATCH, gdbif.REASON_FREED)
        except (gdbif.NotLoaded, gdb.error, ValueError):
            return True


class Watch:
    """One watch gdb armed: slot (number - 1), what the user typed, the
    range, and the block it lies in, described when it was armed."""

    def __init__(self, slot, expr, addr, size, block_lines, block_addr=None, block=None):
        self.slot, self.expr, self.addr, self.size = slot, expr, addr, size
        self.block_lines = block_lines
        self.block_addr = block_addr  # the heap block it was set in, or None
        # (addr, size, allocation number, launch, operator) of that block
        # when the watch was set, or None: memscope pinpoint checks a
        # re-run against it.
        self.block = block


def end_words(end):
    """How a process, killed or dead from a signal, ended (an End), and the
    noun for that moment: ("was killed", "the kill") after gdb's `kill',
    ("died from SIGSEGV (Segmentation fault)", "the signal")."""
    if end.how != "signalled":
        return "was killed", "the kill"
    return "died from %s" % signal_words(end.signal), "the signal"


class End:
    """How the last process of one inferior left gdb: how ("exited",
    "killed", "signalled" or "detached"), its pid, the signal it died
    from ("signalled"), the process it was a fork child of (0: none), and
    its log (None when there is none)."""

    def __init__(self, pid=0):
        self.how, self.pid, self.signal, self.fork_parent, self.log = None, pid, 0, 0, None


class Session:
    def __init__(self, hooks, replay_lib, replay_cli, launcher, libdir=None):
        self.hooks = hooks
        self.replay_lib = replay_lib
        self.replay_cli = replay_cli
        self.launcher = launcher
        self.libdir = libdir      # build tree: where libtool left the replay library
        self.recording = False    # the exec-wrapper preloads the recorder
        self.depth = 12           # frames per stack (set memscope depth)
        self.top = 20             # loss records and launches printed (set memscope top)
        self.diff_lines = 16      # lines of changed bytes a watch stop prints (set memscope diff-lines)
        self.merged = set()       # (slot, launch, tid) of changes already shown with another watch's
        self.log_dir = None
        self.watches = {}         # slot -> Watch
        self.at_target = 0        # the step `at step N' runs to (0: none)
        self.armed_key = None     # the breakpoints last armed in the program
        self.unarmed_said = frozenset()  # numbers of the breakpoints last warned about as not armed
        self.breaks = {}          # gdb breakpoint number -> breaks.Break
        self.hits = {}            # gdb breakpoint number -> hit count at our last stop
        self.bp = None
        self.leaks_prev = {}      # (log path, mode) -> {stack: (blocks, bytes)}
        self.stop_kind = None     # what the last stop of ours was (for `at step`)
        self.run_logs = {}        # pid -> the log of a process running now, once known
        self.run_dir = None       # the folder the running program's recorder names its logs in
        # Inferior number -> End of its last process (gdb debugs several
        # with detach-on-fork off): the queries answer for the selected one.
        self.ends = {}
        self.fork_parents = {}    # pid -> the process it is a fork child of, as its log says
        self.stopped = set()      # the inferiors (numbers) stopped since gdb last resumed them
        self.pinpoint_target = None  # pinpoint.Target: what the last watch stop found
        self.pinpoint = None      # pinpoint.State: a pinpoint under way
        self.pinpoint_bp = None   # pinpoint.StartBreakpoint
        self.pinpoint_soft = None  # why pinpoint uses software watchpoints now (None: hardware ones)
        self.guard = False        # the next runs record in guard mode (set memscope guard)
        self.call_stack = "c:32"  # the next runs' stacks (set memscope call-stack)
        self.level = "none"       # the next runs' launches: none, op or kernel (set memscope level)
        self.keep_stacktraces = "alloc-and-free"  # whose stacks (set memscope keep-stacktraces)
        self.device = "cuda"  # the CUDA devices whose memory is recorded (set memscope device)
        self.guard_quiet = False  # memscope check is calling the program: no stop at findings
        self.guard_seen = {}      # log path -> findings shown so far

    # --- set-up --------------------------------------------------------------

    def start(self):
        """Prepares the folder for the logs, the exec-wrapper that preloads
        the recorder into the program only, and the event handlers."""
        replaylib.load(self.replay_lib)
        self.log_dir = self._make_log_dir()
        env = self._recorder_env()
        if env is not None:
            gdb.execute("set exec-wrapper env " + " ".join(env))
            self.recording = True
        gdb.events.new_objfile.connect(event_handler(self._on_new_objfile))
        gdb.events.stop.connect(event_handler(self._on_stop))
        gdb.events.cont.connect(event_handler(self._on_cont))
        gdb.events.inferior_call.connect(event_handler(self._on_inferior_call))
        gdb.events.exited.connect(event_handler(self._on_exited))
        gdb.events.breakpoint_deleted.connect(event_handler(self._on_breakpoint_deleted))
        gdb.events.breakpoint_modified.connect(event_handler(self._on_breakpoint_changed))
        for objfile in gdb.objfiles():
            if os.path.basename(objfile.filename) == HOOKS_NAME:
                self._hooks_loaded()

    def _recorder_env(self, quiet=False):
        """The program's environment, as `NAME=WORD' arguments of env, from
        the launcher itself (msmemscope --print-env), which gdb runs with
        the shell in the program's environment: an LD_PRELOAD of the
        program's is kept after ours, and an NVTX_INJECTION64_PATH naming
        another tool stays. gdb's own rule on top: stacks of 32 frames,
        which the commands print (or `set memscope call-stack'), unless the
        program's environment (gdb's, or `set environment') has a
        MSMEMSCOPE_CONFIG of its own. None when the launcher cannot say:
        the program then runs without the recorder (quiet: without saying
        so)."""
        program, env = self.tool(self.launcher)
        cmd = [program, "--print-env", "--call-stack=" + self.call_stack, "--output=" + self.log_dir] + \
            (["--guard"] if self.guard else []) + (["--level=" + self.level] if self.level != "none" else []) + \
            (["--keep-stacktraces=alloc"] if self.keep_stacktraces == "alloc" else []) + \
            (["--device=" + self.device] if self.device != "cuda" else [])
        env["MSMEMSCOPE_HOOKS"] = self.hooks
        try:
            p = run_capture(cmd, env)
            why = (p.stderr.decode("utf-8", "replace").strip() or "%s exited %d" % (self.launcher, p.returncode)
                   if p.returncode else None)
        except OSError as e:
            p, why = None, "cannot run %s: %s" % (self.launcher, e)
        if why:
            if not quiet:
                gdb.write("memscope: warning: %s\nmemscope: the program will run without the recorder.\n" % why)
            return None
        env = []
        for line in p.stdout.decode("utf-8", "surrogateescape").splitlines():
            name, _, word = line[len("export "):].partition("=")
            if name == "MSMEMSCOPE_CONFIG":
                word = '"${MSMEMSCOPE_CONFIG:-%s}"' % _dquote(shlex.split(word)[0])
            env.append(name + "=" + word)
        return env

    def tool(self, path):
        """(program, environment) to run msmemscope or msmemscope-replay
        at path. In the build tree (libdir set), path is libtool's wrapper
        script, which takes some 60 ms to find the program it runs: the
        program in .libs is run instead, with libdir on its library path,
        as the wrapper would. An installed tool is run as it is."""
        env = dict(os.environ)
        if self.libdir:
            real = os.path.join(os.path.dirname(path), ".libs", os.path.basename(path))
            if os.access(real, os.X_OK):
                old = env.get("LD_LIBRARY_PATH")
                env["LD_LIBRARY_PATH"] = self.libdir + (":" + old if old else "")
                return real, env
        return path, env

    def _make_log_dir(self):
        """gdb_{pid}_{time} (as msmemscope names its run folders) under
        default_log_top(), or a fresh folder under $TMPDIR when that
        cannot be made."""
        stamp = time.strftime("%Y%m%d%H%M%S")
        name = "gdb_%d_%s" % (os.getpid(), stamp)
        try:
            top = default_log_top()
            os.makedirs(top, mode=0o750, exist_ok=True)
            path = os.path.join(top, name)
            os.mkdir(path, 0o750)
            return path
        except OSError:
            import tempfile  # only here: importing it costs every session some ms
            return tempfile.mkdtemp(prefix="msmemscope-" + name + "-")

    def _rewrap(self, attr, value, quiet, refused):
        """Sets attr to value for the next runs, through a new exec-wrapper
        from the launcher. Raises Error(refused(old value)), leaving things
        as they were, when the launcher refuses or cannot say the
        environment (quiet: without its own warning)."""
        old = getattr(self, attr)
        setattr(self, attr, value)
        env = self._recorder_env(quiet=quiet)
        if env is None:
            setattr(self, attr, old)
            raise Error(refused(old))
        gdb.execute("set exec-wrapper env " + " ".join(env))
        self.recording = True

    def set_guard(self, on):
        """`set memscope guard on|off': the next runs record in guard mode
        or not."""
        self._rewrap("guard", on, False, lambda old: "memscope: the recorder's environment could not be made; "
                     "guard mode stays %s." % ("on" if old else "off"))

    def set_call_stack(self, spec):
        """`set memscope call-stack SPEC': the stacks of the next runs'
        events (c:N, python:M or both, as msmemscope --call-stack takes
        them)."""
        self._rewrap("call_stack", spec, True, lambda old: "memscope: %s is not a stack specification the "
                     "recorder takes (c:N, python:M, or c:N,python:M, N and M from 0 to 1000); the stacks stay %s."
                     % (spec, old))

    def set_level(self, level):
        """`set memscope level none|op|kernel': the launches the next runs
        record, as msmemscope --level: op also makes a PyTorch program's
        aten operators launches and, where it marks no steps, the ends
        of its optimizer's steps its steps."""
        self._rewrap("level", level, False, lambda old: "memscope: the recorder's environment could not be "
                     "made; the level stays %s." % old)

    def set_keep_stacktraces(self, which):
        """`set memscope keep-stacktraces alloc|alloc-and-free': whose
        stacks the next runs keep, as msmemscope --keep-stacktraces."""
        self._rewrap("keep_stacktraces", which, False, lambda old: "memscope: the recorder's environment could "
                     "not be made; the stacks kept stay %s." % old)

    def set_device(self, spec):
        """`set memscope device LIST': the CUDA devices whose device memory
        the next runs record, as msmemscope --device takes them."""
        self._rewrap("device", spec, True, lambda old: "memscope: %s is not a device list the recorder takes "
                     "(cuda, or cuda:N with N from 0 to 63, several separated by commas); the devices stay %s."
                     % (spec, old))

    def set_output(self, folder):
        """`set memscope output DIR': the logs of the next runs go to DIR
        (made if missing, mode 0750), through a new exec-wrapper. Raises
        Error, leaving things as they were, when DIR cannot be used."""
        path = os.path.abspath(os.path.expanduser(folder))
        try:
            os.makedirs(path, mode=0o750, exist_ok=True)
        except OSError as e:
            raise Error("memscope: cannot make the folder %s: %s" % (path, e.strerror or e))
        if not os.path.isdir(path) or not os.access(path, os.W_OK | os.X_OK):
            raise Error("memscope: %s is not a folder memscope can write logs into." % path)
        old, self.log_dir = self.log_dir, path
        env = self._recorder_env()
        if env is None:
            self.log_dir = old
            raise Error("memscope: the recorder cannot log to %s; the logs still go to %s." % (path, old))
        gdb.execute("set exec-wrapper env " + " ".join(env))
        self.recording = True

    # --- how the selected inferior's last process ended ----------------------

    def end(self):
        """The End of the selected inferior's last process (an empty one
        before any)."""
        return self.ends.get(gdb.selected_inferior().num) or End()

    @property
    def finished_log(self):
        """The log of the selected inferior's last run, once it ended."""
        return self.end().log

    @finished_log.setter
    def finished_log(self, path):
        num = gdb.selected_inferior().num
        if num in self.ends:
            self.ends[num].log = path

    @property
    def ended(self):
        return self.end().how

    @property
    def ended_pid(self):
        return self.end().pid

    @property
    def ended_fork_parent(self):
        return self.end().fork_parent

    # --- the program's log and descriptor ------------------------------------

    def handle(self):
        try:
            return gdbif.Handle()
        except gdbif.NotLoaded as e:
            raise Error("memscope: %s." % e)

    def log_path(self, handle=None):
        """The log of the current program, from the descriptor."""
        h = handle or self.handle()
        path = h.read().log_path.decode("utf-8", "surrogateescape")
        if not path:
            path = os.path.join(self.run_dir or self.log_dir, "memscope_%d.mms" % h.inferior.pid)
        if not os.path.exists(path):
            ppid = self.fork_parent(h.inferior.pid)
            if ppid:
                raise Error("memscope: process %d is a fork child of process %d: its recorder writes a log of its "
                            "own, %s, from its first event, and has recorded none so far."
                            % (h.inferior.pid, ppid, path))
            raise Error("memscope: the program's log %s does not exist (the recorder could not write it?)." % path)
        self.run_logs[h.inferior.pid] = path
        return path

    @property
    def run_log(self):
        """The log of the selected inferior's process, running now, as
        last known (from its descriptor, else by default name); None when
        there is none."""
        pid = gdb.selected_inferior().pid
        return self.run_logs.get(pid) or self.default_log(pid)

    def fork_parent(self, pid, log=None):
        """The recorded process that process pid is a fork child of, or 0:
        a fork child's recorder writes a log of its own, which begins at
        the fork. Its log (log, once there) says so, wherever the
        parent's log is and whether the parent still runs; before its
        first event, its parent is a recorded process that still runs
        (the recorder in its memory) or whose log is in the logs'
        folder."""
        if pid in self.fork_parents:
            return self.fork_parents[pid]
        if log and os.path.exists(log):
            try:
                with replaylib.Log(log) as lg:
                    ppid = lg.fork_parent()
            except replaylib.ReplayError:
                return 0
            self.fork_parents[pid] = ppid
            return ppid
        try:
            with open("/proc/%d/status" % pid) as f:
                ppid = next((int(line.split()[1]) for line in f if line.startswith("PPid:")), 0)
        except (OSError, ValueError, IndexError):
            return 0
        folder = self.run_dir or self.log_dir
        if ppid > 1 and (recorded(ppid) or folder and
                         os.path.exists(os.path.join(folder, "memscope_%d.mms" % ppid))):
            self.fork_parents[pid] = ppid
            return ppid
        return 0

    def default_log(self, pid):
        """The log process pid writes by default in the logs' folder, when
        it is there (a process that exited before a stop of gdb's in it),
        or None."""
        folder = self.run_dir or self.log_dir
        path = os.path.join(folder, "memscope_%d.mms" % pid) if folder and pid else None
        return path if path and os.path.exists(path) else None

    def finished(self):
        """The finished log of the program's last run, when the program
        is not running and that log is there; else None."""
        if self.running() or not self.finished_log or not os.path.exists(self.finished_log):
            return None
        return self.finished_log

    def query_log(self):
        """The log a query answers from: the running program's, or else the
        finished log of its last run (said on a line of its own). Raises
        Error when there is neither."""
        if self.running():
            path = self.log_path()
            pid = gdb.selected_inferior().pid
            ppid = self.fork_parent(pid, path)
            if ppid:
                gdb.write("memscope: process %d is a fork child of process %d; from its own log %s, which begins "
                          "at the fork:\n" % (pid, ppid, path))
            return path
        if gdbif.on_core():
            self.handle()  # says there is no live process
        path = self.finished()
        if path is not None and self.ended == "detached":
            if alive(self.ended_pid):
                raise Error("memscope: the program was detached (process %d): it goes on running and its recorder "
                            "goes on writing its log %s, so there is no finished log to answer from; read it with "
                            "msmemscope-replay once it has ended, or `run' the program again."
                            % (self.ended_pid, path))
            gdb.write("memscope: the program was detached and has since ended; from its log %s, written by the "
                      "program itself:\n" % path)
            return path
        if path is None and self.ended_fork_parent and self.ended != "detached":
            raise Error("memscope: process %d, a fork child of process %d, %s before its first event: its recorder "
                        "wrote no log." % (self.ended_pid, self.ended_fork_parent,
                                           "exited" if self.ended == "exited" else self.end_words()[0]))
        if path is None:
            self.handle()  # says why: not started, or no recorder
            raise Error("memscope: the program is not running and has no finished log.")
        child = (" (process %d, a fork child of process %d, its log beginning at the fork)"
                 % (self.ended_pid, self.ended_fork_parent) if self.ended_fork_parent else "")
        if self.killed():
            how, until = self.end_words()
            gdb.write("memscope: the program%s %s; from its cut log %s, what the recorder wrote until %s:\n"
                      % (child, how, path, until))
        else:
            gdb.write("memscope: the program%s has exited; from its finished log %s:\n" % (child, path))
        return path

    def killed(self):
        """Whether the last run, over now, was killed (`kill') or died from
        a signal, not ended by its exit: its log is cut there."""
        return not self.running() and self.ended in ("killed", "signalled")

    def end_words(self):
        """How the last run, killed or dead from a signal, ended, and the
        noun for that moment: ("was killed", "the kill") after gdb's
        `kill', ("died from SIGSEGV (Segmentation fault)", "the signal")."""
        return end_words(self.end())

    @contextlib.contextmanager
    def now(self, forward_only=True):
        """(log, replay) of the program's log, replayed to its end: the
        program is stopped (or has exited), so the log holds everything it
        did. Closed on leaving the with block (unless they are the
        $memscope_ values' follow of the running program's log, which
        stays open)."""
        path = self.query_log()
        if forward_only and self.running():
            # The replay that keeps the $memscope_ values follows this
            # log and stands at its end at this stop: reused, the log is
            # not read again (an 11 ms open of a 200,000-event log at
            # each watch stop).
            from . import variables
            f = variables.followed(path)
            if f is not None:
                yield f
                return
        try:
            with replaylib.Log(path) as log, replaylib.Replay(log, forward_only=forward_only) as r:
                rc = r.seek(log.info().events)
                if rc:
                    gdb.write("memscope: warning: the replay stopped at event %d: %s\n"
                              % (r.where().position, replaylib.strerror(rc)))
                yield log, r
        except replaylib.ReplayError as e:
            raise Error("memscope: %s" % e)

    def running(self):
        """Whether a live program is there (a core file is none)."""
        return gdb.selected_inferior().pid != 0 and not gdbif.on_core()

    # --- events ---------------------------------------------------------------

    def _on_new_objfile(self, ev):
        if os.path.basename(ev.new_objfile.filename) == HOOKS_NAME:
            try:
                self._hooks_loaded()
            except Exception as e:  # noqa: BLE001 -- an event handler must not leave a traceback
                gdb.write("memscope: cannot arm the recorder in the program: %s\n" % one_line_error(e))

    def _hooks_loaded(self):
        """The recorder was mapped into the program: keep our breakpoint
        on its stop function and arm the breaks set before it ran. Its
        constructor has not run yet; it only sets the version. In a core
        file, nothing to arm: says the commands need a live program."""
        if gdbif.on_core():
            gdb.write("memscope: %s.\n" % gdbif.core_why())
            return
        if self.bp is None or not self.bp.is_valid():
            self.bp = StopBreakpoint(self)
        # The default log name until the recorder names it (log_path).
        pid = gdb.selected_inferior().pid
        # A new process: its pid may be an earlier process's.
        self.fork_parents.clear()
        # The folder its recorder (and its fork children's) names logs
        # in: a `set memscope output' since changes the next runs only.
        self.run_dir = env_value(pid, b"MSMEMSCOPE_LOG_DIR") or self.log_dir
        if pid:
            self.run_logs[pid] = os.path.join(self.run_dir, "memscope_%d.mms" % pid)
        self.finished_log = None
        # A new image (a new run, or an exec): its descriptor is fresh.
        self.watches.clear()
        from . import breaks
        self.hits = {}  # gdb clears the hit counts at `run'
        self.merged.clear()
        from . import variables
        variables.clear()
        from . import pinpoint
        pinpoint.on_hooks_loaded(self)
        breaks.arm(self, after_step=0)

    def _remember_log(self):
        """Keeps the running program's log path (the recorder may have
        named it otherwise than by default): after exit, the queries
        answer from it."""
        try:
            self.log_path()
        except (gdb.GdbError, gdb.error, gdbif.NotLoaded):
            pass

    def _on_exited(self, ev):
        from . import variables
        inferior = getattr(ev, "inferior", None) or gdb.selected_inferior()
        e = End(pid=inferior.pid)
        was_running = self._resumed_at_exit(inferior)
        # A process gdb never stopped in since its log began (a fork child
        # followed past its first event) has its log by default name.
        # The log gdb last read is another process's where gdb debugs
        # several (detach-on-fork off).
        e.log = self.run_logs.pop(e.pid, None) or self.default_log(e.pid)
        e.fork_parent = self.fork_parent(e.pid, e.log)
        self.at_target = 0
        self.merged.clear()
        # gdb reports a detach as an exit without a code, like a kill or a
        # death from a signal: a detached process still runs, or, detached
        # where it had stopped, has ended since (a program near its end,
        # on a busy machine) and waits to be reaped, not from SIGKILL (gdb
        # reaps a process it killed before it says so, but for a fork
        # child, which its parent reaps).
        if hasattr(ev, "exit_code"):
            e.how = "exited"
        elif e.pid and (alive(e.pid) or (not was_running and ended_on_its_own(e.pid))):
            e.how = "detached"
            ended_since = not alive(e.pid)
        else:
            # gdb sets $_exitsignal when the process died from a signal
            # and leaves it as it was at a `kill', maybe from another
            # inferior's death: it names the end of a process that ran
            # only.
            e.signal = exit_signal() if was_running else 0
            e.how = "signalled" if e.signal else "killed"
        self.ends[inferior.num] = e
        if e.how == "detached":
            gdb.write("memscope: the program was detached: process %d %s%s%s.\n"
                      % (e.pid, "has ended since, and its recorder wrote its log" if ended_since else
                         "goes on running, and its recorder goes on writing its log", " " + e.log if e.log else "",
                         "; the watch gdb set is gone" if len(self.watches) == 1 else
                         "; the %d watches gdb set are gone" % len(self.watches) if self.watches else ""))
        elif self.watches:
            gdb.write("memscope: the program %s; its %s gone.\n"
                      % ("exited" if e.how == "exited" else end_words(e)[0],
                         "watch is" if len(self.watches) == 1 else "%d watches are" % len(self.watches)))
        self.watches.clear()
        # The run's last values, and its leaks: from the finished log
        # (neither raises). The leaks only when the program exited: not
        # when gdb killed it (`kill', `run' again, the end of the session).
        variables.at_exit(e.log, hasattr(ev, "exit_code"), inferior)
        from . import pinpoint
        pinpoint.on_exited(self, e)

    def _on_cont(self, ev):
        """gdb resumes the program: in all-stop mode, every inferior may run
        (schedule-multiple) until the next stop."""
        t = getattr(ev, "inferior_thread", None)
        if t is not None and t.is_valid() and non_stop():
            self.stopped.discard(t.inferior.num)
        else:
            self.stopped.clear()

    def _stopped(self, inferior):
        """inferior stopped (None: unknown); in all-stop mode, all of them
        did. A process that appears while the program runs (a fork child)
        is not stopped until the next stop."""
        if inferior is not None and non_stop():
            self.stopped.add(inferior.num)
        else:
            self.stopped = {inf.num for inf in gdb.inferiors() if inf.pid}

    def _resumed_at_exit(self, inferior):
        """Whether inferior, which ended, ran then (gdb had resumed it): it
        ended of itself, not by gdb's kill (gdb kills stopped processes).
        In all-stop mode, every other inferior is stopped now."""
        if inferior is None:
            return False
        was = inferior.num not in self.stopped
        self._stopped(inferior)
        self.stopped.discard(inferior.num)
        return was

    def _on_inferior_call(self, ev):
        # A call of a function of the program (print f(), memscope check)
        # returns without a stop event.
        if isinstance(ev, gdb.InferiorCallPostEvent):
            ptid = getattr(ev, "ptid", None)
            self._stopped(inferior_of_pid(ptid[0]) if ptid else None)

    def _on_breakpoint_deleted(self, bp):
        self._on_breakpoint_changed(bp, gone=True)

    def _on_breakpoint_changed(self, bp, gone=False):
        """A memscope breakpoint deleted, disabled or enabled: the program
        is told what to stop at now (not at each hit, which gdb reports
        as a change too)."""
        from . import breaks
        if bp.number not in self.breaks:
            return
        if gone:
            del self.breaks[bp.number]
        if not self.running():
            return
        key = frozenset((k.kind, k.value) for b, k in breaks.ours(self) if b.enabled)
        if key == self.armed_key:
            return
        try:
            breaks.arm(self)
        except (gdb.GdbError, gdb.error, ValueError, replaylib.ReplayError) as e:
            gdb.write("memscope: cannot arm the breakpoints in the program: %s\n" % e)

    def current_step(self):
        """The step the running program's log stands in (0: none marked)."""
        try:
            with replaylib.Log(self.log_path()) as log, replaylib.Replay(log) as r:
                r.seek(log.info().events)
                return r.where().step
        except (gdb.GdbError, replaylib.ReplayError):
            return 0

    def _on_stop(self, ev):
        t = getattr(ev, "inferior_thread", None)
        self._stopped(t.inferior if t is not None and t.is_valid() else None)
        self._on_stop_report(ev)
        from . import pinpoint
        try:
            pinpoint.on_stop(self, ev)
        except Exception as e:  # noqa: BLE001 -- an event handler must not leave a traceback
            gdb.write("memscope: pinpoint: internal error: %s (please report it)\n" % one_line_error(e))

    def _on_stop_report(self, ev):
        from . import variables
        self._remember_log()
        variables.refresh_running(self.run_log)
        # gdb lists every breakpoint at the location, those whose
        # condition was false too: ours that stopped are those hit now.
        mine = []
        for b in getattr(ev, "breakpoints", ()):
            if b.number in self.breaks and b.hit_count > self.hits.get(b.number, 0):
                mine.append(b)
            if b.number in self.breaks:
                self.hits[b.number] = b.hit_count
        if not isinstance(ev, gdb.BreakpointEvent) or not (mine or (self.bp is not None and self.bp in ev.breakpoints)):
            self.stop_kind = None
            return
        try:
            self._report_stop(mine)
        except (gdb.error, gdbif.NotLoaded, replaylib.ReplayError) as e:
            gdb.write("memscope: stopped by the recorder, but cannot say why: %s\n" % e)
        except Exception as e:  # noqa: BLE001 -- an event handler must not leave a traceback
            gdb.write("memscope: stopped by the recorder, but cannot say why: %s\n" % one_line_error(e))

    def _report_stop(self, mine):
        h = gdbif.Handle(check=False)
        d = h.read()
        who = fmt.gdb_thread(d.tid)
        self.stop_kind = (d.reason, d.step)
        nums = "".join("breakpoint %d, " % b.number for b in mine)
        if d.reason == gdbif.REASON_WATCH:
            from . import watch
            watch.report(self, h, d, who)
        elif d.reason == gdbif.REASON_FREED:
            from . import watch
            watch.report_freed(self, h, d, who)
        elif d.reason == gdbif.REASON_GUARD:
            from . import guard
            guard.report_stop(self, d, who)
        elif d.reason == gdbif.REASON_OP:
            gdb.write("memscope: %soperator %s begins: launch %d, %s, %s\n"
                      % (nums, fmt.name(d.op_name), d.op_launch, fmt.step_name(d.step), who))
        elif d.reason == gdbif.REASON_STEP:
            if self.at_target and d.step >= self.at_target:
                self.at_target = 0
            gdb.write("memscope: %sstep %d begins, %s\n" % (nums, d.step, who))
        elif d.reason == gdbif.REASON_OP_END:
            return  # the end of a pinpoint's launch: pinpoint.on_stop says what it saw
        self.select_user_frame()

    def select_user_frame(self):
        """Selects and prints the innermost frame outside the recorder: the
        program's code that crossed the operator or step boundary."""
        frame = gdb.newest_frame()
        while frame is not None and in_hooks(frame.pc()):
            frame = frame.older()
        if frame is not None:
            frame.select()
            gdb.execute("frame")
