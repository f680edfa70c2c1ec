// The HTML report in a real browser: `vramtrace report --html` opened in
// headless Chromium (Debian's /usr/bin/chromium) through playwright-core.
// Fails on any console error, page error or network request; checks that
// what the page drew matches `vramtrace report --json` of the same inputs
// (each peak label, the phases, the failures and their verdicts, the flame
// graph's root at every view, the snapshot's largest free block), and with
// the text report (each peak label reads as its "peak X at T"); the axes
// (bytes a power of two apart, labels that fit, time to the trace's last
// event that carries data, found in its raw records by vramtrace dump);
// saves a PNG screenshot.
//
//   node check_html.mjs --build BUILD --src SRC --scenario NAME [--screenshot PNG]
//                       [--chromium PATH] [--max-bytes N] [--max-render-ms N] [--input PATH...]
//                       [--tamper 1]
//
// Scenarios: demo (examples/train_eval_phases: phases), growth
// (tests/golden/gold_growth leak: a phase that grows 64 MiB per opening), oom
// (examples/deepspeed_init_oom: a failure), ranks (examples/launch_ranks: a
// job of 4 ranks on 2 GPUs), stopped (examples/gpu_holder killed right
// after allocating 256 MiB: its memory drawn to its last event), snapshot
// (a PyTorch snapshot of the fixtures:
// its allocated and reserved timeline on a time axis), snapshot_oom (a
// snapshot with an oom entry and no times, written here with Python's
// pickle), job_summaries and job_traces (make_job.py: four ranks on two
// GPUs, ranks 2 and 0 failing, rank 2 first; the page of the two nodes'
// summaries and that of the traces: the job section's heatmap has a row
// per rank in rank order, its hottest cell says the job's largest peak,
// the first failure is marked on rank 2's row), files (--input: any
// traces, snapshots or summaries, for measuring large pages), many_ranks
// (bench/synth_trace: a job of 40 ranks on 8 GPUs, more than the page
// details: the page must detail exactly the processes report_html.h
// chooses, list every rank in its job section and say how many it does
// not detail), many_ranks_oom (make_job.py: 20 ranks, 5 failing: the first
// 4 failures in time, the largest and the smallest peak detailed). On any page that details part of a job (vt-options'
// detail), the checks below run on the detailed processes. --tamper 1
// adds 1 MiB to the job block's hottest value after the page is written:
// the checks must fail. torch_leak_oom (tests/pytorch/story_train.py
// leak_oom with --torch-history): the device's growth drawn on its
// timeline, the OOM snapshot's failure where the trace's is (one time
// origin), the gradients' fall to 0 B said. torch_leak (story_train.py
// leak 12 with --torch-history, no failure): the allocator's growth one
// rate a step at one site. Every scenario is checked again in a window
// 900 px wide (what a reader sees before a hover: the legend's bytes, the
// lanes' names, no label over another, stack cells broken between words)
// and saved as NAME_900.png beside the screenshot.
//
// Exit status: 0 passed, 1 failed, 77 skipped (meson's "skip"): node's
// playwright-core or Chromium absent - but with CI=true a missing tool fails.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = { input: [] };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const key = a.replace(/^--/, "").replace(/-/g, "_");
  if (key === "input") args.input.push(process.argv[++i]);
  else args[key] = process.argv[++i];
}
const inCI = process.env.CI === "true";
function skip(why) {
  if (inCI) {
    console.error(`FAIL: ${why} (CI=true: the browser test must run; scripts/install-deps.sh installs it)`);
    process.exit(1);
  }
  console.log(`SKIP: ${why}; scripts/install-deps.sh installs it`);
  process.exit(77);
}

const chromiumPath = args.chromium || "/usr/bin/chromium";
if (!fs.existsSync(chromiumPath)) skip(`no Chromium at ${chromiumPath} (Debian package chromium)`);
let chromium;
try {
  ({ chromium } = await import("playwright-core"));
} catch (e) {
  skip(`playwright-core is not installed (npm ci in the source tree): ${e.message}`);
}

const build = path.resolve(args.build);
const src = path.resolve(args.src);
const vramtrace = path.join(build, "analyzer", "vramtrace");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vt-html-"));
const failures = [];
function fail(msg) { failures.push(msg); console.error("FAIL: " + msg); }
function check(what, got, want) {
  if (got !== want) fail(`${what}: page says ${JSON.stringify(got)}, report says ${JSON.stringify(want)}`);
}
function run(argv, env, okStatus = [0]) {
  const r = spawnSync(argv[0], argv.slice(1), { env: { ...process.env, ...env }, encoding: "utf8",
                                                   maxBuffer: 1 << 30, timeout: 300000 });
  if (!okStatus.includes(r.status)) {
    console.error(r.stdout + r.stderr);
    throw new Error(`${argv.join(" ")} exited ${r.status}`);
  }
  return r;
}
// The report's byte figures (common/format.c), written independently in
// exact integers: two decimals, a half rounded away from zero (12482248704
// bytes, exactly 11.625 GiB, is "11.63 GiB").
function fmtBytes(b) {
  const n = BigInt(b);
  if (n < 1024n) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  let div = 1024n, u = 0;
  while (n >= div * 1024n && u < 4) { div *= 1024n; u++; }
  const h = (n * 200n + div) / (2n * div);
  return `${h / 100n}.${String(h % 100n).padStart(2, "0")} ${units[u]}`;
}

// ---- the inputs ----
function traceExample(argv, env, okStatus, runOptions = []) {
  const out = path.join(tmp, "traces");
  fs.mkdirSync(out);
  const sim = path.join(build, "tests", "simdriver");
  const e = { LD_LIBRARY_PATH: sim + ":" + path.join(sim, "runtime"), VTSIM_LEDGER: path.join(tmp, "ledger.txt"), ...env };
  if (args.preload_first) e.LD_PRELOAD = args.preload_first;
  run([vramtrace, "run", ...runOptions, "-o", path.join(out, "trace.%p.vtrace"), "--", ...argv], e, okStatus);
  return [out];
}
// A snapshot whose trace ends in an oom entry, written by Python's pickle
// (tests/snapshot/oom_snapshot.py, as tests/simulate uses it): 8 MiB live
// in a 20 MiB segment, a 16 MiB request with 4 MiB free on the device:
// fragmented. No time_us: the x axis counts entries.
function oomSnapshot() {
  const file = path.join(tmp, "oom.pickle");
  run(["python3", path.join(src, "tests", "snapshot", "oom_snapshot.py"), file], {});
  return file;
}
// A job of four ranks on two GPUs whose ranks 2 and 0 fail, rank 2 first,
// and its two nodes' summaries (make_job.py, as tests/launchers makes it).
let job = null;
function makeJob(more = []) {
  const out = path.join(tmp, "job");
  const argv = ["python3", path.join(src, "tests", "launchers", "make_job.py"), "--build", build, "--out", out, ...more];
  if (args.preload_first) argv.push("--preload-first", args.preload_first);
  run(argv, {});
  job = { traces: path.join(out, "traces"), summaries: path.join(out, "summaries") };
  return job;
}
// A process stopped right after allocating 256 MiB (examples/gpu_holder.c
// under the tracer, killed once it said "ready" and its trace was flushed):
// its last event is that allocation, and its trace has no end.
async function stoppedAfterAllocating() {
  const out = path.join(tmp, "traces");
  fs.mkdirSync(out);
  const sim = path.join(build, "tests", "simdriver");
  const lib = path.join(build, "preload", "libvramtrace.so");
  const env = { ...process.env, LD_LIBRARY_PATH: sim + ":" + path.join(sim, "runtime"),
                VTSIM_LEDGER: path.join(tmp, "ledger.txt"), VRAMTRACE_FLUSH_MS: "20",
                VRAMTRACE_OUTPUT: path.join(out, "trace.%p.vtrace"),
                LD_PRELOAD: (args.preload_first ? args.preload_first + ":" : "") + lib };
  const child = spawn(path.join(build, "examples", "gpu_holder"), [String(256 << 20)],
                      { env, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("gpu_holder never said ready")), 60000);
    child.stdout.on("data", (d) => {
      if (!String(d).includes("ready")) return;
      clearTimeout(timer);
      child.on("exit", resolve);
      setTimeout(() => child.kill("SIGKILL"), 500); /* 25 flush intervals */
    });
  });
  return [out];
}
const scenario = args.scenario || "files";
let inputs;
switch (scenario) {
  case "demo": inputs = traceExample([path.join(build, "examples", "train_eval_phases")]); break;
  case "growth": inputs = traceExample([path.join(build, "tests", "golden", "gold_growth"), "leak"]); break;
  case "oom": inputs = traceExample([path.join(build, "examples", "deepspeed_init_oom")], { VTSIM_MEMORY: "31.50GiB" }, [1]); break;
  case "ranks": inputs = traceExample([path.join(build, "examples", "launch_ranks"), "4"]); break;
  // a model, its gradients and AdamW of known sizes on the stand-in torch
  // (tests/pytorch/parts_train.py): the timeline stacked by part
  case "parts": inputs = traceExample(["python3", path.join(src, "tests", "pytorch", "parts_train.py"), "train"],
    { PYTHONPATH: path.join(src, "tests", "pytorch", "standin", "site-packages"), VTSIM_MEMORY: "940MiB" }); break;
  // a leak of 8 MiB a step on the stand-in torch (tests/pytorch/story_train.py)
  // run into its OOM with PyTorch's history: the trace, its growth, and
  // the OOM snapshot whose times are the wall clock's
  case "torch_leak_oom": inputs = traceExample(["python3", path.join(src, "tests", "pytorch", "story_train.py"), "leak_oom"],
    { PYTHONPATH: path.join(src, "tests", "pytorch", "standin", "site-packages"), VTSIM_MEMORY: "940MiB",
      VTSIM_CONTEXT_BYTES: "0" }, [1], ["--torch-history"]); break;
  // a leak of 8 MiB a step kept "for metrics" (tests/pytorch/story_train.py)
  // under --torch-history: one rate a step, its site the allocator's (the
  // trace alone: the snapshot at exit beside it is read through the trace)
  case "torch_leak": inputs = traceExample(["python3", path.join(src, "tests", "pytorch", "story_train.py"), "leak", "12"],
    { PYTHONPATH: path.join(src, "tests", "pytorch", "standin", "site-packages"), VTSIM_MEMORY: "940MiB",
      VTSIM_CONTEXT_BYTES: "0" }, [0], ["--torch-history"]);
    inputs = fs.readdirSync(inputs[0]).filter((f) => f.endsWith(".vtrace")).map((f) => path.join(inputs[0], f));
    break;
  case "stopped": inputs = await stoppedAfterAllocating(); break;
  case "snapshot": inputs = [path.join(src, "tests", "data", "pytorch-snapshots", "eor.pickle")]; break;
  case "snapshot_oom": inputs = [oomSnapshot()]; break;
  case "job_summaries": inputs = [makeJob().summaries]; break;
  case "job_traces": inputs = [makeJob().traces]; break;
  // tests/launchers/check_foreign.py's job: ranks on rank 0's GPU 0 (a
  // context, allocations) when it fails there
  case "ranks_foreign": {
    const dir = path.join(tmp, "foreign");
    run(["python3", path.join(src, "tests", "launchers", "check_foreign.py"), "--build", build,
         "--nvml-dir", path.join(build, "tests", "simdriver", "nvml"), "--out", dir]
        .concat(args.preload_first ? ["--preload-first", args.preload_first] : []), {});
    inputs = [path.join(dir, "traces")];
    break;
  }
  // 20 ranks, 5 failing (more than the page details), in this order in time
  case "many_ranks_oom": inputs = [makeJob(["--nproc", "20", "--oom-ranks", "17,5,12,3,9"]).traces]; break;
  case "many_ranks": {
    const dir = path.join(tmp, "ranks40");
    fs.mkdirSync(dir);
    run([path.join(build, "bench", "synth_trace"), "--ranks", "40", "--gpus", "8", "--dir", dir, "--events", "2000"], {});
    inputs = [dir];
    break;
  }
  default: inputs = args.input;
}
if (!inputs.length) throw new Error("no inputs");

