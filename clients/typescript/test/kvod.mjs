// A real kvod for the tests: $KVOD_BIN (default <repo>/.build/debug/kvod) on 127.0.0.1, restartable on the same port
// and data directory. Every wait is bounded.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const binary = process.env.KVOD_BIN ?? join(repo, ".build", "debug", "kvod");

export class Kvod {
  constructor(args = [], { dataDir = false } = {}) {
    this.args = ["--empty", ...args];
    this.port = 0;
    if (dataDir) {
      this.dataDir = mkdtempSync(join(tmpdir(), "kvod-ts-"));
      this.args.push("--data-dir", this.dataDir, "--fsync", "always");
    }
  }

  get address() { return `127.0.0.1:${this.port}`; }

  async start() {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        await this.startOnce();
        return this;
      } catch (error) {
        if (attempt === 49) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100)); // the port may stay busy a moment after a kill
      }
    }
  }

  startOnce() {
    this.process = spawn(binary, ["--host", "127.0.0.1", "--port", String(this.port), ...this.args], { stdio: ["ignore", "pipe", "pipe"] });
    return new Promise((resolve, reject) => {
      let output = "";
      const timer = setTimeout(() => reject(new Error(`kvod did not start: ${output}`)), 20000);
      this.process.stdout.on("data", (chunk) => {
        output += chunk;
        const match = /kvod listening on [0-9.]+:(\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          this.port = Number(match[1]);
          resolve();
        }
      });
      this.process.stderr.on("data", (chunk) => { output += chunk; });
      this.process.on("exit", () => { clearTimeout(timer); reject(new Error(`kvod exited: ${output}`)); });
    });
  }

  kill() {
    return new Promise((resolve) => {
      this.process.removeAllListeners("exit");
      this.process.on("exit", resolve);
      this.process.kill("SIGKILL");
    });
  }

  async restart() {
    await this.kill();
    await this.start();
  }

  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      await new Promise((resolve) => {
        this.process.removeAllListeners("exit");
        this.process.on("exit", resolve);
        this.process.kill("SIGTERM");
        setTimeout(() => this.process.kill("SIGKILL"), 10000).unref();
      });
    }
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}
