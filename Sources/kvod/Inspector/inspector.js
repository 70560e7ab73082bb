// kvod's web inspector: the page's own code, plain modern JavaScript with no framework, over the TypeScript client
// (kvod.js, served beside it). Panels: browse the graph as a live tree (describe + get, to-many relationships read a
// page at a time with get's offset/limit, only the visible rows rendered, what is shown observed), watch key paths (a
// live log of notifications, filterable), a live query (its window as a table, kept up to date), set a value (the
// seq, or the error inline), live charts from stats, the cluster member, and observers. The page owns its
// connection: an honest state (connecting, connected, reconnecting with a countdown, disconnected) and reconnection
// with its subscriptions resumed (`since`) and its live query started again. Everything kvod sends is shown with
// textContent, never parsed as HTML.
import * as kvod from "./kvod.js";

const $ = (id) => document.getElementById(id);
const MAX_LOG_ROWS = 500;
/** Height of a tree row in pixels (inspector.css: .tree-row). */
const ROW_HEIGHT = 22;
/** Rows rendered above and below the visible ones. */
const OVERSCAN = 10;
/** Elements of a to-many read per `get` (offset/limit). */
const PAGE_SIZE = 100;
/** How long a changed value stays highlighted, in milliseconds. */
const FLASH_MS = 1500;
/** Stats samples kept (one a second: five minutes). */
const HISTORY = 300;

// MARK: - Small helpers

