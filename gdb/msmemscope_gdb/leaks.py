# SPDX-License-Identifier: MIT
"""leaks: `memscope leaks [summary|full] [new]`: the program's live heap
blocks grouped by allocation stack, largest first, as loss records in the
manner of valgrind's `monitor leak_check`, from the log replayed to now."""

import gdb

from . import fmt, replaylib
from .session import Command, Error

USAGE = "usage: memscope leaks [summary|full] [new]"
WORDS = ("summary", "full", "new")



def print_kept(kept, at_exit):
    """One line per runtime for the blocks the runtimes keep for
    themselves (C, C++, CPython, perl, Node.js, the JVM, CUDA): listed
    apart, never as loss records; in the words of the exit where the
    process reached it (at_exit)."""
    by = {}
    for g in kept:
        b = by.setdefault(g["runtime"], [0, 0])
        b[0] += g["blocks"]
        b[1] += g["bytes"]
    for kind in sorted(by):
        blocks, nbytes = by[kind]
        gdb.write("  not leaks: %s in %s kept by a runtime for itself: %s\n"
                  % (fmt.exact_bytes(nbytes), fmt.plural(blocks, "block"), replaylib.runtime_what(kind, at_exit)))

class LeaksCommand(Command):
    """List the program's live blocks grouped by allocation stack.

Usage: memscope leaks [summary|full] [new]

Prints loss records: the blocks still live that share an allocation
stack, with their count and bytes, largest first, and the stack
symbolized (function, file:line). Mappings, pool memory and device
memory still live are listed too, each record saying which it is.

  summary  (the default) blocks allocated in a step that has ended: the
           memory a step kept after it was over. A program that marks no
           steps gets all its live blocks.
  full     all live blocks, whenever they were allocated.
  new      only the loss records that grew since the last `memscope leaks'
           of the same kind, with the increase.

`set memscope top N' sets how many records are printed (0: all);
`set memscope depth N' the frames per stack."""

    def __init__(self, session):
        super().__init__("memscope leaks", gdb.COMMAND_DATA)
        self.s = session

    def complete(self, text, word):
        used = text.split()
        return [w for w in WORDS if w.startswith(word or "") and w not in used
                and not (w in ("summary", "full") and ("summary" in used or "full" in used))]

    def run(self, arg, from_tty):
        mode, new = "summary", False
        words = arg.split()
        if "summary" in words and "full" in words:
            raise Error("memscope: summary or full, not both.\n%s" % USAGE)
        for w in words:
            if w not in WORDS:
                raise Error("memscope: unknown argument '%s'.\n%s" % (w, USAGE))
            if words.count(w) > 1:
                raise Error("memscope: '%s' given twice.\n%s" % (w, USAGE))
            if w == "new":
                new = True
            else:
                mode = w
        with self.s.now() as (log, r):
            w = r.where()
            if mode == "full":
                title = "all live blocks"
                groups = r.group_live()
            elif w.step == 0:
                title = ("all live blocks (no step has ended so far)" if self.s.running()
                         else "all live blocks (the program marked no step)")
                groups = r.group_live()
            else:
                ended = w.step - 1 if w.in_step else w.step
                if not w.in_step:
                    now = "after step %d" % w.step
                elif self.s.running():
                    now = "step %d is under way" % w.step
                else:
                    now = "step %d ran until %s" % (w.step, self.s.end_words()[1] if self.s.killed() else "the exit")
                if ended < 1:
                    gdb.write("memscope: no step has ended yet (%s); `memscope leaks full' lists all live blocks.\n"
                              % now)
                    self.s.leaks_prev[(log.path, mode)] = {}
                    return
                title = "live blocks allocated in step%s (%s)" % (
                    " 1" if ended == 1 else "s 1 to %d" % ended, now)
                groups = r.group_live(1, ended)
            groups, kept = replaylib.split_runtime(groups)
            if kept:
                title += ", the program's (what the runtimes keep for themselves follows)"
            key = (log.path, mode)
            prev = self.s.leaks_prev.get(key)
            self.s.leaks_prev[key] = {(g["stack"], g["mem"], g["device"], g["reach"]): (g["blocks"], g["bytes"])
                                      for g in groups}
            self.print_records(log, groups, title, prev if new else None, new)
            print_kept(kept, log.info().complete and not self.s.running())
            for line in fmt.log_warnings(log.info()):
                gdb.write("memscope: warning: %s.\n" % line)

    def print_records(self, log, groups, title, prev, new):
        total_blocks = sum(g["blocks"] for g in groups)
        total_bytes = sum(g["bytes"] for g in groups)
        n = len(groups)
        numbered = list(enumerate(groups, 1))
        if new:
            prev = prev or {}
            grown = []
            for i, g in numbered:
                pb, pbytes = prev.get((g["stack"], g["mem"], g["device"], g["reach"]), (0, 0))
                if g["bytes"] > pbytes or g["blocks"] > pb:
                    grown.append((i, g, g["blocks"] - pb, g["bytes"] - pbytes))
            grown.sort(key=lambda x: (-x[3], x[0]))
            inc_blocks = sum(x[2] for x in grown)
            inc_bytes = sum(x[3] for x in grown)
            gdb.write("memscope: %s: %s since the last `memscope leaks'%s" % (
                title, "%s grew" % fmt.plural(len(grown), "loss record") if grown else "no loss record grew",
                ", by %s in %s\n" % (fmt.exact_bytes(inc_bytes), fmt.plural(inc_blocks, "block"))
                if grown else "\n"))
            shown = [(i, g, " (+{:,} bytes, {:+d} block{})".format(db, dn, "" if abs(dn) == 1 else "s"))
                     for i, g, dn, db in grown]
        else:
            gdb.write("memscope: %s: %s in %s%s\n" % (
                title, fmt.exact_bytes(total_bytes), fmt.plural(total_blocks, "block"),
                ", %s" % fmt.plural(n, "loss record") if n else " (none)"))
            shown = [(i, g, "") for i, g in numbered]
        top = self.s.top
        judged = replaylib.reach_judged(log.info())
        for i, g, extra in (shown[:top] if top else shown):
            largest = ["largest 0x%x" % g["addr"], fmt.exact_bytes(g["size"])]
            # Step 0 is no step (none has begun yet): said by leaving it
            # out, as the replay's leaks report does.
            if g["step"]:
                largest.append("step %d" % g["step"])
            if g["op"]:
                largest.append("operator " + g["op"])
            where = " of CUDA memory on cuda:%d" % g["device"] if g["mem"] == replaylib.MEM_DEVICE else ""
            if g["mem"] in replaylib.NOT_HEAP_WORDS:
                where += ", " + replaylib.NOT_HEAP_WORDS[g["mem"]]
            # After the exit, the scan's verdict, in valgrind's words.
            if g["reach"] in replaylib.REACH_WORDS:
                where += ", " + replaylib.REACH_WORDS[g["reach"]]
            elif replaylib.unjudged(g, judged):
                where += ", " + replaylib.UNJUDGED
            # What goes with them: freeing these frees that too.
            if g.get("indirect_blocks"):
                where += "; lost with %s: %s in %s, indirectly lost" % (
                    "it" if g["blocks"] == 1 else "them", fmt.exact_bytes(g["indirect_bytes"]),
                    fmt.plural(g["indirect_blocks"], "block"))
            gdb.write("  loss record %d of %d: %s in %s%s%s; %s\n" % (
                i, n, fmt.exact_bytes(g["bytes"]), fmt.plural(g["blocks"], "block"), where, extra,
                ", ".join(largest)))
            for line in fmt.stack_lines(log, g["stack"], self.s.depth, "      "):
                gdb.write(line + "\n")
        if top and len(shown) > top:
            rest = shown[top:]
            gdb.write("  ... %d more loss record%s, %s (set memscope top 0 lists all)\n" % (
                len(rest), "" if len(rest) == 1 else "s", fmt.exact_bytes(sum(g["bytes"] for _, g, _ in rest))))
