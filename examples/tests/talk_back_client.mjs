// Tools that talk back, as the official TypeScript MCP SDK drives them: elicitation (accept and
// decline), sampling and approval, against examples/conformance_server.rs.
//
// Usage:
//     node talk_back_client.mjs SDK_NODE_MODULES stdio SERVER_BINARY
//     node talk_back_client.mjs SDK_NODE_MODULES http URL     (the server with --legacy-sessions:
//                                                             the SDK speaks protocol 2025-11-25)
//
// Prints one line per check (`ok <check>`) and exits 0; a failed check throws (non-zero exit, the
// stack on stderr). Every wait is bounded (a timeout per request); nothing is timed.

import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, transport, where] = process.argv.slice(2);
const sdk = (file) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", file)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema, CreateMessageRequestSchema } = await sdk("types.js");

const BOUND_MS = 60_000;

function check(condition, what) {
  if (!condition) {
    throw new Error(what);
  }
}

function textOf(result) {
  check(result.content.length === 1 && result.content[0].type === "text", JSON.stringify(result));
  return result.content[0].text;
}

const actions = [];
const asked = [];
const client = new Client({ name: "talk-back-check", version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  const action = actions.shift();
  if (action !== "accept") {
    return { action };
  }
  const wantsName = JSON.stringify(request.params.requestedSchema).includes("name");
  return { action: "accept", content: wantsName ? { name: "Alice" } : {} };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  const question = request.params.messages[0].content.text;
  check(question === "What is the capital of France?", question);
  return { role: "assistant", content: { type: "text", text: "Paris" }, model: "test-model", stopReason: "endTurn" };
});

const link =
  transport === "stdio"
    ? new StdioClientTransport({ command: where, args: ["stdio"], stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(where));
await client.connect(link, { timeout: BOUND_MS });
const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: BOUND_MS });

actions.push("accept");
check(textOf(await call("test_input_required_result_elicitation", {})) === "Hello, Alice!", "accepted elicitation");
check(asked.at(-1).message === "What is your name?", JSON.stringify(asked.at(-1)));
console.log("ok elicitation accepted");

actions.push("decline");
const declined = textOf(await call("test_input_required_result_elicitation", {}));
check(declined === "The user declined to give a name.", declined);
console.log("ok elicitation declined");

const sampled = textOf(await call("test_input_required_result_sampling", {}));
check(sampled === "The model said: Paris", sampled);
console.log("ok sampling");

actions.push("accept");
const approved = await call("test_approval", { what: "the report" });
check(approved.isError === false && textOf(approved) === "approved: the report", JSON.stringify(approved));
const question = 'Allow the tool `test_approval` to run with these arguments?\n"what": "the report"';
check(asked.at(-1).message === question, asked.at(-1).message);
console.log("ok approval accepted");

actions.push("decline");
const refused = await call("test_approval", { what: "the report" });
check(refused.isError === true, JSON.stringify(refused));
const said = "Permission denied: the user declined to run it; do not call it again unless the user asks for it";
check(textOf(refused) === said, textOf(refused));
console.log("ok approval declined");

await client.close();
