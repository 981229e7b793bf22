"""A pytest plugin that writes each test's outcome to a JSON file, for `scripts/peer-tests`.

The peer suite runs one list of tests against two servers and compares them test by test;
pytest's own report is made for people, so this records what the comparison needs and nothing
else. Per test id: the outcome (`passed`, `failed`, `error` for a fixture's setup or teardown,
`skipped`, `xfailed` or `xpassed`), for a failure the one line that says why, and the seconds its
setup, call and teardown took. The file is named by the environment variable `PEER_OUTCOMES`.
"""

import json
import os

_outcomes = {}


def _reason(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = (crash.message if crash is not None else str(report.longrepr)).strip()
    return text.splitlines()[0][:300] if text else ""


def pytest_runtest_logreport(report):
    entry = _outcomes.setdefault(
        report.nodeid, {"outcome": "passed", "reason": "", "seconds": 0.0}
    )
    entry["seconds"] += report.duration
    if entry["outcome"] in ("failed", "error"):
        # The first failure is the one that says why; a teardown after it adds nothing.
        return
    if hasattr(report, "wasxfail"):
        entry["outcome"] = "xfailed" if report.skipped else "xpassed"
    elif report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
        entry["reason"] = _reason(report)
    elif report.skipped:
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session):
    path = os.environ.get("PEER_OUTCOMES")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(_outcomes, out, indent=1, sort_keys=True)