/** An element with a class, text and children; attributes in `attributes`. */
function element(tag, { className, text, attributes } = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  // A style goes through CSSOM: the page's Content-Security-Policy refuses style attributes.
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (name === "style") node.style.cssText = value; else node.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** A value as compact JSON (a dash when absent), cut at `max` characters with the whole in a tooltip. */
function shown(value, max = 200) {
  if (value === undefined) return element("span", { className: "absent", text: "—" });
  const json = JSON.stringify(value);
  const span = element("span", { className: `value ${value === null ? "null" : Array.isArray(value) ? "array" : typeof value}` });
  span.textContent = json.length > max ? json.slice(0, max - 1) + "…" : json;
  if (json.length > max) span.title = json.length > 4000 ? json.slice(0, 3999) + "…" : json;
  return span;
}

/** Sorted indexes as ranges: [0, 1, 2, 5, 7, 8] → "0–2, 5, 7–8"; past `maxRanges` ranges, "… (N more)". */
function indexRanges(indexes, maxRanges = 8) {
  const ranges = [];
  for (const index of indexes) {
    const last = ranges[ranges.length - 1];
    if (last && index === last[1] + 1) last[1] = index;
    else ranges.push([index, index]);
  }
  const text = (range) => (range[0] === range[1] ? String(range[0]) : `${range[0]}–${range[1]}`);
  const parts = ranges.slice(0, maxRanges).map(text);
  if (ranges.length > maxRanges) parts.push(`… (${ranges.length - maxRanges} more ranges)`);
  return { text: parts.join(", "), full: ranges.map(text).join(", "), count: indexes.length };
}

/** "CODE message {data}" for a KvodError, or the message of any other error. */
function describeError(error) {
  if (error instanceof kvod.KvodError && error.code > 0) return { code: error.code, message: error.message, data: error.data };
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
}

/** The child path of `key` under `path` (`$12` stays an id path: `$12.key`). */
function childPath(path, key) {
  return path === "" ? key : `${path}.${key}`;
}

function isObjectValue(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The id of an object value as `get` writes it (`{"$id": N, ...}` or `{"$ref": N}`), else undefined. */
function objectID(value) {
  if (!isObjectValue(value)) return undefined;
  return value.$id ?? value.$ref;
}

// MARK: - The connection

/** The one connection the page has, and its state; `client` is null unless connected. */
const connection = {
  client: null,
  /** "connecting", "connected", "reconnecting" or "disconnected". */
  state: "connecting",
  token: undefined,
  attempt: 0,
  retryAt: 0,
  retryTimer: undefined,
  countdownTimer: undefined,
  /** Bumped on every new connection: work started for an older one is dropped. */
  generation: 0,
  /** False once the user disconnected or kvod refused the token: no automatic reconnection then. */
  wanted: true,
  version: "",
  access: "",
};

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

/** Shows the connection state: the coloured dot follows `data-state`, the text says what happens next. */
function setState(state, text) {
  connection.state = state;
  $("status").dataset.state = state;
  $("status").className = state === "connected" ? "connected" : state === "connecting" ? "" : "error";
  $("status-text").textContent = text;
  document.body.dataset.connected = String(state === "connected");
  $("retry-now").hidden = state !== "reconnecting";
  $("disconnect").hidden = state === "disconnected";
  $("connect-again").hidden = state !== "disconnected" || !$("token-form").hidden;
}

async function connect() {
  clearTimeout(connection.retryTimer);
  clearInterval(connection.countdownTimer);
  connection.wanted = true;
  connection.attempt += 1;
  const address = kvodAddress();
  const url = kvodURL(address);
  const generation = ++connection.generation;
  setState("connecting", `Connecting to ${url}${connection.attempt > 1 ? ` (attempt ${connection.attempt})` : ""}…`);
  let client;
  try {
    client = await kvod.connect(url, {
      token: connection.token, transport: "websocket", clientName: "kvod-inspector", reconnect: false, timeout: 5000,
    });
  } catch (error) {
    if (generation !== connection.generation) return;
    if (error instanceof kvod.Unauthorized) {
      connection.wanted = false;
      showTokenForm(connection.token ? "wrong token" : "kvod wants a token");
      setState("disconnected", `Disconnected: kvod at ${address} refused: ${error.message}`);
      return;
    }
    scheduleRetry(`cannot connect to ${url}: ${error.message}`);
    return;
  }
  if (generation !== connection.generation || !connection.wanted) {
    client.close();
    return;
  }
  connection.client = client;
  client.onDisconnected((info) => lost(client, info.reason ? `kvod closed the connection (${info.reason})` : "the connection was lost"));
  $("token-form").hidden = true;
  const hello = await client.hello().catch(() => ({}));
  connection.version = hello.version ?? "";
  connection.access = hello.access ?? "";
  connection.attempt = 0;
  setState("connected", `Connected to kvod ${connection.version} at ${kvodURL(address)}${connection.access ? `, ${connection.access}` : ""}`);
  await Promise.allSettled([watch.resumeAll(client), tree.reconnected(), query.reconnected(client), refreshObservers(), stats.sample()]);
}

/** The connection `client` ended (kvod stopped, died, or the network failed): show it, then reconnect. */
function lost(client, why) {
  if (connection.client !== client) return;
  connection.client = null;
  client.close();
  tree.disconnected();
  query.disconnected();
  if (connection.wanted) scheduleRetry(why);
}

/** Waits 1 s after a loss, then 2, 4 ... up to 15 s after each failed attempt, counting down on the page; then tries
 * again. */
function scheduleRetry(why) {
  const delay = Math.min(1000 * 2 ** connection.attempt, 15000);
  connection.retryAt = Date.now() + delay;
  const tick = () => {
    const seconds = Math.max(0, Math.ceil((connection.retryAt - Date.now()) / 1000));
    setState("reconnecting", `Reconnecting in ${seconds} s — ${why}`);
    $("status").dataset.countdown = String(seconds);
  };
  tick();
  clearInterval(connection.countdownTimer);
  connection.countdownTimer = setInterval(tick, 250);
  clearTimeout(connection.retryTimer);
  connection.retryTimer = setTimeout(() => { clearInterval(connection.countdownTimer); void connect(); }, delay);
}

/** The user asked to disconnect: close, and stay so until asked to connect. */
function disconnect() {
  connection.wanted = false;
  connection.generation += 1;
  clearTimeout(connection.retryTimer);
  clearInterval(connection.countdownTimer);
  const client = connection.client;
  connection.client = null;
  client?.close();
  tree.disconnected();
  query.disconnected();
  setState("disconnected", "Disconnected (you disconnected)");
}

function showTokenForm(message) {
  $("token-form").hidden = false;
  $("token-error").textContent = message ?? "";
  $("token").focus();
}

// MARK: - The tree

/**
 * A node of the browse tree: an object (its keys from `describe`), a to-many (its count and pages from `get` with
 * offset/limit), or a value. Rows are generated from the nodes on demand, only for what is visible: a node's `size`
 * is its row plus, when expanded, its children's rows, so a million-element array costs its visible rows.
 */
class TreeNode {
  constructor(path, label, depth, kind) {
    this.path = path;
    this.label = label;
    this.depth = depth;
    /** "object", "collection", "value" or "unknown" (not read yet). */
    this.kind = kind;
    this.expanded = false;
    /** object: {id, className, open} from describe; its key children, in order. */
    this.description = undefined;
    this.children = undefined;
    /** collection: the element count and the pages read (page number → elements); expanded elements' nodes. */
    this.count = undefined;
    this.pages = new Map();
    this.elementNodes = new Map();
    this.setLike = false;
    /** value: the value (undefined until read); `hint` the declared type or the computed expression. */
    this.value = undefined;
    this.hint = undefined;
    this.computed = false;
    this.flashUntil = 0;
    this.flashIndexes = new Map();
    this.error = undefined;
  }

  /** Rows this node takes: its own plus its children's when expanded. */
  get size() {
    if (!this.expanded) return 1;
    if (this.kind === "object") {
      if (!this.children) return 2; // a "loading" row
      let size = 1;
      for (const child of this.children) size += child.size;
      return size;
    }
    if (this.kind === "collection") {
      if (this.count === undefined) return 2;
      let size = 1 + this.count;
      for (const element of this.elementNodes.values()) size += element.size - 1;
      return size;
    }
    return 1;
  }
}

const tree = {
  root: undefined,
  /** Every node by key path (an element object by its `$id` path), for the notifications. */
  byPath: new Map(),
  /** Key paths observed for the tree: path → {subscription, options}. */
  observed: new Map(),
  loading: new Set(),
  renderQueued: false,
  syncTimer: undefined,
  /** Milliseconds the last render took (shown to tests as data-render-ms). */
  lastRenderMs: 0,

  /** Shows the tree of `path` (its root node expanded). */
  async browse(path) {
    $("browse-path").value = path;
    $("browse-error").hidden = true;
    $("browse-error").textContent = "";
    $("model").hidden = true;
    $("tree").hidden = false;
    for (const [observedPath, entry] of this.observed) this.unobserve(observedPath, entry);
    this.byPath.clear();
    const label = path === "" ? "(root)" : path;
    this.root = new TreeNode(path, label, 0, "unknown");
    this.root.expanded = true;
    this.byPath.set(path, this.root);
    $("tree").scrollTop = 0;
    const client = connection.client;
    if (!client) return this.render();
    try {
      await this.resolve(this.root, client);
      $("browse-info").textContent = this.info(this.root);
    } catch (error) {
      showError($("browse-error"), error);
      $("browse-info").textContent = "";
    }
    this.render();
  },

  info(node) {
    const where = node.path === "" ? "(root)" : node.path;
    if (node.kind === "object" && node.description) {
      const { className, id, open } = node.description;
      return `${where}: ${className} $${id}${open ? " (open)" : ""}, ${node.children?.length ?? 0} keys`;
    }
    if (node.kind === "collection") return `${where}: ${node.count?.toLocaleString("en")} elements`;
    return `${where}: a value`;
  },

  /** Finds out what `node` is, reading it: describe for an object, a first page for a to-many, else get. */
  async resolve(node, client) {
    try {
      await this.describe(node, client);
      return;
    } catch (error) {
      if (!(error instanceof kvod.TypeMismatch)) throw error;
    }
    try {
      await this.readPage(node, 0, client);
      node.kind = "collection";
      return;
    } catch (error) {
      if (!(error instanceof kvod.TypeMismatch)) throw error;
    }
    node.kind = "value";
    node.value = await client.get(node.path);
  },

  /** Reads an object's class and keys; the keys become child nodes (stored keys, declared ones not set, computed). */
  async describe(node, client) {
    const result = await client.describe(node.path);
    const properties = result.class?.properties ?? {};
    const oldChildren = new Map((node.children ?? []).map((child) => [child.label, child]));
    const keys = [...Object.keys(result.keys ?? {})];
    for (const name of Object.keys(properties)) if (!keys.includes(name)) keys.push(name);
    node.kind = "object";
    node.description = { id: result.id, className: result.class?.name ?? "object", open: result.class?.open === true };
    node.children = keys.map((key) => {
      const path = childPath(node.path, key);
      const property = properties[key] ?? {};
      const type = result.keys?.[key];
      const declared = property.type ?? "";
      const kind = type === "object" ? "object" : type === "array" || /^\[|^set</.test(declared) ? "collection" : "value";
      const previous = oldChildren.get(key);
      const child = previous && previous.kind === kind ? previous : new TreeNode(path, key, node.depth + 1, kind);
      child.hint = property.computed !== undefined ? `computed: ${property.computed}` : declared || type;
      child.computed = property.computed !== undefined;
      child.setLike = declared.startsWith("set<");
      if (kind === "value" && type === "null" && /^[A-Z]/.test(declared)) child.hint = `${declared} (to-one)`;
      this.byPath.set(path, child);
      return child;
    });
  },

  /** Reads page `page` of a to-many (`get` with offset/limit), which also gives its count. */
  async readPage(node, page, client) {
    const result = await client.call("get", { path: node.path, offset: page * PAGE_SIZE, limit: PAGE_SIZE });
    if (node.stale) { node.pages.clear(); node.stale = false; }
    node.count = result.count;
    node.readSeq = result.seq;
    node.pages.set(page, result.value);
  },

  /** The rows from `start`, at most `count` of them: {node, depth, ...} for nodes, {parent, index} for elements. */
  rows(start, count) {
    const rows = [];
    const visit = (node, skip) => {
      // Returns how many rows of this subtree were skipped (when `skip` covers it all) or -1 once `count` is reached.
      if (rows.length >= count) return -1;
      if (skip > 0) skip -= 1; else rows.push({ node });
      if (!node.expanded) return skip;
      if (node.kind === "object") {
        if (!node.children) {
          if (skip > 0) return skip - 1;
          rows.push({ loading: node, depth: node.depth + 1 });
          return 0;
        }
        for (const child of node.children) {
          if (rows.length >= count) return -1;
          const size = child.size;
          if (skip >= size) { skip -= size; continue; }
          skip = visit(child, skip);
          if (skip < 0) return -1;
        }
        return skip;
      }
      if (node.kind === "collection") {
        if (node.count === undefined) {
          if (skip > 0) return skip - 1;
          rows.push({ loading: node, depth: node.depth + 1 });
          return 0;
        }
        // Elements are one row each, except expanded ones: jump over the plain ones arithmetically.
        const expanded = [...node.elementNodes.keys()].sort((a, b) => a - b);
        let index = 0;
        let next = 0;
        while (index < node.count) {
          if (rows.length >= count) return -1;
          while (next < expanded.length && expanded[next] < index) next += 1;
          const plainUntil = next < expanded.length ? expanded[next] : node.count;
          const plain = plainUntil - index;
          if (skip >= plain) { skip -= plain; index = plainUntil; } else {
            index += skip;
            skip = 0;
            while (index < plainUntil && rows.length < count) rows.push({ parent: node, index: index++ });
            if (rows.length >= count) return -1;
          }
          if (index < node.count && index === plainUntil) {
            const elementNode = node.elementNodes.get(index);
            const size = elementNode.size;
            if (skip >= size) skip -= size;
            else {
              skip = visit(elementNode, skip);
              if (skip < 0) return -1;
            }
            index += 1;
          }
        }
        return skip;
      }
      return skip;
    };
    if (this.root) visit(this.root, start);
    return rows;
  },

  /** Renders the visible rows on the next frame. */
  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => { this.renderQueued = false; this.render(); });
  },

  render() {
    const started = performance.now();
    const box = $("tree");
    const total = this.root ? this.root.size : 0;
    $("tree-spacer").style.height = `${total * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(box.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const visible = Math.ceil((box.clientHeight || 400) / ROW_HEIGHT) + 2 * OVERSCAN;
    const rows = this.rows(first, visible);
    const rowsBox = $("tree-rows");
    rowsBox.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    const now = Date.now();
    // A row that shows the same as before keeps its element (a click in progress, focus and selection survive).
    const previous = this.rowElements ?? new Map();
    this.rowElements = new Map();
    const elements = rows.map((row, offset) => {
      const fresh = this.renderRow(row, first + offset, now);
      const key = `${fresh.dataset.path ?? ""}|${fresh.dataset.index ?? ""}|${fresh.dataset.row ?? ""}`;
      const signature = `${fresh.className}|${fresh.getAttribute("aria-expanded")}|${fresh.textContent}|${fresh.style.cssText}`;
      const old = previous.get(key);
      const kept = old && old.signature === signature ? old.element : fresh;
      this.rowElements.set(key, { element: kept, signature });
      return kept;
    });
    const current = rowsBox.children;
    if (current.length !== elements.length || elements.some((element, index) => current[index] !== element)) {
      rowsBox.replaceChildren(...elements);
    }
    box.dataset.rows = String(total);
    this.lastRenderMs = performance.now() - started;
    box.dataset.renderMs = this.lastRenderMs.toFixed(1);
    this.load(rows);
    clearTimeout(this.syncTimer);
    this.syncTimer = setTimeout(() => this.syncObserved(), 150);
  },

  renderRow(row, rowIndex, now) {
    if (row.loading) {
      return element("div", { className: "tree-row loading", text: "loading…", attributes: { style: `padding-left:${row.depth * 16 + 20}px` } });
    }
    if (row.parent) return this.renderElementRow(row.parent, row.index, rowIndex, now);
    const node = row.node;
    if (node.elementOf) return this.renderElementRow(node.elementOf.parent, node.elementOf.index, rowIndex, now);
    const line = element("div", {
      className: `tree-row ${node.kind}${node.flashUntil > now ? " changed" : ""}`,
      attributes: {
        "data-testid": "tree-row", "data-path": node.path, "data-kind": node.kind, role: "treeitem", "aria-level": String(node.depth + 1),
        "data-row": String(rowIndex), style: `padding-left:${node.depth * 16}px`,
      },
    });
    const expandable = node.kind === "object" || node.kind === "collection";
    if (expandable) line.setAttribute("aria-expanded", String(node.expanded));
    line.append(this.toggle(node, expandable));
    const name = element("button", { className: "key", text: node.label, attributes: { type: "button", title: `browse ${node.path || "(root)"}` } });
    name.addEventListener("click", () => void this.browse(node.path));
    line.append(name);
    if (node.kind === "object") {
      const description = node.description;
      line.append(element("span", { className: "type", text: description ? `${description.className} $${description.id}` : node.hint ?? "object" }));
    } else if (node.kind === "collection") {
      line.append(element("span", { className: "type", text: `${node.hint ?? ""}` }),
        element("span", { className: "count", text: node.count === undefined ? "" : `${node.count.toLocaleString("en")} ${node.setLike ? "members" : "elements"}` }));
    } else {
      if (node.hint) line.append(element("span", { className: "type", text: node.hint.length > 40 ? node.hint.slice(0, 39) + "…" : node.hint, attributes: { title: node.hint } }));
      line.append(element("span", { className: "current" }, node.error ? element("span", { className: "error", text: node.error }) : this.valueView(node.value)));
    }
    if (node.path !== "") line.append(this.actions(node));
    return line;
  },

  /** An element row of a to-many: its index, and its value (an object: its id and a preview; expandable). */
  renderElementRow(parent, index, rowIndex, now) {
    const page = parent.pages.get(Math.floor(index / PAGE_SIZE));
    const value = page ? page[index % PAGE_SIZE] : undefined;
    const id = objectID(value);
    const elementNode = parent.elementNodes.get(index);
    const flashed = (parent.flashIndexes.get(index) ?? 0) > now;
    const line = element("div", {
      className: `tree-row element${flashed ? " changed" : ""}`,
      attributes: {
        "data-testid": "tree-row", "data-path": parent.path, "data-index": String(index), "data-kind": "element", role: "treeitem",
        "data-row": String(rowIndex), style: `padding-left:${(parent.depth + 1) * 16}px`,
      },
    });
    if (id !== undefined) {
      const node = elementNode ?? new TreeNode(`$${id}`, `[${index}]`, parent.depth + 1, "object");
      node.elementOf = { parent, index };
      line.setAttribute("aria-expanded", String(node.expanded));
      line.append(this.toggle(node, true, () => {
        if (node.expanded) parent.elementNodes.set(index, node); else parent.elementNodes.delete(index);
        this.byPath.set(node.path, node);
      }));
      line.append(element("span", { className: "index", text: `[${index}]` }), " ");
      const link = element("button", { className: "ref", text: `$${id}`, attributes: { type: "button", title: `browse object ${id}` } });
      link.addEventListener("click", () => void this.browse(`$${id}`));
      line.append(link, " ", this.valueView(value, true));
    } else {
      line.append(element("span", { className: "toggle-space" }), element("span", { className: "index", text: `[${index}]` }), " ",
        value === undefined && !page ? element("span", { className: "absent", text: "…" }) : this.valueView(value));
    }
    return line;
  },

  toggle(node, expandable, after) {
    if (!expandable) return element("span", { className: "toggle-space" });
    const button = element("button", {
      className: "toggle", text: node.expanded ? "▾" : "▸",
      attributes: { type: "button", "aria-label": `${node.expanded ? "collapse" : "expand"} ${node.path || "(root)"}`, "data-testid": "toggle" },
    });
    button.addEventListener("click", () => {
      node.expanded = !node.expanded;
      after?.();
      this.render();
    });
    return button;
  },

  /** A value in a row: objects as their id and first keys (a preview), others as compact JSON. */
  valueView(value, preview = false) {
    if (isObjectValue(value) && ("$id" in value || "$ref" in value)) {
      if ("$ref" in value && !preview) {
        const link = element("button", { className: "ref", text: `→ $${value.$ref}`, attributes: { type: "button", title: `browse object ${value.$ref}` } });
        link.addEventListener("click", () => void this.browse(`$${value.$ref}`));
        return link;
      }
      const entries = Object.entries(value).filter(([key]) => key !== "$id" && key !== "$ref").slice(0, 4)
        .map(([key, child]) => `${key}: ${isObjectValue(child) ? "{…}" : Array.isArray(child) ? `[${child.length}]` : JSON.stringify(child)}`);
      return element("span", { className: "preview", text: entries.length ? `{${entries.join(", ")}${Object.keys(value).length > 5 ? ", …" : ""}}` : "" });
    }
    return shown(value, 120);
  },

  /** "watch" and "set" fill those forms with the row's path. */
  actions(node) {
    const box = element("span", { className: "actions" });
    const watchButton = element("button", { className: "small", text: "watch", attributes: { type: "button", "aria-label": `watch ${node.path}` } });
    watchButton.addEventListener("click", () => { $("subscribe-path").value = node.path; $("subscribe-path").focus(); });
    box.append(watchButton);
    if (!node.computed && node.path !== "") {
      const setButton = element("button", { className: "small", text: "set", attributes: { type: "button", "aria-label": `set ${node.path}` } });
      setButton.addEventListener("click", () => {
        $("set-path").value = node.path;
        const value = node.value;
        $("set-value").value = node.kind === "value" && value !== undefined
          ? (objectID(value) !== undefined ? JSON.stringify({ $ref: objectID(value) }) : JSON.stringify(value)) : "";
        $("set-value").focus();
      });
      box.append(setButton);
    }
    return box;
  },

  /** Reads what the rendered rows show and is not known yet: values, descriptions, counts, pages. */
  load(rows) {
    const client = connection.client;
    if (!client) return;
    const generation = connection.generation;
    const once = (key, work) => {
      if (this.loading.has(key)) return;
      this.loading.add(key);
      work().catch((error) => this.failed(key, error)).finally(() => {
        this.loading.delete(key);
        if (generation === connection.generation) this.scheduleRender();
      });
    };
    for (const row of rows) {
      const node = row.node ?? row.loading;
      if (row.parent) {
        const page = Math.floor(row.index / PAGE_SIZE);
        if (!row.parent.pages.has(page) || row.parent.stale) once(`page ${row.parent.path} ${page}`, () => this.readPage(row.parent, page, client));
        continue;
      }
      if (!node) continue;
      if (node.kind === "object" && (!node.description || (node.expanded && !node.children))) {
        once(`describe ${node.path}`, () => this.describe(node, client));
      } else if (node.kind === "collection" && (node.count === undefined || node.stale || (node.expanded && !node.pages.has(0)))) {
        once(`page ${node.path} 0`, () => this.readPage(node, 0, client));
      } else if (node.kind === "value" && node.value === undefined && !node.error) {
        once(`get ${node.path}`, async () => { node.value = await client.get(node.path); });
      } else if (node.kind === "unknown") {
        once(`resolve ${node.path}`, () => this.resolve(node, client));
      }
    }
  },

  failed(key, error) {
    if (error instanceof kvod.ConnectionLost || error instanceof kvod.Timeout) return;
    const path = key.split(" ")[1];
    const node = this.byPath.get(path);
    if (node) {
      // A key that changed type under us (an object set to a number): read it again as whatever it is now.
      if (error instanceof kvod.TypeMismatch) { node.kind = "unknown"; node.expanded = false; return; }
      node.error = describeError(error).message;
    }
  },

  /** Observes what the tree shows: every rendered node's path (values with `new`), and the to-manys of rendered
   * elements; stops observing what scrolled out or collapsed. */
  syncObserved() {
    const client = connection.client;
    if (!client || !this.root) return;
    const box = $("tree");
    const first = Math.max(0, Math.floor(box.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const rows = this.rows(first, Math.ceil((box.clientHeight || 400) / ROW_HEIGHT) + 2 * OVERSCAN);
    const wanted = new Map();
    for (const row of rows) {
      if (row.parent) wanted.set(row.parent.path, row.parent);
      // An object reached by its id (`$12`) stays that object: its keys are observed, not the object itself.
      else if (row.node && row.node.kind !== "unknown" && !/^\$\d+$/.test(row.node.path)) wanted.set(row.node.path, row.node);
    }
    if (this.root.path !== "") wanted.set(this.root.path, this.root);
    wanted.delete("");
    for (const [path, entry] of this.observed) {
      if (!wanted.has(path)) this.unobserve(path, entry);
    }
    for (const [path, node] of wanted) {
      // `initial`: kvod follows the response with the current state, so a change made between the first read and
      // this subscription is not missed.
      if (!this.observed.has(path)) this.observe(path, node.kind === "value" ? ["new", "initial"] : ["initial"], client);
    }
    $("tree").dataset.observed = String(this.observed.size);
  },

  observe(path, options, client) {
    const entry = { options, subscription: undefined, stopped: false };
    this.observed.set(path, entry);
    void (async () => {
      try {
        entry.subscription = await client.subscribe(path, { options });
      } catch {
        this.observed.delete(path);
        return;
      }
      if (entry.stopped) { void entry.subscription.unsubscribe(); return; }
      try {
        for await (const change of entry.subscription) this.changed(path, change);
      } catch {
        // ended by kvod (a resume it refused): nothing to show in the tree
      }
    })();
  },

  unobserve(path, entry) {
    entry.stopped = true;
    this.observed.delete(path);
    if (entry.subscription) void entry.subscription.unsubscribe().catch(() => {});
  },

  /** A notification for a path the tree shows: update it in place and highlight it. */
  changed(path, change) {
    if (change.type !== "change" || change.prior) return;
    const node = this.byPath.get(path);
    if (!node) return;
    const now = Date.now();
    if (change.initial) {
      // The state when the subscription started: news only if it differs from what was read before.
      if (node.kind === "value" && JSON.stringify(change.new) !== JSON.stringify(node.value)) {
        node.value = change.new;
        if (isObjectValue(change.new)) node.kind = "unknown";
        this.scheduleRender();
      } else if (node.kind === "collection" && (node.readSeq === undefined || change.seq > node.readSeq)) {
        node.stale = true;
        this.scheduleRender();
      }
      return;
    }
    if (node.kind === "value") {
      if ("new" in change) {
        if (isObjectValue(change.new) || (Array.isArray(change.new) && !node.computed)) {
          node.kind = "unknown"; // became an object or a collection: read it again
        } else {
          node.value = change.new;
        }
      } else node.value = undefined;
      node.flashUntil = now + FLASH_MS;
    } else if (node.kind === "collection") {
      // Read the visible pages again (and the count with them); until then the old ones stay on screen.
      node.stale = true;
      if (change.kind !== "replacement") node.elementNodes.clear();
      if (change.indexes && change.kind !== "removal") for (const index of change.indexes) node.flashIndexes.set(index, now + FLASH_MS);
      if (change.kind !== "replacement") node.flashUntil = now + FLASH_MS;
    } else if (node.kind === "object") {
      // The object at the path was replaced (or set to something else): read it again.
      node.description = undefined;
      node.children = undefined;
      node.kind = "unknown";
      node.flashUntil = now + FLASH_MS;
    }
    this.scheduleRender();
    setTimeout(() => this.scheduleRender(), FLASH_MS + 50);
  },

  /** The connection ended: forget the subscriptions (kvod dropped them), keep what is shown. */
  disconnected() {
    for (const entry of this.observed.values()) entry.stopped = true;
    this.observed.clear();
    this.loading.clear();
  },

  /** A new connection: what is shown may be stale; read the visible part again and observe it. */
  async reconnected() {
    if (!this.root) return this.browse($("browse-path").value.trim());
    const forget = (node) => {
      if (node.kind === "collection") { node.pages.clear(); node.stale = true; }
      if (node.kind === "value") node.value = undefined;
      if (node.kind === "object") node.description = undefined;
      node.error = undefined;
      for (const child of node.children ?? []) forget(child);
      for (const child of node.elementNodes.values()) forget(child);
    };
    forget(this.root);
    this.render();
  },
};

$("tree").addEventListener("scroll", () => tree.scheduleRender(), { passive: true });
new ResizeObserver(() => tree.scheduleRender()).observe($("tree"));

// MARK: - Key path completion

/** Completes the key path being typed from the model (describe) and the object's own keys (open classes). */
const completion = {
  model: undefined,
  items: [],
  selected: -1,

  async suggestions(text) {
    const client = connection.client;
    if (!client) return [];
    this.model ??= await client.describe();
    const dot = text.lastIndexOf(".");
    const prefix = dot < 0 ? "" : text.slice(0, dot);
    const partial = text.slice(dot + 1);
    const keys = new Set();
    // The declared keys: walk the model's classes along the path (a to-many's element class past `[Class]`).
    let className = prefix.startsWith("$") ? undefined : this.model.root;
    for (const key of prefix === "" ? [] : prefix.split(".")) {
      if (key.startsWith("$")) { className = undefined; break; }
      const property = this.model.classes?.[className]?.properties?.[key];
      const type = property?.type ?? "";
      const match = /^\[?([A-Z]\w*)\]?$/.exec(type);
      className = match ? match[1] : undefined;
      if (type.startsWith("[") || type.startsWith("set<")) ["@count", "@sum", "@avg", "@min", "@max"].forEach((op) => keys.add(op));
      if (!className) break;
    }
    for (const key of Object.keys(this.model.classes?.[className]?.properties ?? {})) keys.add(key);
    // The keys the object really has (open classes, `$id` paths).
    const description = await client.describe(prefix).catch(() => undefined);
    for (const key of Object.keys(description?.keys ?? {})) keys.add(key);
    return [...keys].filter((key) => key.startsWith(partial)).sort().slice(0, 50).map((key) => childPath(prefix, key));
  },

  async update() {
    const input = $("browse-path");
    const text = input.value;
    const items = await this.suggestions(text).catch(() => []);
    if (input.value !== text) return;
    this.items = items.filter((item) => item !== text);
    this.selected = -1;
    this.show();
  },

  show() {
    const list = $("completions");
    list.replaceChildren(...this.items.map((item, index) => {
      const option = element("li", { text: item, attributes: { role: "option", "data-testid": "completion", "aria-selected": String(index === this.selected) } });
      option.addEventListener("mousedown", (event) => { event.preventDefault(); this.accept(item); });
      return option;
    }));
    list.hidden = this.items.length === 0;
    $("browse-path").setAttribute("aria-expanded", String(!list.hidden));
  },

  accept(item) {
    $("browse-path").value = item;
    this.items = [];
    this.show();
    $("browse-path").focus();
    void this.update();
  },

  key(event) {
    if ($("completions").hidden) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.selected = (this.selected + step + this.items.length) % this.items.length;
      this.show();
    } else if ((event.key === "Tab" || event.key === "Enter") && this.items.length > 0 && (this.selected >= 0 || event.key === "Tab")) {
      event.preventDefault();
      this.accept(this.items[Math.max(this.selected, 0)]);
    } else if (event.key === "Escape") {
      this.items = [];
      this.show();
    }
  },
};

$("browse-path").addEventListener("input", () => void completion.update());
$("browse-path").addEventListener("focus", () => void completion.update());
$("browse-path").addEventListener("keydown", (event) => completion.key(event));
$("browse-path").addEventListener("blur", () => setTimeout(() => { completion.items = []; completion.show(); }, 100));

// MARK: - Watch

/** The user's subscriptions: resumed with `since` on every new connection, logged as notifications arrive. */
const watch = {
  entries: [],

  async add(path, options) {
    $("subscribe-error").hidden = true;
    const client = connection.client;
    let subscription;
    try {
      subscription = await client.subscribe(path, { options });
    } catch (error) {
      showError($("subscribe-error"), error);
      return;
    }
    const entry = { path, options, subscription, lastSeq: subscription.lastSeq, stopped: false };
    const current = element("span", { className: "current", attributes: { "data-testid": "current-value" } }, shown(undefined));
    const stop = element("button", { className: "small", text: "unsubscribe", attributes: { type: "button" } });
    const state = element("span", { className: "muted sub-state" });
    entry.item = element("li", { attributes: { "data-testid": "subscription", "data-path": path, "data-id": String(subscription.id) } },
      element("code", { text: path }), " ", state, " value: ", current, " ", stop);
    entry.current = current;
    entry.state = state;
    this.describe(entry, `since seq ${subscription.seq}`);
    stop.addEventListener("click", async () => {
      entry.stopped = true;
      this.entries.splice(this.entries.indexOf(entry), 1);
      entry.item.remove();
      await entry.subscription?.unsubscribe().catch(() => {});
    });
    $("subscriptions").append(entry.item);
    this.entries.push(entry);
    void this.consume(entry, subscription);
  },

  describe(entry, note) {
    entry.state.textContent = `#${entry.subscription?.id ?? "–"} [${entry.options.join(", ") || "no options"}] ${note}`;
    entry.item.dataset.id = String(entry.subscription?.id ?? "");
  },

  async consume(entry, subscription) {
    try {
      for await (const change of subscription) {
        logChange(change, subscription.id);
        if (change.type === "change" && !change.prior && "new" in change && change.kind === "setting") {
          entry.current.replaceChildren(shown(change.new));
        }
      }
    } catch (error) {
      logChange({ type: "resync", path: entry.path, seq: "", since: describeError(error).message }, subscription.id);
    }
    if (entry.subscription === subscription) entry.lastSeq = subscription.lastSeq;
  },

  /** On a new connection: subscribe again from the last seq seen (kvod replays what was missed), or log a resync
   * when kvod cannot replay that far (it restarted without its data, or the history is gone). */
  async resumeAll(client) {
    for (const entry of this.entries) {
      if (entry.stopped) continue;
      const since = entry.subscription?.lastSeq ?? entry.lastSeq;
      const options = entry.options.filter((option) => option !== "initial");
      let subscription;
      try {
        subscription = await client.subscribe(entry.path, since === undefined ? { options: entry.options } : { options, since });
        this.describe(entry, `resumed from seq ${since}`);
      } catch (error) {
        if (!(error instanceof kvod.ResyncRequired)) { this.describe(entry, `not resumed: ${describeError(error).message}`); continue; }
        logChange({ type: "resync", path: entry.path, seq: error.data?.oldest ?? "", since }, undefined);
        // What it is now, as an `initial` notification, since what happened in between cannot be replayed.
        const now = entry.options.includes("new") && !entry.options.includes("initial") ? [...entry.options, "initial"] : entry.options;
        subscription = await client.subscribe(entry.path, { options: now }).catch(() => undefined);
        if (!subscription) continue;
        this.describe(entry, `resynced at seq ${subscription.seq} (missed since ${since})`);
      }
      entry.subscription = subscription;
      void this.consume(entry, subscription);
    }
  },
};

/** Adds one notification (or resync) to the top of the log. */
function logChange(change, id) {
  const note = change.type === "resync" ? `resync: missed since ${change.since}` : change.prior ? "prior" : change.initial ? "initial" : "";
  const transition = element("span", { className: "transition" });
  if (change.type === "change") {
    transition.append(element("span", { className: "old" }, shown(change.old, 60)), " → ",
      element("span", { className: "new" }, change.prior ? element("span", { className: "absent", text: "(about to change)" }) : shown(change.new, 60)));
  }
  const indexes = change.indexes ? indexRanges(change.indexes) : undefined;
  const indexCell = element("td", { className: "indexes", text: indexes ? indexes.text : "" });
  if (indexes) {
    indexCell.title = `${indexes.count.toLocaleString("en")} indexes: ${indexes.full.length > 2000 ? indexes.full.slice(0, 1999) + "…" : indexes.full}`;
    indexCell.dataset.count = String(indexes.count);
  }
  const kind = change.kind ?? change.type;
  const row = element("tr", {
    className: change.prior ? "prior" : change.initial ? "initial" : "",
    attributes: {
      "data-testid": "notification", "data-seq": String(change.seq), "data-path": change.path,
      "data-kind": kind, "data-prior": String(change.prior === true),
    },
  },
  element("td", { className: "seq", text: String(change.seq) }),
  element("td", { text: id === undefined ? "" : `#${id}` }),
  element("td", {}, element("code", { text: change.path })),
  element("td", { className: "kind", text: kind }),
  element("td", {}, transition),
  indexCell,
  element("td", { className: "note", text: note }));
  row.hidden = !logFilter.matches(row);
  $("log-body").prepend(row);
  while ($("log-body").rows.length > MAX_LOG_ROWS) $("log-body").lastElementChild.remove();
  logFilter.count();
}

/** The log's filter: rows whose path contains the text and whose kind is the one chosen. */
const logFilter = {
  matches(row) {
    const text = $("log-path").value.trim();
    const kind = $("log-kind").value;
    return (!text || row.dataset.path.includes(text)) && (!kind || row.dataset.kind === kind);
  },
  apply() {
    for (const row of $("log-body").rows) row.hidden = !this.matches(row);
    this.count();
  },
  count() {
    const rows = $("log-body").rows;
    const shownRows = [...rows].filter((row) => !row.hidden).length;
    $("log-count").textContent = shownRows === rows.length ? `${rows.length}` : `${shownRows} of ${rows.length}`;
  },
};

for (const event of ["input", "change"]) $("log-path").addEventListener(event, () => logFilter.apply());
$("log-kind").addEventListener("change", () => logFilter.apply());

// MARK: - Query

/** "-score, name" → [{key: "score", ascending: false}, {key: "name", ascending: true}] (a leading "+" is ascending too);
 * empty: undefined (the collection's own order). */
function parseOrderBy(text) {
  const descriptors = text.split(",").map((part) => part.trim()).filter((part) => part !== "").map((part) => {
    const key = part.replace(/^[-+]\s*/, "");
    if (key === "") throw new Error(`order by: "${part}" names no key`);
    return { key, ascending: !part.startsWith("-") };
  });
  return descriptors.length ? descriptors : undefined;
}

/** A whole number from 0 typed in a field; undefined when the field is empty. */
function parseWhole(text, name) {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  if (!/^\d+$/.test(trimmed)) throw new Error(`${name}: a whole number from 0, not "${trimmed}"`);
  return Number(trimmed);
}

/** What a row of a query's window is, across changes: an object by its `$id`, any other element by its value. */
function rowIdentity(row) {
  return isObjectValue(row) && row.$id !== undefined ? `$${row.$id}` : `=${JSON.stringify(row)}`;
}

/** The query panel: one live query (`client.liveQuery`: a `subscribe` with `query`, Protocol/methods.md#queries) shown
 * as a table of its window, kept up to date by the notifications; the rows an insertion or a replacement brought
 * highlighted. It follows the page's connection: on each new connection it is started again (kvod sends the window
 * again as a setting; the rows that differ from what was shown are highlighted). */
const query = {
  /** What was run: {path, where, orderBy, offset, limit, select}; null when stopped (or refused). */
  spec: null,
  /** The spec of the table shown (it stays after a stop). */
  shownSpec: null,
  /** The LiveQuery following kvod, or null. */
  live: null,
  /** Bumped on every start and stop: a start that resolves after a newer one (or a stop) is closed unused. */
  generation: 0,
  /** True until the first window of a run is shown: nothing is highlighted in it. */
  fresh: true,
  /** The rows shown, to tell what a later whole-window setting changed. */
  shownRows: [],
  /** Row identity → when its highlight started (performance.now()). */
  flashes: new Map(),
  fadeTimer: undefined,

  /** The query in the form, or an Error saying what is wrong with it. */
  read() {
    const path = $("query-path").value.trim();
    if (path === "") throw new Error("the collection's key path is empty");
    const where = $("query-where").value.trim();
    const select = $("query-select").value.split(",").map((key) => key.trim()).filter((key) => key !== "");
    return {
      path,
      where: where === "" ? undefined : where,
      orderBy: parseOrderBy($("query-order").value),
      offset: parseWhole($("query-offset").value, "offset"),
      limit: parseWhole($("query-limit").value, "limit"),
      select: select.length ? select : undefined,
    };
  },

  /** Run: stops the query shown, if any, and starts the one in the form. */
  async run() {
    let spec;
    try {
      spec = this.read();
    } catch (error) {
      showError($("query-error"), error); // what runs (if anything) goes on
      return;
    }
    this.end();
    this.spec = spec;
    this.fresh = true;
    this.flashes.clear();
    $("query-stop").disabled = false;
    await this.start(connection.client, false);
  },

  /** Starts `this.spec` on `client`. */
  async start(client, resumed) {
    const generation = ++this.generation;
    const spec = this.spec;
    if (!spec || !client) return;
    $("query-error").hidden = true;
    this.setState("starting", resumed ? "subscribing again after the reconnection…" : "subscribing…");
    let live;
    try {
      live = await client.liveQuery(spec.path, {
        where: spec.where, orderBy: spec.orderBy, offset: spec.offset, limit: spec.limit, select: spec.select,
      });
    } catch (error) {
      // A newer run or a stop came meanwhile; or the connection ended: the next one starts the query again.
      if (generation !== this.generation || connection.client !== client) return;
      this.spec = null;
      $("query-stop").disabled = true;
      this.fail(error, spec);
      return;
    }
    if (generation !== this.generation || connection.client !== client) {
      void live.close().catch(() => {});
      return;
    }
    this.live = live;
    live.onChange((change) => { if (this.live === live) this.changed(live, spec, change); });
    // The window stops following when kvod ends the subscription or a notification does not fit: say so.
    live.waitFor((q) => q.closed, 2 ** 31 - 1).catch((error) => {
      if (this.live !== live || error instanceof kvod.Timeout) return;
      this.end();
      this.spec = null;
      $("query-stop").disabled = true;
      this.fail(error, spec);
    });
  },

  /** One change of the window: highlight what came in or changed, then show the window. */
  changed(live, spec, change) {
    const rows = live.rows;
    const now = performance.now();
    if (change.kind === "insertion" || change.kind === "replacement") {
      for (const index of change.indexes ?? []) this.flashes.set(rowIdentity(rows[index]), now);
    } else if (change.kind === "setting" && !this.fresh) {
      const before = new Map(this.shownRows.map((row) => [rowIdentity(row), JSON.stringify(row)]));
      for (const row of rows) if (before.get(rowIdentity(row)) !== JSON.stringify(row)) this.flashes.set(rowIdentity(row), now);
    }
    this.fresh = false;
    this.render(spec, rows, change.count, change.seq);
    this.setState("live", `live at seq ${change.seq}`);
  },

  /** The window as a table: `$id` first, then the selected keys (or every key the rows have), a row per element. */
  render(spec, rows, count, seq) {
    this.shownSpec = spec;
    this.shownRows = rows;
    const columns = spec.select ? ["$id", ...spec.select] : [];
    let scalars = false;
    if (!spec.select) {
      const keys = new Set();
      for (const row of rows) {
        if (isObjectValue(row)) for (const key of Object.keys(row)) keys.add(key);
        else scalars = true;
      }
      if (keys.has("$id")) columns.push("$id");
      for (const key of keys) if (key !== "$id") columns.push(key);
    } else {
      scalars = rows.some((row) => !isObjectValue(row));
    }
    if (scalars) columns.push("(element)");
    $("query-head").replaceChildren(...columns.map((column) => element("th", { text: column, attributes: { scope: "col" } })));

    const now = performance.now();
    for (const [identity, started] of this.flashes) if (now - started >= FLASH_MS) this.flashes.delete(identity);
    $("query-body").replaceChildren(...rows.map((row, index) => {
      const identity = rowIdentity(row);
      const started = this.flashes.get(identity);
      const attributes = { "data-testid": "query-row", "data-index": String(index) };
      if (isObjectValue(row) && row.$id !== undefined) attributes["data-id"] = String(row.$id);
      // A row drawn again while it is highlighted continues its fade rather than starting it over.
      if (started !== undefined) attributes.style = `animation-delay: -${Math.round(now - started)}ms`;
      const tr = element("tr", { className: started !== undefined ? "changed" : "", attributes });
      for (const column of columns) {
        const value = column === "(element)" ? (isObjectValue(row) ? undefined : row) : isObjectValue(row) ? row[column] : undefined;
        const cell = element("td", { attributes: { "data-key": column } });
        if (column === "$id" && value !== undefined) {
          cell.className = "id";
          cell.textContent = `$${value}`;
        } else {
          cell.append(shown(value, 80));
        }
        if (value !== undefined) cell.dataset.json = JSON.stringify(value);
        tr.append(cell);
      }
      return tr;
    }));
    if (this.flashes.size) {
      clearTimeout(this.fadeTimer);
      this.fadeTimer = setTimeout(() => { if (this.shownSpec) this.render(this.shownSpec, this.shownRows, count, seq); }, FLASH_MS + 50);
    }

    const offset = spec.offset ?? 0;
    const matches = `${count.toLocaleString("en")} ${count === 1 ? "match" : "matches"}`;
    const caption = $("query-caption");
    caption.textContent = rows.length
      ? `rows ${(offset + 1).toLocaleString("en")}–${(offset + rows.length).toLocaleString("en")} of ${matches}`
      : `no rows${offset > 0 && count > 0 ? ` from ${(offset + 1).toLocaleString("en")}` : ""} of ${matches}`;
    caption.dataset.count = String(count);
    caption.dataset.seq = String(seq);
    $("query-table").dataset.columns = String(columns.length);
  },

  /** Shows an error inline; a predicate that does not parse (1013) also shows where, with a caret under its column. */
  fail(error, spec) {
    this.setState("error", "not running");
    showError($("query-error"), error);
    const column = error instanceof kvod.KvodError ? error.data?.column : undefined;
    if (Number.isInteger(column) && column >= 1 && spec?.where !== undefined) {
      $("query-error").append(element("span", { className: "caret", text: `${spec.where}\n${" ".repeat(column - 1)}^ ${error.data.reason ?? ""}` }));
    }
  },

  setState(state, text) {
    $("query-table").dataset.state = state;
    $("query-state").textContent = text;
  },

  /** Closes the live query that follows kvod, if any (the table stays as it is). */
  end() {
    this.generation += 1;
    const live = this.live;
    this.live = null;
    void live?.close().catch(() => {});
  },

  /** Stop: the table stays as it was; the query is not started again on a new connection. */
  stop() {
    const running = this.spec !== null;
    this.end();
    this.spec = null;
    $("query-stop").disabled = true;
    if (running) this.setState("stopped", this.shownSpec ? "stopped: the table no longer follows kvod" : "stopped");
  },

  /** The connection ended: the live query ended with it; it starts again on the next connection. */
  disconnected() {
    if (!this.spec) return;
    this.end();
    this.setState("reconnecting", "the connection ended: the query starts again once the page reconnects");
  },

  /** A new connection: the old LiveQuery ended with its client; start the query again on this one. */
  async reconnected(client) {
    if (!this.spec) return;
    this.end();
    await this.start(client, true);
  },
};

$("query-form").addEventListener("submit", whenConnected(() => void query.run()));
$("query-stop").addEventListener("click", () => query.stop());

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
    const answer = await connection.client.call("set", { path, value });
    result.className = "ok";
    result.replaceChildren(element("span", { text: "set at seq " }), element("span", { className: "seq", text: String(answer.seq) }),
      "value" in answer ? element("span", { text: "; stored " }) : null, "value" in answer ? shown(answer.value) : null);
  } catch (error) {
    result.className = "error";
    showError(result, error);
  }
}

