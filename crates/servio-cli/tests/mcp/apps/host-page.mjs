// The host side of MCP Apps in a browser page, with the extension's own bridge
// (`@modelcontextprotocol/ext-apps/app-bridge`) and the TypeScript SDK's client: it connects to
// /mcp (proxied by host.mjs, which adds the user's token), finds `servio_metrics`'s view,
// renders it in a sandboxed frame and hands it the tool's result, as a chat client would.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const say = (text) => {
  document.getElementById("status").textContent = text;
};

async function main() {
  const info = { name: "servio-apps-host", version: "0" };
  const client = new Client(info, { versionNegotiation: { mode: "auto" } });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === "servio_metrics");
  const uri = tool?._meta?.ui?.resourceUri;
  if (!uri) throw new Error("servio_metrics links no view");
  const view = await client.readResource({ uri });
  const html = view.contents[0].text;

  const frame = document.createElement("iframe");
  frame.sandbox = "allow-scripts";
  frame.title = "Servio metrics";
  document.getElementById("conversation").append(frame);
  const bridge = new AppBridge(client, info, { serverTools: {}, serverResources: {} });
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${Math.ceil(height)}px`;
    window.viewHeight = height;
  };
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = resolve;
  });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  await initialized;

  const args = JSON.parse(new URLSearchParams(location.search).get("args") ?? "{}");
  const result = await client.callTool({ name: "servio_metrics", arguments: args });
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  say("Here are your figures, as Servio collected them:");
  window.rendered = true;
}

main().catch((error) => {
  say(`failed: ${error?.stack ?? error}`);
  window.failed = String(error?.stack ?? error);
});
