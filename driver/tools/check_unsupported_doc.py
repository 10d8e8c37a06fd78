#!/usr/bin/env python3
"""Checks that docs/cpu-driver.md lists exactly the core (ze) entry points zex-cpu answers with
ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: those of the generated DDI tables that stub() sets and fill() does
not. The list is the backquoted ze* names between <!-- unsupported:begin --> and <!-- unsupported:end -->.

usage: check_unsupported_doc.py <build>/driver/ddi_tables.cpp docs/cpu-driver.md
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gen_ddi import api_name  # noqa: E402  (the name of a DDI table entry, as the tables are generated)


def unsupported(tables_cpp):
    text = open(tables_cpp, encoding="utf-8").read()
    stubs, fills = {}, {}
    for kind, table, body in re.findall(r"void (stub|fill)\((?:\[\[maybe_unused\]\] )?(\w+)\* t\) \{(.*?)\n\}", text, re.S):
        (stubs if kind == "stub" else fills)[table] = set(re.findall(r"t->(pfn\w+)", body))
    if not stubs:
        sys.exit(f"{tables_cpp}: no stub() tables found; has gen_ddi.py's output changed?")
    return {api_name(t, m) for t, ms in stubs.items() if t.startswith("ze_") for m in ms - fills.get(t, set())}


def documented(doc):
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"<!-- unsupported:begin -->(.*?)<!-- unsupported:end -->", text, re.S)
    if not m:
        sys.exit(f"{doc}: no <!-- unsupported:begin --> ... <!-- unsupported:end --> list")
    return set(re.findall(r"`(ze[A-Z]\w*)`", m.group(1)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    actual, listed = unsupported(sys.argv[1]), documented(sys.argv[2])
    missing, extra = sorted(actual - listed), sorted(listed - actual)
    for name in missing:
        print(f"{sys.argv[2]}: {name} answers UNSUPPORTED_FEATURE but is not in the list")
    for name in extra:
        print(f"{sys.argv[2]}: {name} is listed as unsupported but zex-cpu implements it (or no table has it)")
    if missing or extra:
        sys.exit(1)
    print(f"{len(actual)} unsupported core entry points, all listed")


if __name__ == "__main__":
    main()