// MARK: - Stats and charts

/** A line chart of the last samples, plain SVG: the series, its latest value and its maximum. */
function drawChart(container, { name, label, unit, points, format }) {
  let figure = container.querySelector(`figure[data-chart="${name}"]`);
  if (!figure) {
    figure = element("figure", { className: "chart", attributes: { "data-chart": name, "data-testid": "chart" } });
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 300 60");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    const area = document.createElementNS("http://www.w3.org/2000/svg", "polygon");
    area.setAttribute("class", "area");
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("class", "line");
    svg.append(area, line);
    figure.append(element("figcaption", {}, element("span", { className: "chart-label", text: label }),
      element("span", { className: "chart-value" }), element("span", { className: "chart-max muted" })), svg);
    container.append(figure);
  }
  const values = points.filter((value) => Number.isFinite(value));
  const max = Math.max(1e-9, ...values);
  const step = 300 / (HISTORY - 1);
  const offset = HISTORY - points.length;
  const coordinates = points.map((value, index) => `${((offset + index) * step).toFixed(1)},${(58 - (Number.isFinite(value) ? value / max : 0) * 54).toFixed(1)}`);
  figure.querySelector("polyline").setAttribute("points", coordinates.join(" "));
  figure.querySelector("polygon").setAttribute("points", coordinates.length ? `${(offset * step).toFixed(1)},60 ${coordinates.join(" ")} 300,60` : "");
  const last = values.length ? values[values.length - 1] : undefined;
  const show = format ?? ((value) => (value >= 100 ? Math.round(value).toLocaleString("en") : value.toFixed(value >= 10 ? 1 : 2)));
  figure.querySelector(".chart-value").textContent = last === undefined ? "–" : `${show(last)}${unit}`;
  figure.dataset.value = last === undefined ? "" : String(last);
  figure.dataset.samples = String(values.length);
  figure.querySelector(".chart-max").textContent = values.length ? `max ${show(Math.max(...values))}${unit}` : "";
}

