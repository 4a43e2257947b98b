# SPDX-License-Identifier: BSD-3-Clause
"""Read an -e memory file (src/store/persist/persist.h) for a test's
diagnostics: the run state, the segment table, the overwrite journal, and
every copy of a key found in the segments with its state bits, CAS and
whether the restore's walk reaches it. Read only; nothing here decides a
test's verdict."""
import mmap
import os
import struct

HDR = struct.Struct("<8sIIQQQQQQIIQIIqqQQIIQQIIQ")
HDR_FIELDS = ("magic version abi endian mem_limit item_size_max seg_size nsegs data_off "
              "cas_enabled journal_slots hdr_sum state hb_rel hb_unix epoch cas_ceiling "
              "oldest_cas oldest_live pad items seq_next index_level pad2 stop_sum").split()
FLUSH = struct.Struct("<QIIQ")
FLUSH_OFF = 2048
SEG = struct.Struct("<QQIIIIQB3xI16x")
SEG_FIELDS = "seq cas_base write_off flags compact_w compact_off sum group tbase".split()
JOURNAL = struct.Struct("<QQ")
JOURNAL_SLOTS = 1024
TABLE_OFF = 4096

L_AT32, L_FLAGS, L_EXP, L_CAS32, L_CAS64, L_SUM = 0x80, 0x01, 0x02, 0x04, 0x08, 0x10
L_COMMIT, L_DEAD = 0x20, 0x40
HDR_MAX = 1 + 1 + 5 + 4 + 4 + 4 + 8 + 4
STATE_NAMES = {0: "uncommitted", L_COMMIT: "LIVE", L_DEAD: "dead", L_COMMIT | L_DEAD: "both?"}


def header(buf):
    h = dict(zip(HDR_FIELDS, HDR.unpack_from(buf, 0)))
    h["flush"] = [dict(zip(("oldest_cas", "oldest_live", "pad", "sum"),
                           FLUSH.unpack_from(buf, FLUSH_OFF + i * FLUSH.size))) for i in range(2)]
    return h


def segments(buf, h):
    return [dict(zip(SEG_FIELDS, SEG.unpack_from(buf, TABLE_OFF + i * SEG.size)), id=i)
            for i in range(h["nsegs"])]


def journal(buf, h):
    at = TABLE_OFF + h["nsegs"] * SEG.size
    out = []
    for i in range(JOURNAL_SLOTS):
        old, new = JOURNAL.unpack_from(buf, at + i * JOURNAL.size)
        if old or new:
            out.append((i, loc_str(old), loc_str(new), new != 0))
    return out


def loc_str(loc):
    return "-" if loc >> 32 == 0 else f"{(loc >> 32) - 1}:{loc & 0xffffffff}"


