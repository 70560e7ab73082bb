// A kvod client for Node and browsers: promises for requests, async iterators for subscriptions, one error class per
// error code, and automatic reconnection that resubscribes every live subscription with `since`, so iteration shows
// no gap and no duplicate (Protocol/README.md#resuming). Given the members of a cluster, it follows the leader: a request
// refused with 1012 "not the leader" moves the connection to the leader the error names (or waits out an election) and
// is sent again (docs/SCALING.md). Presence: the `onDisconnect` ops kvod last accepted are registered again on every
// new connection, first thing after `hello`, and `onConnected` listeners run on each connection. Transports: TCP
// (`node:net`, Node only) and WebSocket (the standard `WebSocket` API: browsers, or Node where `globalThis.WebSocket`
// exists). No runtime dependencies.

// MARK: - Errors

/** An error kvod answered with: `code`, `message` and `data` as on the wire (Protocol/errors.md). */
export class KvodError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(message: string, code: number, data?: unknown) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
  }
}
export class ParseError extends KvodError {}
export class InvalidRequest extends KvodError {}
export class MethodNotFound extends KvodError {}
export class InvalidParams extends KvodError {}
export class InternalError extends KvodError {}
export class UndefinedKey extends KvodError {}
export class ValidationFailed extends KvodError {}
export class NullNotAllowed extends KvodError {}
export class IndexOutOfRange extends KvodError {}
export class TypeMismatch extends KvodError {}
export class ReadOnlyKey extends KvodError {}
export class UnknownSubscription extends KvodError {}
export class Unauthorized extends KvodError {}
export class LimitExceeded extends KvodError {}
export class ResyncRequired extends KvodError {}
/** A conditional write's condition did not hold; `data` has the current `value` and `modSeq`. */
export class PreconditionFailed extends KvodError {}
/** A cluster member that cannot accept the mutation (a follower, an election, a leader without its etcd lease); nothing
 * changed. `data.leader` names the leader when one is known. Thrown once `leaderWait` has passed without a leader. */
export class NotLeader extends KvodError {}
/** A query's `where` is not a predicate kvod can read (Protocol/methods.md#predicates); `data` has `column` (1-based,
 * where it stopped) and `reason`. */
export class InvalidQuery extends KvodError {}
/** The connection closed while the request was in flight: whether a mutation took effect is unknown. */
export class ConnectionLost extends KvodError {}
/** No answer (or no connection) within the client's timeout. */
export class Timeout extends KvodError {}

type ErrorClass = new (message: string, code: number, data?: unknown) => KvodError;
export const ERRORS: Record<number, ErrorClass> = {
  [-32700]: ParseError, [-32600]: InvalidRequest, [-32601]: MethodNotFound, [-32602]: InvalidParams,
  [-32603]: InternalError, 1001: UndefinedKey, 1002: ValidationFailed, 1003: NullNotAllowed, 1004: IndexOutOfRange,
  1005: TypeMismatch, 1006: ReadOnlyKey, 1007: UnknownSubscription, 1008: Unauthorized, 1009: LimitExceeded,
  1010: ResyncRequired, 1011: PreconditionFailed, 1012: NotLeader, 1013: InvalidQuery,
};

function errorFromWire(error: { code: number; message: string; data?: unknown }): KvodError {
  const ErrorType = ERRORS[error.code] ?? KvodError;
  return new ErrorType(error.message, error.code, error.data);
}

// MARK: - Notifications

/** One change notification (Protocol/README.md#notifications); `new`/`old` are undefined when absent. */
export interface Change {
  type: "change";
  path: string;
  kind: "setting" | "insertion" | "removal" | "replacement";
  seq: number;
  new?: unknown;
  old?: unknown;
  indexes?: number[];
  prior: boolean;
  initial: boolean;
  context?: unknown;
  /** A live query's number of matches (Protocol/methods.md#queries); undefined for other subscriptions. */
  count?: number;
}

/** The subscription could not resume after a reconnect (error 1010): changes between `since` and `seq` were missed;
 * it continues live from `seq`. */
export interface Resync {
  type: "resync";
  path: string;
  since: number;
  oldest?: number;
  seq: number;
}

export type Option = "new" | "old" | "initial" | "prior";

// MARK: - Transports

/** A connection that carries JSON-RPC messages: one per line over TCP, one per text frame over WebSocket. */
export interface Transport {
  send(message: string): void;
  close(): void;
}

interface TransportEvents {
  onMessage(message: string): void;
  onClose(): void;
}

type Connector = (address: string, events: TransportEvents) => Promise<Transport>;

/** TLS for the tcp transport in Node (`node:tls`, Protocol/README.md#tls): the CA kvod's certificate must chain to
 * (default: Node's), a client certificate and key for mutual TLS (PEM text). Browsers and Node's WebSocket use
 * `wss://` addresses and their own trust store instead (Node: NODE_EXTRA_CA_CERTS). */
export interface TLSOptions {
  ca?: string;
  cert?: string;
  key?: string;
  /** The name kvod's certificate must carry; default: the address's host. */
  servername?: string;
}

async function connectTCP(address: string, events: TransportEvents, tls?: TLSOptions | boolean): Promise<Transport> {
  const { host, port, secure } = parseAddress(address);
  let socket: import("node:net").Socket;
  if (secure || tls) {
    const options = typeof tls === "object" ? tls : {};
    const nodeTLS = await import("node:tls");
    // An IP address is checked as one (SNI carries names only).
    const servername = options.servername ?? (/^[\d.]+$|:/.test(host) ? undefined : host);
    socket = nodeTLS.connect({ host, port, ca: options.ca, cert: options.cert, key: options.key, servername });
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", resolve);
      socket.once("error", reject);
    });
  } else {
    const net = await import("node:net");
    socket = net.createConnection({ host, port });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
  }
  socket.setEncoding("utf8");
  socket.setNoDelay(true);
  let buffered = "";
  let closed = false;
  const close = () => {
    if (!closed) {
      closed = true;
      events.onClose();
    }
  };
  socket.on("data", (chunk) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim()) events.onMessage(line);
    }
  });
  socket.on("error", () => socket.destroy());
  socket.on("close", close);
  return { send: (message) => { socket.write(message + "\n"); }, close: () => socket.destroy() };
}

async function connectWebSocket(address: string, events: TransportEvents): Promise<Transport> {
  const WebSocketType = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
  if (!WebSocketType) throw new ConnectionLost("no WebSocket in this environment (use the tcp transport)", -1);
  const url = /^wss?:\/\//.test(address) ? address : `ws://${address}/`;
  const socket = new WebSocketType(url);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new ConnectionLost(`cannot connect to ${url}`, -1));
  });
  socket.onmessage = (event) => events.onMessage(String(event.data));
  socket.onclose = () => events.onClose();
  socket.onerror = () => socket.close();
  return { send: (message) => socket.send(message), close: () => socket.close() };
}

/** `host:port`, or `kvods://host:port` (TLS) or `kvod://host:port`. */
function parseAddress(written: string): { host: string; port: number; secure: boolean } {
  const secure = written.startsWith("kvods://");
  const address = written.replace(/^kvods?:\/\//, "").replace(/\/$/, "");
  const colon = address.lastIndexOf(":");
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port)) throw new TypeError(`not a host:port address: ${written}`);
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ""), port, secure };
}

/** The addresses to try when (re)connecting: `preferred` (the leader a 1012 named) first, then those after `last` (the
 * one just lost) in turn, `last` itself at the end. */
