// A client no one here wrote: the official TypeScript MCP SDK, speaking
// streamable HTTP to `playbook mcp --http`. Usage: node mcp_client.mjs URL RUN REASON.
// It finds RUN's pending_failed step, classifies it retry with REASON, waits
// for the run to end, and prints what it saw as one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, run, reason] = process.argv.slice(2);
const client = new Client({ name: "node-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const call = async (name, args) => {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content[0].text;
  if (res.isError) throw new Error(`${name}: ${text}`);
  return JSON.parse(text);
};

const tools = (await client.listTools()).tools.map((t) => t.name).sort();
const pending = await call("list_pending_failed", { run });
const step = pending.pending_failed[0];
const classified = await call("classify_step", { run, step: step.step, action: "retry", reason });
let status;
for (let i = 0; i < 240; i++) {
  status = await call("run_status", { run });
  if (status.status !== "running") break;
  await new Promise((r) => setTimeout(r, 250));
}
const prompt = await client.getPrompt({ name: "triage_pending_failures", arguments: { run } });
const readme = await client.readResource({ uri: "playbook://readme" });
const language = await client.readResource({ uri: "playbook://language" });
console.log(JSON.stringify({
  tools,
  step: step.step,
  stderr_tail: step.stderr_tail,
  classified: classified.result,
  status: status.status,
  note: status.steps[step.step].classified,
  prompt: prompt.messages[0].content.text.split("\n")[0],
  readme_starts: readme.contents[0].text.slice(0, 20),
  language_starts: language.contents[0].text.slice(0, 30),
}));
await client.close();