// ---- the report, as JSON and as a page ----
const reportEnv = { LD_PRELOAD: "" };
const expected = JSON.parse(run([vramtrace, "report", "--json", ...inputs], reportEnv).stdout);
// The text report's "pid N device D: peak BYTES at TIME" lines: the page's
// peak labels must read the same figures (one rounding in every view).
const textPeaks = {};
for (const m of run([vramtrace, "report", ...inputs], reportEnv).stdout.matchAll(/^pid (\d+) device (\d+): (peak \S+ \S+ at \S+),/gm))
  textPeaks[`${m[1]} ${m[2]}`] = m[3];
const page = path.join(tmp, "report.html");
let t = Date.now();
run([vramtrace, "report", "--html", page, ...inputs], reportEnv);
const writeMs = Date.now() - t;
// --tamper: the job block's hottest value 1 MiB larger; the checks must fail
if (args.tamper) {
  const html = fs.readFileSync(page, "utf8");
  const fixed = html.replace(/(id="vt-job">)(.*?)(<\/script>)/s, (all, a, body, b) => {
    const jp = JSON.parse(body);
    let best = null;
    for (const r of jp.jobs[0].rows) r.bytes.forEach((v, k) => { if (!best || v > best.r.bytes[best.k]) best = { r, k }; });
    best.r.bytes[best.k] += 1 << 20;
    return a + JSON.stringify(jp) + b;
  });
  if (fixed === html) throw new Error("--tamper: no job block to tamper with");
  fs.writeFileSync(page, fixed);
  console.log("tampered: the hottest cell of the job block + 1 MiB");
}
const size = fs.statSync(page).size;
console.log(`page: ${size} bytes (${(size / 1048576).toFixed(2)} MiB), written in ${writeMs} ms`);
if (args.max_bytes && size > +args.max_bytes) fail(`page is ${size} bytes, over ${args.max_bytes}`);

// ---- the browser ----
const browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
const pageUrl = pathToFileURL(page).href;
await context.route("**/*", (route) => {
  const url = route.request().url();
  if (url === pageUrl) return route.continue();
  fail(`the page requested ${url}`);
  return route.abort();
});
let tab = await context.newPage();
tab.on("console", (msg) => { if (msg.type() === "error" || msg.type() === "warning") fail(`console ${msg.type()}: ${msg.text()}`); });
tab.on("pageerror", (err) => fail(`page error: ${err.message}`));
tab.on("request", (req) => { if (req.url() !== pageUrl && !req.url().startsWith("data:")) fail(`request: ${req.url()}`); });
tab.on("requestfailed", (req) => { if (req.url() === pageUrl) fail(`the page itself failed to load: ${req.failure()?.errorText}`); });

t = Date.now();
await tab.goto(pageUrl, { waitUntil: "load" });
await tab.waitForSelector("body[data-ready='1']", { timeout: 60000 });
const wallMs = Date.now() - t;
const readyMs = await tab.evaluate(() => +document.body.getAttribute("data-ready-at-ms"));
console.log(`rendered: ready ${readyMs.toFixed(0)} ms after navigation started (script ${await tab.evaluate(() => document.body.getAttribute("data-rendered-ms"))} ms; ${wallMs} ms wall from goto)`);
if (args.max_render_ms && readyMs > +args.max_render_ms) fail(`rendering took ${readyMs} ms, over ${args.max_render_ms}`);

// ---- the header: a few inputs by name, many as a count and a list ----
{
  const head = await tab.evaluate(() => {
    const note = document.querySelector("header > .note");
    const list = document.querySelector("header details.vt-inputs");
    return { note: note ? note.textContent : "", list: list ? list.textContent : null };
  });
  const paths = expected.inputs.map((i) => i.path);
  if (paths.length <= 4) {
    for (const p of paths) if (!head.note.includes(p)) fail(`the header does not name input ${p}`);
    if (head.list !== null) fail("the header folds a list of 4 or fewer inputs");
  } else {
    if (!head.note.includes(`${paths.length} inputs`)) fail(`the header does not count ${paths.length} inputs: ${head.note}`);
    if (head.note.length > 300) fail(`the header's note is ${head.note.length} characters: ${head.note.slice(0, 200)}...`);
    if (head.list === null) fail("no list of the inputs under the header");
    else for (const p of paths) if (!head.list.includes(p)) fail(`the list of inputs lacks ${p}`);
  }
}

// ---- which processes the page details ----
// A job of more than detail.limit processes: the failing ones (at most
// DETAILED, the first failures first), the largest and the smallest device
// peak, the first ranks while fewer than DETAILED (report_html.h).
const DETAILED = 4;
const pageOptions = await tab.evaluate(() => JSON.parse(document.getElementById("vt-options").textContent));
const detail = pageOptions.detail;
let procs = expected.processes;
if (scenario.startsWith("many_ranks") && !detail) fail("a job of many ranks: the page details every process");
if (scenario === "many_ranks_oom") // the first 4 failures in time, the largest peak (rank 19), the smallest (rank 0)
  check("the ranks detailed", detail && expected.processes.filter((p) => detail.why.some((w) => w.file === p.file))
    .map((p) => p.rank).sort((a, b) => a - b).join(","), "0,3,5,12,17,19");
