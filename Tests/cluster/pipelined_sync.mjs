// The TypeScript client's part of pipelined_sync_test.py: connected to the leader given as argv[2], runs ROUNDS
// (argv[3]) rounds of 4 concurrent sets (Promise.all) and prints {rounds, seqs} when all were answered, or
// {error, round} at the first round that took longer than 10 s (a response that never came) or failed.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const kvod = await import(join(here, "..", "..", "clients", "typescript", "dist", "index.js"));

const client = await kvod.connect(process.argv[2], { timeout: 10_000 });
const rounds = Number(process.argv[3]);
let seqs = 0;
for (let round = 0; round < rounds; round++) {
  try {
    const answers = await Promise.all([0, 1, 2, 3].map((index) => client.set(`ts.k${index}`, round)));
    seqs += answers.length;
  } catch (error) {
    console.log(JSON.stringify({ error: String(error?.message ?? error), round }));
    client.close();
    process.exit(0);
  }
}
console.log(JSON.stringify({ rounds, seqs }));
client.close();
process.exit(0);
