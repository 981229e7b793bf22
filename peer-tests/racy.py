"""A pytest plugin that leaves out the tests `racy.txt` lists, for `scripts/peer-tests`.

Both runs (real Redis and the fake) load it, so a listed test is absent from both sides of the
comparison. The deselected ids are printed in pytest's summary as deselected.
"""

import fnmatch
import os

_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "racy.txt")


def _patterns():
    patterns = []
    with open(_LIST, encoding="utf-8") as listing:
        for number, line in enumerate(listing, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split(None, 1)
            if len(words) < 2:
                raise ValueError(f"{_LIST}:{number}: a listed test needs its reason")
            patterns.append(words[0])
    return patterns


def pytest_collection_modifyitems(config, items):
    patterns = _patterns()
    kept, racy = [], []
    for item in items:
        listed = any(fnmatch.fnmatchcase(item.nodeid, p) for p in patterns)
        (racy if listed else kept).append(item)
    if racy:
        config.hook.pytest_deselected(items=racy)
        items[:] = kept