export function connectionOrder(addresses: string[], preferred: string | undefined, last: string | undefined): string[] {
  const start = last === undefined ? 0 : addresses.indexOf(last) + 1;
  const order = [...addresses.slice(start), ...addresses.slice(0, start)];
  return preferred === undefined ? order : [preferred, ...order.filter((address) => address !== preferred)];
}

// MARK: - Subscriptions

interface SubscriptionState {
  path: string;
  options: Option[];
  context?: unknown;
  progress?: number;
  serverId?: number;
  lastSeq?: number; // every notification up to this seq was delivered: the resume point
  priorSeq?: number; // a prior delivered whose after has not come yet
  active: boolean;
  subscription: Subscription;
  /** The error that ended the subscription (kvod refused to resume it for good), else undefined. */
  error?: KvodError;
  /** Retrying a refused resume (-32602 behind, 1012) across reconnections: until when, and the leaders moved to. */
  retryDeadline?: number;
  retryTried?: Set<string>;
  /** A live query's `query` object, sent with every subscribe; undefined for a plain subscription. */
  query?: Record<string, unknown>;
  /** A live query gets several after notifications at one seq (a move is a removal and an insertion): how many were
   * delivered at `lastSeq`, and how many replays of them a resume from the seq before still has to drop. */
  atLastSeq?: number;
  skipAtLastSeq?: number;
}

/** The `since` of a resume. A live query that has notifications of `lastSeq` resumes from the seq before and drops as
 * many replays at `lastSeq`: a connection lost between two notifications of one seq neither loses the second nor
 * repeats the first. */
function resumeSince(state: SubscriptionState): number | undefined {
  if (state.lastSeq === undefined) return undefined;
  if (state.query !== undefined && (state.atLastSeq ?? 0) > 0) {
    state.skipAtLastSeq = state.atLastSeq;
    return state.lastSeq - 1;
  }
  return state.lastSeq;
}

/** `accept` for a live query: an older seq is a replay, and so are the first `skipAtLastSeq` at `lastSeq` after a
 * resume (`resumeSince`); the initial window starts the count afresh. */
function acceptQuery(state: SubscriptionState, change: Change): boolean {
  if (change.initial) {
    state.atLastSeq = 0;
    state.skipAtLastSeq = 0;
  } else if (state.lastSeq !== undefined && change.seq < state.lastSeq) {
    return false;
  } else if (state.lastSeq !== undefined && change.seq === state.lastSeq) {
    if ((state.skipAtLastSeq ?? 0) > 0) {
      state.skipAtLastSeq = (state.skipAtLastSeq ?? 0) - 1;
      return false;
    }
    state.atLastSeq = (state.atLastSeq ?? 0) + 1;
  } else {
    state.atLastSeq = 1;
    state.skipAtLastSeq = 0;
  }
  state.lastSeq = Math.max(state.lastSeq ?? change.seq, change.seq);
  return true;
}

/** What a connection's setup does after kvod refused to resume a subscription: `resync` (subscribe afresh, then push
 * a Resync item), `retry` (drop this connection: the reconnection, with its backoff, tries `leader` first when set,
 * else the next address) or `end` (end the subscription with the error; the connection and the others go on). */
export type ResumeStep = { action: "resync" } | { action: "retry"; leader?: string } | { action: "end" };

/** What `resumeRefused` reads and keeps of a subscription. */
export interface ResumeState {
  path: string;
  lastSeq?: number;
  retryDeadline?: number;
  retryTried?: Set<string>;
}

/** The next step after kvod refused a subscription's `subscribe` on a new connection: the one place that decides, per
 * error code, what the client does (the table in README.md#when-a-subscription-cannot-resume). 1010 (with a resume
 * point): resync. -32602 (a follower behind `since`) and 1012 (not the leader): retry on another connection, for up
 * to `leaderWait` milliseconds across reconnections; then, and at once for any other code (1008 the token no longer
 * allows the path, 1001 the model no longer declares the key, 1005, 1009 too many subscriptions, ...), which
 * reconnecting cannot cure: end the subscription (with a warning). */
export function resumeRefused(
  state: ResumeState, error: KvodError, endpoint: string | undefined, leaderWait: number, now: number,
): ResumeStep {
  if (error instanceof ResyncRequired && state.lastSeq !== undefined) return { action: "resync" };
  const behind = error instanceof InvalidParams && (error.data as { reason?: unknown } | undefined)?.reason === "behind";
  if (behind || error instanceof NotLeader) {
    state.retryDeadline ??= now + leaderWait;
    if (now < state.retryDeadline) {
      const tried = state.retryTried ??= new Set<string>();
      const named = error instanceof NotLeader ? (error.data as { leader?: unknown } | undefined)?.leader : undefined;
      // A dead leader is named until its lease expires: each named leader is tried once.
      const leader = typeof named === "string" && named !== endpoint && !tried.has(named) ? named : undefined;
      if (leader !== undefined) tried.add(leader);
      return { action: "retry", leader };
    }
  }
  state.retryDeadline = undefined;
  state.retryTried = undefined;
  console.warn(`kvod: the subscription to ${state.path} cannot resume on ${endpoint}: ${error.name} ${error.code} `
    + `${error.message}; it ends with that error`);
  return { action: "end" };
}

/** What a subscription's queue holds: items, then null once it is closed or the error that ended it. */
type Queued = Change | Resync | null | KvodError;

/** A live subscription: `for await` it for Change (and Resync) items, or `await next(timeoutMs)`. When kvod refuses to
 * resume it after a reconnect for a reason reconnecting cannot cure, iterating it rejects with that error (a KvodError
 * subclass, also in `error`) after the items delivered before (README.md#when-a-subscription-cannot-resume). */
export class Subscription implements AsyncIterable<Change | Resync> {
  /** The seq the subscribe reported. */
  seq = 0;
  private readonly items: Queued[] = [];
  private readonly waiting: Array<(item: Queued) => void> = [];

  /** @internal The client's record of this subscription. */
  readonly state: SubscriptionState;

  constructor(private readonly client: Client, state: SubscriptionState) {
    this.state = state;
  }

  /** The key path this subscription observes. */
  get path(): string { return this.state.path; }
  /** kvod's id on the current connection (it changes after a reconnect). */
  get id(): number | undefined { return this.state.serverId; }
  /** The seq up to which every notification was delivered: where a resume starts. */
  get lastSeq(): number | undefined { return this.state.lastSeq; }
  /** The error that ended the subscription (kvod refused to resume it for good); undefined while it lives. */
  get error(): KvodError | undefined { return this.state.error; }

  /** @internal */
  push(item: Queued): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  /** The next item; rejects with Timeout after `timeoutMs`; resolves null once unsubscribed or closed; rejects with
   * the error that ended the subscription once it ended (every later call ends the same way). */
  next(timeoutMs?: number): Promise<Change | Resync | null> {
    if (this.items.length > 0) {
      const item = this.items.shift()!;
      if (item === null || item instanceof KvodError) this.items.unshift(item);
      return item instanceof KvodError ? Promise.reject(item) : Promise.resolve(item);
    }
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter = (item: Queued) => {
        if (timer) clearTimeout(timer);
        if (item === null || item instanceof KvodError) this.items.push(item);
        if (item instanceof KvodError) reject(item);
        else resolve(item);
      };
      this.waiting.push(waiter);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const index = this.waiting.indexOf(waiter);
          if (index >= 0) this.waiting.splice(index, 1);
          reject(new Timeout(`no notification for ${this.path} within ${timeoutMs} ms`, -2));
        }, timeoutMs);
      }
    });
  }

  /** `for await (const item of subscription)`: each Change (or Resync) until unsubscribed or closed. */
  async *[Symbol.asyncIterator](): AsyncIterator<Change | Resync> {
    while (true) {
      const item = await this.next();
      if (item === null) return;
      yield item;
    }
  }

  /** Ends this subscription (`Client.unsubscribe`). */
  unsubscribe(): Promise<void> {
    return this.client.unsubscribe(this);
  }
}

