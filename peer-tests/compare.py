"""Compares one run of redis-py's tests on real Redis with the same run on the fake.

`scripts/peer-tests` runs the same test files against a real redis-server and against
`fake-redis-server`, once per protocol, and hands the outcome files (written by `outcomes.py`)
to this program. It prints, per file and protocol, how many tests pass on each server and how long
they took, then every test that passes on real Redis and not on the fake, with the fake's reason.
A test failing on real Redis too (one that needs a cluster, say) says nothing about the fake and
is left out.

In a gated file such a test fails the run unless `differences.txt` lists it with its reason; in a
reported file it is only printed. The exit status is 0 when nothing fails the run, 1 when something
does, and 2 when the inputs are wrong (an entry without a reason, a file with no tests).
"""

import argparse
import json
import re
import sys
from collections import defaultdict

PROTOCOLS = {"2": "RESP2", "3": "RESP3"}
# How much of the fake's reason for a failure is printed: enough to tell one cause from another.
REASON_WIDTH = 160


class Difference:
    """One entry of the differences list: a test id pattern, its protocol (or every one), why."""

    def __init__(self, pattern, protocol, reason, line):
        self.pattern = pattern
        self.protocol = protocol
        self.reason = reason
        self.line = line
        # Test ids hold `[` and `]` (parametrized cases), so `*` is the only wildcard.
        self._regex = re.compile(".*".join(re.escape(part) for part in pattern.split("*")))

    def covers(self, test_id, protocol):
        if self.protocol is not None and self.protocol != protocol:
            return False
        return self._regex.fullmatch(test_id) is not None


