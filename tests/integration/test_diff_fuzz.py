# SPDX-License-Identifier: BSD-3-Clause
"""The differential fuzzer (diff_fuzz.py) for a bounded run: generated
requests of all three protocols to nodelay and memcached 1.6.45 from
../shared/ref, byte for byte. NODELAY_FUZZ_CASES (default 2000) and
NODELAY_FUZZ_SEED (default 1) make a longer or another run; each
difference is printed with its seed and case number, and
`python3 tests/integration/diff_fuzz.py 1 SEED CASE` replays one."""
import os

import diff_fuzz

CASES = int(os.environ.get("NODELAY_FUZZ_CASES", "2000"))
SEED = int(os.environ.get("NODELAY_FUZZ_SEED", "1"))


def test_generator_is_seeded():
    one = [diff_fuzz.Gen(7, i).case() for i in range(50)]
    assert one == [diff_fuzz.Gen(7, i).case() for i in range(50)]
    assert one != [diff_fuzz.Gen(8, i).case() for i in range(50)]
    kinds = b"".join(b"".join(steps) for steps in one)
    for word in (b"set ", b"\x80", b"mg ", b"noreply"):
        assert word in kinds, word


def test_diff_fuzz(server_bin, tmp_path):
    diff_fuzz.need_reference(server_bin)
    lines = []
    found = diff_fuzz.run(server_bin, diff_fuzz.REF_1645, str(tmp_path), CASES, SEED,
                          report=lines.append)
    assert not found, f"{len(found)} of {CASES} cases differ:\n" + "\n".join(lines[:10])