// MARK: - The client

export interface ClientOptions {
  /** Sent with `hello` on every (re)connection. */
  token?: string;
  /** The name kvod's logs give this client (`hello`'s `client`). Default "kvod-typescript". */
  clientName?: string;
  /** Milliseconds for each call, including waiting for a reconnection. Default 10000. */
  timeout?: number;
  /** Reconnect (with backoff, through the addresses in turn) when the connection drops. Default true. */
  reconnect?: boolean;
  /** The longest pause between reconnection attempts, in milliseconds. Default 2000. */
  maxBackoff?: number;
  /** "tcp" (Node) or "websocket"; default: tcp in Node, websocket elsewhere. */
  transport?: "tcp" | "websocket";
  /** Milliseconds to keep retrying a request refused with 1012 "not the leader" (moving to the leader it names, or
   * waiting while a leader is elected) before rejecting with NotLeader. Default 10000. */
  leaderWait?: number;
  /** TLS for the tcp transport (Node): options, or true for Node's defaults; a `kvods://` address turns it on too. */
  tls?: TLSOptions | boolean;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: KvodError): void;
  method: string;
  params?: unknown;
  state?: SubscriptionState;
}

/** One op of `transaction` and `onDisconnect`. */
export interface Op {
  /** set, insert, remove, replace, union, minus, intersect or setMembers. */
  method: string;
  /** The method's params, as in a request. */
  params: unknown;
}

/** What an `onConnected` listener gets, once per connection (the first and each reconnection), when it is ready:
 * `hello` answered, the onDisconnect ops registered again, every subscription resumed. `server` is hello's result;
 * `onDisconnectError` is set when the remembered onDisconnect ops could not be registered on this connection (the
 * error kvod gave, or NotLeader once `leaderWait` passed): this connection's end runs nothing. */
export interface Connected {
  /** How many connections were made so far (1 + reconnections). */
  connections: number;
  /** The address of this connection. */
  endpoint: string;
  /** `hello`'s result. */
  server: Record<string, unknown>;
  onDisconnectError?: KvodError;
}

/** A function `onConnected` calls on each connection. */
export type ConnectedListener = (info: Connected) => void | Promise<void>;

/** What an `onDisconnected` listener gets when a connection ends: the address it was to, the `closing` reason kvod
 * gave (when it sent one: `server_shutdown`, `slow_consumer`, ...), and whether the client reconnects by itself. */
export interface Disconnected {
  endpoint?: string;
  reason?: string;
  reconnecting: boolean;
}

export type DisconnectedListener = (info: Disconnected) => void;

/** Connects to kvod (several addresses are tried in turn: the members of a cluster) and says hello. */
export async function connect(addresses: string | string[], options: ClientOptions = {}): Promise<Client> {
  const client = new Client(Array.isArray(addresses) ? addresses : [addresses], options);
  await client.open();
  return client;
}

/** A kvod client (create it with `connect`): promises for calls, async iterators for subscriptions, which resume by
 * themselves after a reconnect; given a cluster's members, it follows the leader. */
export class Client {
  /** How many connections were made (1 + reconnections). */
  connections = 0;
  /** The reason of kvod's last `closing` notice (`server_shutdown`, `not_leader`, ...), if any. */
  closingReason?: string;
  /** The address of the current (or last) connection. */
  endpoint?: string;
  /** The leader a 1012 named: tried first on the next connection. */
  private preferred?: string;
  private transport?: Transport;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly subscriptions: SubscriptionState[] = [];
  private readonly byServerId = new Map<number, SubscriptionState>();
  private readonly connector: Connector;
  private readonly timeout: number;
  private connectedWaiters: Array<() => void> = [];
  private closed = false;
  private ready = false;
  /** A reconnection loop is running (`reconnect`). */
  private reconnecting = false;
  /** The onDisconnect ops kvod last accepted (undefined: none, or cancelled): registered again on each connection. */
  private onDisconnectOps?: unknown[];
  /** Retrying a re-registration refused with 1012, across reconnections: until when, the next pause, the leaders
   * tried. */
  private rearming?: { deadline: number; pause: number; tried: Set<string> };
  private readonly connectedListeners: ConnectedListener[] = [];
  private readonly disconnectedListeners: DisconnectedListener[] = [];
  /** The `closing` reason kvod sent last, and on which connection (`connections` then). */
  private lastClosing?: { reason?: string; connection: number };
  private lastConnected?: Connected;
  /** Why the onDisconnect ops could not be registered again on the current connection (undefined when they were). */
  onDisconnectError?: KvodError;
  /** Why kvod refused `hello` on the last connection attempts (a token it no longer accepts); undefined once
   * connected. */
  helloError?: KvodError;