if (detail) {
  const key = (p) => p.pid + "@" + (p.hostname || "");
  const byRank = [...expected.processes].sort((a, b) => (a.rank === null) - (b.rank === null) || a.rank - b.rank ||
    (a.hostname || "").localeCompare(b.hostname || "") || a.pid - b.pid);
  const want = new Map(); // key -> reasons
  const add = (p, why) => { if (p) want.set(key(p), [...(want.get(key(p)) || []), why]); };
  for (const [ji, ej] of (expected.jobs || []).entries()) {
    const mine = byRank.filter((p) => p.job === ji);
    if (mine.length <= detail.limit) { mine.forEach((p) => add(p, "all")); continue; }
    const failing = mine.filter((p) => p.devices.some((d) => d.failed_requests > 0));
    const inTime = [ej.first_failure, ...(ej.following_failures || [])].filter(Boolean)
      .map((f) => failing.find((p) => p.pid === f.pid)).filter(Boolean);
    const ordered = [...new Set([...inTime, ...failing])].slice(0, DETAILED);
    ordered.forEach((p) => add(p, "failed"));
    if (ej.device_peaks) {
      add(mine.find((p) => p.pid === ej.device_peaks.largest_pid && p.rank === ej.device_peaks.largest_rank), "largest_peak");
      add(mine.find((p) => p.pid === ej.device_peaks.smallest_pid && p.rank === ej.device_peaks.smallest_rank), "smallest_peak");
    }
    for (const p of mine) {
      if ([...want.keys()].filter((k) => mine.some((q) => key(q) === k)).length >= DETAILED) break;
      if (!want.has(key(p))) add(p, "first_ranks");
    }
  }
  const fileOf = new Map(expected.processes.map((p) => [p.file, p]));
  const got = new Map(detail.why.map((w) => [key(fileOf.get(w.file) || {}), w.reasons.join(",")]));
  const show = (m) => [...m.entries()].map(([k, v]) => k + ":" + (Array.isArray(v) ? v.join(",") : v)).sort().join(" ");
  check("the processes detailed, and why", show(got), show(want));
  check("detail.processes", detail.processes, expected.processes.length);
  check("detail.detailed", detail.detailed, want.size);
  procs = expected.processes.filter((p) => want.has(key(p)));
  const drawn = await tab.evaluate(() => ({
    sections: [...document.querySelectorAll("section.vt-process h2")].map((h) => h.textContent),
    note: (document.querySelector(".vt-detail-note") || {}).textContent || null }));
  check("process sections", drawn.sections.length, procs.length);
  drawn.sections.forEach((h, i) => { if (procs[i] && !h.startsWith(`pid ${procs[i].pid}`)) fail(`section ${i} is ${JSON.stringify(h)}, want pid ${procs[i].pid}`); });
  const others = expected.processes.length - procs.length;
  if (!drawn.note || !drawn.note.includes(`The other ${others} are in the job section only`) || !drawn.note.includes("--rank N") || !drawn.note.includes("--pid"))
    fail(`the note on the processes not detailed reads ${JSON.stringify(drawn.note)}`);
  const jobRows = await tab.evaluate(() => JSON.parse(document.getElementById("vt-job").textContent).jobs.reduce((n, j) => n + j.rows.length, 0));
  check("job section rows (every process with device memory)", jobRows,
        expected.processes.filter((p) => p.devices.some((d) => d.kind === "device")).length);
  console.log(`detailed ${procs.length} of ${expected.processes.length}: ${[...want.entries()].map(([k, v]) => k + " (" + v + ")").join(", ")}`);
}

// ---- what the page drew against the report ----
for (let pi = 0; pi < procs.length; pi++) {
  const p = procs[pi];
  for (let di = 0; di < p.devices.length; di++) {
    const d = p.devices[di];
    const sec = `#proc-${pi}-ledger-${di}`;
    const where = `pid ${p.pid} ${d.kind} ${d.device}`;
    const drawn = await tab.evaluate((sec) => {
      const s = document.querySelector(sec);
      if (!s) return null;
      const label = s.querySelector(".vt-peak-label");
      const flame = s.querySelector(".vt-flame");
      return {
        label: label && label.textContent, labelBytes: label && label.getAttribute("data-bytes"),
        labelShown: label && label.style.display !== "none",
        phases: [...s.querySelectorAll(".vt-phase")].map((e) => e.getAttribute("data-name")),
        growth: [...s.querySelectorAll(".vt-growth")].map((e) => [e.getAttribute("data-phase"),
          e.getAttribute("data-per-opening-bytes"), e.getAttribute("data-from-opening")].join(" ")),
        allocatorGrowth: [...s.querySelectorAll(".vt-allocator-growth")].map((e) => [e.getAttribute("data-level"),
          e.getAttribute("data-per-step-bytes"), e.getAttribute("data-from-step")].join(" ")),
        allocatorGrowthText: [...s.querySelectorAll(".vt-allocator-growth")].map((e) => e.textContent),
        ooms: [...s.querySelectorAll(".vt-oom-marker")].map((e) => e.getAttribute("data-verdict")),
        flameRoot: flame && +flame.getAttribute("data-root-bytes"),
        flameDatum: flame && window.d3.select(flame).datum() && window.d3.select(flame).datum().value,
        views: s.querySelectorAll(".vt-live-select option").length,
        siteNames: [...s.querySelectorAll("td.stack")].map((e) => e.textContent),
        flameTips: flame && window.d3.select(flame).datum() ? (function tips(n) {
          const kids = n.children || [];
          return kids.length ? kids.flatMap(tips) : [(n.data && n.data.name) || n.name];
        })(window.d3.select(flame).datum()) : [],
        canvas: !!s.querySelector("canvas"),
        parts: (function () {
          const c = document.querySelector(sec + "-parts .vt-parts-chart");
          if (!c) return null;
          const o = {};
          for (const k of ["parameters", "buffers", "gradients", "optimizer_state"])
            o[k] = +c.getAttribute("data-peak-" + k);
          o.canvas = !!c.querySelector("canvas");
          return o;
        })(),
      };
    }, sec);
    if (!drawn) { fail(`${where}: no section ${sec}`); continue; }
    if (!drawn.canvas) fail(`${where}: no timeline drawn`);
    // the timeline by part: drawn where the report has parts, and at the
    // peak it stacks what the report's split at the peak says
    const atPeak = d.parts && d.parts.at_peak;
    check(`${where} timeline by part drawn`, !!drawn.parts, !!atPeak);
    if (atPeak && drawn.parts) {
      if (!drawn.parts.canvas) fail(`${where}: the timeline by part has no canvas`);
      for (const k of ["parameters", "buffers", "gradients", "optimizer_state"])
        check(`${where} ${k} at the peak, by part`, drawn.parts[k], atPeak.bytes[k]);
    }
    if (scenario === "parts" && d.kind === "device" && !atPeak) fail(`${where}: scenario broken: no parts`);
    check(`${where} peak label bytes`, drawn.labelBytes, String(d.peak_bytes));
    if (!drawn.label || !drawn.label.startsWith(`peak ${fmtBytes(d.peak_bytes)} at `))
      fail(`${where}: the peak label reads ${JSON.stringify(drawn.label)}, the report's peak is ${fmtBytes(d.peak_bytes)}`);
    if (!drawn.labelShown) fail(`${where}: the peak label is hidden`);
    if (d.kind === "device" && textPeaks[`${p.pid} ${d.device}`] !== undefined)
      check(`${where} peak label against the text report`, drawn.label, textPeaks[`${p.pid} ${d.device}`]);
    else if (d.kind === "device" && !p.file.endsWith(".summary.json"))
      fail(`${where}: the text report has no line "pid ${p.pid} device ${d.device}: peak ..."`);
    // example 1's peak, 12482248704 bytes, is exactly 11.625 GiB: the tie
    if (d.peak_bytes === 12482248704 && !drawn.label.startsWith("peak 11.63 GiB at "))
      fail(`${where}: 11.625 GiB reads ${JSON.stringify(drawn.label)}, not "peak 11.63 GiB at ..."`);
    for (const ph of d.phases)
      if (!drawn.phases.includes(ph.name)) fail(`${where}: phase ${ph.name} not drawn (drawn: ${drawn.phases})`);
    check(`${where} failures marked`, drawn.ooms.join(","), d.ooms.map((o) => o.verdict).join(","));
    // one naming: no site is named by a frame the report folds (the runtime,
    // an allocator, ctypes, the interpreter), and sites the report tells
    // apart read apart (the peak's table, as drawn first)
    const foldedNames = new Set(d.peak_breakdown.flatMap((r) => r.frames.filter((f) => f.folded && f.function)
      .map((f) => f.function)));
    for (const n of drawn.siteNames)
      if (foldedNames.has(n.split(" (")[0].split(" <- ")[0])) fail(`${where}: a site named by a folded frame: ${n}`);
    // the flame graph's towers end at the site's frame, as the folded export's
    for (const n of drawn.flameTips)
      if (foldedNames.has(n.split(" (")[0])) fail(`${where}: a flame graph tower ends in a folded frame: ${n}`);
    const peakNames = drawn.siteNames.slice(0, d.peak_breakdown.length);
    const distinctStacks = new Set(d.peak_breakdown.map((r) => r.frames.filter((f) => !f.folded).slice(0, 2)
      .map((f) => f.function + ":" + f.line).join("|"))).size;
    if (new Set(peakNames).size < Math.min(distinctStacks, peakNames.length))
      fail(`${where}: sites read alike on the page: ${JSON.stringify(peakNames)}`);
    check(`${where} growth across openings`, drawn.growth.join(","), d.phases.filter((ph) => ph.growth)
      .map((ph) => [ph.name, ph.growth.per_opening_bytes, ph.growth.from_opening].join(" ")).join(","));
    if (scenario === "growth" && !d.phases.some((ph) => ph.growth))
      fail(`${where}: scenario broken: the report sees no growth`);
    // PyTorch's allocator's growth: one line, the report's one rate a step
    check(`${where} the allocator's growth`, drawn.allocatorGrowth.join(","),
      d.growth ? [d.growth.level, d.growth.per_step_bytes, d.growth.from_step].join(" ") : "");
    if (scenario === "torch_leak" && d.kind === "device") {
      if (!d.growth) fail(`${where}: scenario broken: the report sees no growth`);
      const line = drawn.allocatorGrowthText.join(" ");
      if (!/most at keep_for_metrics:\d+ \(story_train\.py\) \(\+8\.00 MiB a step\)/.test(line))
        fail(`${where}: the allocator's growth does not name keep_for_metrics at 8.00 MiB a step: ${line}`);
      const rates = (line.match(/\+[\d.]+ [KMG]?i?B/g) || []);
      if (new Set(rates).size !== 1) fail(`${where}: more than one rate for one leak: ${line}`);
    }
    check(`${where} flame graph root at the peak`, drawn.flameRoot, d.peak_bytes);
    check(`${where} flame graph root (d3's own hierarchy)`, drawn.flameDatum, d.peak_bytes);
    // every other view: each failure, each phase peak
    const wants = [d.peak_bytes, ...d.ooms.map((o) => o.process_bytes), ...d.phases.map((ph) => ph.peak_bytes)];
    check(`${where} live-set views`, drawn.views, wants.length);
    for (let v = 1; v < wants.length; v++) {
      await tab.selectOption(`${sec} .vt-live-select`, String(v));
      const root = await tab.evaluate((sec) => window.d3.select(document.querySelector(sec + " .vt-flame")).datum().value, sec);
      check(`${where} flame graph root of view ${v}`, root, wants[v]);
    }
    if (wants.length > 1) await tab.selectOption(`${sec} .vt-live-select`, "0");
  }
}

