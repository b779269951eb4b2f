# SPDX-License-Identifier: MIT
"""pinpoint: `memscope pinpoint', from the operator launch a watch stop
named to the instruction that stored the bytes.

A watch stop (watch.report) tells which launch L of which operator
changed which bytes; it is kept here (remember). `memscope pinpoint'
re-runs the program to the start of launch L (the recorder stops there
as for `memscope break op', at the first launch of the operator numbered
L or later), checks that the re-run allocated the watched block as the
first run did, and puts hardware watchpoints on the changed bytes, the
largest ranges first, as many as the debug registers hold. The first
store that changes one of those bytes stops the program: its source
line, and for a store inside a C library routine (memset, memcpy,
strcpy, ...) the program's own call of it. gdb's Python never calls the
program: everything is read from its memory, the log and gdb's own
symbol tables.

The recorder also stops where launch L ends (break_end). A launch that
changed the bytes without a trap shows that the debug registers do not
fire on this machine (some virtual machines accept them and never raise
the trap): gdb stops there and the session then uses software
watchpoints, which gdb checks by single-stepping the program from the
start of launch L to its end (slow, but bounded to one launch): they are
deleted where it ends. Hardware watchpoints that work pass that stop by
and stay on."""

import os

import gdb

from . import fmt, gdbif, replaylib
from .session import Command, Error, end_words, in_hooks

# x86-64 (and most other targets gdb debugs on Linux): four debug
# registers, each watching an aligned word of 1, 2, 4 or 8 bytes. A
# range of aligned 8-byte words takes one register a word.
DEBUG_REGISTERS = 4
WORD = 8

# The shared objects whose code is a C library's, not the program's.
_LIBC_PREFIXES = ("libc.so", "libc-", "ld-linux", "ld64.so", "libstdc++.so", "libgcc_s.so")


class Target:
    """What a watch stop found: the launch, its operator, the step, and the
    bytes each watch saw change (address, old, new), with the watched
    block (addr, size, allocation, launch, operator) as the first run
    allocated it."""

    def __init__(self, launch, op, step, log_path, changes):
        self.launch, self.op, self.step, self.log_path = launch, op, step, log_path
        self.changes = changes  # [(watch number, expr, address, old, new, block or None)]

    def changed_addresses(self):
        out = set()
        for _, _, addr, old, new, _ in self.changes:
            out.update(addr + i for i in range(min(len(old), len(new))) if old[i] != new[i])
        return out

    def shown(self):
        """The operator's name as messages show it (fmt.name()): op is
        the recorder's, which memscope pinpoint arms."""
        return fmt.name(self.op)

    def describe(self):
        return "launch %d of operator %s (%s)" % (self.launch, self.shown(), fmt.step_name(self.step))


class State:
    """A pinpoint under way: the target, the user's breakpoints disabled
    for the re-run (gdb numbers), whether the re-run started (the
    recorder was loaded in it), and the hardware watchpoints set."""

    def __init__(self, target):
        self.target = target
        self.disabled = []
        self.started = False
        self.reached = False
        self.old = {}          # address -> the byte there at the start of launch L
        self.watchpoints = []  # PinpointWatchpoint
        self.silent_said = False
        self.soft = False      # software watchpoints (gdb single-steps launch L)
        self.soft_why = None   # why software ones: said when they are set
        self.hw_param = None   # can-use-hw-watchpoints before the software ones
        self.end_launch = 0    # the launch whose end the recorder stops at (the re-run's L)
        self.armed_count = 0   # watchpoints set at the start of launch L
        self.launch_done = 0   # launch L, once it ended with its hardware watchpoints kept on


def remember(session, d, changes):
    """Called at each watch stop with [(slot, addr, old, new)]: the target
    of the next `memscope pinpoint'."""
    if not d.op_launch or not changes:
        session.pinpoint_target = None if not changes else Target(0, d.op_name.decode("utf-8", "replace"),
                                                                   d.step, None, [])
        return
    try:
        path = session.log_path()
    except gdb.GdbError:
        path = None
    out = []
    for slot, addr, old, new in changes:
        w = session.watches.get(slot)
        out.append((slot + 1, w.expr if w else "0x%x" % addr, addr, old, new, w.block if w else None))
    session.pinpoint_target = Target(d.op_launch, d.op_name.decode("utf-8", "replace"), d.step, path, out)