const CHARTS = [
  { name: "requests", label: "requests/s", unit: "", rate: true },
  { name: "notifications", label: "notifications/s", unit: "", rate: true },
  { name: "connections", label: "connections", unit: "", format: (value) => Math.round(value).toLocaleString("en") },
  { name: "subscriptions", label: "subscriptions", unit: "", format: (value) => Math.round(value).toLocaleString("en") },
  { name: "latency", label: "latency (stats round trip)", unit: " ms" },
  // kvod's own figure: how late its 250 ms tick fired, at most, over the last second (the loop busy that long).
  { name: "loopLag", label: "loop lag", unit: " ms", read: (figures) => (figures.loopLagSeconds ?? 0) * 1000 },
];

const stats = {
  samples: [],
  timer: undefined,

  /** Reads `stats` (and, in a cluster, `hello`), adds a sample and redraws. */
  async sample() {
    const client = connection.client;
    if (!client) return this.draw();
    const started = performance.now();
    let figures;
    try {
      figures = await client.stats();
    } catch (error) {
      // No answer within the timeout on an open connection: it is dead even if the socket did not say so.
      if (error instanceof kvod.Timeout && connection.client === client) lost(client, "kvod stopped answering");
      return;
    }
    const latency = performance.now() - started;
    const previous = this.samples[this.samples.length - 1];
    const now = performance.now();
    const sample = { time: now, latency, figures };
    if (previous && previous.figures.uptimeSeconds <= figures.uptimeSeconds) {
      const seconds = (now - previous.time) / 1000;
      sample.requests = Math.max(0, (figures.requests - previous.figures.requests) / seconds);
      sample.notifications = Math.max(0, (figures.notifications - previous.figures.notifications) / seconds);
    }
    this.samples.push(sample);
    if (this.samples.length > HISTORY) this.samples.shift();
    showFigures(figures);
    cluster.sample(figures);
    this.draw();
  },

  draw() {
    for (const chart of CHARTS) {
      const points = this.samples.map((sample) =>
        chart.rate ? sample[chart.name]
          : chart.name === "latency" ? sample.latency
          : chart.read ? chart.read(sample.figures) : sample.figures[chart.name]);
      drawChart($("charts"), { ...chart, points: chart.rate ? points.filter((value) => value !== undefined) : points });
    }
  },

  start() {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.sample(), 1000);
  },
};

