# SPDX-License-Identifier: MIT
"""guard: guard mode under gdb (doc/guard.md). `set memscope guard on'
records the next runs in guard mode; gdb stops where a check finds
damage (the recorder calls msmemscope_gdb_stopped() after writing the
finding) and shows it; `memscope check' runs the program's
msmemscope_guard_check() now; after a finding, `memscope pinpoint'
re-runs the program with hardware watchpoints on the damaged bytes and
stops at the store that damaged them within the finding's window."""

import os

import gdb

from . import args, fmt, pinpoint, replaylib
from .session import Command, Error, HOOKS_NAME, SessionParameter, apply_setting, in_hooks

_WHERE = {1: "in its tail red zone", 2: "in its head red zone", 3: "in the freed block or its red zones"}
_SINCE = {replaylib.GUARD_SINCE_ALLOCATION: "the block's allocation", replaylib.GUARD_SINCE_FREEING: "its free",
          replaylib.GUARD_SINCE_LAST_CHECK: "the last full check"}


class GuardTarget:
    """A finding `memscope pinpoint' can follow: the damaged bytes
    (address, expected values), the window's first event, and the block
    (address, size, allocation event) as the first run had it."""

    def __init__(self, f, log_path):
        self.kind = f.kind
        self.start = f.addr + f.offset
        self.length = max(int(f.length), 1)
        self.bytes = bytes(f.bytes[:f.nbytes])
        self.since_event = f.since_event
        self.event = f.event
        self.block = (f.addr, f.size, f.alloc_event)
        self.log_path = log_path
        self.launch = None  # not a watch stop's launch
        self.changes = []

    def describe(self):
        return "the %s of block 0x%x" % (replaylib.GUARD_KINDS.get(self.kind, "damage"), self.block[0])


class GuardParameter(SessionParameter):
    """Guard mode for the next runs: red zones around every heap block, a
quarantine of freed blocks, checks at each free, at step boundaries and
on demand (doc/guard.md). gdb stops where a check finds damage and shows
the finding; `memscope check' runs a full check now, and `memscope
pinpoint' after a finding runs again to stop at the store."""

    set_doc = "Set whether the next runs record in guard mode."
    show_doc = "Show whether the next runs record in guard mode."

    def __init__(self, session):
        super().__init__(session, "guard", gdb.PARAM_BOOLEAN, "guard")

    def get_set_string(self):
        apply_setting(self, lambda v: self.s.set_guard(bool(v)), lambda: self.s.guard)
        return "memscope: the next runs record %s guard mode%s." % (
            "in" if self.s.guard else "without", " (red zones and a quarantine; gdb stops where a check finds "
            "damage)" if self.s.guard else "")

    def get_show_string(self, svalue):
        return "Guard mode for the next runs is %s." % svalue


def findings(path):
    with replaylib.Log(path) as log:
        return log.guard_findings()


# mms_guard_finding_t.found_by (0: a log that does not say).
_FOUND_BY = {1: "by a full check", 2: "by the check of its free, realloc or delete",
             3: "as it left the quarantine, pushed out by a later free,"}


def describe(log, f, depth):
    """The lines that show one finding."""
    kind = replaylib.GUARD_KINDS.get(f.kind, "finding %d" % f.kind)
    lines = []
    if f.size or f.kind in (1, 2, 3):
        head = "%s of block 0x%x (%s)" % (kind, f.addr, fmt.exact_bytes(f.size))
    else:
        head = "%s of 0x%x" % (kind, f.addr)
    by = _FOUND_BY.get(f.found_by)
    lines.append("%s, found at event #%d%s on %s" % (head, f.event, " " + by if by else "", log.thread_label(f.thread)))
    if f.length:
        at = f.addr + f.offset
        lines.append("  %s damaged at 0x%x (%+d from the block, %s): %s%s" % (
            fmt.plural(f.length, "byte"), at, f.offset, _WHERE.get(f.kind, "near it"),
            fmt.hex_bytes(bytes(f.bytes[:f.nbytes])), " ..." if f.length > f.nbytes else ""))
    if f.since_event != replaylib.UINT64_MAX and f.since in _SINCE:
        lines.append("  the damage happened after event #%d (%s) and before event #%d: %d operator launch%s and %d "
                     "step boundar%s in between" % (
                         f.since_event, _SINCE[f.since], f.event, f.launches_in_window,
                         "" if f.launches_in_window == 1 else "es", f.steps_in_window,
                         "y" if f.steps_in_window == 1 else "ies"))
        if f.last_launch and f.launches_in_window == 1:
            lines.append("  done by operator launch %d (%s), or just before it began"
                         % (f.last_launch, replaylib.text(f.last_op) or "unnamed"))
        elif f.last_launch:
            lines.append("  the last launch that began in between: %d (%s)"
                         % (f.last_launch, replaylib.text(f.last_op) or "unnamed"))
    if f.alloc_stack or f.size:
        lines.append("  the block was allocated at event #%d by:" % f.alloc_event
                     if f.alloc_event != replaylib.UINT64_MAX else "  the block was allocated by:")
        lines += fmt.stack_lines(log, f.alloc_stack, depth)
    if f.free_stack:
        lines.append("  and freed by:")
        lines += fmt.stack_lines(log, f.free_stack, depth)
    if f.at_stack:
        lines.append("  the check was made by:")
        lines += fmt.stack_lines(log, f.at_stack, depth)
    return lines