def word_ranges(addresses):
    """The aligned WORD-byte words holding the addresses, adjacent words
    merged: [(start, length)], largest first (then lowest address)."""
    words = sorted({a - a % WORD for a in addresses})
    ranges = []
    for w in words:
        if ranges and ranges[-1][0] + ranges[-1][1] == w:
            ranges[-1] = (ranges[-1][0], ranges[-1][1] + WORD)
        else:
            ranges.append((w, WORD))
    return sorted(ranges, key=lambda r: (-r[1], r[0]))


def plan(ranges, registers):
    """(watched, left out): the largest ranges first, each whole while the
    registers last; a range that no longer fits whole gets its first
    words in the registers left. Each list holds (start, length)."""
    watched, left = [], []
    free = registers
    for start, length in ranges:
        words = length // WORD
        if words <= free:
            watched.append((start, length))
            free -= words
        elif free:
            watched.append((start, free * WORD))
            left.append((start + free * WORD, length - free * WORD))
            free = 0
        else:
            left.append((start, length))
    return watched, left


def registers_in_use(skip=()):
    """Debug registers the user's own enabled hardware watchpoints and
    breakpoints hold (at least one each)."""
    kinds = (gdb.BP_HARDWARE_WATCHPOINT, gdb.BP_READ_WATCHPOINT, gdb.BP_ACCESS_WATCHPOINT,
             getattr(gdb, "BP_HARDWARE_BREAKPOINT", -1))
    return sum(1 for b in gdb.breakpoints()
               if b.is_valid() and b.enabled and b.type in kinds and not isinstance(b, PinpointWatchpoint)
               and b.number not in skip)


class StartBreakpoint(gdb.Breakpoint):
    """On msmemscope_gdb_stopped(): stops the re-run at the first launch
    of the target's operator numbered L or later (the recorder stops
    there because the operator's name is in break_op)."""

    def __init__(self, session):
        super().__init__("msmemscope_gdb_stopped", internal=True)
        self.silent = True
        self.s = session

    def stop(self):
        p = self.s.pinpoint
        if p is None or p.reached:
            return False
        try:
            d = gdbif.Handle(check=False).read()
        except Exception:  # noqa: BLE001 -- a stop() must not leave a traceback
            return False
        if d.reason != gdbif.REASON_OP or d.op_launch < p.target.launch:
            return False
        p.reached = True
        return True


class PinpointWatchpoint(gdb.Breakpoint):
    """A hardware write watchpoint on [start, start + length): stops when a
    store changed one of the bytes the first run saw change (gdb itself
    stops only when the watched bytes changed; the other bytes of the
    words are let pass)."""

    def __init__(self, session, start, length, wanted, old):
        super().__init__("*(unsigned char (*)[%d]) 0x%x" % (length, start), gdb.BP_WATCHPOINT, gdb.WP_WRITE)
        self.silent = True
        self.s, self.start, self.length = session, start, length
        self.wanted = wanted  # the addresses that changed in the first run
        self.before = old     # the bytes before the store (updated when one is let pass)
        self.armed = old      # the bytes when it was set (None: unreadable then)
        self.hit = None       # (old bytes, new bytes) of the store that stopped
        self.traps = 0        # how often the hardware trapped, stops or not

    def stop(self):
        self.traps += 1
        try:
            now = bytes(gdb.selected_inferior().read_memory(self.start, self.length))
        except Exception:  # noqa: BLE001 -- a stop() must not leave a traceback
            return True
        if any(now[i] != self.before[i] for i in range(self.length) if self.start + i in self.wanted):
            self.hit = (self.before, now)
            self.before = now
            return True
        self.before = now
        return False


