# SPDX-License-Identifier: MIT
"""args: the arguments every memscope command takes, checked in one
place: expressions gdb evaluates without ever calling a function in the
program (a string literal, a call, anything gdb would need the program's
malloc for is refused), numbers range-checked before any use."""

import contextlib

import gdb

from .session import Error

UINT64_MAX = (1 << 64) - 1
# The recorder numbers steps with 32 bits (hooks/gdbif.c).
STEP_MAX = (1 << 32) - 1
# The most bytes one watch may cover: the recorder keeps two copies of
# them in the program and compares them at every launch boundary.
WATCH_SIZE_MAX = 256 << 20

_INTEGER_CODES = (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_CHAR, gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_BOOL)


@contextlib.contextmanager
def no_inferior_calls():
    """gdb's `may-call-functions' off for the duration: gdb then refuses,
    with an error, whatever would make it call a function in the program
    (a call in the expression, a string literal or array it would copy
    into the program's memory with the program's malloc)."""
    was_on = bool(gdb.parameter("may-call-functions"))
    if was_on:
        gdb.execute("set may-call-functions off", to_string=True)
    try:
        yield
    finally:
        if was_on:
            gdb.execute("set may-call-functions on", to_string=True)


def evaluate(expr, convert, usage):
    """convert(gdb.Value of EXPR), both run with calls into the program
    refused: Python values out, never a gdb.Value that could still need
    the program. Errors become a message with usage."""
    expr = expr.strip()
    if not expr:
        raise Error(usage)
    with no_inferior_calls():
        try:
            value = gdb.parse_and_eval(expr)
            value.fetch_lazy()
            return convert(value)
        except gdb.MemoryError as e:
            raise Error("memscope: %s: cannot read the program's memory: %s" % (expr, e))
        except gdb.error as e:
            if "may-call-functions" in str(e):
                raise Error("memscope: %s would need gdb to call a function in the program (a call, or a string "
                            "or array gdb would copy into it); memscope never does. Give a variable, a pointer or "
                            "an address.\n%s" % (expr, usage))
            raise Error("memscope: cannot evaluate %s: %s\n%s" % (expr, e, usage))


def integer(value, text, what, usage):
    """The Python int of an integer-typed gdb.Value."""
    if value.type.strip_typedefs().code not in _INTEGER_CODES:
        raise Error("memscope: %s %s is not an integer (it is a %s).\n%s" % (what, text, value.type, usage))
    return int(value)


def number(text, what, usage, lo=0, hi=UINT64_MAX):
    """The integer TEXT means (a number or an expression: `sizeof(float)*4',
    `$n'), checked to lie in [lo, hi]; `what' names it in messages
    ("SIZE", "step N")."""
    n = evaluate(text, lambda v: integer(v, text.strip(), what, usage), usage)
    return _in_range(n, text, what, usage, lo, hi)


def _in_range(n, text, what, usage, lo, hi):
    if n < lo or n > hi:
        raise Error("memscope: %s %s is out of range: it must be from %d to %d.\n%s"
                    % (what, text.strip(), lo, hi, usage))
    return n


def step_number(text, usage):
    """A step number: steps count from 1 (hooks number them with 32 bits)."""
    n = evaluate(text, lambda v: integer(v, text.strip(), "step", usage), usage)
    if n < 1:
        raise Error("memscope: steps count from 1.\n%s" % usage)
    return _in_range(n, text, "step", usage, 1, STEP_MAX)


def address(expr, usage):
    """An address from EXPR: a pointer's value, an integer, or where an
    object lies in the program's memory."""
    def convert(value):
        t = value.type.strip_typedefs()
        if t.code in (gdb.TYPE_CODE_PTR,) + _INTEGER_CODES:
            return int(value) & UINT64_MAX
        if value.address is None:
            raise Error("memscope: %s is not an address nor an object in the program's memory.\n%s" % (expr, usage))
        return int(value.address)
    return evaluate(expr, convert, usage)
