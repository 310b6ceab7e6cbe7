"""Sum pytest JUnit reports into one closing line: ``tests: N passed, N failed, N skipped``.

Each failed test is named below it (report, test id, the first line of its message): CI keeps only the
end of a long log, and that end must say which test to look at.
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


def main(paths: list[str]) -> int:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failures: list[str] = []
    for path in paths:
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError):
            continue
        for suite in root.iter("testsuite"):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
        failures += [f"  {Path(path).stem}: {name}: {message}" for name, message in failed_tests(root)]
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    print(f"tests: {passed} passed, {failed} failed, {totals['skipped']} skipped")
    for line in failures:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
