# SPDX-License-Identifier: MIT
"""commands: the `memscope' prefix and its commands other than watch and
leaks: info, block, at step/event, break, and the settings (set memscope
depth/top)."""

import sys

import gdb

from . import args, breaks, fmt, gdbif, replaylib
from .session import Command, Error, SessionParameter, apply_setting, run_capture


class MemscopeCommand(Command):
    """Memory debugging with the msmemscope recorder.

The program runs with the recorder preloaded (gdb -x memscope.gdb): each
allocation, free, operator launch and step goes to a log, and these
commands answer from that log and from the program's memory, whenever
the program is stopped. They never call functions in the program (but
`memscope check', which runs guard mode's check when that is safe): an
expression that would need it (a call, a string literal) is refused.
Numbers (SIZE, N) are expressions too, checked before use.

After the program exited, the queries answer from its finished log,
and a line at exit gives its leaks.

Convenience variables, set at each stop: $memscope_step (from 1),
$memscope_launch and $memscope_op (0 and "" when no operator runs),
$memscope_events; in a breakpoint condition they are read at the hit
(as $_memscope_step() and so on).

Start with `start' (or `break' somewhere and `run'), then try
`memscope info', `memscope leaks' or `memscope watch EXPR'."""

    def __init__(self):
        super().__init__("memscope", gdb.COMMAND_DATA, prefix=True)

    def run(self, arg, from_tty):
        if arg.strip():
            raise Error('memscope: unknown command "%s". Try "help memscope".' % arg.strip())
        gdb.execute("help memscope")


class SetMemscope(gdb.Command):
    """Settings of the memscope commands."""

    def __init__(self, verb):
        super().__init__(verb + " memscope", gdb.COMMAND_DATA, prefix=True)


class IntParameter(gdb.Parameter):
    def __init__(self, session, name, attr, set_doc, show_doc, doc):
        self.__doc__ = doc
        self.set_doc = set_doc
        self.show_doc = show_doc
        super().__init__("memscope " + name, gdb.COMMAND_DATA, gdb.PARAM_ZUINTEGER)
        self.s, self.attr = session, attr
        self.value = getattr(session, attr)

    def get_set_string(self):
        setattr(self.s, self.attr, self.value)
        return ""

    def get_show_string(self, svalue):
        return "%s is %s%s." % (self.show_doc, svalue, " (all)" if svalue == "0" else "")


def ask(question):
    """A yes/no question on the terminal; False at end of input."""
    try:
        answer = input(question + "(y or n) ")
    except (EOFError, OSError):
        return False
    return answer.strip().lower() in ("y", "yes")


def state_so_far(log, r):
    """The state a replay stands at, for a step the replay CLI cannot
    report (no step marked): events, launches, live and peak bytes."""
    w = r.where()
    blocks = sum(w.mem[k].live_blocks for k in range(replaylib.MEM_KIND_COUNT))
    allocs = sum(w.mem[k].allocs for k in range(replaylib.MEM_KIND_COUNT))
    frees = sum(w.mem[k].frees for k in range(replaylib.MEM_KIND_COUNT))
    gdb.write("  %s (#0..#%d); operator launches: %d\n" % (fmt.plural(w.position, "event"), max(w.position, 1) - 1,
                                                         w.op_launches))
    gdb.write("  allocated %s, freed %s; live: %s, %s; peak %s\n" % (
        fmt.plural(allocs, "block"), fmt.plural(frees, "block"), fmt.plural(blocks, "block"),
        fmt.human_bytes(w.live_bytes), fmt.human_bytes(w.peak_bytes)))
    gdb.write("  (`memscope leaks full' lists the live blocks by stack.)\n")


