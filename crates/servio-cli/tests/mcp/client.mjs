// An MCP client nobody on this project wrote: the TypeScript SDK's v2 client
// (`@modelcontextprotocol/client` from npm), run by crates/servio-cli/tests/it/mcp.rs against
// the platform's /mcp. It negotiates the revision (`versionNegotiation: auto`: 2026-07-28 with
// a server that offers it) and prints one JSON line per step, as client.py does:
//
//     node client.mjs URL TOKEN STEPS_JSON
//
// STEPS_JSON is a list of steps: {"list": true}, {"call": NAME, "args": {...}},
// {"read": URI}, or {"await_change": SECONDS} (prints {"waiting": true} once its listen stream
// is acknowledged, then whether notifications/tools/list_changed came).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, token, stepsJson] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const emit = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "servio-test", version: "0" }, { versionNegotiation: { mode: "auto" } });
let heard = () => {};
client.setNotificationHandler("notifications/tools/list_changed", () => heard());

await client.connect(transport);
const capabilities = client.getServerCapabilities() ?? {};
emit({
  server: client.getServerVersion()?.name,
  protocol: client.getNegotiatedProtocolVersion(),
  listChanged: Boolean(capabilities.tools?.listChanged),
});

for (const step of steps) {
  if (step.list) {
    const listed = await client.listTools(undefined, { cacheMode: "refresh" });
    emit({ tools: listed.tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) });
  } else if (step.call) {
    try {
      const result = await client.callTool({ name: step.call, arguments: step.args ?? {} });
      const texts = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
      emit({ result: { isError: Boolean(result.isError), structured: result.structuredContent ?? null, texts } });
    } catch (error) {
      emit({ protocol_error: String(error?.message ?? error) });
    }
  } else if (step.read) {
    const read = await client.readResource({ uri: step.read });
    emit({ contents: read.contents });
  } else if (step.await_change) {
    let changed = false;
    const came = new Promise((resolve) => {
      heard = () => {
        changed = true;
        resolve();
      };
    });
    const subscription = await client.listen({ toolsListChanged: true });
    emit({ waiting: true });
    await Promise.race([came, new Promise((resolve) => setTimeout(resolve, step.await_change * 1000))]);
    await subscription.close();
    emit({ changed });
  }
}
await client.close();
