"""Sum pytest JUnit reports into one closing line: ``tests: N passed, N failed, N skipped``."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree


def main(paths: list[str]) -> int:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path in paths:
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError):
            continue
        for suite in root.iter("testsuite"):
            for key in totals:
                totals[key] += int(suite.get(key, 0))
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    print(f"tests: {passed} passed, {failed} failed, {totals['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