class OutputParameter(gdb.Parameter):
    """Where this session's logs go: one memscope_{pid}.mms per process of
each run. By default a folder gdb_{pid}_{time} of its own under
$XDG_STATE_HOME/msmemscope/gdb (~/.local/state/msmemscope/gdb); `set
memscope output DIR' sends the logs of the next runs to DIR (made if
missing)."""

    set_doc = "Set the folder the program's logs go to (from the next run)."
    show_doc = "Show the folder the program's logs go to."

    def __init__(self, session):
        super().__init__("memscope output", gdb.COMMAND_DATA, gdb.PARAM_FILENAME)
        self.s = session
        self.value = session.log_dir

    def get_set_string(self):
        apply_setting(self, self.s.set_output, lambda: self.s.log_dir)
        return "memscope: the logs of the next runs go to %s/." % self.s.log_dir

    def get_show_string(self, svalue):
        return "The program's logs go to %s/." % svalue


class CallStackParameter(SessionParameter):
    """The stacks recorded with each event of the next runs, as msmemscope's
--call-stack takes them: c:N (N C frames; the default is c:32), python:M
(M Python frames of a CPython program: the interpreter then imports the
msmemscope package at start-up and allocates with malloc, see
doc/python.md), or c:N,python:M for both, in the mixed stack the
commands print. 0 frames: no stacks (the commands then show none)."""

    set_doc = "Set the stacks the next runs record (c:N, python:M or c:N,python:M)."
    show_doc = "Show the stacks the next runs record."

    def __init__(self, session):
        super().__init__(session, "call-stack", gdb.PARAM_STRING, "call_stack")

    def get_set_string(self):
        self.apply_spec("usage: set memscope call-stack c:N | python:M | c:N,python:M", self.s.set_call_stack)
        return "memscope: the next runs record stacks of %s." % self.s.call_stack

    def get_show_string(self, svalue):
        return "The next runs record stacks of %s." % svalue


class LevelParameter(SessionParameter):
    """The launches the next runs record, as msmemscope's --level takes them:
op (operator launches: the program's msmemscope_op_begin() and, in a
PyTorch program, its aten operators with no change to it; where it
marks no steps, the end of each optimizer.step() ends a step, so that
`memscope break step N' and `memscope at step N' work on a training
loop as it is), kernel (kernel launches), or none (the default: the
launches the program makes itself are recorded all the same)."""

    set_doc = "Set the launches the next runs record (none, op or kernel)."
    show_doc = "Show the launches the next runs record."

    def __init__(self, session):
        super().__init__(session, "level", gdb.PARAM_ENUM, "level", ["none", "op", "kernel"])

    def get_set_string(self):
        apply_setting(self, self.s.set_level, lambda: self.s.level)
        return "memscope: the next runs record %s." % {
            "none": "the launches the program makes itself", "op": "operator launches (a PyTorch program's "
            "aten operators too, and its optimizer's steps where it marks none)",
            "kernel": "kernel launches"}[self.s.level]

    def get_show_string(self, svalue):
        return "The next runs record launches at level %s." % svalue


class KeepStacktracesParameter(SessionParameter):
    """Whose stacks the next runs keep, as msmemscope's --keep-stacktraces
(valgrind's option) takes them: alloc-and-free (the default: every
event's stack, so that `memscope block' shows where a freed block was
freed) or alloc (the allocations' stacks only: a free then records no
frames, half the stacks of a program that frees what it allocates, and
`memscope block' says the free's stack was not kept)."""

    set_doc = "Set whose stacks the next runs keep (alloc-and-free or alloc)."
    show_doc = "Show whose stacks the next runs keep."

    def __init__(self, session):
        super().__init__(session, "keep-stacktraces", gdb.PARAM_ENUM, "keep_stacktraces", ["alloc-and-free", "alloc"])

    def get_set_string(self):
        apply_setting(self, self.s.set_keep_stacktraces, lambda: self.s.keep_stacktraces)
        return "memscope: the next runs keep %s." % {
            "alloc-and-free": "the stacks of allocations and frees",
            "alloc": "the stacks of allocations only (frees record none)"}[self.s.keep_stacktraces]

    def get_show_string(self, svalue):
        return "The next runs keep stacks: %s." % svalue


