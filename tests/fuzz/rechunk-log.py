#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# rechunk-log.py: rewrites a whole recorded .mms log into small chunks, as
# the writer would have written it with that chunk size, so that a short
# recording has many chunks to cut and damage (tests/progs/damage.sh). Each
# thread's records are re-encoded, in their order, into chunks that begin
# with a SEGMENT at the thread's last stamp and end when the next record
# does not fit; chunks are numbered by the stamp of their first event, as
# the writer takes them; addresses are re-encoded from each SEGMENT on.
# Everything else is copied: the same events, metadata and header.
#
#   tests/fuzz/rechunk-log.py IN.mms OUT.mms [CHUNK_SIZE]   (default 4096)
import os
import re
import struct
import sys

HEADER_SIZE = 4096
CHUNK_HDR = 16
CHUNK_MAGIC = 0x4B4E4843

# Field layouts per tag: u varint, a address delta (zigzag), s string.
# Read from the reader's own table (replay/core/decode.c, with the values of
# common/format.h), so that a tag added there is known here too. SEGMENT
# (0x01) has no stamp delta and is handled apart.
TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read_layouts():
    names = {}
    for m in re.finditer(r"\b(MMS_[A-Z0-9_]+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*[,}]",
                         open(os.path.join(TOP, "common", "format.h")).read()):
        names[m.group(1)] = int(m.group(2), 0)

    def value(expr):
        return sum(int(n, 0) if n.strip()[0].isdigit() else names[n.strip()] for n in expr.split("+"))

    table = open(os.path.join(TOP, "replay", "core", "decode.c")).read()
    table = table[table.index("layouts[256]"):]
    table = table[:table.index("};")]
    layouts = {}
    for m in re.finditer(r'\[([^\]]+)\]\s*=\s*"([uas]*)"', table):
        lo, _, hi = m.group(1).partition("...")
        for tag in range(value(lo), value(hi or lo) + 1):
            layouts[tag] = m.group(2)
    return layouts


LAYOUTS = read_layouts()


def get_u(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def put_u(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    v = (v + (1 << 63)) % (1 << 64) - (1 << 63)  # to signed 64 bits
    return ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def read_records(data, chunk_size, nchunks):
    """Each thread's records, in order: (tag, stamp, fields), addresses
    absolute; and whether each is an event."""
    threads = {}
    for k in range(nchunks):
        start = HEADER_SIZE + k * chunk_size
        magic, _, used = struct.unpack_from("<IIQ", data, start)
        if magic == 0 and used == 0:
            continue
        if magic != CHUNK_MAGIC:
            sys.exit(f"chunk {k}: bad magic; rechunk whole logs only")
        b, i, end = data, start + CHUNK_HDR, start + CHUNK_HDR + used
        thread = stamp = addr = None
        while i < end:
            tag = b[i]
            i += 1
            if tag == 0x01:
                thread, i = get_u(b, i)
                stamp, i = get_u(b, i)
                addr = 0
                threads.setdefault(thread, [])
                continue
            if tag not in LAYOUTS:
                sys.exit(f"chunk {k}: record tag 0x{tag:02x} is not in replay/core/decode.c's table")
            d, i = get_u(b, i)
            stamp += d
            fields = []
            for f in LAYOUTS[tag]:
                if f == "s":
                    n, i = get_u(b, i)
                    fields.append(bytes(b[i:i + n]))
                    i += n
                elif f == "a":
                    v, i = get_u(b, i)
                    addr = (addr + unzigzag(v)) % (1 << 64)
                    fields.append(("a", addr))
                else:
                    v, i = get_u(b, i)
                    fields.append(v)
            threads[thread].append((tag, stamp, fields))
    return threads


def encode(tag, dstamp, fields, prev_addr):
    out = bytearray([tag]) + put_u(dstamp)
    for f in fields:
        if isinstance(f, bytes):
            out += put_u(len(f)) + f
        elif isinstance(f, tuple):
            out += put_u(zigzag(f[1] - prev_addr))
            prev_addr = f[1]
        else:
            out += put_u(f)
    return bytes(out), prev_addr


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: rechunk-log.py IN.mms OUT.mms [CHUNK_SIZE]")
    data = open(sys.argv[1], "rb").read()
    size = int(sys.argv[3]) if len(sys.argv) == 4 else 4096
    if len(data) < HEADER_SIZE or not data.startswith(b"MMSLOG\x1a\n"):
        sys.exit(f"{sys.argv[1]}: not a whole msmemscope log header")
    chunk_size = struct.unpack_from("<I", data, 16)[0]
    nchunks = struct.unpack_from("<Q", data, 80)[0]
    if len(data) < HEADER_SIZE + nchunks * chunk_size:
        sys.exit(f"{sys.argv[1]}: cut; rechunk whole logs only")
    pieces = []  # (first event stamp, thread, order, bytes)
    for thread, recs in read_records(data, chunk_size, nchunks).items():
        body, last, first_ev, prev_addr = None, 0, None, 0
        for tag, stamp, fields in recs:
            rec, new_addr = encode(tag, stamp - last, fields, prev_addr)
            if body is None or len(body) + len(rec) > size - CHUNK_HDR:
                if body is not None:
                    pieces.append((first_ev if first_ev is not None else last, thread, len(pieces), body))
                body = bytearray([0x01]) + put_u(thread) + put_u(last)
                first_ev, prev_addr = None, 0
                rec, new_addr = encode(tag, stamp - last, fields, prev_addr)
                if len(body) + len(rec) > size - CHUNK_HDR:
                    sys.exit(f"a record of {len(rec)} bytes does not fit a {size}-byte chunk")
            body += rec
            prev_addr, last = new_addr, stamp
            if first_ev is None and tag >= 0x10:
                first_ev = stamp
        if body is not None:
            pieces.append((first_ev if first_ev is not None else last, thread, len(pieces), body))
    pieces.sort()
    header = bytearray(data[:HEADER_SIZE])
    struct.pack_into("<I", header, 16, size)
    struct.pack_into("<Q", header, 80, len(pieces))
    out = bytearray(header)
    for _, _, _, body in pieces:
        out += struct.pack("<IIQ", CHUNK_MAGIC, 0, len(body)) + body + bytes(size - CHUNK_HDR - len(body))
    open(sys.argv[2], "wb").write(out)
    print(f"{sys.argv[2]}: {len(pieces)} chunks of {size} bytes, {len(out)} bytes")


if __name__ == "__main__":
    main()