  constructor(private readonly addresses: string[], private readonly options: ClientOptions = {}) {
    if (addresses.length === 0) throw new TypeError("no address given");
    addresses.forEach((address) => { if (!/^wss?:\/\//.test(address)) parseAddress(address); });
    const isNode = typeof (globalThis as { process?: unknown }).process === "object";
    const kind = options.transport ?? (isNode ? "tcp" : "websocket");
    const tls = options.tls ?? (addresses.some((address) => address.startsWith("kvods://")) ? true : undefined);
    this.connector = kind === "tcp" ? (address, events) => connectTCP(address, events, tls) : connectWebSocket;
    this.timeout = options.timeout ?? 10_000;
  }

  /** @internal Opens the first connection. */
  async open(): Promise<void> {
    await this.establish();
  }

  private async establish(): Promise<void> {
    const errors: string[] = [];
    for (const address of connectionOrder(this.addresses, this.preferred, this.endpoint)) {
      let transport: Transport;
      try {
        transport = await this.connector(address, {
          onMessage: (message) => this.route(message),
          onClose: () => { if (this.transport === transport) this.lost(); },
        });
      } catch (error) {
        errors.push(`${address}: ${(error as Error).message}`);
        continue;
      }
      this.endpoint = address;
      this.preferred = undefined;
      this.transport = transport;
      let server: Record<string, unknown>;
      try {
        server = await this.setup();
      } catch (error) {
        this.transport = undefined;
        transport.close();
        throw error;
      }
      this.connections += 1;
      this.helloError = undefined;
      this.ready = true;
      for (const waiter of this.connectedWaiters.splice(0)) waiter();
      const onDisconnectError = this.onDisconnectError;
      this.lastConnected = { connections: this.connections, endpoint: address, server, onDisconnectError };
      for (const listener of [...this.connectedListeners]) this.notifyConnected(listener, this.lastConnected);
      return;
    }
    this.preferred = undefined;
    throw new ConnectionLost(`cannot connect: ${errors.join("; ")}`, -1);
  }

  /** hello, then the onDisconnect ops, then every live subscription again with `since` (a Resync item when kvod
   * cannot replay that far); resolves with hello's result. Callers' requests wait until it is done. */
  private async setup(): Promise<Record<string, unknown>> {
    let server: unknown;
    try {
      server = await this.send("hello", { client: this.options.clientName ?? "kvod-typescript", ...(this.options.token ? { token: this.options.token } : {}) });
    } catch (error) {
      if (error instanceof KvodError && !(error instanceof ConnectionLost) && !(error instanceof Timeout)) {
        this.helloRefused(error);
      }
      throw error;
    }
    await this.rearm();
    for (const state of [...this.subscriptions]) await this.resubscribe(state);
    return server as Record<string, unknown>;
  }

  /** Subscribes again with `since`; a refusal goes as `resumeRefused` decides: resync (a Resync item), retry (the
   * error ends this connection's setup: the client reconnects) or end the subscription. */
  private async resubscribe(state: SubscriptionState): Promise<void> {
    const since = state.lastSeq;
    let resync: KvodError | undefined;
    for (;;) {
      let result: { seq: number };
      try {
        result = (await this.send("subscribe", this.subscribeParams(state, resumeSince(state)), state)) as { seq: number };
      } catch (error) {
        if (!(error instanceof KvodError) || error instanceof ConnectionLost || error instanceof Timeout) throw error;
        const step = resumeRefused(state, error, this.endpoint, this.options.leaderWait ?? 10_000, Date.now());
        if (step.action === "resync") {
          state.lastSeq = undefined;
          state.priorSeq = undefined;
          state.atLastSeq = 0;
          state.skipAtLastSeq = 0;
          resync = error;
          continue;
        }
        if (step.action === "end") {
          this.endSubscription(state, error);
          return;
        }
        this.preferred = step.leader;
        throw error;
      }
      if (resync !== undefined) {
        if (!state.options.includes("initial")) state.lastSeq = result.seq;
        const data = (resync.data ?? {}) as { oldest?: number };
        state.subscription.push({ type: "resync", path: state.path, since: since ?? 0, oldest: data.oldest, seq: result.seq });
      }
      return;
    }
  }

  /** Ends a subscription kvod refused to resume for good: its iterator rejects with `error`; the others go on. */
  private endSubscription(state: SubscriptionState, error: KvodError): void {
    this.forget(state);
    state.error = error;
    state.subscription.push(error);
  }

  private forget(state: SubscriptionState): void {
    state.active = false;
    const index = this.subscriptions.indexOf(state);
    if (index >= 0) this.subscriptions.splice(index, 1);
    if (state.serverId !== undefined) this.byServerId.delete(state.serverId);
  }

  /** kvod refused `hello` on a new connection (a token it no longer accepts): the client keeps reconnecting with
   * backoff, which helps only once kvod accepts the token again; a warning says so, once per error code until a
   * connection succeeds (the first connection rejects with it instead), and calls waiting for the connection time out
   * naming it. */
  private helloRefused(error: KvodError): void {
    if (this.connections > 0 && this.helloError?.code !== error.code) {
      console.warn(`kvod: ${this.endpoint} refused hello: ${error.name} ${error.code} ${error.message}; reconnecting`
        + " with backoff until it accepts it");
    }
    this.helloError = error;
  }

  /** Registers the remembered onDisconnect ops on the connection being set up, right after hello: before the
   * resubscriptions and before any caller's request, so presence is armed first. A 1012 refusal is retried as calls
   * retry it (on the leader it names: this connection is dropped for it; else after pauses of 100 ms doubling to 1 s)
   * for up to `leaderWait`, across reconnections; then, or at once for any other error, the connection goes on
   * without them: `onDisconnectError` says why (and the listeners' `Connected`), and a warning is logged. */
  private async rearm(): Promise<void> {
    while (this.onDisconnectOps !== undefined) {
      try {
        await this.send("onDisconnect", { ops: this.onDisconnectOps });
        return;
      } catch (error) {
        if (error instanceof ConnectionLost || error instanceof Timeout) throw error;
        const refusal = error as KvodError;
        if (refusal instanceof NotLeader) {
          const now = Date.now();
          const deadline = now + (this.options.leaderWait ?? 10_000);
          const rearming = this.rearming ??= { deadline, pause: 100, tried: new Set<string>() };
          if (now < rearming.deadline) {
            const leader = (refusal.data as { leader?: unknown } | undefined)?.leader;
            // A dead leader is named until its lease expires: each named leader is tried once.
            if (typeof leader === "string" && leader !== this.endpoint && !rearming.tried.has(leader)) {
              rearming.tried.add(leader);
              this.preferred = leader;
              throw refusal; // the reconnection goes to the leader first
            }
            const pause = Math.min(rearming.pause, rearming.deadline - now);
            rearming.pause = Math.min(rearming.pause * 2, 1000);
            await new Promise((resolve) => setTimeout(resolve, pause));
            continue;
          }
        }
        this.rearming = undefined;
        this.onDisconnectError = refusal;
        console.warn(`kvod: the onDisconnect ops could not be registered again on ${this.endpoint}: ${refusal.message};`
          + " this connection's end runs nothing");
        return;
      }
    }
  }

  private notifyConnected(listener: ConnectedListener, info: Connected): void {
    // Later, not inside the reconnection (a listener may call the client); a failure is logged, not thrown.
    void Promise.resolve().then(() => listener(info))
      .catch((error) => console.warn("kvod: an onConnected listener failed:", error));
  }

  private lost(): void {
    const wasReady = this.ready;
    this.ready = false;
    this.transport = undefined;
    if (wasReady) this.notifyDisconnected();
    this.byServerId.clear();
    for (const state of this.subscriptions) state.serverId = undefined;
    for (const pending of this.pending.values()) pending.reject(new ConnectionLost("the connection closed before kvod answered", -1));
    this.pending.clear();
    if (this.closed || this.options.reconnect === false) {
      for (const state of this.subscriptions) state.subscription.push(null);
      return;
    }
    void this.reconnect();
  }

  /** Reconnects with backoff until a connection is set up. One loop at a time: a connection that closes during its
   * setup calls `lost()` again, and that attempt's failure already sends this loop round again (two loops would
   * set up two connections at once, each resubscribing every subscription). */
  private async reconnect(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    try {
      let backoff = 50;
      while (!this.closed) {
        try {
          await this.establish();
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, backoff));
          backoff = Math.min(backoff * 2, this.options.maxBackoff ?? 2000);
        }
      }
    } finally {
      this.reconnecting = false;
    }
  }

  private subscribeParams(state: SubscriptionState, since: number | undefined): Record<string, unknown> {
    const params: Record<string, unknown> = {
      path: state.path,
      options: since === undefined ? state.options : state.options.filter((option) => option !== "initial"),
    };
    if (state.context !== undefined) params.context = state.context;
    if (state.progress !== undefined) params.progress = state.progress;
    if (since !== undefined) params.since = since;
    if (state.query !== undefined) params.query = state.query;
    return params;
  }

  /** Sends on the current connection (during setup too) and waits for the answer. */
  private send(method: string, params?: unknown, state?: SubscriptionState): Promise<unknown> {
    const transport = this.transport;
    if (!transport) return Promise.reject(new ConnectionLost("not connected", -1));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) reject(new Timeout(`${method}: no answer within ${this.timeout} ms`, -2));
      }, this.timeout);
      this.pending.set(id, {
        method, params, state,
        resolve: (value) => { clearTimeout(timer); resolve(value); },
        reject: (error) => { clearTimeout(timer); reject(error); },
      });
      transport.send(JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }));
    });
  }

  private route(text: string): void {
    const message = JSON.parse(text);
    if (Array.isArray(message)) return;
    if (message.id !== undefined && message.id !== null && ("result" in message || "error" in message)) {
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      if (message.error) {
        pending.reject(errorFromWire(message.error));
        return;
      }
      if (pending.method === "subscribe" && pending.state) this.registered(pending.state, message.result);
      if (pending.method === "onDisconnect") this.onDisconnectAccepted(pending.params);
      pending.resolve(message.result);
      return;
    }
    const params = message.params ?? {};
    if (message.method === "change") {
      const state = this.byServerId.get(params.subscription);
      if (!state || !state.active) return;
      const change: Change = {
        type: "change", path: params.path, kind: params.kind, seq: params.seq, prior: params.prior === true,
        initial: params.initial === true,
      };
      if ("new" in params) change.new = params.new;
      if ("old" in params) change.old = params.old;
      if (params.indexes) change.indexes = params.indexes;
      if ("context" in params) change.context = params.context;
      if ("count" in params) change.count = params.count;
      if (this.accept(state, change)) state.subscription.push(change);
    } else if (message.method === "progress") {
      const state = this.byServerId.get(params.subscription);
      if (state && typeof params.seq === "number") {
        if (params.seq > (state.lastSeq ?? 0)) {
          state.atLastSeq = 0;
          state.skipAtLastSeq = 0;
        }
        state.lastSeq = Math.max(state.lastSeq ?? 0, params.seq);
      }
    } else if (message.method === "closing") {
      this.closingReason = params.reason;
      this.lastClosing = { reason: params.reason, connection: this.connections };
    }
  }

  /** Advances the resume point; false for a replayed notification the caller already has. */
  private accept(state: SubscriptionState, change: Change): boolean {
    if (change.prior) {
      if (state.priorSeq === change.seq || (state.lastSeq !== undefined && change.seq <= state.lastSeq)) return false;
      state.priorSeq = change.seq;
      return true;
    }
    if (state.query !== undefined) return acceptQuery(state, change);
    if (state.lastSeq !== undefined && change.seq <= state.lastSeq && !change.initial) return false;
    state.priorSeq = undefined;
    state.lastSeq = Math.max(state.lastSeq ?? change.seq, change.seq);
    return true;
  }

  private registered(state: SubscriptionState, result: { subscription: number; seq: number }): void {
    state.retryDeadline = undefined;
    state.retryTried = undefined;
    if (state.serverId !== undefined) this.byServerId.delete(state.serverId);
    state.serverId = result.subscription;
    this.byServerId.set(result.subscription, state);
    if (state.lastSeq === undefined && !state.options.includes("initial")) state.lastSeq = result.seq;
    if (!this.subscriptions.includes(state)) this.subscriptions.push(state);
  }

  private async whenConnected(): Promise<void> {
    if (this.ready) return;
    if (this.closed) throw new ConnectionLost("the client is closed", -1);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.connectedWaiters = this.connectedWaiters.filter((waiter) => waiter !== done);
        const refused = this.helloError ? `: kvod refused hello (${this.helloError.name}: ${this.helloError.message})` : "";
        reject(new Timeout(`not connected to kvod within ${this.timeout} ms${refused}`, -2));
      }, this.timeout);
      const done = () => { clearTimeout(timer); resolve(); };
      this.connectedWaiters.push(done);
    });
  }

  /** Sends one request and resolves with its result; rejects with the KvodError subclass of an error response. A 1012
   * "not the leader" refusal (nothing changed) is retried on the leader for up to `leaderWait` milliseconds. */
  async call(method: string, params?: unknown): Promise<unknown> {
    const deadline = Date.now() + (this.options.leaderWait ?? 10_000);
    const tried = new Set<string>();
    let pause = 100;
    for (;;) {
      await this.whenConnected();
      try {
        return await this.send(method, params);
      } catch (error) {
        if (!(error instanceof NotLeader) || Date.now() >= deadline) throw error;
        const leader = (error.data as { leader?: unknown } | undefined)?.leader;
        // A dead leader is named until its lease expires: each named leader is tried once per call.
        if (typeof leader === "string" && leader !== this.endpoint && !tried.has(leader) && this.transport) {
          const transport = this.transport;
          tried.add(leader);
          this.preferred = leader;
          this.lost(); // reconnects, to the leader first, resubscribing everything
          transport.close();
          continue;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(0, deadline - Date.now()))));
        pause = Math.min(pause * 2, 1000);
      }
    }
  }

  /** Says hello, presenting `token` (kept for reconnections; default: the client's); resolves with kvod's answer:
   * `{server, version, protocol}`, with `access` under access control and `role`, `term`, ... in a cluster.
   * Rejects with Unauthorized for a wrong token. */
  hello(token?: string): Promise<unknown> {
    if (token !== undefined) this.options.token = token;
    return this.call("hello", { client: this.options.clientName ?? "kvod-typescript", ...(this.options.token ? { token: this.options.token } : {}) });
  }
  /** Checks that kvod answers; resolves with "pong". */
  async ping(): Promise<string> { return (await this.call("ping")) as string; }
  /** The value at `path` (objects with `"$id"` first); null when never set or when an intermediate is missing.
   * Rejects with UndefinedKey for a key the model does not declare, TypeMismatch for a path through a non-object. */
  async get(path: string): Promise<unknown> { return ((await this.call("get", { path })) as { value: unknown }).value; }
  /** `{value, seq}`: the value at `path` and the seq of the state it was read from. */
  async getWithSeq(path: string): Promise<{ value: unknown; seq: number }> {
    return (await this.call("get", { path })) as { value: unknown; seq: number };
  }
  /** `{value, seq, modSeq, expires}`: the value with the seq that last stored the key (null when never set) and when
   * its ttl passes (epoch milliseconds; null without one). */
  async getMeta(path: string): Promise<{ value: unknown; seq: number; modSeq: number | null; expires: number | null }> {
    return (await this.call("get", { path, meta: true })) as {
      value: unknown; seq: number; modSeq: number | null; expires: number | null;
    };
  }
  /** `{value, count, seq}`: at most `limit` elements (default: to the end) of the collection at `path` from `offset`
   * (default 0), and its element count; costs the page, not the collection (Protocol/methods.md#get). Rejects with
   * TypeMismatch when the value is not a collection. */
  async getPage(path: string, page: { offset?: number; limit?: number } = {}): Promise<{ value: unknown[]; count: number; seq: number }> {
    const params: Record<string, unknown> = { path, offset: page.offset ?? 0 };
    if (page.limit !== undefined) params.limit = page.limit;
    return (await this.call("get", params)) as { value: unknown[]; count: number; seq: number };
  }
  /** Sets `path`; resolves with the mutation's seq. With one of `ifModSeq` (unchanged since that seq), `ifValue`
   * (currently equal) or `ifAbsent`, a conditional write: rejects with PreconditionFailed when it does not hold. With
   * `ttl` (seconds), kvod sets the key to null when it passes, unless a later set moves or clears the deadline. */
  async set(
    path: string, value: unknown,
    options: { ifModSeq?: number; ifValue?: unknown; ifAbsent?: boolean; ttl?: number } = {},
  ): Promise<number> {
    const conditions: Array<Record<string, unknown>> = [];
    if (options.ifModSeq !== undefined) conditions.push({ modSeq: options.ifModSeq });
    if ("ifValue" in options) conditions.push({ value: options.ifValue });
    if (options.ifAbsent) conditions.push({ absent: true });
    if (conditions.length > 1) throw new TypeError("give at most one of ifModSeq, ifValue, ifAbsent");
    const params: Record<string, unknown> = { path, value };
    if (conditions.length === 1) params.if = conditions[0];
    if (options.ttl !== undefined) params.ttl = options.ttl;
    return this.seqOf("set", params);
  }
  /** Registers ops (transaction's format) that kvod runs as one transaction when the connection ends
   * (Protocol/methods.md#ondisconnect); resolves with their count. The client registers them again on every new
   * connection, first thing after hello, until `cancelOnDisconnect()` (or `[]`). A connection lost before kvod
   * answered is retried (a registration replaces the last). */
  async onDisconnect(ops: Op[]): Promise<number> {
    if (!Array.isArray(ops)) throw new TypeError("onDisconnect: ops must be an array of {method, params}");
    const deadline = Date.now() + this.timeout;
    for (;;) {
      try {
        return ((await this.call("onDisconnect", { ops })) as { ops: number }).ops;
      } catch (error) {
        const retry = error instanceof ConnectionLost && !this.closed && this.options.reconnect !== false;
        if (!retry || Date.now() >= deadline) throw error;
      }
    }
  }
  /** Cancels the onDisconnect ops, on this connection and the next ones. */
  async cancelOnDisconnect(): Promise<void> {
    await this.onDisconnect([]);
  }
  /** Calls `listener(Connected)` on each connection once it is ready (hello answered, onDisconnect ops registered,
   * subscriptions resumed), and soon when connected now (Firebase's `.info/connected`). A listener may call the
   * client (`client.set("presence.ada", "online")`); a failure is logged. Returns a function that removes it. */
  onConnected(listener: ConnectedListener): () => void {
    this.connectedListeners.push(listener);
    if (this.ready && this.lastConnected) this.notifyConnected(listener, this.lastConnected);
    return () => {
      const index = this.connectedListeners.indexOf(listener);
      if (index >= 0) this.connectedListeners.splice(index, 1);
    };
  }

  /** Calls `listener(Disconnected)` each time a connection that was set up ends (kvod closed it, died, or the
   * network failed), right away, before any reconnection; `reconnecting` says whether the client will reconnect by
   * itself (false with `reconnect: false` or after `close()`). With `onConnected`, this tells a user interface when
   * to show the connection as lost. Returns a function that removes it. */
  onDisconnected(listener: DisconnectedListener): () => void {
    this.disconnectedListeners.push(listener);
    return () => {
      const index = this.disconnectedListeners.indexOf(listener);
      if (index >= 0) this.disconnectedListeners.splice(index, 1);
    };
  }

  private notifyDisconnected(): void {
    const closing = this.lastClosing?.connection === this.connections ? this.lastClosing.reason : undefined;
    const info: Disconnected = {
      endpoint: this.endpoint, reason: closing,
      reconnecting: !this.closed && this.options.reconnect !== false,
    };
    for (const listener of [...this.disconnectedListeners]) {
      try {
        listener(info);
      } catch (error) {
        console.warn("kvod: an onDisconnected listener failed:", error);
      }
    }
  }

  /** kvod answered an `onDisconnect` with these params: they are what it holds now (`[]` cancelled). */
  private onDisconnectAccepted(params: unknown): void {
    const ops = (params as { ops?: unknown } | undefined)?.ops;
    this.onDisconnectOps = Array.isArray(ops) && ops.length > 0 ? ops : undefined;
    this.onDisconnectError = undefined;
    this.rearming = undefined;
  }
  /** `{value}` or `{values}`, with `index`/`indexes` (ordered collections) or without (append; union on a set). */
  async insert(path: string, change: { value?: unknown; values?: unknown[]; index?: number; indexes?: number[] }): Promise<number> {
    return this.seqOf("insert", { path, ...change });
  }
  /** Removes the elements at `index` (or `indexes`) of an ordered collection, or the members `values` of a set;
   * resolves with the seq. Rejects with IndexOutOfRange. */
  async remove(path: string, change: { index?: number; indexes?: number[]; values?: unknown[] }): Promise<number> {
    return this.seqOf("remove", { path, ...change });
  }
  /** Replaces the element at `index` with `value` (or those at `indexes` with `values`); resolves with the seq. */
  async replace(path: string, change: { value?: unknown; values?: unknown[]; index?: number; indexes?: number[] }): Promise<number> {
    return this.seqOf("replace", { path, ...change });
  }
  /** Adds `values` to the set at `path` (those it lacks); resolves with the seq. */
  async union(path: string, values: unknown[]): Promise<number> { return this.seqOf("union", { path, values }); }
  /** Removes `values` from the set at `path`; resolves with the seq. */
  async minus(path: string, values: unknown[]): Promise<number> { return this.seqOf("minus", { path, values }); }
  /** Keeps only the members of the set at `path` that are in `values`; resolves with the seq. */
  async intersect(path: string, values: unknown[]): Promise<number> { return this.seqOf("intersect", { path, values }); }
  /** Makes the set at `path` exactly `values`; resolves with the seq. */
  async setMembers(path: string, values: unknown[]): Promise<number> { return this.seqOf("setMembers", { path, values }); }
  /** Applies `{method, params}` ops atomically: all with one seq, which it resolves with, or none (the error's
   * `data.op` names the failing op). */
  async transaction(ops: Op[]): Promise<number> { return this.seqOf("transaction", { ops }); }
  /** What `set(path, value)` would store (after trimming and the like), without storing it; rejects as `set` would. */
  async validate(path: string, value: unknown): Promise<unknown> {
    return ((await this.call("validate", { path, value })) as { value: unknown }).value;
  }
  /** The model (`{root, classes}`), or with `path` the class of the object there and its current keys. */
  describe(path?: string): Promise<unknown> { return this.call("describe", path === undefined ? {} : { path }); }
  /** `{connections: [...]}`: every connection and its subscriptions (with `path`, only those to it). */
  observers(path?: string): Promise<unknown> { return this.call("observers", path === undefined ? {} : { path }); }
  /** kvod's figures: seq, connections, subscriptions, requests, notifications, bytes, closes by reason, ... */
  stats(): Promise<unknown> { return this.call("stats"); }

  private async seqOf(method: string, params: unknown): Promise<number> {
    return ((await this.call(method, params)) as { seq: number }).seq;
  }

  /** Observes `path` with KVO's options (`new`, `old`, `initial`, `prior`), `context` echoed in each change. With
   * `since`, resumes after that seq; with `progress` (seconds), kvod sends progress notices while quiet. The
   * subscription resumes by itself after a reconnect. */
  async subscribe(path: string, options: { options?: Option[]; context?: unknown; since?: number; progress?: number } = {}): Promise<Subscription> {
    const state = {
      path, options: options.options ?? ["new"], context: options.context, progress: options.progress,
      lastSeq: options.since, active: true,
    } as SubscriptionState;
    const subscription = new Subscription(this, state);
    state.subscription = subscription;
    await this.whenConnected();
    const result = (await this.send("subscribe", this.subscribeParams(state, options.since), state)) as { seq: number };
    subscription.seq = result.seq;
    return subscription;
  }

  /** Ends `subscription`: kvod stops sending its notifications; its iterator ends once the items already delivered
   * are read. */
  async unsubscribe(subscription: Subscription): Promise<void> {
    const state = subscription.state;
    const serverId = state.serverId;
    this.forget(state);
    subscription.push(null);
    if (serverId !== undefined) {
      try {
        await this.call("unsubscribe", { subscription: serverId });
      } catch {
        // gone with its connection, or already ended
      }
    }
  }

  /** The elements of the collection at `path` that the predicate `where` keeps (NSPredicate's syntax, with `$NAME`
   * variables from `vars`), sorted by `orderBy` (`"key"`, `"-key"` or `{key, ascending, caseInsensitive}`, or a list of
   * them), the window of `limit` from `offset`, each with the keys of `select`: resolves with `{rows, count, seq}`,
   * `count` being the number of matches in all (Protocol/methods.md#queries). Rejects with InvalidQuery for a `where`
   * that does not parse (`data.column`), UndefinedKey, TypeMismatch when `path` is not a collection, InvalidParams. */
  async query(
    path: string,
    query: { where?: string; vars?: Record<string, unknown>; orderBy?: OrderBy; offset?: number; limit?: number; select?: string[] } = {},
  ): Promise<QueryResult> {
    const result = (await this.call("get", { path, query: queryParams(query) })) as { value: unknown[]; count: number; seq: number };
    return { rows: result.value, count: result.count, seq: result.seq };
  }

  /** The query of `query(...)`, live: resolves, once the initial window is there, with a LiveQuery that holds the
   * window, kept up to date by kvod's notifications (a `subscribe` with the query), with change listeners of its own.
   * It follows the client across reconnections (kvod sends the window again). Rejects as `query` does. */
  async liveQuery(
    path: string,
    query: { where?: string; vars?: Record<string, unknown>; orderBy?: OrderBy; offset?: number; limit?: number; select?: string[]; context?: unknown } = {},
  ): Promise<LiveQuery> {
    const wire = queryParams(query);
    const state = { path, options: ["initial", "new"], context: query.context, active: true, query: wire } as SubscriptionState;
    const live = new LiveQuery(path, wire, () => this.endLiveQuery(state), this.timeout);
    state.subscription = new QuerySubscription(this, state, live);
    await this.whenConnected();
    await this.send("subscribe", this.subscribeParams(state, undefined), state);
    try {
      await live.waitFor((q) => q.ready);
    } catch (error) {
      await live.close();
      throw error;
    }
    return live;
  }

  private async endLiveQuery(state: SubscriptionState): Promise<void> {
    const serverId = state.serverId;
    this.forget(state);
    if (serverId !== undefined && !this.closed) {
      try {
        await this.call("unsubscribe", { subscription: serverId });
      } catch {
        // gone with its connection, or already ended
      }
    }
  }

  /** Closes the connection for good: no reconnecting; subscriptions end. */
  close(): void {
    this.closed = true;
    this.transport?.close();
    for (const state of this.subscriptions) state.subscription.push(null);
  }
}