def silent(p):
    """Whether p's hardware watchpoints never trapped although the bytes
    they watch hold other values now than when they were set (unreadable
    then counts as zeros): the debug registers do not work here (some
    virtual machines accept them and never raise the trap)."""
    if not p.watchpoints or any(w.is_valid() and w.traps for w in p.watchpoints):
        return False
    inferior = gdb.selected_inferior()
    for w in p.watchpoints:
        try:
            now = bytes(inferior.read_memory(w.start, w.length))
        except gdb.error:
            continue
        if now != (w.armed if w.armed is not None else bytes(w.length)):
            return True
    return False


SILENT = ("memscope: pinpoint: the watched bytes changed but no hardware watchpoint stopped the program: gdb's "
          "hardware watchpoints do not fire on this machine (some virtual machines accept the debug registers "
          "and never raise their trap). `memscope pinpoint' again uses software watchpoints: gdb single-steps "
          "the launch, slowly.\n")

# Why a session's pinpoints use software watchpoints once the hardware
# ones were seen silent.
SILENT_WHY = "the hardware watchpoints of this session's last pinpoint did not fire"
SOFT_COST = ("gdb single-steps the program until the launch ends (some thousands of instructions a second), "
             "then deletes them")


def said_silent(session, p, text):
    """Says text, that p's hardware watchpoints are silent: the session's
    next pinpoints use software watchpoints."""
    p.silent_said = True
    session.pinpoint_soft = SILENT_WHY
    gdb.write(text)


def say_if_silent(session, p):
    """Says SILENT once when p's hardware watchpoints are silent (above)."""
    if not p.silent_said and p.started and not p.soft and silent(p):
        said_silent(session, p, SILENT)


def restore_breakpoints(p):
    """Enables again the breakpoints the re-run ran without."""
    for number in p.disabled:
        for b in gdb.breakpoints():
            if b.number == number and b.is_valid():
                b.enabled = True
    p.disabled = []


def delete_watchpoints(p):
    """Deletes p's watchpoints; after software ones, gdb may use hardware
    watchpoints again as the user had it."""
    for w in p.watchpoints:
        if w.is_valid():
            w.delete()
    p.watchpoints = []
    if p.hw_param is not None:
        gdb.execute("set can-use-hw-watchpoints %d" % p.hw_param, to_string=True)
        p.hw_param = None


def stop_at_end(p, launch):
    """Asks the recorder to stop when launch ends (0: not any more)."""
    p.end_launch = launch
    try:
        h = gdbif.Handle()
        h.write_u64("break_end", launch)
        h.update_armed()
    except (gdbif.NotLoaded, gdb.error):
        pass


