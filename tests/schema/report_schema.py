#!/usr/bin/env python3
"""Validates `vramtrace report --json` documents against docs/report.schema.json
with the jsonschema package (Debian: python3-jsonschema, which
scripts/install-deps.sh installs). Used by the example, snapshot and CLI
tests on everything they report; run as a script it validates a document
on stdin (how a Python without jsonschema asks the system's), against the
schema named as its argument (default: the report's).

    from report_schema import schema_errors   # [] when the document is valid
"""
import json
import os
import subprocess
import sys

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
SCHEMA = os.path.join(DOCS, "report.schema.json")
# `vramtrace report --summary`'s document
SUMMARY_SCHEMA = os.path.join(DOCS, "summary.schema.json")
SYSTEM_PYTHON = "/usr/bin/python3"
NO_VALIDATOR = 3


def _errors_here(doc, schema_path=SCHEMA):
    import jsonschema
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message[:200])
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.path)))]


def schema_errors(doc, schema_path=SCHEMA):
    """The ways doc breaks the schema (at most the first 20), [] if none."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        if os.path.realpath(sys.executable) == os.path.realpath(SYSTEM_PYTHON):
            raise RuntimeError("jsonschema is not installed: apt-get install python3-jsonschema")
        p = subprocess.run([SYSTEM_PYTHON, os.path.abspath(__file__), schema_path],
                           input=json.dumps(doc),
                           capture_output=True, text=True, timeout=120)
        if p.returncode == NO_VALIDATOR or p.returncode < 0 or not os.path.exists(SYSTEM_PYTHON):
            raise RuntimeError("no Python with jsonschema (apt-get install python3-jsonschema): "
                               + p.stderr.strip())
        return [l for l in p.stdout.splitlines() if l]
    return _errors_here(doc, schema_path)[:20]


if __name__ == "__main__":
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        print("jsonschema is not installed", file=sys.stderr)
        sys.exit(NO_VALIDATOR)
    for line in _errors_here(json.load(sys.stdin), *sys.argv[1:2])[:20]:
        print(line)
