#!/usr/bin/env python3
"""The project's pages point only at things that exist.

Over README.md, HACKING.md, SECURITY.md and docs/*.md:
  - every relative Markdown link ([text](path) or ![alt](path)) names an existing file, and
    its #anchor, if any, a heading of that page (GitHub's anchors: lower case, punctuation
    dropped, spaces to dashes);
  - every repository path written in backticks (`resolver/fleet/fleet_cache.h`,
    `tools/rehearse/*_reader.cc`, `config.{h,cc}`-style braces, NAME-style placeholders)
    names at least one existing file or folder, so a page cannot keep naming a file that moved;
  - docs/README.md, the index, links every page of docs/;
  - README.md is at most 250 lines, and no page names the helpers' scratch folder outside
    the repository (FORBIDDEN below);
  - no page states a dated result: a bare date (YYYY-MM-DD, not an example timestamp such as
    YYYY-MM-DDTHH:MM:SSZ) or a clock time in UTC (HH:MM UTC) outside code blocks; dated
    measurements go in commit messages.
Code blocks are skipped: what they show is program output and commands, not links.

usage: docs_links_test.py SOURCE_DIR      (prints "links ok" and exits 0 when all hold)
"""
import glob
import os
import re
import sys

PAGES = ["README.md", "HACKING.md", "SECURITY.md"]
TOP_DIRS = ("base", "wire", "cache", "dnssec", "dnstap", "resolver", "tools", "tests",
            "packaging", "scripts", "docs", "cmake", ".ci")
README_MAX_LINES = 250
FORBIDDEN = "../" + "shared"  # spelled in two parts so that this file does not name it either

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH_LIKE = re.compile(r"^[A-Za-z0-9_.{},*/-]+$")
DATED = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b(?!T)|\b\d{1,2}:\d\d(?::\d\d)? UTC\b")


def prose(text: str) -> str:
    """The page without its fenced code blocks (their lines blanked, so line numbers hold)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    h = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path: str) -> set:
    seen, result = {}, set()
    for line in prose(open(path, encoding="utf-8").read()).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        result.add(s if n == 0 else f"{s}-{n}")
    return result


def expand_braces(p: str):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        yield p
        return
    for alt in m.group(1).split(","):
        yield from expand_braces(p[: m.start()] + alt + p[m.end():])


def repo_path_exists(src: str, token: str) -> bool:
    token = token.rstrip("/.,:;")
    # Placeholders in capitals (tests/fuzz/NAME_fuzz.cc) stand for any name.
    token = re.sub(r"[A-Z][A-Z_]+[A-Z]", "*", token)
    for p in expand_braces(token):
        if glob.glob(os.path.join(src, p)):
            return True
    return False


def main() -> int:
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    pages = [p for p in PAGES if os.path.exists(os.path.join(src, p))]
    pages += sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    problems, links, paths = [], 0, 0
    for page in pages:
        full = os.path.join(src, page)
        raw = open(full, encoding="utf-8").read()
        text = prose(raw)
        if FORBIDDEN in raw:
            problems.append(f"{page}: mentions {FORBIDDEN}")
        for n, line in enumerate(text.splitlines(), 1):
            for m in DATED.finditer(re.sub(r"`[^`]*`", "", line)):
                problems.append(f"{page}:{n}: '{m.group(0)}' dates a result; put it in the "
                                "commit message")
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                links += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(full), file_part)) \
                    if file_part else full
                if not os.path.exists(dest):
                    problems.append(f"{page}:{n}: link to {target}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"{page}:{n}: link to {target}: no such heading")
            for token in CODE_SPAN.findall(line):
                token = token.strip()
                if " " in token or not PATH_LIKE.match(token) or "/" not in token:
                    continue
                if token.split("/", 1)[0] not in TOP_DIRS:
                    continue
                paths += 1
                if not repo_path_exists(src, token):
                    problems.append(f"{page}:{n}: `{token}` names no file of the repository")
    index = os.path.join(src, "docs", "README.md")
    if not os.path.exists(index):
        problems.append("docs/README.md (the index of docs/) is missing")
    else:
        linked = {os.path.normpath(os.path.join(src, "docs", t.partition("#")[0]))
                  for t in LINK.findall(prose(open(index, encoding="utf-8").read()))}
        for page in glob.glob(os.path.join(src, "docs", "*.md")):
            if os.path.basename(page) != "README.md" and os.path.normpath(page) not in linked:
                problems.append(f"docs/README.md does not link {os.path.relpath(page, src)}")
    readme_lines = len(open(os.path.join(src, "README.md"), encoding="utf-8").readlines())
    if readme_lines > README_MAX_LINES:
        problems.append(f"README.md has {readme_lines} lines, more than {README_MAX_LINES}: "
                        "move the detail to a page of docs/")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(pages)} pages, {links} links, {paths} repository paths checked, "
          f"{len(problems)} problems")
    if problems:
        return 1
    print("links ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