// the downsampled series keep each peak exactly: the largest point is the
// peak, at the peak's time, split by site as the peak breakdown splits it
const tl = await tab.evaluate(() => JSON.parse(document.getElementById("vt-timeline").textContent));

// ---- what a reader sees before touching anything, at 1400 and 900 px ----
// Read from the DOM: the box under each chart says what it is for; the
// legend gives every layer its bytes (at the peak until the cursor is on
// the chart: the report's peak breakdown); each phase lane is named left
// of it, in a colour no layer has; labels do not overlap; stack cells
// break between words, not inside them; the headings say the capacity
// once; the flame graphs hold no frame the text report folds.
const foldedEverywhere = new Set();
for (const p of procs) for (const d of p.devices) for (const r of d.peak_breakdown || [])
  for (const f of r.frames) if (f.folded && f.function) foldedEverywhere.add(f.function);
async function layoutChecks(width) {
  const at = `(${width} px)`;
  const got = await tab.evaluate(() => {
    const rect = (e) => { const r = e.getBoundingClientRect(); return { l: r.left, r: r.right, t: r.top, b: r.bottom, w: r.width, h: r.height }; };
    const charts = [...document.querySelectorAll(".vt-timeline")].map((c) => {
      const u = c._uplot, over = c.querySelector(".u-over");
      const canvas = c.querySelector("canvas");
      const crect = canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
      /* read from a copy: reading the chart's own canvas back slows it */
      const copy = document.createElement("canvas");
      copy.width = canvas.width; copy.height = canvas.height;
      const ctx = copy.getContext("2d", { willReadFrequently: true });
      ctx.drawImage(canvas, 0, 0);
      const lanes = [...c.querySelectorAll(".vt-lane-label")].map((l) => {
        const r = l.getBoundingClientRect();
        /* the lane's colour: the canvas at the label's row, in the middle of its longest span */
        const sp = (c._phases || [])[+l.getAttribute("data-lane")];
        let pixel = null;
        if (u && sp && sp.spans.length) {
          const best = sp.spans.reduce((a, b) => (b[1] - b[0] > a[1] - a[0] ? b : a));
          const a = u.valToPos(best[0], "x", true), b = u.valToPos(best[1], "x", true);
          const x = Math.round((a + b) / 2);
          const y = Math.round(((r.top + r.bottom) / 2 - crect.top) * dpr);
          /* a span a few pixels wide: narrower ones blend with the track */
          if (b - a >= 4 * dpr) pixel = [...ctx.getImageData(x, y, 1, 1).data.slice(0, 3)];
        }
        return { name: l.getAttribute("data-name"), text: l.textContent, rect: rect(l), scrollW: l.scrollWidth, clientW: l.clientWidth, pixel };
      });
      const swatches = [...c.querySelectorAll(".vt-legend-item .vt-swatch")].map((s) => getComputedStyle(s).backgroundColor);
      const labels = [...c.querySelectorAll(".vt-peak-label, .vt-trend-label, .vt-oom-marker, .vt-lane-label")]
        .filter((e) => e.style.display !== "none").map((e) => ({ cls: e.className, text: e.textContent, rect: rect(e) }));
      return {
        id: (c.closest("[id]") || {}).id, parts: c.classList.contains("vt-parts-chart"),
        hover: c.querySelector(".vt-hover").textContent,
        legendAt: c.querySelector(".vt-legend-at") && c.querySelector(".vt-legend-at").textContent,
        legendWhen: c.querySelector(".vt-legend") && c.querySelector(".vt-legend").getAttribute("data-at"),
        legend: [...c.querySelectorAll(".vt-legend-item")].map((e) => ({ key: e.getAttribute("data-key"),
          label: e.querySelector(".vt-legend-label").textContent, value: e.querySelector(".vt-legend-value").textContent })),
        uplotLegend: c.querySelectorAll(".u-legend").length,
        lanes, swatches, labels, plot: over ? rect(over) : null,
      };
    });
    const stackCells = [...document.querySelectorAll("td.stack")].map((td) => {
      const broken = [];
      const node = td.firstChild;
      if (node && node.nodeType === 3) {
        const text = node.textContent;
        const re = /\S+/g;
        let m;
        while ((m = re.exec(text))) {
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const lines = new Set([...range.getClientRects()].filter((q) => q.width > 0).map((q) => Math.round(q.top)));
          if (lines.size > 1 && range.getBoundingClientRect().width < td.clientWidth) broken.push(m[0]);
        }
      }
      return { text: td.textContent, broken };
    });
    const headings = [...document.querySelectorAll("section.vt-ledger > h3, section.vt-ledger-parts > h4")].map((h) => h.textContent);
    const flames = [...document.querySelectorAll(".vt-flame")].map((f) => {
      const names = [];
      (function walk(n) { names.push((n.data && n.data.name) || n.name); (n.children || []).forEach(walk); })(window.d3.select(f).datum());
      return names;
    });
    const heatMax = [...document.querySelectorAll(".vt-heat-max")].map((e) => e.textContent);
    return { charts, stackCells, headings, flames, heatMax, scrollW: document.documentElement.scrollWidth };
  });
  const BYTES = /^\d+(\.\d\d)? (B|KiB|MiB|GiB|TiB|PiB)$/;
  for (const c of got.charts) {
    const where = `${c.id} chart ${at}`;
    if (!/^under the cursor: point at the chart /.test(c.hover)) fail(`${where}: the box under the chart reads ${JSON.stringify(c.hover)} before a hover`);
    if (c.uplotLegend) fail(`${where}: uPlot's own legend is drawn (labels with no values)`);
    if (c.legendWhen !== "rest" || !/^at the (allocated )?peak, ([+-]\d|entry \d)/.test(c.legendAt || "")) fail(`${where}: the legend says ${JSON.stringify(c.legendAt)} before a hover`);
    for (const it of c.legend) {
      if (!BYTES.test(it.value)) fail(`${where}: legend item ${JSON.stringify(it.label)} has the value ${JSON.stringify(it.value)}`);
      if (/:\s*$/.test(it.label)) fail(`${where}: legend label ${JSON.stringify(it.label)} ends in a colon`);
    }
    // a trace's timeline: the legend at the peak is the report's peak breakdown
    const m = /^proc-(\d+)-ledger-(\d+)$/.exec(c.id || "");
    if (m && !c.parts) {
      const d = procs[+m[1]].devices[+m[2]];
      let listed = 0;
      for (const it of c.legend) {
        const k = /^site (\d+) (.*)$/.exec(it.key || "");
        if (!k) continue;
        const row = d.peak_breakdown.find((r) => r.stack_id === +k[1] && r.thread === k[2]);
        listed += row ? row.bytes : 0;
        check(`${where} legend at the peak: ${it.label}`, it.value, row ? fmtBytes(row.bytes) : "(not in the peak breakdown)");
      }
      const other = c.legend.find((it) => it.key === "other");
      check(`${where} legend at the peak: other`, other && other.value, fmtBytes(d.peak_bytes - listed));
      const tp = tl.processes.find((t) => t.file === procs[+m[1]].file);
      const peakAt = (textPeaks[`${procs[+m[1]].pid} ${d.device}`] || "").replace(/^peak \S+ \S+ at /, "");
      if (d.kind === "device" && peakAt) check(`${where} legend's time`, c.legendAt, `at the peak, ${peakAt}:`);
      // each phase of the ledger has a named lane
      check(`${where} lanes`, c.lanes.map((l) => l.name).join(","), tp.phases.map((p) => p.name).join(","));
    }
    for (const l of c.lanes) {
      if (l.text !== l.name || l.rect.w < 8 || l.rect.h < 10) fail(`${where}: lane ${l.name}'s label is ${JSON.stringify(l.text)}, ${l.rect.w}x${l.rect.h} px`);
      if (l.scrollW > l.clientW + 1 && l.name.length < 16) fail(`${where}: lane ${l.name}'s label is cut (${l.scrollW} > ${l.clientW} px)`);
      if (c.plot && l.rect.r > c.plot.l) fail(`${where}: lane ${l.name}'s label reaches into the plot (${l.rect.r} > ${c.plot.l})`);
      if (l.rect.l < 0) fail(`${where}: lane ${l.name}'s label starts off the page`);
      if (l.pixel) {
        const rgb = `rgb(${l.pixel.join(", ")})`;
        if (c.swatches.includes(rgb)) fail(`${where}: lane ${l.name} is drawn in ${rgb}, a colour of the legend`);
        if (l.pixel.every((v, i, a) => v === a[0]) && l.pixel[0] > 200) fail(`${where}: no lane drawn at ${l.name}'s label (${rgb})`);
      }
    }
    for (let i = 0; i < c.labels.length; i++)
      for (let k = i + 1; k < c.labels.length; k++) {
        const a = c.labels[i].rect, b = c.labels[k].rect;
        if (a.l < b.r - 0.5 && b.l < a.r - 0.5 && a.t < b.b - 0.5 && b.t < a.b - 0.5)
          fail(`${where}: ${c.labels[i].cls} ${JSON.stringify(c.labels[i].text)} overlaps ${c.labels[k].cls} ${JSON.stringify(c.labels[k].text)}`);
      }
  }
  for (const s of got.stackCells)
    if (s.broken.length) fail(`stack cell ${JSON.stringify(s.text)} ${at}: wraps inside ${JSON.stringify(s.broken)}`);
  const FIG = /\d+(?:\.\d+)? ?[KMGTP]i?B\b/g;
  for (const h of got.headings) {
    if (/\(\S[^()]*\([^()]*\)\)/.test(h)) fail(`heading ${JSON.stringify(h)}: parentheses inside parentheses`);
    const cap = /of (\S+ \S+)(,|$)/.exec(h);
    const figs = h.match(FIG) || [];
    if (cap && figs.filter((f) => f === cap[1]).length !== 1) fail(`heading ${JSON.stringify(h)}: the capacity said more than once`);
    if (cap && figs.length > 2) fail(`heading ${JSON.stringify(h)}: ${figs.length} byte figures (${figs})`);
  }
  got.flames.forEach((names, i) => {
    const bad = names.filter((n) => foldedEverywhere.has(String(n).split(" (")[0]));
    if (bad.length) fail(`flame graph ${i} ${at}: frames the text report folds: ${[...new Set(bad)].join(", ")}`);
  });
  for (const t of got.heatMax) if (/\d{5,} bytes/.test(t)) fail(`the heatmap's legend prints raw bytes: ${JSON.stringify(t)}`);
  if (got.scrollW > width + 1) fail(`the page is ${got.scrollW} px wide in a ${width} px window`);
}
await layoutChecks(1400);