class DeviceParameter(SessionParameter):
    """The CUDA devices whose device memory the next runs record, as
msmemscope's --device takes them: cuda (every device, the default) or
cuda:N (device ordinal N, 0 to 63), several separated by commas
(msMemScope's npu and npu:N are taken as cuda and cuda:N). Host memory
and kernel launches are recorded whole."""

    set_doc = "Set the CUDA devices whose memory the next runs record (cuda, or cuda:N,...)."
    show_doc = "Show the CUDA devices whose memory the next runs record."

    def __init__(self, session):
        super().__init__(session, "device", gdb.PARAM_STRING, "device")

    def get_set_string(self):
        self.apply_spec("usage: set memscope device cuda | cuda:N[,cuda:M...]", self.s.set_device)
        return "memscope: the next runs record the device memory of %s." % (
            "every CUDA device" if self.s.device == "cuda" else self.s.device)

    def get_show_string(self, svalue):
        return "The next runs record the device memory of %s." % (
            "every CUDA device" if svalue == "cuda" else svalue)


class InfoCommand(Command):
    """Where the program stands, from its recorder's log.

Usage: memscope info

Prints the log's path and the configuration it is recorded with, the
events recorded so far, the current step and operator, the live blocks
and bytes and the peak so far, and the watches and breaks set."""

    def __init__(self, session):
        super().__init__("memscope info", gdb.COMMAND_DATA)
        self.s = session

    def run(self, arg, from_tty):
        if arg.strip():
            raise Error("usage: memscope info")
        d = self.s.handle().read() if self.s.running() else None
        done = d is None  # the program exited: the finished log
        with self.s.now(forward_only=not done) as (log, r):
            info = log.info()
            w = r.where()
            gdb.write("memscope: log %s (%s), process %d\n" % (log.path, fmt.human_bytes(info.file_size), info.pid))
            config = log.config()
            gdb.write("  recorded with: %s\n" % (config[1] if config else "(the log keeps no configuration)"))
            gdb.write("  events%s: %d; operator launches: %d\n" % ("" if done else " so far", info.events,
                                                                  w.op_launches))
            if done:
                steps, forked = r.steps(), log.fork_step()
                if forked and steps <= forked[1]:
                    marked = "no step marked (forked %s process %d's step %d)" % (forked[2], forked[0], forked[1])
                elif forked:
                    marked = "%d steps (numbered on from process %d's step %d, which it was forked %s)" % (
                        steps, forked[0], forked[1], forked[2])
                else:
                    marked = fmt.plural(steps, "step") if steps else "no step marked"
                gdb.write("  at its end: %s; %s\n" % (
                    marked,
                    "the program reached its exit" if info.complete else
                    "the log was cut (%s)" % (replaylib.text(info.cut_what) or
                                              "the process " + (self.s.end_words()[0] if self.s.killed()
                                                                else "was killed"))))
            else:
                if w.step == 0:
                    step = "no step marked so far"
                elif w.in_step:
                    step = "step %d" % w.step
                else:
                    step = "after step %d" % w.step
                op = replaylib.text(w.op)
                gdb.write("  now: %s, %s\n" % (step, "in operator %s (launch %d) on %s" % (
                    op, w.op_launch, log.thread_label(w.thread)) if op else "no operator running"))
            blocks = sum(w.mem[k].live_blocks for k in range(replaylib.MEM_KIND_COUNT))
            kinds = ["%s %s %s" % (replaylib.MEM_NAMES[k], fmt.plural(w.mem[k].live_blocks, "block"),
                                   fmt.human_bytes(w.mem[k].live_bytes))
                     for k in range(replaylib.MEM_KIND_COUNT) if w.mem[k].allocs]
            gdb.write("  live%s: %s, %s%s; peak %s\n" % (
                " at the end" if done else "", fmt.plural(blocks, "block"), fmt.human_bytes(w.live_bytes),
                " (%s)" % "; ".join(kinds) if kinds else "", ("" if done else "so far ") +
                fmt.human_bytes(w.peak_bytes)))
            if w.double_frees:
                gdb.write("  double frees: %d (`memscope block ADDR' shows them)\n" % w.double_frees)
            if w.mismatched_frees:
                gdb.write("  mismatched frees: %d (delete of new[], free of new, ...: `msmemscope-replay %s "
                          "--summary' lists them)\n" % (w.mismatched_frees, log.path))
            if info.lost_events:
                gdb.write("  lost events: %d (signal handlers that allocated inside a hook)\n" % info.lost_events)
            for line in fmt.log_warnings(info) + fmt.unchecked_warnings(info, log, w.unchecked_frees):
                gdb.write("  warning: %s\n" % line)
        n = len(self.s.watches)
        bps = breaks.ours(self.s)
        nop = sum(1 for _, k in bps if k.kind == "op")
        gdb.write("  watches: %s; breakpoints: %s\n" % (
            "%d (`memscope watch' lists them)" % n if n else "none",
            "%d on operators, %d on steps (`memscope break' lists them)" % (nop, len(bps) - nop) if bps else "none"))