class PinpointCommand(Command):
    """Run again to the operator launch a watch stop named, and stop at the store.

Usage: memscope pinpoint [hardware|software]

After `memscope watch' stopped and named launch L of operator OP and the
bytes it changed, `memscope pinpoint' runs the program again from the
start (gdb asks first, as `run' does, when it is running) to the start
of launch L, and puts hardware watchpoints on the changed bytes: the
aligned 8-byte words that hold them, the largest ranges first, as many
as the 4 debug registers take (a message says which bytes were left
out). `continue' then stops at the first instruction that stores a new
value into one of those bytes: memscope shows its source line (the
instruction before the one the watchpoint trap stops at) and the bytes
old -> new; when the store is inside a C library routine (memset,
memcpy, strcpy, ...), also the program's own call of it, with its
file:line. The watchpoint that stopped is deleted; `continue' runs on
(and stops again at a store into the other bytes still watched).
Hardware watchpoints stay until the program ends (a store after launch
L, by another thread or a later launch, stops too); software ones end
with launch L, where the program stops and memscope says what they saw.

Some virtual machines accept the debug registers and never raise their
trap: a launch that changed the bytes without a stop shows it, and the
session's next `memscope pinpoint' uses software watchpoints instead
(`software' asks for them; so does `set can-use-hw-watchpoints 0'):
as many bytes as changed, watched by gdb single-stepping the program
from the start of launch L to its end, some thousands of instructions
a second. `hardware' insists on the debug registers.

The re-run is checked against the first run: the watched block must be
allocated again at the same address with the same size, as the same
allocation, and launch L must be a launch of OP; memscope says when they
differ (a program whose allocations or launches depend on time, input or
threads). gdb turns address randomization off (`set
disable-randomization'), so a deterministic program gets its heap at the
same addresses. The breakpoints of the session are disabled during the
re-run and enabled again at the start of launch L."""

    USAGE = "usage: memscope pinpoint [hardware|software]"

    def __init__(self, session):
        super().__init__("memscope pinpoint", gdb.COMMAND_RUNNING)
        self.s = session

    def complete(self, text, word):
        if len(text.split()) + (0 if text.endswith(" ") or not text else -1) == 0:
            return [w for w in ("hardware", "software") if w.startswith(word or "")]
        return []

    def run(self, arg, from_tty):
        mode = arg.strip()
        if mode not in ("", "hardware", "software"):
            raise Error(self.USAGE)
        t = self.s.pinpoint_target
        if t is None:
            raise Error("memscope: no watch has stopped the program yet, so there is nothing to pinpoint: set one "
                        "with `memscope watch EXPR' and `continue' until an operator launch changes it.")
        from . import guard
        if isinstance(t, guard.GuardTarget):
            if mode == "software":
                raise Error("memscope: pinpoint after a guard finding watches from the program's first "
                            "instruction: software watchpoints would single-step the whole run. It uses "
                            "hardware watchpoints.")
            return self.run_guard(t, guard)
        if not t.launch:
            raise Error("memscope: the last watch stop found the change outside any operator launch (after %s); "
                        "pinpoint re-runs to the start of the launch that made a change. Use gdb's `watch' "
                        "from there." % (t.shown() or "no launch so far"))
        if not self.s.recording:
            raise Error("memscope: the program runs without the recorder; pinpoint needs it.")
        if self.s.pinpoint_bp is None or not self.s.pinpoint_bp.is_valid():
            self.s.pinpoint_bp = StartBreakpoint(self.s)
        p = self.start(t)
        if mode == "software":
            p.soft, p.soft_why = True, "asked for"
        elif not mode and self.s.pinpoint_soft:
            p.soft, p.soft_why = True, self.s.pinpoint_soft
        gdb.write("memscope: pinpoint: running the program again to the start of %s%s.\n"
                  % (t.describe(), ", without the session's breakpoints until then" if p.disabled else ""))
        try:
            gdb.execute("run")
        except gdb.error as e:
            restore_breakpoints(p)
            self.s.pinpoint = None
            raise Error("memscope: pinpoint: the program was not run again: %s" % e)
        if p.reached:
            return
        restore_breakpoints(p)
        if not self.s.running():
            self.s.pinpoint = None
            gdb.write("memscope: pinpoint: the re-run ended before %s began: its launches differ from the first "
                      "run's.\n" % t.describe())
        else:
            gdb.write("memscope: pinpoint: the re-run stopped before launch %d began; `continue' goes on to it "
                      "and sets the watchpoints there.\n" % t.launch)

    def start(self, t):
        """A new pinpoint of t (ending one under way), with the session's
        enabled breakpoints disabled."""
        if self.s.pinpoint is not None:
            delete_watchpoints(self.s.pinpoint)
            restore_breakpoints(self.s.pinpoint)
        p = State(t)
        # The user's (gdb.breakpoints() lists internal ones too, such as
        # StartBreakpoint, which must stay enabled).
        p.disabled = [b.number for b in gdb.breakpoints() if b.is_valid() and b.enabled and b.number > 0]
        for b in gdb.breakpoints():
            if b.number in p.disabled:
                b.enabled = False
        self.s.pinpoint = p
        return p

    def run_guard(self, t, guard):
        """pinpoint after a guard finding: the session's breakpoints stay
        disabled until the store."""
        p = self.start(t)
        try:
            guard.pinpoint_guard(self.s, t, p)
        except gdb.GdbError:
            delete_watchpoints(p)
            restore_breakpoints(p)
            self.s.pinpoint = None
            raise