// ---- the device's growth drawn on its timeline; a snapshot on its trace's clock; a part that vanishes ----
for (let pi = 0; pi < procs.length; pi++) {
  const p = procs[pi];
  const tp = tl.processes.find((t) => t.file === p.file);
  for (let di = 0; tp && di < p.devices.length; di++) {
    const d = p.devices[di], sec = `#proc-${pi}-ledger-${di}`, where = `pid ${p.pid} ${d.kind} ${d.device}`;
    const s = tp.series.find((x) => x.device === d.device && x.kind === d.kind);
    const drawn = await tab.evaluate((sec) => {
      const t = document.querySelector(sec + " .vt-trend-label");
      const drops = [...document.querySelectorAll(sec + "-parts .vt-parts-drop")].map((e) => ({ part: e.getAttribute("data-part"), text: e.textContent }));
      return { trend: t && { text: t.textContent, shown: t.style.display !== "none", per: t.getAttribute("data-per-step-bytes"),
                             from: t.getAttribute("data-from-step"), last: t.getAttribute("data-last-bytes") }, drops };
    }, sec);
    const g = d.growth;
    if (scenario === "torch_leak_oom" && d.kind === "device" && !g) fail(`${where}: scenario broken: the report sees no growth`);
    if (g && s && s.growth_steps) {
      if (!drawn.trend) { fail(`${where}: the growth (+${fmtBytes(g.per_step_bytes)} a step) is not drawn on the timeline`); }
      else {
        const top = (g.sites[0] && g.sites[0].frames.find((f) => !f.folded && f.function)) || null;
        const want = `growth +${fmtBytes(g.per_step_bytes)} a step from step ${g.from_step} at ${top ? top.function : ""}`;
        if (!drawn.trend.text.startsWith(want)) fail(`${where}: the growth on the timeline reads ${JSON.stringify(drawn.trend.text)}, want ${JSON.stringify(want)}...`);
        if (!drawn.trend.shown) fail(`${where}: the growth's label is hidden`);
        check(`${where} growth drawn: bytes a step`, drawn.trend.per, String(g.per_step_bytes));
        check(`${where} growth drawn: its last bytes`, drawn.trend.last, String(g.last_bytes));
      }
    } else if (g && scenario === "torch_leak_oom") fail(`${where}: the page has no times for the growth's steps`);
    // a part that falls to nothing: said, and for the gradients, why
    const pb = s && s.part_bytes;
    if (pb) for (const [k, v] of Object.entries(pb)) {
      const i = v.findIndex((x, j) => x === 0 && v.slice(0, j).some((y) => y > 0));
      const said = drawn.drops.find((x) => x.part === k);
      if (i >= 0 && !said) fail(`${where}: ${k} fall to 0 B and the chart by part does not say why`);
      if (i >= 0 && k === "gradients" && said && !said.text.includes("zero_grad()")) fail(`${where}: the gradients' fall reads ${JSON.stringify(said.text)}`);
      if (i < 0 && said) fail(`${where}: ${k} said to fall: ${said.text}`);
    }
  }
}
// a snapshot of a traced process: its failure where the trace's is, on one clock
for (const [si, snap] of expected.snapshots.entries()) {
  const owner = procs.findIndex((p) => snap.file.startsWith(p.file + "."));
  if (owner < 0) continue;
  for (const [di, d] of snap.devices.entries()) {
    const o = d.ooms.find((x) => x.time_us);
    const pd = procs[owner].devices.findIndex((x) => x.kind === "device" && x.device === d.device && x.ooms.length);
    if (!o || pd < 0) continue;
    const xs = await tab.evaluate(([a, b]) => {
      const x = (sec) => {
        const c = document.querySelector(sec + " .vt-timeline"), m = document.querySelector(sec + " .vt-oom-marker");
        if (!c || !m || !c._uplot) return null;
        const r = m.getBoundingClientRect(), over = c.querySelector(".u-over").getBoundingClientRect();
        return c._uplot.posToVal((r.left + r.right) / 2 - over.left, "x");
      };
      return [x(a), x(b)];
    }, [`#proc-${owner}-ledger-${pd}`, `#snapshot-${si}-device-${di}`]);
    if (xs[0] === null || xs[1] === null || Math.abs(xs[0] - xs[1]) > 0.005)
      fail(`snapshot ${si} device ${d.device}: its failure is drawn at x ${xs[1]}, the trace's at ${xs[0]}: two time origins`);
  }
  if (scenario === "torch_leak_oom" && !snap.devices.some((d) => d.ooms.some((o) => o.time_us))) fail("scenario broken: the snapshot has no timed failure");
}

for (const p of procs) {
  const tp = tl.processes.find((t) => t.file === p.file);
  if (!tp) { fail(`pid ${p.pid}: no timeline`); continue; }
  for (const d of p.devices) {
    const s = tp.series.find((x) => x.device === d.device && x.kind === d.kind);
    const where = `pid ${p.pid} ${d.kind} ${d.device} series`;
    if (!s) { fail(`${where}: missing`); continue; }
    if (s.t.length > 2 * tl.buckets + 2) fail(`${where}: ${s.t.length} points for ${tl.buckets} columns`);
    let at = 0;
    s.total.forEach((v, i) => { if (v > s.total[at]) at = i; });
    check(`${where} maximum`, s.total[at], d.peak_bytes);
    check(`${where} time of the maximum`, tp.t0_ns + s.t[at], d.peak_time_ns);
    s.sites.forEach((site, k) => {
      const row = d.peak_breakdown.find((r) => r.stack_id === site.stack_id && r.thread === site.thread);
      check(`${where} site ${site.stack_id} at the peak`, s.site_bytes[k][at], row ? row.bytes : null);
    });
  }
}

