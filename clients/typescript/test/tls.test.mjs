// The TypeScript client over TLS (Protocol/README.md#tls), with certificates made by the openssl CLI: JSON lines over
// node:tls (`kvods://` and the `tls` option), mutual TLS with a client certificate standing for a restricted token, a
// wrong CA refused, and `wss://` with Node's WebSocket (which trusts NODE_EXTRA_CA_CERTS, read at start: a child
// node runs that part).
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import * as kvod from "../dist/index.js";
import { Kvod } from "./kvod.mjs";

const directory = mkdtempSync(join(tmpdir(), "kvod-ts-tls-"));
after(() => rmSync(directory, { recursive: true, force: true }));
const path = (name) => join(directory, name);
const openssl = (...args) => execFileSync("openssl", args, { stdio: "ignore", timeout: 30000 });
for (const ca of ["ca", "other-ca"]) {
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path(`${ca}.key`),
    "-out", path(`${ca}.pem`), "-days", "2", "-subj", `/CN=kvod test ${ca}`);
}
for (const [name, subject, san] of [["server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1"], ["client", "/CN=orders", "DNS:orders.test"]]) {
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path(`${name}.key`),
    "-out", path(`${name}.csr`), "-subj", subject);
  writeFileSync(path(`${name}.ext`), `subjectAltName=${san}\n`);
  openssl("x509", "-req", "-in", path(`${name}.csr`), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
    "-out", path(`${name}.pem`), "-days", "2", "-extfile", path(`${name}.ext`));
}
const ca = readFileSync(path("ca.pem"), "utf8");
writeFileSync(path("tokens"), "admin read-write\ntls:DNS:orders.test read-write orders.**\n");
const serverArgs = ["--tls-cert", path("server.pem"), "--tls-key", path("server.key")];

async function withServer(args, body) {
  const server = await new Kvod(args).start();
  try {
    await body(server);
  } finally {
    await server.stop();
  }
}

test("JSON lines over TLS: kvods:// and the tls option", () => withServer([...serverArgs, "--tls-only"], async (server) => {
  const secure = await kvod.connect(`kvods://localhost:${server.port}`, { tls: { ca } });
  const byOption = await kvod.connect(server.address, { tls: { ca } });
  try {
    const subscription = await secure.subscribe("greeting");
    await byOption.set("greeting", "over TLS");
    assert.equal((await subscription.next(5000)).new, "over TLS");
    assert.equal(await secure.get("greeting"), "over TLS");
  } finally {
    secure.close();
    byOption.close();
  }
  await assert.rejects(kvod.connect(server.address, { reconnect: false, timeout: 3000 }));
}));

test("a client certificate stands for a restricted token", () => withServer(
  [...serverArgs, "--tls-ca", path("ca.pem"), "--tls-client-auth", "require", "--token-file", path("tokens")],
  async (server) => {
    const client = await kvod.connect(`kvods://127.0.0.1:${server.port}`, {
      tls: { ca, cert: readFileSync(path("client.pem"), "utf8"), key: readFileSync(path("client.key"), "utf8") },
    });
    try {
      assert.deepEqual((await client.hello()).paths, ["orders.**"]);
      await client.set("orders.count", 1);
      await assert.rejects(client.set("secrets", 1), (error) => error.code === 1008);
    } finally {
      client.close();
    }
  }));
test("a certificate of another CA is refused", () => withServer(serverArgs, async (server) => {
  await assert.rejects(kvod.connect(`kvods://127.0.0.1:${server.port}`, {
    tls: { ca: readFileSync(path("other-ca.pem"), "utf8") }, reconnect: false, timeout: 3000,
  }));
}));

test("wss:// with Node's WebSocket", () => withServer(serverArgs, async (server) => {
  const script = `
    import * as kvod from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
    const client = await kvod.connect("wss://localhost:${server.port}/", { transport: "websocket" });
    await client.set("via", "wss");
    console.log(JSON.stringify(await client.get("via")));
    client.close();`;
  const child = spawnSync(process.execPath, ["--experimental-websocket", "--input-type=module", "-e", script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: path("ca.pem") }, encoding: "utf8", timeout: 30000,
  });
  assert.equal(child.stdout.trim(), '"wss"', child.stderr);
}));