def report_new(session, path, header):
    """Prints the findings of the log at path not shown yet, each under
    header (a line); returns how many. The last one with damaged bytes
    becomes `memscope pinpoint''s target."""
    with replaylib.Log(path) as log:
        all_ = log.guard_findings()
        seen = session.guard_seen.get(path, 0)
        new = all_[seen:]
        session.guard_seen[path] = len(all_)
        for f in new:
            gdb.write(header)
            for line in describe(log, f, session.depth):
                gdb.write(line + "\n")
            if f.length and f.since_event != replaylib.UINT64_MAX:
                session.pinpoint_target = GuardTarget(f, path)
    if new and isinstance(session.pinpoint_target, GuardTarget):
        gdb.write("memscope: `memscope pinpoint' runs the program again and stops at the store that damaged the "
                  "bytes.\n")
    return len(new)


def report_stop(session, d, who):
    """The recorder stopped at a finding (REASON_GUARD)."""
    name = fmt.name(d.op_name)
    where = ("in operator %s (launch %d, %s)" % (name, d.op_launch, fmt.step_name(d.step)) if d.op_launch
             else "outside any operator launch (%s)" % fmt.step_name(d.step))
    n = report_new(session, session.log_path(), "memscope: guard: ")
    if not n:
        gdb.write("memscope: guard: a check found damage %s, %s (the log shows no new finding)\n" % (where, who))
    else:
        gdb.write("memscope: guard: stopped %s, %s\n" % (where, who))
    if session.pinpoint is not None:
        pinpoint.say_if_silent(session.pinpoint)


def threads_in_hooks():
    """[gdb thread number] of the threads stopped inside the recorder."""
    out = []
    selected = gdb.selected_thread()
    frame = gdb.selected_frame() if selected is not None else None
    try:
        for t in gdb.selected_inferior().threads():
            t.switch()
            f = gdb.newest_frame()
            while f is not None:
                if in_hooks(f.pc()):
                    out.append(t.num)
                    break
                f = f.older()
    finally:
        if selected is not None and selected.is_valid():
            selected.switch()
            if frame is not None and frame.is_valid():
                frame.select()
    return out


class CheckCommand(Command):
    """Run guard mode's full check now: msmemscope_guard_check().

Usage: memscope check

Checks every live guarded block's red zones and every block in the
quarantine, as the program's own msmemscope_guard_check() does, and
prints what it found (nothing new: says so). The program must run in
guard mode (`set memscope guard on' before `run'). This is the one
memscope command that calls a function in the program: it refuses while
any thread is stopped inside the recorder (whose locks the check takes),
and stops nowhere during the call."""

    USAGE = "usage: memscope check"

    def __init__(self, session):
        super().__init__("memscope check", gdb.COMMAND_DATA)
        self.s = session

    def run(self, arg, from_tty):
        if arg.strip():
            raise Error(self.USAGE)
        self.s.handle()
        path = self.s.log_path()
        with replaylib.Log(path) as log:
            config = log.config()
        if config is None or not config[0].guard:
            raise Error("memscope: the program runs without guard mode: `set memscope guard on', then `run' "
                        "it again.")
        busy = threads_in_hooks()
        if busy:
            raise Error("memscope: thread%s %s stopped inside the recorder, whose locks the check takes; "
                        "`finish' out of it first (or continue to another stop)."
                        % ("s" if len(busy) > 1 else "", ", ".join(str(n) for n in busy)))
        try:
            fn = gdb.parse_and_eval("&msmemscope_guard_check")
        except gdb.error:
            raise Error("memscope: the recorder in the program has no msmemscope_guard_check().")
        addr = int(fn) & args.UINT64_MAX
        lib = gdb.solib_name(addr)
        if not lib or os.path.basename(lib) != HOOKS_NAME:
            raise Error("memscope: msmemscope_guard_check resolves to %s, not the recorder's." % (lib or "the program"))
        self.s.guard_quiet = True
        saved = [(p, gdb.parameter(p)) for p in ("may-call-functions", "unwindonsignal")]
        try:
            gdb.execute("set may-call-functions on", to_string=True)
            gdb.execute("set unwindonsignal on", to_string=True)
            n = int(gdb.parse_and_eval("((int (*)(void)) 0x%x)()" % addr))
        except gdb.error as e:
            raise Error("memscope: the check did not complete: %s" % e)
        finally:
            self.s.guard_quiet = False
            for p, v in saved:
                gdb.execute("set %s %s" % (p, "on" if v else "off"), to_string=True)
        gdb.write("memscope: check: %s\n" % ("no damage found" if n == 0 else "%s" % fmt.plural(n, "finding")))
        if n:
            report_new(self.s, path, "memscope: check: ")


