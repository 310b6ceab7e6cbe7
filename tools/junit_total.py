"""Sum pytest JUnit reports into one closing line: ``tests: N passed, N failed, N skipped``.

Each failed test is named below it (report, test id, the first line of its message): CI keeps only the
end of a long log, and that end must say which test to look at. Above it, the slowest tests of the whole
run, with their cell: where CI's time goes when it nears its budget.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path


def failed_tests(root: ElementTree.Element) -> list[tuple[str, str]]:
    """``(test id, first line of the failure)`` of every failed or erroring test case."""
    out = []
    for case in root.iter("testcase"):
        for outcome in ("failure", "error"):
            element = case.find(outcome)
            if element is not None:
                name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
                message = (element.get("message") or element.text or "").strip().splitlines()
                out.append((name, message[0][:200] if message else outcome))
    return out


def slowest_tests(report: str, root: ElementTree.Element) -> list[tuple[float, str]]:
    """``(seconds, "report: test id")`` of every test case of one report."""
    return [
        (float(case.get("time") or 0), f"{report}: {case.get('classname', '')}::{case.get('name', '')}")
        for case in root.iter("testcase")
    ]


def main(paths: list[str], slowest: int = 25) -> int:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failures: list[str] = []
    timed: list[tuple[float, str]] = []
    for path in paths:
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError):
            continue
        for suite in root.iter("testsuite"):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
        timed += slowest_tests(Path(path).stem, root)
        failures += [f"  {Path(path).stem}: {name}: {message}" for name, message in failed_tests(root)]
    if timed:
        print(f"slowest {min(slowest, len(timed))} tests (seconds, cell: test):")
        for seconds, name in sorted(timed, reverse=True)[:slowest]:
            print(f"  {seconds:7.1f}  {name}")
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    print(f"tests: {passed} passed, {failed} failed, {totals['skipped']} skipped")
    for line in failures:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
