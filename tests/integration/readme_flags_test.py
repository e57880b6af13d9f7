#!/usr/bin/env python3
"""The flag tables of README.md and docs/*.md against `hourglassd --help`.

A flag table is a Markdown table whose header is `| flag | default | meaning |` (the topic
pages' "Flags" sections). Every flag such a table names must exist in --help, and where the
table gives a default that --help also states ("default X"), the two must agree. A flag
renamed or a default changed in the code without the docs, or the other way round, fails
here. docs/configuration.md is left out: it is generated from the same key table as --help.

Usage: readme_flags_test.py README.md path/to/hourglassd   (docs/ is found beside README.md)
"""
import glob
import os
import re
import subprocess
import sys

HEADER = re.compile(r"^\|\s*flag\s*\|\s*default\s*\|\s*meaning\s*\|\s*$")


def table_rows(page: str):
    in_table = False
    for line in page.splitlines():
        if HEADER.match(line):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if not in_table or not line.startswith("| `--"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        yield re.findall(r"`(--[a-z0-9-]+)", cells[0]), cells[1]


def pages(readme_path: str):
    docs = os.path.join(os.path.dirname(os.path.abspath(readme_path)), "docs")
    found = [readme_path] + sorted(p for p in glob.glob(os.path.join(docs, "*.md"))
                                   if os.path.basename(p) != "configuration.md")
    return found


def help_entries(text: str):
    """flag -> its description (CLI11 puts a long flag's description on the next line)."""
    entries, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\s+(?:-\w,)?(--[a-z0-9-]+)\b(.*)", line)
        if m:
            current = m.group(1)
            entries[current] = m.group(2)
        elif current and line.startswith(" " * 20):
            entries[current] += " " + line.strip()
    return entries


def main() -> int:
    readme_path, daemon = sys.argv[1], sys.argv[2]
    out = subprocess.run([daemon, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        print(f"{daemon} --help exited {out.returncode}: {out.stderr}")
        return 1
    entries = help_entries(out.stdout)
    problems, checked = [], 0
    rows = [(os.path.relpath(p, os.path.dirname(os.path.abspath(readme_path))), row)
            for p in pages(readme_path)
            for row in table_rows(open(p, encoding="utf-8").read())]
    for where, (flags, default_cell) in rows:
        defaults = [d.strip().strip("`") for d in default_cell.split(" / ")]
        if len(defaults) != len(flags):
            defaults = [default_cell.strip("`")] * len(flags)
        for flag, default in zip(flags, defaults):
            checked += 1
            if flag not in entries:
                problems.append(f"{where} names {flag}, which hourglassd --help does not list")
                continue
            stated = re.search(r"\(default:? ([^)]*)\)", entries[flag])
            # Words such as "loopback", "off" or a dash describe rather than quote a default.
            if not stated or not re.match(r"[0-9/]", default):
                continue
            value = default.split()[0]  # "1800 ms" -> "1800"
            if not stated.group(1).startswith(value):
                problems.append(f"{flag}: {where} says default {default!r}, --help says "
                                f"{stated.group(1)!r}")
    if checked < 10:
        problems.append(f"only {checked} flags found in the docs' flag tables: "
                        "has their format changed?")
    for p in problems:
        print(p)
    print(f"{checked} flags checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
