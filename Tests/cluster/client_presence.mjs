// The TypeScript client's part of client_presence_test.py: given the members' addresses (comma-separated), registers
// onDisconnect ops that insert "bob" into `left` and prints {ops, endpoint, connections}; then, for each stdin line
// "leader HOST:PORT" (the leader was SIGKILLed and that member leads now), waits (at most 30 s) until the client is
// connected to it with its ops registered again and prints {endpoint, connections, onDisconnectError}; at the end of
// stdin prints {seen}: what the onConnected listener saw on each connection.
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const kvod = await import(join(here, "..", "..", "clients", "typescript", "dist", "index.js"));

const client = await kvod.connect(process.argv[2].split(","), { timeout: 30_000, leaderWait: 30_000 });
const seen = [];
client.onConnected((info) => {
  seen.push({ connections: info.connections, endpoint: info.endpoint, onDisconnectError: info.onDisconnectError?.message ?? null });
});
const ops = await client.onDisconnect([{ method: "insert", params: { path: "left", value: "bob" } }]);
console.log(JSON.stringify({ ops, endpoint: client.endpoint, connections: client.connections }));

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const leader = /^leader (\S+)$/.exec(line.trim())?.[1];
  if (leader === undefined) continue;
  const deadline = Date.now() + 30_000;
  // Connected to the new leader with the ops registered (each connection's setup registers them before it is ready).
  const ready = () => client.endpoint === leader && seen.length === client.connections && seen.at(-1).endpoint === leader;
  while (!ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  console.log(JSON.stringify({
    endpoint: client.endpoint, connections: client.connections, onDisconnectError: client.onDisconnectError?.message ?? null,
  }));
}
console.log(JSON.stringify({ seen }));
client.close();
process.exit(0);
