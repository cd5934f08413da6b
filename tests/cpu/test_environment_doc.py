"""docs/environment.md lists exactly the JITKERNEL_* variables jitkernel reads at run time: every read in the C++ core
(`std::getenv("...")`, the cache's and the toolkit's `env("...")`) and the Python package (`os.environ.get("...")`,
`os.environ["..."]`, `os.getenv("...")`) has a row, and every row is read somewhere. The scan is checked too: it
finds the variables the cache and the toolkit are known to read."""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READ = re.compile(r"""(?:getenv|\benv|environ\.get|environ\[|os\.getenv)\(?\s*["'](JITKERNEL_[A-Z0-9_]+)["']""")
ROW = re.compile(r"^\| `(JITKERNEL_[A-Z0-9_]+)` \|", re.M)


def read_in_sources() -> set:
    found = set()
    for top in ("cpp/jitkernel", "cpp/bindings", "python/jitkernel"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".cpp", ".hpp", ".py")):
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        found.update(READ.findall(f.read()))
    return found


def test_every_variable_read_is_documented_and_every_documented_one_is_read():
    read = read_in_sources()
    assert {"JITKERNEL_CACHE_DIR", "JITKERNEL_NVRTC_PATH", "JITKERNEL_RECORD", "JITKERNEL_NO_PATHFINDER"} <= read
    with open(os.path.join(ROOT, "docs", "environment.md"), encoding="utf-8") as f:
        documented = set(ROW.findall(f.read()))
    assert read - documented == set(), "read but not in docs/environment.md"
    assert documented - read == set(), "in docs/environment.md but read nowhere"