function showFigures(figures) {
  const view = $("stats-view");
  view.replaceChildren();
  for (const [key, value] of Object.entries(figures)) {
    if (key === "cluster") continue; // its own table and charts
    const text = value !== null && typeof value === "object"
      ? Object.entries(value).map(([name, count]) => `${name} ${count}`).join(", ") : String(value);
    view.append(element("dt", { text: key }), element("dd", { text, attributes: { "data-stat": key } }));
  }
}

/** In a cluster, `stats` has this member's part (role, term, applied seq, lag) and, on a leader, each follower's lag:
 * a row per member and charts of the applied seq and of each member's lag. */
const cluster = {
  samples: [],

  sample(figures) {
    const member = figures.cluster;
    if (!member) { $("cluster").hidden = true; return; }
    $("cluster").hidden = false;
    const lags = { [member.advertise]: member.role === "leader" ? 0 : member.lag };
    for (const follower of member.followers) lags[follower.address] = follower.lag;
    this.samples.push({ seq: member.appliedSeq, lags });
    if (this.samples.length > HISTORY) this.samples.shift();
    const cell = (text) => element("td", { text: text === undefined || text === null ? "–" : String(text) });
    const rows = [element("tr", { attributes: { "data-testid": "cluster-member", "data-role": member.role, "data-address": member.advertise } },
      cell(`${member.advertise} (this page)`), cell(member.role), cell(member.term), cell(member.appliedSeq),
      cell(member.role === "leader" ? "–" : member.lag), cell(member.leader), cell(member.writable ? "yes" : "no"))];
    for (const follower of member.followers) {
      rows.push(element("tr", { attributes: { "data-testid": "cluster-member", "data-role": "follower", "data-address": follower.address } },
        cell(`${follower.address} (as the leader sees it)`), cell("follower"), cell(member.term), cell(Math.max(0, member.appliedSeq - follower.lag)),
        cell(follower.lag), cell(member.advertise), cell("no")));
    }
    $("cluster-body").replaceChildren(...rows);
    const whole = (value) => Math.round(value).toLocaleString("en");
    drawChart($("cluster-charts"), { name: "seq", label: `applied seq (${member.role})`, unit: "", format: whole, points: this.samples.map((s) => s.seq) });
    for (const address of Object.keys(lags)) {
      drawChart($("cluster-charts"), {
        name: `lag ${address}`, label: `lag ${address}`, unit: "", format: whole,
        points: this.samples.map((s) => s.lags[address] ?? NaN),
      });
    }
  },
};

