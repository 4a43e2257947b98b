# SPDX-License-Identifier: BSD-3-Clause
"""Writes the differential test's requests as libFuzzer seed files:
DIR/text/<case> and DIR/binary/<case> (used by scripts/fuzz.sh)."""
import os
import sys

from test_differential import CASE_LIST_1645 as CASE_LIST  # both case files


def main(out):
    for sub in ("text", "binary"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    for name, steps in CASE_LIST:
        data = b"".join(steps).replace(b"{cas}", b"1").replace(b"{pause}", b"")
        if len(data) > 64 * 1024:
            continue  # keep seeds small: the harnesses cap values anyway
        sub = "binary" if data[:1] == b"\x80" else "text"
        with open(os.path.join(out, sub, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main(sys.argv[1])