// The last event of a trace that carries data, read from its raw records
// (`vramtrace dump --json`, not the replay): an allocation call of a kind
// the report counts (a failed one too; not a size-0 retain of a handle), a
// free that succeeded, a phase boundary or a mark. The page's rule
// (vt_replay_data_end, analyzer/replay/replay.h) counts a free only when
// it ends something live: the same here when no free is unmatched, which
// the caller checks with the report's unmatched_frees.
const COUNTED_KINDS = new Set(["device", "managed", "host_pinned", "host_registered", "vmm_physical",
                               "array", "graph"]);
const PHASE_RECORDS = new Set(["range_push", "range_pop", "range_start", "range_end", "mark"]);
// A context whose cost was had (its size, or NVML's figure) is in its
// device's ledger from its creation to its release: both carry data.
function lastDataNs(file) {
  let last = null;
  const measured = new Set();
  for (const line of run([vramtrace, "dump", "--json", file], reportEnv).stdout.split("\n")) {
    if (!line) continue;
    const r = JSON.parse(line);
    let context = false;
    if (r.type === "mem" && r.kind === "context" && r.result === 0) {
      if (r.op === "alloc" && (r.size > 0 || r.nvml_process_bytes > 0) && !measured.has(r.addr))
        context = measured.add(r.addr);
      else if (r.op === "free" && measured.has(r.addr))
        context = measured.delete(r.addr);
    }
    const data = context || PHASE_RECORDS.has(r.type) || (r.type === "mem" && COUNTED_KINDS.has(r.kind) &&
      (r.op === "alloc" ? r.result !== 0 || r.size > 0 : r.result === 0));
    if (data && (last === null || r.time_ns > last)) last = r.time_ns;
  }
  return last;
}

// The axes: bytes in round steps (a power of two of bytes apart), every
// label as wide as the axis lets it be; time from the first event to the
// trace's last event that carries data (not its trailer, written at exit,
// nor a context's release), the memory drawn to it (a last value, even one
// the last event set, has a width: a process stopped right after
// allocating is not drawn flat at 0).
for (let pi = 0; pi < procs.length; pi++) {
  const p = procs[pi];
  const tp = tl.processes.find((t) => t.file === p.file);
  const lastNs = tp && p.devices.length ? lastDataNs(p.file) : null;
  if (tp && p.unmatched_frees)
    fail(`pid ${p.pid}: ${p.unmatched_frees} unmatched frees: the axis check cannot read the trace's end from its records`);
  for (let di = 0; tp && di < p.devices.length; di++) {
    const d = p.devices[di];
    const where = `pid ${p.pid} ${d.kind} ${d.device} axes`;
    const ax = await tab.evaluate((sec) => {
      const chart = document.querySelector(sec + " .vt-timeline");
      if (!chart || !chart._uplot) return null;
      const u = chart._uplot, y = u.axes[1];
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = Array.isArray(y.font) ? y.font[0] : y.font;
      const dpr = window.devicePixelRatio || 1;
      return { splits: y._splits, labels: y._values, size: y._size,
               widths: (y._values || []).map((v) => ctx.measureText(String(v)).width / dpr),
               xs: u.data[0], total: u.data[1], xMax: u.scales.x.max };
    }, `#proc-${pi}-ledger-${di}`);
    if (!ax) { fail(`${where}: no chart`); continue; }
    const steps = ax.splits.slice(1).map((v, k) => v - ax.splits[k]);
    const step = steps[0];
    if (!step || !Number.isInteger(Math.log2(step)) || steps.some((x) => x !== step) ||
        ax.splits.some((v) => v % step !== 0))
      fail(`${where}: y ticks ${JSON.stringify(ax.labels)} are not a power of two of bytes apart`);
    ax.widths.forEach((w, k) => {
      if (w + 10 > ax.size) fail(`${where}: the label ${ax.labels[k]} (${w.toFixed(0)} px) does not fit the axis (${ax.size} px)`);
    });
    const origin = (tp.t0_ns - tp.origin_ns) / 1e9, last = (lastNs - tp.origin_ns) / 1e9;
    const n = ax.xs.length, span = last - origin;
    if (lastNs === null || ax.xMax < last - 1e-9 || ax.xMax > last + span / 20 + 1e-6)
      fail(`${where}: the time axis ends at ${ax.xMax}, the trace's last event that carries data is at ${last}`);
    check(`${where} memory drawn at the last event`, ax.total[n - 1], d.final_bytes);
    if (!(ax.xs[n - 1] > ax.xs[n - 2]) || ax.total[n - 2] !== d.final_bytes)
      fail(`${where}: the last value is drawn ${ax.xs[n - 1] - ax.xs[n - 2]} s wide`);
  }
}