def decode(buf, p):
    """The header at p as a dict, or None when it cannot be one."""
    lay = buf[p]
    if not lay & L_SUM:  # every -e item has one
        return None
    nkey = buf[p + 1]
    i, v, shift = 2, 0, 0
    while True:
        b = buf[p + i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if i > 7:
            return None
    atime_off = i
    i += 4 if lay & L_AT32 else 2
    flags_off = exp_off = cas_off = 0
    if lay & L_FLAGS:
        flags_off, i = i, i + 4
    if lay & L_EXP:
        exp_off, i = i, i + 4
    w = lay & (L_CAS32 | L_CAS64)
    casw = {0: 0, L_CAS32: 4, L_CAS64: 8, L_CAS32 | L_CAS64: 2}[w]
    if casw:
        cas_off, i = i, i + casw
    sum_off = 0
    if lay & L_SUM:
        sum_off, i = i, i + 4
    return dict(layout=lay, nkey=nkey, nvalue=v, hlen=i, atime_off=atime_off, flags_off=flags_off,
                exp_off=exp_off, cas_off=cas_off, casw=casw, sum_off=sum_off,
                total=i + nkey + v)


def item_cas(buf, p, d, cas_base):
    if not d["casw"]:
        return 0
    raw = int.from_bytes(buf[p + d["cas_off"]:p + d["cas_off"] + d["casw"]], "little")
    return raw if d["casw"] == 8 else cas_base + raw


def item_atime(buf, p, d, tbase):
    """The access time (store_item.h: 4 bytes in full, or 2 relative to the
    segment's tbase: status 3 bits, unit bit, 12 bits)."""
    if d["layout"] & L_AT32:
        return int.from_bytes(buf[p + d["atime_off"]:p + d["atime_off"] + 4], "little") & 0x1FFFFFFF
    w = int.from_bytes(buf[p + d["atime_off"]:p + d["atime_off"] + 2], "little")
    return tbase + ((w & 0xFFF) << 6 if w & 0x1000 else w & 0xFFF)


def walk_starts(buf, h, seg):
    """Item offsets the restore walk reads in this segment (restore.c)."""
    base = h["data_off"] + seg["id"] * h["seg_size"]
    ranges = [(0, seg["write_off"])]
    if seg["flags"] & 1:
        ranges = [(0, seg["compact_w"]), (seg["compact_off"], seg["write_off"])]
    starts = set()
    for lo, hi in ranges:
        x = lo
        while x < hi:
            if buf[base + x] == 0:
                x += 1
                continue
            d = decode(buf, base + x)
            if d is None or d["total"] > hi - x:
                break
            starts.add(x)
            x += d["total"]
    return starts


def key_copies(path, key, value_bytes=40):
    """Every item of `key` in the file's segments, as lines of text."""
    if isinstance(key, str):
        key = key.encode()
    out = []
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
        try:
            h = header(buf)
            segs = segments(buf, h)
            walked = {}
            at = buf.find(key, h["data_off"])
            while at >= 0:
                # the header ends where the key starts: each length it can
                # have, preferring a start the restore's walk reaches (a
                # key's bytes inside another item's value can look like one)
                found = []
                for hl in range(7, HDR_MAX + 1):
                    p = at - hl
                    d = decode(buf, p) if p >= h["data_off"] else None
                    if not d or d["hlen"] != hl or d["nkey"] != len(key) or not d["layout"] & L_SUM:
                        continue
                    sid, off = divmod(p - h["data_off"], h["seg_size"])
                    seg = segs[sid]
                    if sid not in walked:
                        walked[sid] = walk_starts(buf, h, seg) if seg["seq"] else set()
                    found.append((off not in walked[sid], p, d, sid, off, seg))
                for unwalked, p, d, sid, off, seg in sorted(found)[:1]:
                    st = STATE_NAMES[d["layout"] & (L_COMMIT | L_DEAD)]
                    val = bytes(buf[at + len(key):at + len(key) + min(d["nvalue"], value_bytes)])
                    atime = item_atime(buf, p, d, seg["tbase"])
                    out.append(f"  seg {sid} off {off} seq {seg['seq']} "
                               f"write_off {seg['write_off']} walked {not unwalked} state {st} "
                               f"cas {item_cas(buf, p, d, seg['cas_base'])} "
                               f"atime {atime} len {d['nvalue']} value {val!r}")
                at = buf.find(key, at + 1)
        finally:
            buf.close()
    return out


def run_state(path):
    """Header run state, flush copies, compacting segments and open journal
    slots: small enough to read before every restart."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
        try:
            h = header(buf)
            segs = segments(buf, h)
            j = journal(buf, h)
        finally:
            buf.close()
    keep = ("state", "hb_rel", "hb_unix", "cas_ceiling", "oldest_cas", "oldest_live", "items",
            "seq_next")
    lines = ["header " + " ".join(f"{k}={h[k]}" for k in keep)]
    lines.append("flush copies " + "; ".join(
        f"oldest_cas={c['oldest_cas']} oldest_live={c['oldest_live']}" for c in h["flush"]))
    comp = [s for s in segs if s["seq"] and s["flags"]]
    lines.append(f"segments in use {sum(1 for s in segs if s['seq'])}; compacting: " + (", ".join(
        f"{s['id']} (w {s['compact_w']} off {s['compact_off']} end {s['write_off']})"
        for s in comp) or "none"))
    lines.append("journal slots (slot old new open): " + (", ".join(
        f"{i} {o} {n} {'open' if op else 'done'}" for i, o, n, op in j) or "none"))
    return lines
