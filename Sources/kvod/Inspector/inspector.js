// kvod's web inspector: the page's own code, plain modern JavaScript with no framework, over the TypeScript client
// (kvod.js, served beside it). Five panels: browse the graph (get + describe, following $refs), watch key paths (a
// live log of notifications), set a value (the seq, or the error inline), observers and stats. Everything kvod sends
// is shown with textContent, never parsed as HTML.
import * as kvod from "./kvod.js";

const $ = (id) => document.getElementById(id);
const MAX_LOG_ROWS = 500;

let client = null;

// MARK: - Small helpers

/** An element with a class, text and children; attributes as `data-*`/`aria-*`/others in `attributes`. */
function element(tag, { className, text, attributes } = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes ?? {})) node.setAttribute(name, value);
  for (const child of children) if (child) node.append(child);
  return node;
}

/** A value as compact JSON (undefined when absent), cut at 200 characters with the whole in a tooltip. */
function shown(value) {
  if (value === undefined) return element("span", { className: "absent", text: "—" });
  const json = JSON.stringify(value);
  const span = element("span", { className: `value ${value === null ? "null" : typeof value}` });
  span.textContent = json.length > 200 ? json.slice(0, 199) + "…" : json;
  if (json.length > 200) span.title = json;
  return span;
}

/** "CODE message {data}" for a KvodError, or the message of any other error. */
function describeError(error) {
  if (error instanceof kvod.KvodError && error.code > 0) {
    return { code: error.code, message: error.message, data: error.data };
  }
  if (error instanceof kvod.KvodError && error.code !== undefined) {
    return { code: error.code, message: `${error.name}: ${error.message}`, data: undefined };
  }
  return { code: undefined, message: String(error?.message ?? error), data: undefined };
}

/** Shows an error in `target`: code, message and data, each in its own element. */
function showError(target, error) {
  const { code, message, data } = describeError(error);
  target.replaceChildren(
    element("span", { className: "error-code", text: code !== undefined ? `error ${code}` : "error" }), " ",
    element("span", { className: "error-message", text: message }),
    data !== undefined ? element("code", { className: "error-data", text: JSON.stringify(data) }) : null);
  target.hidden = false;
  if (error instanceof kvod.ConnectionLost) setStatus("Connection lost: reconnecting…", "error");
}

function setStatus(text, kind = "") {
  $("status").textContent = text;
  $("status").className = kind;
}

/** The child path of `key` under `path` (`$12` stays an id path: `$12.key`). */
function childPath(path, key) {
  return path === "" ? key : `${path}.${key}`;
}

// MARK: - Connecting

/** kvod's address: `?kvod=host:port`, else what kvod wrote into the page, else this host on kvod's default port. */
function kvodAddress() {
  const override = new URLSearchParams(location.search).get("kvod");
  if (override) return override;
  const meta = document.querySelector('meta[name="kvod-address"]')?.content ?? "";
  return meta && !meta.includes("{{") ? meta : `${location.hostname}:7070`;
}

