#!/usr/bin/env bash
# Makes the perf.data fixtures in tests/fixtures/perf_data/ (and the sample in samples/perf-data/):
# builds spin.c with frame pointers, records it with `perf record` in the modes the decoder
# reads, overwrites the host name perf stores (HEADER_HOSTNAME) with `localhost`, and writes
# `perf script --no-inline` of each recording beside it, gzipped, for the tests to count from.
# Needs root (perf_event_paranoid), gcc, perf with zstd; run from the repository root.
set -euo pipefail

out=tests/fixtures/perf_data
# A fixed directory: the program's path is recorded in the files.
work=/tmp/proflake-perf-fixtures
rm -rf "$work"
mkdir "$work"
trap 'rm -rf "$work"' EXIT
cp "$out/spin.c" "$work/"
cd "$work"

gcc -O1 -fno-omit-frame-pointer -g -pthread -o spin spin.c
# The stripped copy keeps the build ID; the unstripped one is its debug file.
strip -o spin-stripped spin

record() { # name, then perf record options
    local name=$1
    shift
    perf record --no-buildid-cache -F 999 -e cpu-clock "$@" 2>/dev/null
}
record g -g -o g.data -- ./spin 300
record plain -o plain.data -- ./spin 300
# --buildid-mmap: the kernel puts each mapping's build ID in its MMAP2 record.
record pipe -g --buildid-mmap -o - -- ./spin 300 >pipe.data
record zstd -g -z -o zstd.data -- ./spin 300
# CLOCK_DATA (the wall clock at a time on the sampling clock) comes with -k.
record clock -g -k CLOCK_MONOTONIC -o clock.data -- ./spin 100
record dwarf --call-graph dwarf,512 -F 299 -o dwarf.data -- ./spin 100
cp spin-stripped spin-s
record stripped -g -o stripped.data -- ./spin-s 300

# HEADER_HOSTNAME (feature 3) holds the machine's name: overwritten in place, same length.
python3 - g.data plain.data pipe.data zstd.data clock.data dwarf.data stripped.data <<'PY'
import struct, sys
HOSTNAME = 3
def patch_string(buf, at):
    (n,) = struct.unpack_from("<I", buf, at)
    new = b"localhost"[: max(n - 1, 0)]
    buf[at + 4 : at + 4 + n] = new + b"\0" * (n - len(new))
for path in sys.argv[1:]:
    buf = bytearray(open(path, "rb").read())
    assert buf[:8] == b"PERFILE2"
    (size,) = struct.unpack_from("<Q", buf, 8)
    done = False
    if size == 16:  # pipe mode: HEADER_FEATURE records (type 80) before the first event
        at = 16
        while at + 8 <= len(buf) and not done:
            typ, misc, rsize = struct.unpack_from("<IHH", buf, at)
            if typ == 80 and struct.unpack_from("<Q", buf, at + 8)[0] == HOSTNAME:
                patch_string(buf, at + 16)
                done = True
            at += rsize
    else:
        data_off, data_size = struct.unpack_from("<QQ", buf, 40)
        bits = int.from_bytes(buf[72:104], "little")
        table = data_off + data_size
        index = 0
        for feature in range(256):
            if bits >> feature & 1:
                if feature == HOSTNAME:
                    off, _ = struct.unpack_from("<QQ", buf, table + 16 * index)
                    patch_string(buf, off)
                    done = True
                index += 1
    assert done, f"{path}: no host name found"
    open(path, "wb").write(buf)
PY

names="g plain pipe zstd clock dwarf stripped"
for f in $names; do
    perf report --header-only -i $f.data 2>/dev/null | grep -q '^# hostname : localhost' || {
        echo "$f.data: host name not replaced" >&2
        exit 1
    }
    # DWARF mode copies user stack bytes: no environment strings may be among them.
    if grep -q -a -e "/home/" -e "/$(whoami)/" -e "HOME=" -e "PATH=" -e "USER=" $f.data; then
        echo "$f.data: holds a home path or the environment" >&2
        exit 1
    fi
    perf script --no-inline -i $f.data -F comm,pid,tid,time,event,period,ip,sym,dso 2>/dev/null | gzip -9n >$f.perf-script.txt.gz
done
# Each clock.data sample's time of day (UTC), as perf computes it from CLOCK_DATA.
TZ=UTC perf script -i clock.data -F tid,time,tod --ns 2>/dev/null | gzip -9n >clock.tod.txt.gz

cd - >/dev/null
cp "$work/clock.tod.txt.gz" "$out/"
for f in $names; do
    cp "$work/$f.data" "$out/$f.data"
    cp "$work/$f.perf-script.txt.gz" "$out/"
done
cp "$work/spin" "$out/spin.debug"
# The stripped program (its `.eh_frame` kept, as strip keeps it) and a separate debug file
# (`.eh_frame` as NOBITS): names from one, unwinding of dwarf.data from the other.
cp "$work/spin-stripped" "$out/spin.stripped"
objcopy --only-keep-debug "$work/spin" "$out/spin.only-debug"
ls -l "$out"