// hover: the timeline says bytes and the stack under the cursor
if (procs.length) {
  const plot = tab.locator("#proc-0-ledger-0 .u-over");
  await plot.scrollIntoViewIfNeeded(); // below the job section on a job's page
  let box = await plot.boundingBox();
  const d = procs[0].devices[0];
  const peakX = await tab.evaluate(() => {
    const l = document.querySelector("#proc-0-ledger-0 .vt-peak-label");
    return l.getBoundingClientRect().left - 4;
  });
  await tab.mouse.move(Math.min(Math.max(peakX, box.x + 1), box.x + box.width - 1), box.y + box.height - 5);
  const hover = await tab.textContent("#proc-0-ledger-0 .vt-hover");
  if (!/ live/.test(hover) || !/under the cursor: /.test(hover)) fail(`hover shows ${JSON.stringify(hover)}`);
  const legendAt = await tab.evaluate(() => { const l = document.querySelector("#proc-0-ledger-0 .vt-legend"); return l && [l.getAttribute("data-at"), l.textContent]; });
  if (!legendAt || legendAt[0] !== "cursor" || !/^at [+-]\d/.test(legendAt[1])) fail(`the legend under the cursor reads ${JSON.stringify(legendAt)}`);
  await tab.mouse.move(0, 0);
  const left = await tab.evaluate(() => [document.querySelector("#proc-0-ledger-0 .vt-hover").textContent,
    (document.querySelector("#proc-0-ledger-0 .vt-legend") || { getAttribute: () => null }).getAttribute("data-at")]);
  if (!left[0].startsWith("under the cursor: point at the chart") || left[1] !== "rest") fail(`the cursor gone, the chart's box and legend read ${JSON.stringify(left)}`);
  if (d.ooms.length) {
    await tab.hover("#proc-0-ledger-0 .vt-oom-marker");
    const tip = await tab.textContent("#vt-tooltip");
    if (!tip.includes(d.ooms[0].verdict) || !tip.includes(d.ooms[0].narrative))
      fail(`the failure's tooltip reads ${JSON.stringify(tip)}`);
  }
  // search a frame: the function that names the peak's largest site (the
  // flame graph's towers end there, report.js's liveTree)
  const frame = (d.peak_breakdown[0]?.frames || []).find((f) => f.function && !f.folded);
  if (frame) {
    await tab.mouse.move(0, 0); // not over a frame once the page scrolls
    await tab.fill("#proc-0-ledger-0 .vt-search", frame.function);
    const said = await tab.textContent("#proc-0-ledger-0 .vt-flame-details");
    if (!said.includes("search")) fail(`searching ${frame.function} says ${JSON.stringify(said)}`);
    await tab.fill("#proc-0-ledger-0 .vt-search", "");
  }
  // zoom: a wheel turn narrows the x scale, a double click restores it
  const span = () => tab.evaluate(() => {
    const p = document.querySelector("#proc-0-ledger-0 .vt-plot");
    return +p.getAttribute("data-x-max") - +p.getAttribute("data-x-min");
  });
  const full = await span();
  await plot.scrollIntoViewIfNeeded(); // hovering and typing above may have scrolled
  box = await plot.boundingBox();
  await tab.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await tab.mouse.wheel(0, -300);
  await tab.waitForTimeout(100);
  const zoomed = await span();
  if (!(zoomed < full)) fail(`the wheel did not zoom: x span ${full} -> ${zoomed}`);
  await tab.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
  await tab.waitForTimeout(100);
  if (Math.abs((await span()) - full) > 1e-9) fail("a double click did not restore the whole timeline");
  await tab.mouse.move(0, 0);
}
if (expected.processes.length > 1) {
  // every (rank, GPU) line of the job table: its rest shown first
  for (const more of await tab.$$("#job .vt-job-more")) {
    const shown = await more.evaluate((b) => b.parentNode.querySelectorAll(".vt-job-table tr").length - 1);
    check("job table rows before the button", shown, 32);
    await more.click();
  }
  const cells = await tab.$$eval("#job .vt-cell-link", (es) => es.map((e) => +e.getAttribute("data-peak-bytes")));
  const want = expected.processes.flatMap((p) => p.devices.filter((d) => d.kind === "device").map((d) => d.peak_bytes));
  check("ranks x GPUs cells", cells.sort().join(","), want.sort().join(","));
}
// ---- the job section: overview, heatmap, failures on their rows ----
for (const [ji, ej] of (expected.jobs || []).entries()) {
  const jp = await tab.evaluate(() => JSON.parse(document.getElementById("vt-job").textContent));
  const pj = jp.jobs.find((x) => x.job === ji);
  const worth = ej.processes > 1 || ej.ranks > 0;
  if (!pj) { if (worth) fail(`job ${ji}: no job section in the page's job block`); continue; }
  const where = `job ${ji}`;
  check(`${where} timeline in the document`, ej.timeline !== null, true);
  const sec = `#job-${jp.jobs.indexOf(pj)}`;
  const canvas = await tab.evaluate((sec) => {
    const c = document.querySelector(sec + " .vt-heat-canvas");
    if (!c) return null;
    const r = c.getBoundingClientRect();
    return { rows: +c.getAttribute("data-rows"), rowH: +c.getAttribute("data-row-height"),
             cellW: +c.getAttribute("data-cell-width"), group: +c.getAttribute("data-group"),
             ranks: c.getAttribute("data-ranks"), x: r.left, y: r.top + window.scrollY, w: r.width, h: r.height };
  }, sec);
  if (!canvas) { fail(`${where}: no heatmap drawn`); continue; }
  // one row per process with device memory, in rank order, at least a pixel each
  const holders = ej.device_peaks ? ej.device_peaks.processes : 0;
  check(`${where} heatmap rows`, canvas.rows, holders);
  if (canvas.rowH < 1 || canvas.h < canvas.rows) fail(`${where}: rows of ${canvas.rowH} px, ${canvas.h} px tall for ${canvas.rows} rows`);
  const ranks = pj.rows.map((r) => r.rank);
  const sorted = [...ranks].sort((a, b) => (a === null) - (b === null) || a - b);
  check(`${where} rows in rank order`, ranks.join(","), sorted.join(","));
  check(`${where} the canvas's rows`, canvas.ranks, ranks.map((r) => (r === null ? "-" : String(r))).join(","));
  if (scenario.startsWith("job_")) check(`${where} ranks drawn`, ranks.join(","), "0,1,2,3");
  async function hoverCell(row, col) {
    await tab.evaluate(() => window.scrollTo(0, 0));
    await tab.locator(sec + " .vt-heat-canvas").scrollIntoViewIfNeeded();
    let c = await tab.locator(sec + " .vt-heat-canvas").boundingBox();
    // a heatmap taller than the window (hundreds of ranks): the row into view
    const rowY = c.y + row * canvas.rowH;
    if (rowY < 0 || rowY >= 880) {
      await tab.evaluate((dy) => window.scrollBy(0, dy), rowY - 400);
      c = await tab.locator(sec + " .vt-heat-canvas").boundingBox();
    }
    // Chromium truncates the pointer to whole pixels: the first whole
    // pixel inside the cell (its middle when the cell is wide enough)
    const at = (start, size) => Math.ceil(start + (size > 2 ? size / 2 - 0.5 : 0));
    await tab.mouse.move(at(c.x + Math.floor(col / canvas.group) * canvas.cellW, canvas.cellW),
                         at(c.y + row * canvas.rowH, canvas.rowH));
    const tip = await tab.textContent("#vt-tooltip");
    await tab.mouse.move(0, 0);
    return tip;
  }
  // hovering a row names its rank, pid and host (the traces' own processes for the pids)
  const truth = job ? JSON.parse(run([vramtrace, "report", "--json", job.traces], reportEnv).stdout).processes : expected.processes;
  for (const [ri, r] of pj.rows.entries()) {
    if (ri >= 64) break;
    const tip = await hoverCell(ri, r.first);
    const p = truth.find((q) => q.rank === r.rank && (r.rank !== null || q.pid === r.pid));
    // (summaries alone: no process list to compare with but the block's own)
    const want = (r.rank !== null ? `rank ${r.rank}, ` : "") + `pid ${job || truth.length ? (p ? p.pid : "?") : r.pid}`;
    if (!tip.startsWith(want)) fail(`${where} row ${ri}: the tooltip reads ${JSON.stringify(tip)}, want ${want}`);
  }
  // the hottest cell says the job's largest peak, in bytes
  let hot = null;
  pj.rows.forEach((r, ri) => r.bytes.forEach((v, k) => { if (!hot || v > hot.v) hot = { v, ri, col: r.first + k }; }));
  const tip = await hoverCell(hot.ri, hot.col);
  const m = /\((\d+) bytes\)/.exec(tip || "");
  // (a row is a process, all its GPUs: the foreign job's ranks span two)
  if (scenario !== "ranks_foreign")
    check(`${where} the hottest cell's bytes (tooltip)`, m ? +m[1] : null, ej.device_peaks.largest_bytes);
  // the first failure and those that followed, marked on their ranks' rows
  const marks = await tab.evaluate((sec) => {
    const c = document.querySelector(sec + " .vt-heat-canvas").getBoundingClientRect();
    return [...document.querySelectorAll(sec + " .vt-heat-mark")].map((e) => {
      const r = e.getBoundingClientRect();
      return { first: e.classList.contains("vt-heat-first"), rank: e.getAttribute("data-rank"),
               cy: (r.top + r.bottom) / 2 - c.top, cx: (r.left + r.right) / 2 - c.left };
    });
  }, sec);
  const failuresWant = ej.first_failure ? [ej.first_failure, ...ej.following_failures] : [];
  check(`${where} failure marks`, marks.length, failuresWant.length);
  marks.forEach((mk, i) => {
    const row = Math.floor(mk.cy / canvas.rowH);
    const drawnRank = pj.rows[row] ? pj.rows[row].rank : undefined;
    check(`${where} failure ${i}'s mark: the rank of the row it is drawn on`, drawnRank, failuresWant[i] ? failuresWant[i].rank : null);
    check(`${where} failure ${i}'s mark: first`, mk.first, i === 0);
    if (mk.cx < 0 || mk.cx > canvas.w) fail(`${where} failure ${i}'s mark is off the heatmap (x ${mk.cx})`);
  });
  if (scenario.startsWith("job_")) {
    check(`${where} the first failure's rank`, ej.first_failure && ej.first_failure.rank, 2);
    const firstRow = marks.filter((x) => x.first).map((x) => pj.rows[Math.floor(x.cy / canvas.rowH)].rank);
    check(`${where} the first failure's mark on rank 2's row`, firstRow.join(","), "2");
    const said = await tab.textContent(sec + " .vt-job-first");
    if (!said.startsWith("first failure: rank 2, pid ")) fail(`${where}: the first failure reads ${JSON.stringify(said)}`);
    // hovering the marked cell says the failure too
    const first = pj.marks[0];
    const ftip = await hoverCell(first.row, first.column === null ? 0 : first.column);
    if (!ftip.startsWith("rank 2, ") || !ftip.includes("\nfirst failure: rank 2, pid "))
      fail(`${where}: the first failure's cell says ${JSON.stringify(ftip)}`);
  }
  // the ranks that diverge (docs/user/REPORT.md, "Divergence"), each as jobs[].divergence says it
  const divs = await tab.$$eval(sec + " .vt-job-divergence", (es) => es.map((e) => [e.getAttribute("data-rank"),
    e.getAttribute("data-site"), e.getAttribute("data-bytes-above-median"), e.getAttribute("data-bytes-per-step")].join(" ")));
  check(`${where} divergence lines`, divs.join(","), (ej.divergence || []).map((d) =>
    [d.rank, d.site, d.bytes_above_median, d.bytes_per_step].join(" ")).join(","));
  if (scenario.startsWith("job_") && !(ej.divergence || []).some((d) => d.rank === 3))
    fail(`${where}: scenario broken: rank 3 (4 times rank 0's sizes) does not diverge`);
  const spread = await tab.evaluate((sec) => { const e = document.querySelector(sec + " .vt-job-spread"); return e && +e.getAttribute("data-largest-bytes"); }, sec);
  if (holders > 1) check(`${where} device peak spread's largest`, spread, ej.device_peaks.largest_bytes);
  // under the first failure, what other ranks held on its GPU then: the
  // text report's lines, word for word
  const onGpu = await tab.$$eval(sec + " .vt-job-on-gpu", (es) => es.map((e) => e.textContent.trim()));
  const textOnGpu = run([vramtrace, "report", ...inputs], reportEnv).stdout.split("\n")
    .filter((l) => /^    on that GPU/.test(l)).map((l) => l.trim());
  check(`${where} the first failure's lines of its GPU`, onGpu.join("|"), textOnGpu.join("|"));
  if (scenario === "ranks_foreign" && !onGpu.some((l) => l.includes("'s context, ")))
    fail(`${where}: scenario broken: no rank's context on the failing GPU`);
  // a rank on another rank's GPU: one line each, as jobs[].foreign says
  const foreign = await tab.$$eval(sec + " .vt-job-foreign", (es) => es.map((e) =>
    [e.getAttribute("data-pid"), e.getAttribute("data-what"), e.getAttribute("data-gpu"),
     e.getAttribute("data-bytes"), e.textContent.includes(", not its own GPU ")].join(" ")));
  check(`${where} ranks on another rank's GPU`, foreign.join(","), (ej.foreign || []).map((x) =>
    [x.pid, x.what, x.gpu, x.bytes === null ? "" : x.bytes, true].join(" ")).join(","));
  const tableRows = await tab.$$eval(sec + " .vt-job-table tr", (es) => es.length - 1);
  const lines = pj.rows.reduce((n, r) => n + r.devices.length, 0);
  check(`${where} table rows (the first 32, then all)`, tableRows, lines);
}