/** The page's scheme for kvod too: a page served over https may only open wss:// (Protocol/README.md#tls). */
function kvodURL(address) {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${address}/`;
}

async function connect(token) {
  const address = kvodAddress();
  const url = kvodURL(address);
  setStatus(`Connecting to ${url} …`);
  try {
    client = await kvod.connect(url, { token, transport: "websocket", clientName: "kvod-inspector" });
  } catch (error) {
    client = null;
    if (error instanceof kvod.Unauthorized) {
      showTokenForm(token ? "wrong token" : "kvod wants a token");
      setStatus(`kvod at ${address} refused: ${error.message}`, "error");
    } else {
      setStatus(`Cannot connect to kvod at ${url}: ${error.message}`, "error");
    }
    return;
  }
  $("token-form").hidden = true;
  const hello = await client.hello().catch(() => ({}));
  const access = hello.access ? `, ${hello.access}` : "";
  setStatus(`Connected to kvod ${hello.version ?? ""} at ${url}${access}`, "connected");
  document.body.dataset.connected = "true";
  await Promise.allSettled([browse(""), refreshObservers(), refreshStats()]);
}

function showTokenForm(message) {
  $("token-form").hidden = false;
  $("token-error").textContent = message ?? "";
  $("token").focus();
}

// MARK: - Browse

/** Shows the value at `path` as a tree, with its class from `describe` and its computed keys. */
async function browse(path) {
  $("browse-path").value = path;
  $("browse-error").hidden = true;
  $("browse-error").textContent = "";
  try {
    const { value, seq } = await client.getWithSeq(path);
    const info = [`seq ${seq}`];
    let computed = [];
    let types = {};
    if (value !== null && typeof value === "object" && !Array.isArray(value) && "$id" in value) {
      const description = await client.describe(path);
      info.unshift(`${description.class?.name ?? "object"} $${description.id}${description.class?.open ? " (open)" : ""}`);
      types = description.class?.properties ?? {};
      computed = Object.entries(types).filter(([, property]) => property.computed !== undefined);
    }
    $("browse-info").textContent = `${path === "" ? "(root)" : path}: ${info.join(", ")}`;
    const tree = renderValue(value, path, types);
    const computedValues = await Promise.all(computed.map(async ([key, property]) => {
      const result = await client.get(childPath(path, key)).catch((error) => ({ error: describeError(error).message }));
      return { key, property, result };
    }));
    if (computedValues.length > 0 && tree.tagName === "UL") {
      for (const { key, property, result } of computedValues) {
        tree.append(keyRow(key, result, childPath(path, key), `computed: ${property.computed}`, true));
      }
    }
    $("tree").replaceChildren(tree);
  } catch (error) {
    $("tree").replaceChildren();
    $("browse-info").textContent = "";
    showError($("browse-error"), error);
  }
}

/** One `key: value` row of an object; the key browses to its path, "watch" and "set" fill those forms. */
function keyRow(key, value, path, hint, isComputed = false) {
  const row = element("li", { attributes: { "data-path": path } });
  const name = element("button", { className: "key", text: key, attributes: { type: "button", title: `browse ${path}` } });
  name.addEventListener("click", () => browse(path));
  row.append(name);
  if (hint) {
    const type = element("span", { className: "type", text: hint.length > 60 ? hint.slice(0, 59) + "…" : hint });
    if (hint.length > 60) type.title = hint;
    row.append(type);
  }
  const watch = element("button", { className: "small", text: "watch", attributes: { type: "button", "aria-label": `watch ${path}` } });
  watch.addEventListener("click", () => { $("subscribe-path").value = path; $("subscribe-path").focus(); });
  row.append(watch);
  if (!isComputed) {
    const set = element("button", { className: "small", text: "set", attributes: { type: "button", "aria-label": `set ${path}` } });
    set.addEventListener("click", () => {
      $("set-path").value = path;
      $("set-value").value = value !== null && typeof value === "object" && "$id" in value
        ? JSON.stringify({ $ref: value.$id }) : JSON.stringify(value);
      $("set-value").focus();
    });
    row.append(set);
  }
  row.append(" ", renderValue(value, path));
  return row;
}

/** A value as a tree: objects and arrays as nested lists; `{"$ref": N}` as a link that browses `$N`. */
function renderValue(value, path, types = {}) {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    if ("$ref" in value && Object.keys(value).length === 1) {
      const link = element("button", { className: "ref", text: `→ $${value.$ref}`, attributes: { type: "button", title: `browse object ${value.$ref}` } });
      link.addEventListener("click", () => browse(`$${value.$ref}`));
      return link;
    }
    const list = element("ul", { className: "object" });
    if ("$id" in value) list.dataset.id = value.$id;
    if ("$id" in value) list.append(element("li", { className: "id", text: `$id ${value.$id}` }));
    for (const [key, child] of Object.entries(value)) {
      if (key === "$id") continue;
      const type = types[key]?.type;
      list.append(keyRow(key, child, childPath(path, key), type));
    }
    return list;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return shown(value);
    const list = element("ol", { className: "array", attributes: { start: "0" } });
    for (const item of value) {
      // An element has no key path of its own: an object in it is browsed by its id.
      const itemPath = item !== null && typeof item === "object" && "$id" in item ? `$${item.$id}` : path;
      list.append(element("li", {}, renderValue(item, itemPath)));
    }
    return list;
  }
  return shown(value);
}

// MARK: - Watch

/** Subscribes to the form's path with the checked options and logs every notification until unsubscribed. */
async function subscribe(path, options) {
  $("subscribe-error").hidden = true;
  let subscription;
  try {
    subscription = await client.subscribe(path, { options });
  } catch (error) {
    showError($("subscribe-error"), error);
    return;
  }
  const current = element("span", { className: "current", attributes: { "data-testid": "current-value" } });
  current.append(shown(undefined));
  const stop = element("button", { className: "small", text: "unsubscribe", attributes: { type: "button" } });
  const item = element("li", { attributes: { "data-testid": "subscription", "data-path": path, "data-id": String(subscription.id) } },
    element("code", { text: path }), " ",
    element("span", { className: "muted", text: `#${subscription.id} [${options.join(", ") || "no options"}] since seq ${subscription.seq}` }),
    " value: ", current, " ", stop);
  stop.addEventListener("click", async () => {
    await subscription.unsubscribe();
    item.remove();
  });
  $("subscriptions").append(item);
  for await (const change of subscription) {
    logChange(change, subscription.id);
    if (change.type === "change" && !change.prior && "new" in change && change.kind === "setting") {
      current.replaceChildren(shown(change.new));
    }
  }
}