// MARK: - Queries

/** One sort descriptor or a list of them: `"key"`, `"-key"` (descending) or `{key, ascending, caseInsensitive}`. */
export type OrderBy = string | SortDescriptor | Array<string | SortDescriptor>;

/** A sort descriptor of a query's `orderBy` (Protocol/methods.md#queries). */
export interface SortDescriptor {
  key: string;
  ascending?: boolean;
  caseInsensitive?: boolean;
}

/** A query's answer at one seq: `rows`, the window (elements as objects with `$id` and their selected keys, or
 * scalars), and `count`, the number of elements the predicate matches in all (for "41-60 of 1,234"). */
export interface QueryResult {
  rows: unknown[];
  count: number;
  seq: number;
}

/** One change of a live query's window, as its listeners get it: `kind` is `setting` (the whole window: the first one,
 * `initial`, and again after each reconnection or when the collection itself was replaced), `insertion`, `removal` or
 * `replacement`; `indexes` are positions in the window (a removal's before it, an insertion's after it, a
 * replacement's in both; undefined for a setting; `[]` when only `count` changed); `new` and `old` are the rows
 * inserted or replaced and the rows removed or replaced, in the order of `indexes` (for a setting, the whole new and
 * old window); `count` is the number of matches after the change, `seq` its seq. */
