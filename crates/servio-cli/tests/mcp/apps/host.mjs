// Renders `servio_metrics`'s MCP App view in Chromium the way a chat client does, and
// screenshots it at 390 and 1400 px: run by crates/servio-cli/tests/it/mcp.rs.
//
//     node host.mjs PLATFORM_URL TOKEN OUT_DIR [ARGS_JSON]
//
// It bundles host-page.mjs (esbuild), serves it on 127.0.0.1, and relays /mcp to the platform
// with the token, as a host's own server holds a user's connection (a page of another origin
// is refused by /mcp, rightly). It prints one JSON line: the view's text and the screenshots.
import { createServer } from "node:http";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const [platform, token, out, argsJson = "{}"] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const bundle = await build({
  entryPoints: [join(here, "host-page.mjs")],
  bundle: true,
  format: "esm",
  platform: "browser",
  write: false,
  logLevel: "silent",
});
const script = bundle.outputFiles[0].text;
const page = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>A conversation</title>
<style>body{font:16px system-ui,sans-serif;margin:0;background:#eceff3}main{max-width:56rem;margin:0 auto;padding:1rem}
.bubble{background:#fff;border-radius:12px;padding:.75rem 1rem;margin:.5rem 0}iframe{width:100%;border:1px solid #d5dae1;border-radius:12px;background:#fff;height:200px}</style>
</head><body><main id="conversation"><p class="bubble">How were sales yesterday?</p>
<p class="bubble" id="status">…</p></main><script type="module" src="/host.js"></script></body></html>`;

const server = createServer(async (request, response) => {
  if (request.url.startsWith("/mcp")) {
    const headers = { ...request.headers, authorization: `Bearer ${token}` };
    delete headers.origin;
    delete headers.host;
    delete headers.referer;
    const body = request.method === "POST" ? await new Response(request).arrayBuffer() : undefined;
    const answer = await fetch(`${platform}/mcp`, { method: request.method, headers, body, duplex: "half" });
    const forwarded = {};
    answer.headers.forEach((value, name) => {
      if (!["content-length", "transfer-encoding", "content-encoding"].includes(name)) forwarded[name] = value;
    });
    response.writeHead(answer.status, forwarded);
    if (answer.body) for await (const chunk of answer.body) response.write(chunk);
    response.end();
  } else if (request.url === "/host.js") {
    response.writeHead(200, { "content-type": "text/javascript" }).end(script);
  } else {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page);
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}/?args=${encodeURIComponent(argsJson)}`;

mkdirSync(out, { recursive: true });
// As the browser tests start it (tests/browser/launch.mjs): Debian's build, nothing in the background.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const seen = { screenshots: [], text: {}, requests: [] };
try {
  for (const width of [390, 1400]) {
    const tab = await browser.newPage({ viewport: { width, height: 900 } });
    // Every request the page and the view make: the view must make none beyond the host's own.
    tab.on("request", (r) => seen.requests.push(r.url()));
    await tab.goto(base);
    await tab.waitForFunction(() => window.rendered || window.failed, null, { timeout: 30000 });
    const failed = await tab.evaluate(() => window.failed);
    if (failed) throw new Error(failed);
    const view = tab.frameLocator("iframe").locator("#cards");
    await view.locator(".card").first().waitFor({ timeout: 10000 });
    await tab.waitForTimeout(300);
    seen.text[width] = await view.innerText();
    // The whole conversation in one viewport: a frame's content past the first screen is not
    // painted in a full-page screenshot.
    const height = await tab.evaluate(() => document.documentElement.scrollHeight);
    await tab.setViewportSize({ width, height });
    await tab.waitForTimeout(300);
    const file = join(out, `metrics-view-${width}.png`);
    await tab.screenshot({ path: file });
    seen.screenshots.push(file);
    const overflow = await tab.frameLocator("iframe").locator("html").evaluate((root) => root.scrollWidth > root.clientWidth);
    seen[`overflows_${width}`] = overflow;
    await tab.close();
  }
} finally {
  await browser.close();
  server.close();
}
process.stdout.write(`${JSON.stringify(seen)}\n`);