// MARK: - Observers

async function refreshObservers() {
  const view = $("observers-view");
  try {
    const { connections } = await connection.client.observers();
    const table = element("table", {},
      element("thead", {}, element("tr", {}, ...["connection", "remote", "client", "subscriptions"].map((name) => element("th", { text: name, attributes: { scope: "col" } })))));
    const body = element("tbody");
    for (const entry of connections) {
      const subscriptions = element("ul", { className: "plain" });
      const list = entry.subscriptions;
      for (const subscription of list.slice(0, 50)) {
        subscriptions.append(element("li", { attributes: { "data-testid": "observer-subscription", "data-path": subscription.path } },
          element("code", { text: subscription.path }),
          ` #${subscription.subscription} [${(subscription.options ?? []).join(", ")}]`,
          subscription.context !== undefined ? element("span", { className: "muted", text: ` context ${JSON.stringify(subscription.context)}` }) : null));
      }
      if (list.length > 50) subscriptions.append(element("li", { className: "muted", text: `… ${list.length - 50} more` }));
      body.append(element("tr", { className: entry.self ? "self" : "" },
        element("td", { text: `${entry.connection}${entry.self ? " (this page)" : ""}` }),
        element("td", { text: entry.remote }),
        element("td", { text: entry.client ?? "" }),
        element("td", {}, subscriptions)));
    }
    table.append(body);
    view.replaceChildren(table);
  } catch (error) {
    showError(view, error);
  }
}