export interface QueryChange {
  kind: "setting" | "insertion" | "removal" | "replacement";
  indexes?: number[];
  new: unknown[];
  old: unknown[];
  count: number;
  seq: number;
  initial: boolean;
}

/** A function a LiveQuery calls with each change of its window. */
export type QueryChangeListener = (change: QueryChange) => void | Promise<void>;

/** A notification that does not fit the mirrored window (an index out of range, a missing `new`): the mirror can no
 * longer be trusted. The live query keeps it in `error`. */
export class MirrorError extends Error {}

/** The members of a query (Protocol/methods.md#queries), as `Client.query` and `Client.liveQuery` take them. */
export interface QueryOptions {
  /** A predicate in NSPredicate's format-string syntax; absent: every element. */
  where?: string;
  /** Values of the predicate's `$NAME` variables. */
  vars?: Record<string, unknown>;
  /** Sort descriptors; absent: the collection's own order. */
  orderBy?: OrderBy;
  /** The first match of the window (default 0). */
  offset?: number;
  /** The most matches in the window (default: to the end). */
  limit?: number;
  /** Key paths shown per element (a string: one); absent: every key the element stores. */
  select?: string[] | string;
}

/** The wire's `query` object from the clients' options, with only the members given. */
export function queryParams(query: QueryOptions): Record<string, unknown> {
  const wire: Record<string, unknown> = {};
  if (query.where !== undefined) {
    if (typeof query.where !== "string") throw new TypeError("where: a predicate in NSPredicate's format-string syntax");
    wire.where = query.where;
  }
  if (query.vars !== undefined) wire.vars = query.vars;
  if (query.orderBy !== undefined) wire.orderBy = Array.isArray(query.orderBy) ? query.orderBy : [query.orderBy];
  if (query.offset !== undefined) wire.offset = query.offset;
  if (query.limit !== undefined) wire.limit = query.limit;
  if (query.select !== undefined) wire.select = typeof query.select === "string" ? [query.select] : query.select;
  return wire;
}

