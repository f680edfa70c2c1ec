// Each Chrome trace-event JSON file named on the command line, read the way
// ui.perfetto.dev and chrome://tracing read one in headless Chromium (Debian's
// /usr/bin/chromium, through playwright-core from node_modules): fetched from a
// local server, turned into one string, JSON.parse'd. Prints its size, the
// events and the times, or the error (V8 cannot hold a string of about 512 MB
// or more). For bench/export_cost.sh; not part of the suite.
import http from "node:http";
import fs from "node:fs";
import { chromium } from "playwright-core";
const files = process.argv.slice(2);
const server = http.createServer((req, res) => {
  const f = decodeURIComponent(req.url.slice(1));
  if (f === "" || !fs.existsSync(f)) { res.writeHead(200, {"content-type": "text/html"}); res.end("<html></html>"); return; }
  res.writeHead(200, {"content-type": "application/json", "content-length": fs.statSync(f).size});
  fs.createReadStream(f).pipe(res);
});
await new Promise(r => server.listen(0, "127.0.0.1", r));
const port = server.address().port;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
const tab = await browser.newPage();
await tab.goto(`http://127.0.0.1:${port}/`);
for (const f of files) {
  const r = await tab.evaluate(async (u) => {
    const t0 = performance.now();
    try {
      const text = await (await fetch(u)).text();
      const t1 = performance.now();
      const doc = JSON.parse(text);
      const t2 = performance.now();
      return { ok: true, chars: text.length, events: doc.traceEvents.length, fetch_ms: t1 - t0, parse_ms: t2 - t1 };
    } catch (e) { return { ok: false, error: String(e) }; }
  }, `http://127.0.0.1:${port}/${encodeURIComponent(f)}`);
  console.log(f, fs.statSync(f).size, JSON.stringify(r));
}
await browser.close();
server.close();