class BlockCommand(Command):
    """The heap block that holds an address, live or freed.

Usage: memscope block ADDR

ADDR is an expression: a pointer's value or an integer address. Prints
the block that holds it now, or else the last one freed that held it:
its address, size and kind, where it was allocated (the stack, step,
operator and owner), and when it was freed and by whom; a free of it
after that (a double free) is shown as such."""

    USAGE = "usage: memscope block ADDR"

    def __init__(self, session):
        super().__init__("memscope block", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)
        self.s = session

    def run(self, arg, from_tty):
        addr = args.address(arg, self.USAGE)
        with self.s.now(forward_only=False) as (log, r):
            # An indexed replay: a freed block then gets the step numbers
            # of the whole log, as msmemscope-replay gives them.
            w = r.where()
            b = r.block_at(addr)
            if b is None:
                b = r.freed_block_at(addr)
            if b is None:
                raise Error("memscope: no heap block the recorder saw holds 0x%x (not heap memory, or memory "
                            "allocated before the recorder started)." % addr)
            live = b.free_event == replaylib.UINT64_MAX
            inside = "" if addr == b.addr else "; 0x%x is at +%d in it" % (addr, addr - b.addr)
            gdb.write("%s block 0x%x, %s, %s, allocation %d%s\n" % (
                "live" if live else "freed", b.addr, fmt.exact_bytes(b.size), fmt.block_kind(b), b.alloc_id,
                inside))
            if b.inherited:
                gdb.write("  inherited from the parent: allocated by pid %d at its event #%d%s:\n" % (
                    b.origin_pid, b.origin_event, ", owner " + replaylib.text(b.owner) if b.owner else ""))
            else:
                gdb.write("  allocated at event #%d (%d events ago) %s:\n" % (
                    b.alloc_event, w.position - b.alloc_event, fmt.block_origin(log, b)))
            for line in fmt.stack_lines(log, b.stack, self.s.depth):
                gdb.write(line + "\n")
            if not live:
                gdb.write("  freed at event #%d by %s%s:\n" % (
                    b.free_event, log.thread_label(b.free_thread), self.free_context(log, b.free_event)))
                self.free_stack(log, b.free_stack)
                for event, thread, stack in log.frees_of(b.addr, b.free_event + 1):
                    gdb.write("  freed again at event #%d by %s%s: a double free:\n" % (
                        event, log.thread_label(thread), self.free_context(log, event)))
                    self.free_stack(log, stack)

    def free_stack(self, log, stack):
        """The stack of the call that freed: logs of version 5 recorded
        with stacks keep it, unless recorded with free_stack=0."""
        if not stack and log.info().version < 5:
            gdb.write("    (no stack: a log of format version %d keeps none for frees)\n" % log.info().version)
            return
        config = log.config() if not stack else None
        if config and not config[0].free_stack and (config[0].call_stack or config[0].python_stack):
            gdb.write("    (none kept: recorded with --keep-stacktraces=alloc, allocations' stacks only)\n")
            return
        for line in fmt.stack_lines(log, stack, self.s.depth):
            gdb.write(line + "\n")

    @staticmethod
    def free_context(log, event):
        """', in step 3, operator compute (launch 9)': the state the free
        happened in (a second replay, to just after it)."""
        with replaylib.Replay(log, forward_only=False) as r2:
            if r2.seek(event + 1):
                return ""
            w = r2.where()
        op = replaylib.text(w.op)
        return "%s%s" % (" in step %d" % w.step if w.step else "",
                         ", operator %s (launch %d)" % (op, w.op_launch) if op else "")