/** The window of a live query, built only from its notifications: `apply` takes one Change and returns the QueryChange
 * it made (undefined for a prior, which changes nothing); it throws MirrorError for a notification that does not fit. */
export class QueryMirror {
  /** The window. */
  rows: unknown[] = [];
  /** The number of matches in all, as of the last notification. */
  count = 0;
  /** The seq of the last notification applied. */
  seq?: number;
  /** True once a setting (the initial window) was applied. */
  ready = false;

  /** Applies one notification of the live query's subscription. */
  apply(change: Change): QueryChange | undefined {
    if (change.prior) return undefined;
    const count = change.count ?? this.count;
    let event: QueryChange;
    if (change.kind === "setting") {
      const rows = this.newRows(change, undefined);
      event = { kind: "setting", new: [...rows], old: this.rows, count, seq: change.seq, initial: change.initial };
      this.rows = [...rows];
      this.ready = true;
    } else {
      const indexes = change.indexes;
      if (!Array.isArray(indexes) || !indexes.every((index) => Number.isInteger(index))) {
        throw new MirrorError(`a ${change.kind} at seq ${change.seq} without indexes`);
      }
      const size = this.rows.length;
      if (change.kind === "insertion") {
        const rows = this.newRows(change, indexes.length);
        // Positions in the window after the insertion: inserting in ascending order puts each at its place.
        const order = indexes.map((_, k) => k).sort((a, b) => indexes[a] - indexes[b]);
        for (const k of order) {
          if (indexes[k] < 0 || indexes[k] > this.rows.length) {
            throw new MirrorError(`an insertion at ${indexes[k]} into a window of ${this.rows.length} at seq ${change.seq}`);
          }
          this.rows.splice(indexes[k], 0, rows[k]);
        }
        event = { kind: "insertion", indexes: [...indexes], new: [...rows], old: [], count, seq: change.seq, initial: false };
      } else if (change.kind === "removal") {
        // Positions in the window before the removal: removing from the highest keeps the others in place.
        if (new Set(indexes).size !== indexes.length || indexes.some((index) => index < 0 || index >= size)) {
          throw new MirrorError(`a removal at [${indexes}] from a window of ${size} at seq ${change.seq}`);
        }
        const old = indexes.map((index) => this.rows[index]);
        for (const index of [...indexes].sort((a, b) => b - a)) this.rows.splice(index, 1);
        event = { kind: "removal", indexes: [...indexes], new: [], old, count, seq: change.seq, initial: false };
      } else if (change.kind === "replacement") {
        const rows = this.newRows(change, indexes.length);
        if (indexes.some((index) => index < 0 || index >= size)) {
          throw new MirrorError(`a replacement at [${indexes}] in a window of ${size} at seq ${change.seq}`);
        }
        const old = indexes.map((index) => this.rows[index]);
        indexes.forEach((index, k) => { this.rows[index] = rows[k]; });
        event = { kind: "replacement", indexes: [...indexes], new: [...rows], old, count, seq: change.seq, initial: false };
      } else {
        throw new MirrorError(`an unknown kind ${String(change.kind)} at seq ${change.seq}`);
      }
    }
    this.count = count;
    this.seq = change.seq;
    return event;
  }

