// The TypeScript client's part of clients_test.py: given a comma-separated member list (followers first), it
// subscribes to ts.n, writes 1..5 and prints {endpoint} (the member it writes through); then, once stdin says
// "killed" (the leader was SIGKILLed), writes 6..10 and prints {endpoint, tookMs, values, seqs, written, resyncs}:
// the member that took the writes, how long the first write took, and what the subscription delivered.
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const kvod = await import(join(here, "..", "..", "clients", "typescript", "dist", "index.js"));

const client = await kvod.connect(process.argv[2].split(","), { timeout: 20_000, leaderWait: 20_000 });
const subscription = await client.subscribe("ts.n", { options: ["new"] });
const written = [];
for (let n = 1; n <= 5; n++) written.push(await client.set("ts.n", n));
console.log(JSON.stringify({ endpoint: client.endpoint }));
const connections = client.connections;

const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line.trim() === "killed") break;
lines.close();

// Wait for the client to notice the drop (a write sent before that would be lost with its connection: ConnectionLost).
const deadline = Date.now() + 10_000;
while (client.connections === connections && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
const started = Date.now();
written.push(await client.set("ts.n", 6));
const tookMs = Date.now() - started;
for (let n = 7; n <= 10; n++) written.push(await client.set("ts.n", n));

const values = [], seqs = [], resyncs = [];
while (values.length + resyncs.length < 10) {
  const item = await subscription.next(20_000);
  if (item.type === "resync") resyncs.push(item);
  else { values.push(item.new); seqs.push(item.seq); }
}
console.log(JSON.stringify({ endpoint: client.endpoint, tookMs, values, seqs, written, resyncs }));
client.close();
process.exit(0);
