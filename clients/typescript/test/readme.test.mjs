// The README's "From TypeScript / a browser" example, run as written (only the address and the import path change).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Kvod } from "./kvod.mjs";

const here = dirname(fileURLToPath(import.meta.url));

test("the README example runs", async () => {
  const server = await new Kvod().start();
  try {
    const readme = readFileSync(join(here, "..", "..", "..", "README.md"), "utf8");
    const section = readme.split("## From TypeScript / a browser")[1];
    let code = /```js[^\n]*\n([\s\S]*?)```/.exec(section)[1];
    assert.ok(code.includes("127.0.0.1:7070"));
    code = code.replace("127.0.0.1:7070", server.address).replace('from "kvod"', `from "${join(here, "..", "dist", "index.js")}"`);
    const file = join(mkdtempSync(join(tmpdir(), "kvod-readme-")), "example.mjs");
    writeFileSync(file, code);
    const output = await new Promise((resolve, reject) => {
      execFile(process.execPath, [file], { timeout: 30000 }, (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout)));
    });
    assert.deepEqual(output.trim().split("\n"), ["setting null -> hello", '["a"]']);
  } finally {
    await server.stop();
  }
});