for (const [si, s] of expected.snapshots.entries()) {
  for (const d of s.devices) {
    const m = d.segments_at_peak;
    if (!m || !m.segments.length) continue;
    const drawn = await tab.evaluate((si) => {
      const sec = document.querySelector(`#snapshot-${si}`);
      const largest = sec.querySelector("[data-largest-free-bytes]");
      return { segs: sec.querySelectorAll("svg.vt-segmap rect.seg").length,
               largest: largest ? +largest.getAttribute("data-largest-free-bytes") : null,
               root: window.d3.select(sec.querySelector(".vt-flame")).datum().value };
    }, si);
    check(`snapshot ${si} segments drawn`, drawn.segs, Math.min(m.segments.length, 400));
    check(`snapshot ${si} the largest free block marked`, drawn.largest, m.largest_free_block_bytes);
    check(`snapshot ${si} flame graph root`, drawn.root, d.peak_allocated_bytes);
    break;
  }
  // each device with trace entries: allocated and reserved over the trace
  for (const [di, d] of s.devices.entries()) {
    if (!d.trace_entries) continue;
    const sec = `#snapshot-${si}-device-${di}`;
    const where = `snapshot ${si} device ${d.device}`;
    const drawn = await tab.evaluate((sec) => {
      const s = document.querySelector(sec);
      const chart = s && s.querySelector(".vt-timeline");
      if (!chart || !chart._uplot) return null;
      const u = chart._uplot;
      const series = {};
      u.series.forEach((x, k) => { if (k) series[x.label] = u.data[k]; });
      return {
        xs: u.data[0], series,
        labels: [...s.querySelectorAll(".vt-peak-label")].map((e) => ({ kind: e.getAttribute("data-kind"),
          bytes: e.getAttribute("data-bytes"), text: e.textContent, shown: e.style.display !== "none",
          left: e.getBoundingClientRect().left })),
        ooms: [...s.querySelectorAll(".vt-oom-marker")].map((e) => ({ verdict: e.getAttribute("data-verdict"),
          requested: e.getAttribute("data-requested-bytes"), shown: e.style.display !== "none" })),
        segViews: s.querySelectorAll(".vt-seg-select option").length,
      };
    }, sec);
    if (!drawn) { fail(`${where}: no timeline drawn`); continue; }
    const max = (a) => a.reduce((m, v) => Math.max(m, v), 0);
    const alloc = drawn.series.allocated || [], res = drawn.series.reserved || [];
    check(`${where} drawn allocated maximum`, max(alloc), d.peak_allocated_bytes);
    check(`${where} drawn reserved maximum`, max(res), d.peak_reserved_bytes);
    // at the peak's own x: entries applied, or seconds since the first entry
    const xAlloc = drawn.xs[alloc.indexOf(d.peak_allocated_bytes)];
    const xRes = drawn.xs[res.indexOf(d.peak_reserved_bytes)];
    const tl = await tab.evaluate(() => JSON.parse(document.getElementById("vt-timeline").textContent));
    const sd = tl.snapshots[si].devices.find((x) => x.device === d.device);
    if (sd.axis === "time_us") {
      // x: seconds since the chart's origin (the owning process's start, or the first entry)
      const x0 = await tab.evaluate((sec) => +document.querySelector(sec + " .vt-timeline").getAttribute("data-x0-unix-us"), sec);
      if (Math.abs(x0 - sd.x0) > 864e8) fail(`${where}: its x axis counts from ${x0} us, a day from its first entry's ${sd.x0}`);
      check(`${where} x of the allocated maximum (us)`, Math.round(xAlloc * 1e6) + x0, d.peak_time_us);
      check(`${where} x of the reserved maximum (us)`, Math.round(xRes * 1e6) + x0, d.peak_reserved_time_us);
    } else {
      check(`${where} x of the allocated maximum (entries)`, xAlloc, d.peak_allocated_index);
      check(`${where} x of the reserved maximum (entries)`, xRes, d.peak_reserved_index);
    }
    if (alloc.some((v, i) => v > res[i])) fail(`${where}: allocated drawn above reserved`);
    for (const [kind, bytes] of [["allocated", d.peak_allocated_bytes], ["reserved", d.peak_reserved_bytes]]) {
      const l = drawn.labels.find((x) => x.kind === kind);
      if (!l) { fail(`${where}: no ${kind} peak label`); continue; }
      check(`${where} ${kind} peak label bytes`, l.bytes, String(bytes));
      if (!l.text.startsWith(`${kind} peak ${fmtBytes(bytes)} at `)) fail(`${where}: the ${kind} peak label reads ${JSON.stringify(l.text)}`);
      if (!l.shown) fail(`${where}: the ${kind} peak label is hidden`);
    }
    check(`${where} failures marked`, drawn.ooms.map((o) => o.verdict + ":" + o.requested).join(","),
          d.ooms.map((o) => o.verdict + ":" + o.requested_bytes).join(","));
    if (drawn.ooms.some((o) => !o.shown)) fail(`${where}: a failure marker is hidden`);
    check(`${where} segment maps to choose (peak, dump, each failure)`, drawn.segViews, 2 + d.ooms.length);
    // hover: the bytes under the cursor; a failure's verdict on its marker
    await tab.locator(`${sec} .u-over`).scrollIntoViewIfNeeded();
    const box = await tab.locator(`${sec} .u-over`).boundingBox();
    await tab.mouse.move(box.x + box.width / 2, box.y + box.height - 5);
    const hover = await tab.textContent(`${sec} .vt-hover`);
    if (!/allocated .*, reserved /.test(hover)) fail(`${where}: hover shows ${JSON.stringify(hover)}`);
    for (const [k, o] of d.ooms.entries()) {
      await tab.hover(`${sec} .vt-oom-marker[data-index="${k}"]`);
      const tip = await tab.textContent("#vt-tooltip");
      if (!tip.includes(`: ${o.verdict}`) || !tip.includes(`tried to allocate ${fmtBytes(o.requested_bytes)}`))
        fail(`${where}: failure #${k + 1}'s tooltip reads ${JSON.stringify(tip)}`);
    }
    // zoom and reset, as the trace timelines
    const span = () => tab.evaluate((sec) => {
      const p = document.querySelector(sec + " .vt-plot");
      return +p.getAttribute("data-x-max") - +p.getAttribute("data-x-min");
    }, sec);
    const full = await span();
    await tab.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await tab.mouse.wheel(0, -300);
    await tab.waitForTimeout(100);
    const zoomed = await span();
    if (!(zoomed < full)) fail(`${where}: the wheel did not zoom: x span ${full} -> ${zoomed}`);
    await tab.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
    await tab.waitForTimeout(100);
    if (Math.abs((await span()) - full) > 1e-9) fail(`${where}: a double click did not restore the whole timeline`);
    await tab.mouse.move(0, 0);
  }
}
if (scenario === "snapshot_oom" && !expected.snapshots.some((s) => s.devices.some((d) => d.ooms.length)))
  fail("the oom snapshot has no oom entry in the report");

if (args.screenshot) {
  await tab.evaluate(() => window.scrollTo(0, 0));
  if (procs.length) { // the cursor at the peak: the hover box shows its bytes and stack
    const box = await tab.locator("#proc-0-ledger-0 .u-over").boundingBox();
    const x = await tab.evaluate(() => document.querySelector("#proc-0-ledger-0 .vt-peak-label").getBoundingClientRect().left - 4);
    await tab.mouse.move(x, box.y + box.height - 20);
  }
  await tab.waitForTimeout(600); // the flame graph's transitions
  await tab.screenshot({ path: args.screenshot, fullPage: !!args.full_page });
  console.log(`screenshot: ${args.screenshot}`);
}
// the same page in a window 900 px wide: the charts are drawn for it
if (!args.tamper) {
  await tab.mouse.move(0, 0);
  await tab.setViewportSize({ width: 900, height: 900 });
  await tab.reload({ waitUntil: "load" });
  await tab.waitForSelector("body[data-ready='1']", { timeout: 60000 });
  await layoutChecks(900);
  if (args.screenshot) {
    await tab.waitForTimeout(600);
    const narrow = args.screenshot.replace(/\.png$/, "") + "_900.png";
    await tab.screenshot({ path: narrow, fullPage: true });
    console.log(`screenshot: ${narrow}`);
  }
}

await browser.close();
if (!args.keep) fs.rmSync(tmp, { recursive: true, force: true });
else console.log(`kept: ${tmp}`);
console.log(failures.length ? `${failures.length} check(s) failed` : "all checks passed");
process.exit(failures.length ? 1 : 0);
