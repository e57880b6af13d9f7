#!/usr/bin/env python3
"""The README's configuration table against `hourglassd --help`.

Every flag the table names must exist in --help, and where the table gives a default that
--help also states ("default X"), the two must agree. A flag renamed or a default changed in
the code without the README, or the other way round, fails here. A README without such a table
must link the generated reference, docs/configuration.md, instead (its own test,
Docs.ConfigurationPageMatchesTheSettingsTable, holds it to the settings table).

Usage: readme_flags_test.py README.md path/to/hourglassd
"""
import re
import subprocess
import sys


def table_rows(readme: str):
    if "\n## Configuration\n" not in readme:
        return
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if not line.startswith("| `--"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        yield re.findall(r"`(--[a-z0-9-]+)", cells[0]), cells[1]


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
    readme = open(readme_path, encoding="utf-8").read()
    out = subprocess.run([daemon, "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        print(f"{daemon} --help exited {out.returncode}: {out.stderr}")
        return 1
    entries = help_entries(out.stdout)
    problems, checked = [], 0
    for flags, default_cell in table_rows(readme):
        defaults = [d.strip().strip("`") for d in default_cell.split(" / ")]
        if len(defaults) != len(flags):
            defaults = [default_cell.strip("`")] * len(flags)
        for flag, default in zip(flags, defaults):
            checked += 1
            if flag not in entries:
                problems.append(f"README names {flag}, which hourglassd --help does not list")
                continue
            stated = re.search(r"\(default:? ([^)]*)\)", entries[flag])
            # Words such as "loopback", "off" or a dash describe rather than quote a default.
            if not stated or not re.match(r"[0-9/]", default):
                continue
            value = default.split()[0]  # "1800 ms" -> "1800"
            if not stated.group(1).startswith(value):
                problems.append(f"{flag}: README says default {default!r}, --help says "
                                f"{stated.group(1)!r}")
    if checked == 0 and "docs/configuration.md" in readme:
        print("the README has no flag table; it links docs/configuration.md")
        return 0
    if checked < 10:
        problems.append(f"only {checked} flags found in the README's configuration table: "
                        "has its format changed?")
    for p in problems:
        print(p)
    print(f"{checked} flags checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