def read_differences(path):
    differences = []
    with open(path, encoding="utf-8") as listing:
        for number, line in enumerate(listing, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split(None, 2)
            protocol = None
            if len(words) > 1 and words[1].lower() in ("resp2", "resp3"):
                protocol = words[1][-1]
                reason = words[2] if len(words) > 2 else ""
            else:
                reason = line[len(words[0]) :].strip()
            if not reason:
                raise ValueError(f"{path}:{number}: `{words[0]}` has no reason")
            differences.append(Difference(words[0], protocol, reason, number))
    return differences


def file_of(test_id):
    return test_id.split("::", 1)[0]


def passed(entry):
    return entry is not None and entry["outcome"] in ("passed", "xpassed")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--differences", required=True)
    parser.add_argument(
        "--run",
        nargs=3,
        action="append",
        required=True,
        metavar=("PROTOCOL", "REAL", "FAKE"),
        help="a protocol (2 or 3) and the outcome files of real Redis and of the fake",
    )
    parser.add_argument(
        "--file",
        nargs=2,
        action="append",
        required=True,
        metavar=("MODE", "PATH"),
        help="a test file that was run, and whether it is `gate`d or `report`ed",
    )
    parser.add_argument(
        "--summary",
        metavar="PATH",
        help="also write the last line's counts, one line, to PATH (for a report of versions)",
    )
    return parser.parse_args()


def print_counts(modes, runs):
    """One line per file and protocol: passed of run, and seconds, on each server. False when a
    file ran no test on real Redis (a wrong path, or a collection error)."""
    print(f"{'file':<42} {'proto':<5} {'mode':<6} {'real Redis':>16} {'fake':>16}")
    complete = True
    for path in modes:
        for protocol, real, fake in runs:
            cells = []
            for results in (real, fake):
                mine = [entry for test_id, entry in results.items() if file_of(test_id) == path]
                seconds = sum(entry["seconds"] for entry in mine)
                cells.append(f"{sum(map(passed, mine))} of {len(mine)} {seconds:5.1f}s")
                if results is real and not mine:
                    print(f"peer-tests: no test of {path} ran on real Redis", file=sys.stderr)
                    complete = False
            label = f"{path:<42} {PROTOCOLS[protocol]:<5} {modes[path]:<6}"
            print(f"{label} {cells[0]:>16} {cells[1]:>16}")
    return complete


def print_only_real(modes, runs, differences):
    """Every test that passes on real Redis and not on the fake, by file; returns how many of them
    are in gated files and not listed as differences."""
    # test id -> [(protocol, the fake's entry or None)]
    only_real = defaultdict(list)
    for protocol, real, fake in runs:
        for test_id, entry in sorted(real.items()):
            if file_of(test_id) in modes and passed(entry) and not passed(fake.get(test_id)):
                only_real[test_id].append((protocol, fake.get(test_id)))
    unlisted = 0
    for path in modes:
        mine = [test_id for test_id in only_real if file_of(test_id) == path]
        if not mine:
            continue
        print(f"\n{path} ({modes[path]}): {len(mine)} pass on real Redis and not on the fake")
        for test_id in mine:
            failures = only_real[test_id]
            protocols = ", ".join(PROTOCOLS[p] for p, _ in failures)
            name = test_id.split("::", 1)[1]
            listed = [
                next((d for d in differences if d.covers(test_id, p)), None) for p, _ in failures
            ]
            if all(listed):
                print(f"  listed  {name} ({protocols}): {listed[0].reason}")
                continue
            if modes[path] == "gate":
                unlisted += 1
            theirs = failures[0][1]
            why = "not run" if theirs is None else theirs["outcome"]
            if theirs is not None and theirs["reason"]:
                why += ": " + theirs["reason"][:REASON_WIDTH]
            print(f"  {name} ({protocols}): {why}")
    return unlisted


def print_only_fake(modes, runs):
    """Tests that pass on the fake and fail on real Redis: a hint that the fake accepts what Redis
    refuses (skipped tests are left out: those are the version and environment checks)."""
    only_fake = defaultdict(list)
    for protocol, real, fake in runs:
        for test_id, entry in sorted(fake.items()):
            theirs = real.get(test_id)
            if file_of(test_id) in modes and passed(entry) and theirs is not None:
                if not passed(theirs) and theirs["outcome"] != "skipped":
                    only_fake[test_id].append(PROTOCOLS[protocol])
    for path in modes:
        mine = [test_id for test_id in only_fake if file_of(test_id) == path]
        if mine:
            print(f"\n{path}: {len(mine)} pass on the fake and not on real Redis")
            for test_id in mine:
                print(f"  {test_id.split('::', 1)[1]} ({', '.join(only_fake[test_id])})")


def print_stale(modes, runs, differences, listing):
    stale = [
        f"{test_id} ({PROTOCOLS[protocol]}, line {difference.line})"
        for difference in differences
        for protocol, _, fake in runs
        for test_id, entry in sorted(fake.items())
        if file_of(test_id) in modes and passed(entry) and difference.covers(test_id, protocol)
    ]
    if stale:
        print(f"\nlisted in {listing} but passing on the fake (drop them from the list):")
        for entry in stale:
            print(f"  {entry}")


def main():
    args = parse_args()
    try:
        differences = read_differences(args.differences)
    except ValueError as error:
        print(f"peer-tests: {error}", file=sys.stderr)
        return 2
    modes = {path: mode for mode, path in args.file}
    runs = []
    for protocol, real_path, fake_path in args.run:
        with open(real_path, encoding="utf-8") as real, open(fake_path, encoding="utf-8") as fake:
            runs.append((protocol, json.load(real), json.load(fake)))

    if not print_counts(modes, runs):
        return 2
    unlisted = print_only_real(modes, runs, differences)
    print_only_fake(modes, runs)
    print_stale(modes, runs, differences, args.differences)

    totals = []
    for protocol, real, fake in runs:
        theirs = [t for t, e in real.items() if file_of(t) in modes and passed(e)]
        short = [t for t in theirs if not passed(fake.get(t))]
        listed = sum(any(d.covers(t, protocol) for d in differences) for t in short)
        totals.append(
            f"{PROTOCOLS[protocol]} {len(theirs) - len(short)} of {len(theirs)}"
            f" (gap {len(short)}: {listed} listed)"
        )
    print(f"\nof the tests that pass on real Redis, the fake passes {', '.join(totals)}")
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as summary:
            print(", ".join(totals), file=summary)
    if unlisted:
        print(
            f"FAILED: {unlisted} tests of gated files pass on real Redis and fail on the fake,"
            f" and {args.differences} does not list them"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