def on_stop(session, ev):
    """The stop handler: at the start of launch L, the watchpoints; at a
    pinpoint watchpoint, the store."""
    p = session.pinpoint
    if p is None or not isinstance(ev, gdb.BreakpointEvent):
        return
    try:
        hits = [b for b in ev.breakpoints if isinstance(b, PinpointWatchpoint) and b.hit is not None]
        if hits:
            report_store(session, p, hits)
        elif p.end_launch and session.bp in ev.breakpoints and launch_ended(session, p):
            pass
        elif p.reached and not p.watchpoints and session.pinpoint_bp in ev.breakpoints:
            arm(session, p)
        else:
            say_if_silent(session, p)
    except (gdb.error, gdb.GdbError, gdbif.NotLoaded, replaylib.ReplayError) as e:
        gdb.write("memscope: pinpoint: %s\n" % e)


def ending(session, d):
    """Whether gdb stops at the recorder's stop d, the end of launch L of
    a pinpoint: with software watchpoints (deleted there, and the program
    runs at full speed again), or hardware ones that did not trap although
    the bytes changed. Hardware watchpoints that work stay on without a
    stop: a store after launch L (another thread's, a later launch's)
    stops the program there too."""
    p = session.pinpoint
    if p is None or not p.end_launch or d.op_launch != p.end_launch:
        return False
    if p.soft or silent(p):
        return True  # launch_ended() says what was seen
    p.launch_done = p.end_launch
    stop_at_end(p, 0)
    return False


def launch_ended(session, p):
    """At a recorder stop: when it is the end of launch L, says what the
    watchpoints saw, deletes them and returns True."""
    d = gdbif.Handle().read()
    if d.reason != gdbif.REASON_OP_END or d.op_launch != p.end_launch:
        return False
    stop_at_end(p, 0)
    what = "software" if p.soft else "hardware"
    if not p.soft and silent(p):
        said_silent(session, p, "memscope: pinpoint: launch %d ended; the watched bytes changed in it but no hardware "
                    "watchpoint stopped the program: gdb's hardware watchpoints do not fire on this machine (some "
                    "virtual machines accept the debug registers and never raise their trap). `memscope pinpoint' "
                    "again uses software watchpoints: %s.\n" % (d.op_launch, SOFT_COST))
    else:
        gdb.write("memscope: pinpoint: launch %d ended without a store into the watched bytes%s: the re-run did not "
                  "change them there (it differs from the first run).\n"
                  % (d.op_launch, " still watched" if len(p.watchpoints) < p.armed_count else ""))
    gdb.write("memscope: pinpoint: its %s watchpoint%s deleted; `continue' runs the program on.\n"
              % (what, "s are" if len(p.watchpoints) > 1 else " is"))
    restore_breakpoints(p)
    delete_watchpoints(p)
    session.pinpoint = None
    session.select_user_frame()
    return True