// MARK: - Wiring

function whenConnected(action) {
  return (event) => {
    event?.preventDefault();
    if (!connection.client) {
      $("status").classList.add("shake");
      setTimeout(() => $("status").classList.remove("shake"), 400);
      return;
    }
    action();
  };
}

$("browse-form").addEventListener("submit", whenConnected(() => {
  completion.items = [];
  completion.show();
  void tree.browse($("browse-path").value.trim());
}));
$("browse-root").addEventListener("click", whenConnected(() => void tree.browse("")));
$("browse-model").addEventListener("click", whenConnected(async () => {
  try {
    const model = await connection.client.describe();
    $("browse-info").textContent = `the model: root class ${model.root}`;
    $("model").textContent = JSON.stringify(model, null, 2);
    $("model").hidden = false;
    $("tree").hidden = true;
  } catch (error) {
    showError($("browse-error"), error);
  }
}));
$("subscribe-form").addEventListener("submit", whenConnected(() => {
  const options = [...document.querySelectorAll('input[name="option"]:checked')].map((box) => box.value);
  void watch.add($("subscribe-path").value.trim(), options);
}));
$("clear-log").addEventListener("click", () => { $("log-body").replaceChildren(); logFilter.count(); });
$("set-form").addEventListener("submit", whenConnected(() => setValue($("set-path").value.trim(), $("set-value").value)));
$("refresh-observers").addEventListener("click", whenConnected(refreshObservers));
$("refresh-stats").addEventListener("click", whenConnected(() => void stats.sample()));
$("retry-now").addEventListener("click", () => void connect());
$("disconnect").addEventListener("click", disconnect);
$("connect-again").addEventListener("click", () => { connection.attempt = 0; void connect(); });
$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  connection.token = $("token").value;
  connection.attempt = 0;
  void connect();
});

stats.start();
if (document.querySelector('meta[name="kvod-access"]')?.content === "token") {
  setState("disconnected", "kvod has access control: enter a token");
  connection.wanted = false;
  showTokenForm();
} else {
  void connect();
}
