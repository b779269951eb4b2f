#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# shrink-log.py: rewrites a recorded .mms log with the smallest chunk size
# that holds its fullest chunk, dropping the unused tail of every chunk, so
# that a real recording fits the fuzz corpus (64 KiB at most). The records
# are copied byte for byte: what the reader sees is what the writer wrote.
#
#   tests/fuzz/shrink-log.py IN.mms OUT.mms
import struct
import sys

HEADER_SIZE = 4096
CHUNK_HDR = 16


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: shrink-log.py IN.mms OUT.mms")
    data = open(sys.argv[1], "rb").read()
    if len(data) < HEADER_SIZE or not data.startswith(b"MMSLOG\x1a\n"):
        sys.exit(f"{sys.argv[1]}: not a whole msmemscope log header")
    chunk_size = struct.unpack_from("<I", data, 16)[0]
    nchunks = struct.unpack_from("<Q", data, 80)[0]
    chunks = []
    for k in range(nchunks):
        start = HEADER_SIZE + k * chunk_size
        if start + CHUNK_HDR > len(data):
            break
        used = struct.unpack_from("<Q", data, start + 8)[0]
        if used > chunk_size - CHUNK_HDR or start + CHUNK_HDR + used > len(data):
            sys.exit(f"{sys.argv[1]}: chunk {k} is damaged or cut; shrink whole logs only")
        chunks.append(data[start:start + CHUNK_HDR + used])
    need = max([len(c) for c in chunks] + [CHUNK_HDR])
    size = (need + 4095) // 4096 * 4096
    header = bytearray(data[:HEADER_SIZE])
    struct.pack_into("<I", header, 16, size)
    struct.pack_into("<Q", header, 80, len(chunks))
    out = bytes(header) + b"".join(c + bytes(size - len(c)) for c in chunks)
    open(sys.argv[2], "wb").write(out)
    print(f"{sys.argv[2]}: {len(chunks)} chunks of {size} bytes, {len(out)} bytes")


if __name__ == "__main__":
    main()