def on_exited(session, end=None):
    """The re-run's process left gdb (end: a session.End, how): says what
    the pinpoint saw, and ends it."""
    p = session.pinpoint
    if p is None:
        return
    if not p.started:
        return  # the first run, killed for the re-run
    if end is not None and end.how != "exited":
        # Killed (`kill', the end of gdb's session), dead from a signal or
        # detached: the launch was cut short, nothing can be said of it.
        gdb.write("memscope: pinpoint: the program %s %s%s.\n"
                  % ("was detached" if end.how == "detached" else end_words(end)[0],
                     "before a stop at a store into the watched bytes" if p.reached
                     else "before %s began" % p.target.describe(),
                     "; its %s watchpoint%s deleted" % ("software" if p.soft else "hardware",
                                                       "s are" if len(p.watchpoints) > 1 else " is")
                     if p.watchpoints else ""))
    elif not p.reached:
        gdb.write("memscope: pinpoint: the program ended before %s began: the re-run's launches differ from the "
                  "first run's.\n" % p.target.describe())
    elif p.watchpoints and p.silent_said:
        gdb.write("memscope: pinpoint: the program ended; its hardware watchpoints are deleted.\n")
    elif p.watchpoints and p.launch_done:
        gdb.write("memscope: pinpoint: the program ended without a store into the watched bytes from the start of "
                  "launch %d on: the re-run did not change them (it differs from the first run). Its hardware "
                  "watchpoints are deleted.\n" % p.launch_done)
    elif p.watchpoints and p.soft:
        gdb.write("memscope: pinpoint: the program ended without a stop at a store into the watched bytes (launch "
                  "%d's end was not seen: launches nested deeper than the recorder follows). Its software "
                  "watchpoints are deleted.\n" % p.end_launch)
    elif p.watchpoints:
        gdb.write("memscope: pinpoint: the program ended without a stop at a store into the watched bytes: the "
                  "re-run did not change them, or this machine's hardware watchpoints do not fire (some virtual "
                  "machines ignore the debug registers: try gdb's `watch -l' on a store you know). Its hardware "
                  "watchpoints are deleted.\n")
    restore_breakpoints(p)
    delete_watchpoints(p)
    session.pinpoint = None


def on_hooks_loaded(session):
    if session.pinpoint is not None:
        session.pinpoint.started = True


def check_rerun(session, p, d):
    """Lines saying how the re-run matches the first run: the launch and
    its operator, the watched blocks' allocations, the bytes."""
    t = p.target
    lines = []
    if d.op_launch != t.launch:
        lines.append("warning: the re-run differs from the first run: launch %d was not a launch of %s; the "
                     "first one at or after it is launch %d. The watchpoints are set at its start."
                     % (t.launch, t.shown(), d.op_launch))
    with replaylib.Log(session.log_path()) as log, replaylib.Replay(log) as r:
        r.seek(log.info().events)
        for number, expr, addr, old, new, block in t.changes:
            if block is None:
                continue
            b = r.block_at(block[0])
            if b is None:
                lines.append("warning: the re-run differs from the first run: no live block at 0x%x, where watch "
                             "%d's block was (%s, allocation %d)." % (block[0], number, fmt.exact_bytes(block[1]),
                                                                     block[2]))
                continue
            same = b.addr == block[0] and b.size == block[1] and b.alloc_id == block[2] and \
                b.op_launch == block[3]
            how = "%s, allocation %d%s" % (fmt.exact_bytes(b.size), b.alloc_id,
                                            ", in launch %d of %s" % (b.op_launch, replaylib.text(b.op))
                                            if b.op_launch else "")
            if same:
                lines.append("the re-run allocated watch %d's block (%s) as the first run did: 0x%x, %s."
                             % (number, expr, b.addr, how))
            else:
                was = "%s, allocation %d%s" % (fmt.exact_bytes(block[1]), block[2],
                                               ", in launch %d of %s" % (block[3], block[4]) if block[3] else "")
                lines.append("warning: the re-run differs from the first run: the block at 0x%x is %s; the first "
                             "run's was 0x%x, %s. The watchpoints may watch other data."
                             % (b.addr, how, block[0], was))
    return lines