  private newRows(change: Change, expected: number | undefined): unknown[] {
    if (!Array.isArray(change.new)) {
      throw new MirrorError(`a ${change.kind} at seq ${change.seq} without its new rows (subscribe with "new")`);
    }
    if (expected !== undefined && change.new.length !== expected) {
      throw new MirrorError(`a ${change.kind} at seq ${change.seq} with ${change.new.length} rows for ${expected} indexes`);
    }
    return change.new;
  }
}

/** A live query (`Client.liveQuery`): the window of a query, kept up to date by kvod's notifications. Iterate it
 * (`for (const row of live)`), read `rows`, `length`, `at(i)`, and `count`, the number of matches in all. Each
 * notification is applied as it arrives, before the response that follows it on the wire, so once an awaited call of
 * this client resolves, the window holds every change up to that call's seq. `onChange(listener)` calls the listener
 * with a QueryChange per change, right after it is applied (a listener may be async; a failure is logged). After a
 * reconnection kvod sends the window again (a `setting` with `initial`). */
export class LiveQuery implements Iterable<unknown> {
  private readonly mirror = new QueryMirror();
  private readonly listeners: QueryChangeListener[] = [];
  private waiters: Array<() => void> = [];
  private failure?: Error;
  private ended = false;
  private readonly end: () => Promise<void>;
  private readonly timeout: number;
  /** The key path of the collection this live query observes. */
  readonly path: string;
  /** The query as sent on the wire (`where`, `vars`, `orderBy`, `offset`, `limit`, `select`). */
  readonly query: Record<string, unknown>;

  /** @internal Made by `Client.liveQuery`. */
  constructor(path: string, query: Record<string, unknown>, end: () => Promise<void>, timeout: number) {
    this.path = path;
    this.query = query;
    this.end = end;
    this.timeout = timeout;
  }

  /** A copy of the window now. */
  get rows(): unknown[] { return [...this.mirror.rows]; }
  /** The number of rows in the window. */
  get length(): number { return this.mirror.rows.length; }
  /** The number of elements the predicate matches in all, as of the last notification. */
  get count(): number { return this.mirror.count; }
  /** The seq of the last notification applied (the window is also that of every later seq until the next). */
  get seq(): number | undefined { return this.mirror.seq; }
  /** True once the initial window is there. */
  get ready(): boolean { return this.mirror.ready; }
  /** Why the window stopped following kvod: the error that ended the subscription (kvod refused it after a reconnect
   * for a reason reconnecting cannot cure) or a MirrorError; undefined while it follows. */
  get error(): Error | undefined { return this.failure; }
  /** True once closed (or the client closed): the window stays as it was. */
  get closed(): boolean { return this.ended; }

  /** The row at `index` of the window (negative: from the end). */
  at(index: number): unknown { return this.mirror.rows[index < 0 ? this.mirror.rows.length + index : index]; }

  /** The rows of the window. */
  [Symbol.iterator](): Iterator<unknown> { return this.rows[Symbol.iterator](); }

  /** The window, the count and the seq, together. */
  snapshot(): QueryResult { return { rows: this.rows, count: this.mirror.count, seq: this.mirror.seq ?? 0 }; }

  /** Calls `callback(QueryChange)` after each change of the window (the initial window included: soon, when it is
   * already there); returns a function that removes it. */
  onChange(callback: QueryChangeListener): () => void {
    this.listeners.push(callback);
    if (this.mirror.ready) {
      const initial: QueryChange = {
        kind: "setting", new: this.rows, old: [], count: this.mirror.count, seq: this.mirror.seq ?? 0, initial: true,
      };
      queueMicrotask(() => this.call(callback, initial));
    }
    return () => {
      const index = this.listeners.indexOf(callback);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  /** Resolves once `condition(this)` holds (checked now and after each change); rejects with Timeout after `timeout`
   * milliseconds (default: the client's), with the subscription's error if it ended. */
  async waitFor(condition: (live: LiveQuery) => boolean, timeout?: number): Promise<void> {
    const deadline = Date.now() + (timeout ?? this.timeout);
    while (!condition(this)) {
      if (this.failure) throw this.failure;
      const left = deadline - Date.now();
      if (left <= 0 || this.ended) {
        throw new Timeout(`the live query on ${this.path} did not get there within ${timeout ?? this.timeout} ms`, -2);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { this.waiters = this.waiters.filter((waiter) => waiter !== done); resolve(); }, left);
        const done = () => { clearTimeout(timer); resolve(); };
        this.waiters.push(done);
      });
    }
  }

  /** Ends the live query: kvod stops sending its notifications; the window stays as it is. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.wake();
    await this.end();
  }

  /** @internal Each item of the subscription: a Change, or a Resync (nothing: the window follows), the error that
   * ended it, null once closed. */
  receive(item: Change | Resync | KvodError | null): void {
    if (item === null) {
      this.ended = true;
    } else if (item instanceof KvodError) {
      this.failure = item;
    } else if (item.type === "change") {
      let event: QueryChange | undefined;
      try {
        event = this.mirror.apply(item);
      } catch (error) {
        if (!(error instanceof MirrorError)) throw error;
        console.error(`kvod: the live query on ${this.path} cannot apply a notification: ${error.message}`);
        this.failure = error;
      }
      if (event) for (const listener of [...this.listeners]) this.call(listener, event);
    }
    this.wake();
  }

  private call(listener: QueryChangeListener, event: QueryChange): void {
    try {
      const result = listener(event);
      if (result && typeof (result as Promise<void>).catch === "function") {
        (result as Promise<void>).catch((error) => console.warn("kvod: a live query's change listener failed:", error));
      }
    } catch (error) {
      console.warn("kvod: a live query's change listener failed:", error);
    }
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** A live query's subscription: what the client delivers to it goes to the LiveQuery. */
class QuerySubscription extends Subscription {
  constructor(client: Client, state: SubscriptionState, private readonly live: LiveQuery) {
    super(client, state);
  }

  /** @internal */
  push(item: Change | Resync | KvodError | null): void {
    this.live.receive(item);
  }
}
