"""The Chrome trace-event rules a Perfetto export must keep, checked the
way Perfetto's and chrome://tracing's JSON importers read a file
(docs: "Trace Event Format", the JSON Object Format):
  - the document: {"traceEvents": [...]} with displayTimeUnit "ms" or "ns";
  - every event: a known phase, a non-empty name, integer pid and tid, and
    (metadata aside) a numeric ts in microseconds, never negative;
  - duration slices: per (pid, tid), each E ends the innermost open B of
    that thread, carries its name, and is not earlier; none left open;
  - async slices: per (pid, cat, id), each e ends an open b of that name;
    none left open;
  - threads: an event's tid is its process's pid (process-wide tracks:
    counters, process instants) or one of the threads the caller knows the
    process had. A tid that is neither draws a thread that never ran.
Nothing here reads a trace or asks the analyzer."""

PHASES = {"B", "E", "b", "e", "C", "i", "M"}
INSTANT_SCOPES = {"t", "p", "g"}


def trace_event_problems(doc, threads):
    """doc: the parsed JSON; threads: {pid: set of tids} the processes had.
    Returns a list of problems (empty: the file keeps the rules)."""
    bad = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not a JSON object with a traceEvents array"]
    if doc.get("displayTimeUnit") not in ("ms", "ns"):
        bad.append("displayTimeUnit %r is neither \"ms\" nor \"ns\"" % doc.get("displayTimeUnit"))
    open_slices = {}   # (pid, tid) -> [(name, ts)]
    open_async = {}    # (pid, cat, id) -> [(name, ts)]
    for n, e in enumerate(doc["traceEvents"]):
        where = "event %d (%s)" % (n, e)
        ph, name = e.get("ph"), e.get("name")
        pid, tid = e.get("pid"), e.get("tid")
        if ph not in PHASES:
            bad.append("%s: unknown phase %r" % (where, ph))
            continue
        if not isinstance(name, str) or not name:
            bad.append("%s: no name" % where)
        if not isinstance(pid, int) or not isinstance(tid, int):
            bad.append("%s: pid or tid not an integer" % where)
            continue
        if tid != pid and tid not in threads.get(pid, set()):
            bad.append("%s: tid %d is no thread of pid %d (threads: %s)"
                       % (where, tid, pid, sorted(threads.get(pid, set()))))
        if ph == "M":
            continue
        ts = e.get("ts")
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or ts < 0:
            bad.append("%s: ts %r is not a non-negative number of microseconds" % (where, ts))
            continue
        if ph == "B":
            open_slices.setdefault((pid, tid), []).append((name, ts))
        elif ph == "E":
            stack = open_slices.get((pid, tid))
            if not stack:
                bad.append("%s: E with no open B on (pid %d, tid %d)" % (where, pid, tid))
                continue
            begun, begun_ts = stack.pop()
            if name != begun:
                bad.append("%s: E named %r ends the slice %r" % (where, name, begun))
            if ts < begun_ts:
                bad.append("%s: E at %s before its B at %s" % (where, ts, begun_ts))
        elif ph in ("b", "e"):
            if "id" not in e or not e.get("cat"):
                bad.append("%s: async event without cat and id" % where)
                continue
            key = (pid, e["cat"], e["id"])
            if ph == "b":
                open_async.setdefault(key, []).append((name, ts))
            else:
                stack = open_async.get(key)
                if not stack:
                    bad.append("%s: e with no open b of id %r" % (where, e["id"]))
                    continue
                begun, begun_ts = stack.pop()
                if name != begun or ts < begun_ts:
                    bad.append("%s: e ends %r begun at %s" % (where, begun, begun_ts))
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in args.values()):
                bad.append("%s: counter without numeric args" % where)
        elif ph == "i" and e.get("s", "t") not in INSTANT_SCOPES:
            bad.append("%s: instant scope %r" % (where, e.get("s")))
    for (pid, tid), stack in sorted(open_slices.items()):
        for name, ts in stack:
            bad.append("slice %r (pid %d, tid %d, ts %s) never ends" % (name, pid, tid, ts))
    for key, stack in sorted(open_async.items(), key=str):
        for name, ts in stack:
            bad.append("async slice %r %s never ends" % (name, key))
    return bad