def arm(session, p):
    """At the start of launch L in the re-run: checks it against the first
    run, enables the session's breakpoints again, sets the watchpoints
    (hardware ones, or software ones where p.soft or gdb cannot set
    hardware ones), and asks the recorder to stop where L ends."""
    t = p.target
    h = gdbif.Handle()
    d = h.read()
    restore_breakpoints(p)
    for line in check_rerun(session, p, d):
        gdb.write("memscope: pinpoint: %s\n" % line)
    inferior = gdb.selected_inferior()
    wanted = t.changed_addresses()
    first_old = {}
    for _, _, addr, old, new, _ in t.changes:
        first_old.update((addr + i, old[i]) for i in range(min(len(old), len(new))) if old[i] != new[i])
    ranges = word_ranges(wanted)
    free = DEBUG_REGISTERS - registers_in_use()
    watched, left = plan(ranges, max(free, 0))
    if not p.soft and not gdb.parameter("can-use-hw-watchpoints"):
        p.soft, p.soft_why = True, "gdb cannot set hardware watchpoints here (`show can-use-hw-watchpoints')"
    if p.soft:
        watched, left = sorted(ranges, key=lambda r: r[0]), []
    elif not watched:
        raise Error("no debug register is free for a watchpoint (the session's hardware watchpoints and "
                    "breakpoints hold all %d); delete some and run `memscope pinpoint' again, or `memscope "
                    "pinpoint software'." % DEBUG_REGISTERS)
    if p.soft:
        p.hw_param = int(gdb.parameter("can-use-hw-watchpoints"))
        gdb.execute("set can-use-hw-watchpoints 0", to_string=True)
    differ = 0
    for start, length in watched:
        old = bytes(inferior.read_memory(start, length))
        differ += sum(1 for i in range(length) if start + i in first_old and old[i] != first_old[start + i])
        wp = PinpointWatchpoint(session, start, length, wanted, old)
        p.watchpoints.append(wp)
        if wp.type != (gdb.BP_WATCHPOINT if p.soft else gdb.BP_HARDWARE_WATCHPOINT):
            delete_watchpoints(p)
            raise Error("gdb set a %s watchpoint where a %s one was asked for. Nothing is watched."
                        % (("hardware", "software") if p.soft else ("software", "hardware")))
    p.armed_count = len(p.watchpoints)
    stop_at_end(p, d.op_launch)
    nbytes = sum(1 for a in wanted if any(s <= a < s + n for s, n in watched))
    gdb.write("memscope: pinpoint: at the start of %s; %s watchpoint%s %s on %s (%s the first run saw "
              "change):\n" % (t.describe(), "software" if p.soft else "hardware", "s" if len(watched) > 1 else "",
                              ", ".join(str(w.number) for w in p.watchpoints),
                              fmt.plural(sum(n for _, n in watched), "byte"), fmt.plural(nbytes, "byte")))
    for start, length in watched:
        gdb.write("    0x%x..0x%x%s\n" % (start, start + length, where_in_watch(t, start)))
    if p.soft:
        gdb.write("memscope: pinpoint: software watchpoints (%s): %s.\n" % (p.soft_why, SOFT_COST))
    if differ:
        gdb.write("memscope: pinpoint: warning: %s of them hold other values now than before launch %d in the "
                  "first run.\n" % (fmt.plural(differ, "byte"), t.launch))
    if left:
        gdb.write("memscope: pinpoint: not all changed bytes fit in the %d debug registers (an aligned 8-byte "
                  "word each%s); left out, smallest ranges last:\n"
                  % (DEBUG_REGISTERS, "; %d free" % free if free != DEBUG_REGISTERS else ""))
        for start, length in left:
            gdb.write("    0x%x..0x%x (%s)\n" % (start, start + length, fmt.plural(length, "byte")))
    gdb.write("memscope: pinpoint: `continue' stops at the store.\n")
    session.select_user_frame()


def where_in_watch(t, addr):
    for number, expr, waddr, old, _, _ in t.changes:
        if waddr <= addr < waddr + len(old) or addr <= waddr < addr + WORD:
            return " (watch %d, %s, at %+d)" % (number, expr, addr - waddr)
    return ""


def _libc_frame(frame):
    name = gdb.solib_name(frame.pc())
    return bool(name) and os.path.basename(name).startswith(_LIBC_PREFIXES)


def store_pc(frame):
    """The address of the instruction that stored: a hardware watchpoint
    traps after it, so the one before the pc in the frame's function
    (disassembled from its start); the pc itself for a string
    instruction (rep movs/stos) that traps with iterations left."""
    pc = frame.pc()
    arch = frame.architecture()
    try:
        here = arch.disassemble(pc)[0]["asm"]
        if here.startswith("rep") and int(frame.read_register("rcx")) != 0:
            return pc
    except (gdb.error, ValueError, IndexError):
        pass
    block = gdb.block_for_pc(pc)
    while block is not None and block.superblock is not None and not block.superblock.is_static:
        block = block.superblock
    if block is None or block.function is None or pc - block.start > 1 << 16:
        return None
    prev = None
    for insn in arch.disassemble(block.start, pc):
        if insn["addr"] >= pc:
            break
        prev = insn["addr"]
    return prev