class GuardWatchpoint(pinpoint.PinpointWatchpoint):
    """A hardware watchpoint on damaged bytes for a guard finding: stops
    at a store that changes one of them, made by the program (not the
    recorder filling its red zones and quarantine) after the finding's
    window began in the re-run (the log counts more events than the
    window's first)."""

    def __init__(self, session, start, length, wanted, since_event):
        self.since_event = since_event
        super().__init__(session, start, length, wanted, None)

    def _read(self):
        try:
            return bytes(gdb.selected_inferior().read_memory(self.start, self.length))
        except gdb.error:
            return None

    def stop(self):
        self.traps += 1
        try:
            return self._stop()
        except Exception:  # noqa: BLE001 -- a stop() must not leave a traceback
            return True

    def _stop(self):
        now = self._read()
        before, self.before = self.before, now
        if now is None:
            return False
        if before is not None and not any(now[i] != before[i] for i in range(self.length)
                                          if self.start + i in self.wanted):
            return False
        try:
            if in_hooks(gdb.newest_frame().pc()):
                return False
            path = self.s.log_path()
            with replaylib.Log(path) as log:
                if log.info().events <= self.since_event:
                    return False
        except (gdb.error, gdb.GdbError, replaylib.ReplayError):
            return False
        self.hit = (before if before is not None else bytes(self.length), now)
        return True


def pinpoint_guard(session, t, p):
    """`memscope pinpoint' for a guard finding: runs the program again
    from its first instruction, puts hardware watchpoints on the damaged
    bytes (their aligned words, within the debug registers), and lets
    `continue' stop at the store."""
    wanted = set(range(t.start, t.start + t.length))
    ranges = pinpoint.word_ranges(wanted)
    free = pinpoint.DEBUG_REGISTERS - pinpoint.registers_in_use()
    watched, left = pinpoint.plan(ranges, max(free, 0))
    if not watched:
        raise Error("memscope: no debug register is free for a watchpoint; delete the session's hardware "
                    "watchpoints first.")
    gdb.write("memscope: pinpoint: running the program again, with hardware watchpoints on the damaged bytes "
              "from its first instruction; `continue' stops at the program's store into them after event #%d "
              "(the start of the window).\n" % t.since_event)
    try:
        gdb.execute("starti")
    except gdb.error as e:
        raise Error("memscope: pinpoint: the program was not run again: %s" % e)
    if not session.running():
        raise Error("memscope: pinpoint: the program did not start.")
    p.reached = True
    for start, length in watched:
        wp = GuardWatchpoint(session, start, length, wanted, t.since_event)
        p.watchpoints.append(wp)
        if wp.type != gdb.BP_HARDWARE_WATCHPOINT:
            pinpoint.delete_watchpoints(p)
            raise Error("memscope: gdb cannot set hardware watchpoints here; nothing is watched.")
    gdb.write("memscope: pinpoint: hardware watchpoint%s %s on the %s damaged at 0x%x (%s):\n" % (
        "s" if len(watched) > 1 else "", ", ".join(str(w.number) for w in p.watchpoints),
        fmt.plural(t.length, "byte"), t.start, t.describe()))
    for start, length in watched:
        gdb.write("    0x%x..0x%x\n" % (start, start + length))
    if left:
        gdb.write("memscope: pinpoint: not all damaged bytes fit in the debug registers; left out:\n")
        for start, length in left:
            gdb.write("    0x%x..0x%x (%s)\n" % (start, start + length, fmt.plural(length, "byte")))
    gdb.write("memscope: pinpoint: `continue' stops at the store.\n")


def check_block(session, t):
    """After the store: whether the re-run's block is the first run's."""
    try:
        with replaylib.Log(session.log_path()) as log, replaylib.Replay(log, forward_only=False) as r:
            r.seek(log.info().events)
            b = r.block_at(t.block[0]) or r.freed_block_at(t.block[0])
    except (gdb.GdbError, replaylib.ReplayError):
        return
    if b is not None and b.addr == t.block[0] and b.size == t.block[1] and b.alloc_event == t.block[2]:
        gdb.write("memscope: pinpoint: the re-run allocated block 0x%x as the first run did: %s at event #%d.\n"
                  % (b.addr, fmt.exact_bytes(b.size), b.alloc_event))
    else:
        gdb.write("memscope: pinpoint: warning: the re-run differs from the first run: %s; the first run's block "
                  "0x%x was %s, allocated at event #%d.\n" % (
                      "block 0x%x is %s, allocated at event #%d" % (b.addr, fmt.exact_bytes(b.size), b.alloc_event)
                      if b is not None else "no block holds 0x%x" % t.block[0],
                      t.block[0], fmt.exact_bytes(t.block[1]), t.block[2]))