class AtCommand(Command):
    """The state at step N (from the log, or by running to it) or event N.

Usage: memscope at step N
       memscope at event N

`at step N' for a step that has ended prints the state at its end as
`msmemscope-replay LOG --step N' does: live blocks and bytes, the peak
within the step, what it allocated and did not free, its operator
launches and the bytes by owner. For the step under way, what it did so
far (before any step is marked, the run so far is step 1). For a step
ahead, continues the program until step N begins and stops there. After
the program exited, from its finished log; a step past its end offers
to run the program again (not in batch mode, where gdb cannot ask).

`at event N' prints event N of the log and the state just after it, as
`msmemscope-replay LOG --event N' does."""

    USAGE = "usage: memscope at step N | memscope at event N"

    def __init__(self, session):
        super().__init__("memscope at", gdb.COMMAND_DATA)
        self.s = session

    def complete(self, text, word):
        if len(text.split()) + (0 if text.endswith(" ") or not text else -1) == 0:
            return [w for w in ("step", "event") if w.startswith(word or "")]
        return []

    def run(self, arg, from_tty):
        words = arg.split(None, 1)
        if len(words) != 2 or words[0] not in ("step", "event"):
            raise Error(self.USAGE)
        if words[0] == "step":
            self.at_step(args.step_number(words[1], self.USAGE))
        else:
            self.at_event(args.number(words[1], "event", self.USAGE, 0, args.UINT64_MAX - 1))

    def replay_cli(self, path, *args):
        program, env = self.s.tool(self.s.replay_cli)
        cmd = [program, path] + list(args) + ["--depth", str(self.s.depth), "--top", str(self.s.top)]
        try:
            p = run_capture(cmd, env)
        except OSError as e:
            raise Error("memscope: cannot run %s: %s" % (self.s.replay_cli, e))
        err = p.stderr.decode("utf-8", "replace")
        # A live log is expected to be unfinished: say nothing about it.
        err = "".join(line + "\n" for line in err.splitlines() if "did not reach exit" not in line)
        return p.returncode, p.stdout.decode("utf-8", "replace"), err

    def at_step(self, n):
        if gdbif.on_core():
            self.s.handle()  # says there is no live process: not run over the core
        if not self.s.running() and self.s.finished():
            return self.at_step_finished(n)
        if not self.s.running():
            self.s.at_target = n
            gdb.write("memscope: running the program until step %d begins.\n" % n)
            gdb.execute("run")
            self.after_continue(n)
            return
        h = self.s.handle()
        with self.s.now(forward_only=False) as (log, r):
            w = r.where()
            path = log.path
            if w.step == 0 and r.steps() == 0:
                # No step marked so far: the run so far is step 1.
                if n == 1:
                    gdb.write("memscope: step 1 is under way (no step marked so far); what it did so far:\n")
                    state_so_far(log, r)
                    return
        if n < w.step or (n == w.step and not w.in_step):
            rc, out, err = self.replay_cli(path, "--step", str(n))
            gdb.write(out + err)
            if rc:
                raise Error("memscope: msmemscope-replay could not report step %d." % n)
            return
        if n == w.step:
            rc, out, err = self.replay_cli(path, "--step", str(n))
            if rc:
                gdb.write("memscope: step %d is under way; nothing is recorded in it yet.\n" % n)
            else:
                gdb.write("memscope: step %d is under way; what it did so far:\n" % n)
                gdb.write(out + err)
            return
        self.s.at_target = n
        breaks.arm(self.s, h, after_step=w.step)
        gdb.write("memscope: continuing until step %d begins.\n" % n)
        gdb.execute("continue")
        self.after_continue(n)

    def at_step_finished(self, n):
        """at step N after the program exited: from the finished log; a
        step past its end offers to run the program again to it (never in
        batch mode, where gdb cannot ask)."""
        with self.s.now(forward_only=False) as (log, r):
            steps, path = r.steps(), log.path
            if n == 1 and steps == 0:
                gdb.write("memscope: the program marked no steps: its whole run was step 1:\n")
                state_so_far(log, r)
                return
        if n <= steps:
            rc, out, err = self.replay_cli(path, "--step", str(n))
            gdb.write(out + err)
            if rc:
                raise Error("memscope: msmemscope-replay could not report step %d." % n)
            return
        ended = "its last step was %d" % steps if steps else "it marked no steps"
        if self.s.killed():
            how, until = self.s.end_words()
            how, where = how + " and, in its cut log, " + ended, "before " + until
        else:
            how, where = "ran to its end and " + ended, "in that run"
        if not self.can_ask():
            raise Error("memscope: the program %s: step %d did not happen %s. "
                        "To run it again until step %d begins: `memscope break step %d', then `run'."
                        % (how, n, where, n, n))
        if not ask("memscope: the program %s. Run it again until step %d begins? " % (how, n)):
            gdb.write("memscope: not run again.\n")
            return
        self.s.finished_log = None
        self.at_step(n)

    @staticmethod
    def can_ask():
        """Whether gdb can ask the user: a terminal, and confirm on (batch
        mode turns it off)."""
        try:
            return bool(gdb.parameter("confirm")) and sys.stdin.isatty()
        except (ValueError, AttributeError, OSError):
            return False

    def after_continue(self, n):
        if not self.s.running():
            gdb.write("memscope: the program ended before step %d began.\n" % n)
            self.s.at_target = 0
        elif self.s.at_target:
            gdb.write("memscope: stopped before step %d began; `continue' goes on to it "
                      "(`memscope break delete' forgets it).\n" % n)

    def at_event(self, n):
        with self.s.now() as (log, r):
            events = log.info().events
            path = log.path
        if n >= events:
            if not self.s.running():
                raise Error("memscope: the finished log holds %d events (0 to %d); there is no event %d."
                            % (events, events - 1 if events else 0, n))
            raise Error("memscope: event %d has not happened yet: the log holds %d events so far (0 to %d)."
                        % (n, events, events - 1 if events else 0))
        rc, out, err = self.replay_cli(path, "--event", str(n))
        gdb.write(out + err)
        if rc:
            raise Error("memscope: msmemscope-replay could not show event %d." % n)
        self.double_free_note(path, n)

    @staticmethod
    def double_free_note(path, n):
        """After event n, when it frees a block freed before (with no
        allocation at its address in between): says it is a double free;
        when it frees a heap block with a function of another family than
        its allocation's (delete of new[]): says it is a mismatched free."""
        with replaylib.Log(path) as log:
            ev = log.event_at(n)
            if ev is None or ev[0] != replaylib.EV_FREE:
                return
            with replaylib.Replay(log, forward_only=False) as r:
                if r.seek(n):
                    return
                live = r.block_at(ev[1])
                if live is not None:
                    # The library's verdict: the event counted one more.
                    before = r.where().mismatched_frees
                    if ev[3] == replaylib.MEM_HOST and not r.seek(n + 1) and r.where().mismatched_frees > before:
                        gdb.write("memscope: event #%d is a mismatched free: %s of block 0x%x (%s, allocation %d), "
                                  "which %s allocated at event #%d.\n" % (
                                      n, replaylib.func_name(replaylib.EV_FREE, ev[2]), live.addr,
                                      fmt.exact_bytes(live.size), live.alloc_id,
                                      replaylib.func_name(replaylib.EV_MALLOC, live.fn), live.alloc_event))
                    return
                b = r.freed_block_at(ev[1])
        if b is not None and b.addr == ev[1] and b.free_event < n:
            gdb.write("memscope: event #%d is a double free: block 0x%x (%s, allocation %d) was freed at event "
                      "#%d.\n" % (n, b.addr, fmt.exact_bytes(b.size), b.alloc_id, b.free_event))