def location(frame, pc=None):
    """'op_run at /src/stomp.c:37' for pc in frame (its pc by default)."""
    pc = frame.pc() if pc is None else pc
    sal = gdb.find_pc_line(pc)
    name = frame.name() or "??"
    if sal.symtab is None:
        lib = gdb.solib_name(pc)
        return "%s (%s)" % (name, os.path.basename(lib) if lib else "no line information")
    return "%s at %s:%d" % (name, sal.symtab.filename, sal.line)


def report_store(session, p, hits):
    t = p.target
    frame = gdb.newest_frame()
    for wp in hits:
        old, new = wp.hit
        wp.hit = None
        changed, lines = fmt.diff_lines(old, new, wp.start, max_lines=session.diff_lines)
        gdb.write("memscope: pinpoint: %s watchpoint %d: a store changed %s at 0x%x%s (old -> new):\n"
                  % ("software" if p.soft else "hardware", wp.number, fmt.plural(changed, "byte"), wp.start,
                     where_in_watch(t, wp.start) if t.changes else ""))
        for line in lines:
            gdb.write(line + "\n")
    while frame is not None and in_hooks(frame.pc()):
        frame = frame.older()
    if frame is None:
        frame = gdb.newest_frame()
    user = frame
    if _libc_frame(frame):
        caller = frame.older()
        while caller is not None and (_libc_frame(caller) or in_hooks(caller.pc())):
            caller = caller.older()
        gdb.write("memscope: pinpoint: the store is in %s, a C library routine,\n" % location(frame))
        if caller is not None:
            sal = caller.find_sal()
            gdb.write("  called by the program from %s\n" % (
                "%s at %s:%d" % (caller.name() or "??", sal.symtab.filename, sal.line) if sal.symtab
                else location(caller)))
            user = caller
    else:
        pc = store_pc(frame)
        if pc is None:
            gdb.write("memscope: pinpoint: the store is just before %s\n" % location(frame))
        else:
            sal = gdb.find_pc_line(pc)
            gdb.write("memscope: pinpoint: the store is the instruction at 0x%x in %s\n" % (pc, location(frame, pc)))
            if sal.symtab is not None:
                try:
                    gdb.execute("list %s:%d,%d" % (sal.symtab.filename, sal.line, sal.line))
                except gdb.error:
                    pass
    try:
        d = gdbif.Handle().read()
        launches = d.launches
    except (gdbif.NotLoaded, gdb.error):
        launches = None
    if not t.launch:
        from . import guard
        guard.check_block(session, t)
        restore_breakpoints(p)
    elif launches is not None and launches != t.launch:
        gdb.write("memscope: pinpoint: note: %d operator launches have begun now, not %d: the store came after "
                  "launch %d began%s.\n" % (launches, t.launch, t.launch,
                                            ", in a later launch or between launches" if launches > t.launch
                                            else ""))
    for wp in hits:
        if wp.is_valid():
            wp.delete()
    p.watchpoints = [w for w in p.watchpoints if w.is_valid()]
    if p.watchpoints:
        gdb.write("memscope: pinpoint: watchpoint%s %s still watch%s the other changed bytes; `continue' stops "
                  "at their store.\n" % ("s" if len(p.watchpoints) > 1 else "",
                                         ", ".join(str(w.number) for w in p.watchpoints),
                                         "" if len(p.watchpoints) > 1 else "es"))
    else:
        gdb.write("memscope: pinpoint: its watchpoint is deleted; `continue' runs the program on.\n")
        stop_at_end(p, 0)
        delete_watchpoints(p)  # gdb's setting back as it was after software ones
        session.pinpoint = None
    user.select()
