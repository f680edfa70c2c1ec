"""Run by check_line_tables.py under the Python being tested: prints the
line tables of many real code objects (this file's and some standard
modules', nested code included) with the line of every bytecode range as
the interpreter itself reports it (code.co_lines()):

    C <minor> <co_firstlineno> <co_linetable as hex>
    R <start> <end> <line, or -1 for none>   (byte offsets, end exclusive)
"""
import sys

MODULES = ("argparse", "inspect", "json.decoder", "threading", "dataclasses")


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            yield from codes(c)


def main():
    minor = sys.version_info[1]
    sources = [__file__]
    for name in MODULES:
        mod = __import__(name, fromlist=["_"])
        sources.append(mod.__file__)
    out = []
    for path in sources:
        with open(path, encoding="utf-8") as f:
            top = compile(f.read(), path, "exec")
        for code in codes(top):
            out.append("C %d %d %s" % (minor, code.co_firstlineno, code.co_linetable.hex()))
            for start, end, line in code.co_lines():
                out.append("R %d %d %d" % (start, end, -1 if line is None else line))
    sys.stdout.write("\n".join(out) + "\n")


main()