/** Adds one notification (or resync) to the top of the log. */
function logChange(change, id) {
  const note = change.type === "resync" ? `resync: missed since ${change.since}` : change.prior ? "prior" : change.initial ? "initial" : "";
  const transition = element("span", { className: "transition" });
  if (change.type === "change") {
    transition.append(element("span", { className: "old" }, shown(change.old)), " → ",
      element("span", { className: "new" }, change.prior ? element("span", { className: "absent", text: "(about to change)" }) : shown(change.new)));
  }
  const row = element("tr", {
    className: change.prior ? "prior" : change.initial ? "initial" : "",
    attributes: {
      "data-testid": "notification", "data-seq": String(change.seq), "data-path": change.path,
      "data-kind": change.kind ?? change.type, "data-prior": String(change.prior === true),
    },
  },
  element("td", { className: "seq", text: String(change.seq) }),
  element("td", { text: id === undefined ? "" : `#${id}` }),
  element("td", {}, element("code", { text: change.path })),
  element("td", { className: "kind", text: change.kind ?? change.type }),
  element("td", {}, transition),
  element("td", { className: "indexes", text: change.indexes ? change.indexes.join(", ") : "" }),
  element("td", { className: "note", text: note }));
  $("log-body").prepend(row);
  while ($("log-body").rows.length > MAX_LOG_ROWS) $("log-body").lastElementChild.remove();
}

// MARK: - Set

async function setValue(path, text) {
  const result = $("set-result");
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    result.className = "error";
    result.replaceChildren(element("span", { className: "error-message", text: `not JSON: ${error.message} (text needs quotes: "like this")` }));
    return;
  }
  try {
    const answer = await client.call("set", { path, value });
    result.className = "ok";
    result.replaceChildren(element("span", { text: "set at seq " }), element("span", { className: "seq", text: String(answer.seq) }),
      "value" in answer ? element("span", { text: "; stored " }) : null, "value" in answer ? shown(answer.value) : null);
  } catch (error) {
    result.className = "error";
    showError(result, error);
  }
}

// MARK: - Observers and stats

async function refreshObservers() {
  const view = $("observers-view");
  try {
    const { connections } = await client.observers();
    const table = element("table", {},
      element("thead", {}, element("tr", {}, ...["connection", "remote", "client", "subscriptions"].map((name) => element("th", { text: name, attributes: { scope: "col" } })))));
    const body = element("tbody");
    for (const connection of connections) {
      const subscriptions = element("ul", { className: "plain" });
      for (const subscription of connection.subscriptions) {
        subscriptions.append(element("li", { attributes: { "data-testid": "observer-subscription", "data-path": subscription.path } },
          element("code", { text: subscription.path }),
          ` #${subscription.subscription} [${(subscription.options ?? []).join(", ")}]`,
          subscription.context !== undefined ? element("span", { className: "muted", text: ` context ${JSON.stringify(subscription.context)}` }) : null));
      }
      body.append(element("tr", { className: connection.self ? "self" : "" },
        element("td", { text: `${connection.connection}${connection.self ? " (this page)" : ""}` }),
        element("td", { text: connection.remote }),
        element("td", { text: connection.client ?? "" }),
        element("td", {}, subscriptions)));
    }
    table.append(body);
    view.replaceChildren(table);
  } catch (error) {
    showError(view, error);
  }
}

async function refreshStats() {
  const view = $("stats-view");
  try {
    const stats = await client.stats();
    view.replaceChildren();
    for (const [key, value] of Object.entries(stats)) {
      const shownValue = value !== null && typeof value === "object"
        ? Object.entries(value).map(([name, count]) => `${name} ${count}`).join(", ") : String(value);
      view.append(element("dt", { text: key }), element("dd", { text: shownValue, attributes: { "data-stat": key } }));
    }
  } catch (error) {
    view.replaceChildren(element("dd", { className: "error", text: describeError(error).message }));
  }
}

// MARK: - Wiring

function whenConnected(action) {
  return (event) => {
    event?.preventDefault();
    if (!client) {
      setStatus("Not connected to kvod", "error");
      return;
    }
    action();
  };
}

$("browse-form").addEventListener("submit", whenConnected(() => browse($("browse-path").value.trim())));
$("browse-root").addEventListener("click", whenConnected(() => browse("")));
$("browse-model").addEventListener("click", whenConnected(async () => {
  try {
    const model = await client.describe();
    $("browse-info").textContent = `the model: root class ${model.root}`;
    $("tree").replaceChildren(element("pre", { text: JSON.stringify(model, null, 2) }));
  } catch (error) {
    showError($("browse-error"), error);
  }
}));
$("subscribe-form").addEventListener("submit", whenConnected(() => {
  const options = [...document.querySelectorAll('input[name="option"]:checked')].map((box) => box.value);
  void subscribe($("subscribe-path").value.trim(), options);
}));
$("clear-log").addEventListener("click", () => $("log-body").replaceChildren());
$("set-form").addEventListener("submit", whenConnected(() => setValue($("set-path").value.trim(), $("set-value").value)));
$("refresh-observers").addEventListener("click", whenConnected(refreshObservers));
$("refresh-stats").addEventListener("click", whenConnected(refreshStats));
$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void connect($("token").value);
});

if (document.querySelector('meta[name="kvod-access"]')?.content === "token") {
  setStatus("kvod has access control: enter a token");
  showTokenForm();
} else {
  void connect(undefined);
}
