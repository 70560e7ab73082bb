/** An error kvod answered with: `code`, `message` and `data` as on the wire (Protocol/errors.md). */
export declare class KvodError extends Error {
    readonly code: number;
    readonly data: unknown;
    constructor(message: string, code: number, data?: unknown);
}
export declare class ParseError extends KvodError {
}
export declare class InvalidRequest extends KvodError {
}
export declare class MethodNotFound extends KvodError {
}
export declare class InvalidParams extends KvodError {
}
export declare class InternalError extends KvodError {
}
export declare class UndefinedKey extends KvodError {
}
export declare class ValidationFailed extends KvodError {
}
export declare class NullNotAllowed extends KvodError {
}
export declare class IndexOutOfRange extends KvodError {
}
export declare class TypeMismatch extends KvodError {
}
export declare class ReadOnlyKey extends KvodError {
}
export declare class UnknownSubscription extends KvodError {
}
export declare class Unauthorized extends KvodError {
}
export declare class LimitExceeded extends KvodError {
}
export declare class ResyncRequired extends KvodError {
}
/** A conditional write's condition did not hold; `data` has the current `value` and `modSeq`. */
export declare class PreconditionFailed extends KvodError {
}
/** A cluster member that cannot accept the mutation (a follower, an election, a leader without its etcd lease); nothing
 * changed. `data.leader` names the leader when one is known. Thrown once `leaderWait` has passed without a leader. */
export declare class NotLeader extends KvodError {
}
/** A query's `where` is not a predicate kvod can read (Protocol/methods.md#predicates); `data` has `column` (1-based,
 * where it stopped) and `reason`. */
export declare class InvalidQuery extends KvodError {
}
/** The connection closed while the request was in flight: whether a mutation took effect is unknown. */
export declare class ConnectionLost extends KvodError {
}
/** No answer (or no connection) within the client's timeout. */
export declare class Timeout extends KvodError {
}
declare type ErrorClass = new (message: string, code: number, data?: unknown) => KvodError;
export declare const ERRORS: Record<number, ErrorClass>;
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
export declare type Option = "new" | "old" | "initial" | "prior";
/** A connection that carries JSON-RPC messages: one per line over TCP, one per text frame over WebSocket. */
export interface Transport {
    send(message: string): void;
    close(): void;
}
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
/** The addresses to try when (re)connecting: `preferred` (the leader a 1012 named) first, then those after `last` (the
 * one just lost) in turn, `last` itself at the end. */
export declare function connectionOrder(addresses: string[], preferred: string | undefined, last: string | undefined): string[];
interface SubscriptionState {
    path: string;
    options: Option[];
    context?: unknown;
    progress?: number;
    serverId?: number;
    lastSeq?: number;
    priorSeq?: number;
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
/** What a connection's setup does after kvod refused to resume a subscription: `resync` (subscribe afresh, then push
 * a Resync item), `retry` (drop this connection: the reconnection, with its backoff, tries `leader` first when set,
 * else the next address) or `end` (end the subscription with the error; the connection and the others go on). */
export declare type ResumeStep = {
    action: "resync";
} | {
    action: "retry";
    leader?: string;
} | {
    action: "end";
};
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
export declare function resumeRefused(state: ResumeState, error: KvodError, endpoint: string | undefined, leaderWait: number, now: number): ResumeStep;
/** What a subscription's queue holds: items, then null once it is closed or the error that ended it. */
declare type Queued = Change | Resync | null | KvodError;
/** A live subscription: `for await` it for Change (and Resync) items, or `await next(timeoutMs)`. When kvod refuses to
 * resume it after a reconnect for a reason reconnecting cannot cure, iterating it rejects with that error (a KvodError
 * subclass, also in `error`) after the items delivered before (README.md#when-a-subscription-cannot-resume). */
export declare class Subscription implements AsyncIterable<Change | Resync> {
    private readonly client;
    /** The seq the subscribe reported. */
    seq: number;
    private readonly items;
    private readonly waiting;
    /** @internal The client's record of this subscription. */
    readonly state: SubscriptionState;
    constructor(client: Client, state: SubscriptionState);
    /** The key path this subscription observes. */
    get path(): string;
    /** kvod's id on the current connection (it changes after a reconnect). */
    get id(): number | undefined;
    /** The seq up to which every notification was delivered: where a resume starts. */
    get lastSeq(): number | undefined;
    /** The error that ended the subscription (kvod refused to resume it for good); undefined while it lives. */
    get error(): KvodError | undefined;
    /** @internal */
    push(item: Queued): void;
    /** The next item; rejects with Timeout after `timeoutMs`; resolves null once unsubscribed or closed; rejects with
     * the error that ended the subscription once it ended (every later call ends the same way). */
    next(timeoutMs?: number): Promise<Change | Resync | null>;
    /** `for await (const item of subscription)`: each Change (or Resync) until unsubscribed or closed. */
    [Symbol.asyncIterator](): AsyncIterator<Change | Resync>;
    /** Ends this subscription (`Client.unsubscribe`). */
    unsubscribe(): Promise<void>;
}
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
export declare type ConnectedListener = (info: Connected) => void | Promise<void>;
/** What an `onDisconnected` listener gets when a connection ends: the address it was to, the `closing` reason kvod
 * gave (when it sent one: `server_shutdown`, `slow_consumer`, ...), and whether the client reconnects by itself. */
export interface Disconnected {
    endpoint?: string;
    reason?: string;
    reconnecting: boolean;
}
export declare type DisconnectedListener = (info: Disconnected) => void;
/** Connects to kvod (several addresses are tried in turn: the members of a cluster) and says hello. */
export declare function connect(addresses: string | string[], options?: ClientOptions): Promise<Client>;
/** A kvod client (create it with `connect`): promises for calls, async iterators for subscriptions, which resume by
 * themselves after a reconnect; given a cluster's members, it follows the leader. */
export declare class Client {
    private readonly addresses;
    private readonly options;
    /** How many connections were made (1 + reconnections). */
    connections: number;
    /** The reason of kvod's last `closing` notice (`server_shutdown`, `not_leader`, ...), if any. */
    closingReason?: string;
    /** The address of the current (or last) connection. */
    endpoint?: string;
    /** The leader a 1012 named: tried first on the next connection. */
    private preferred?;
    private transport?;
    private nextId;
    private readonly pending;
    private readonly subscriptions;
    private readonly byServerId;
    private readonly connector;
    private readonly timeout;
    private connectedWaiters;
    private closed;
    private ready;
    /** A reconnection loop is running (`reconnect`). */
    private reconnecting;
    /** The onDisconnect ops kvod last accepted (undefined: none, or cancelled): registered again on each connection. */
    private onDisconnectOps?;
    /** Retrying a re-registration refused with 1012, across reconnections: until when, the next pause, the leaders
     * tried. */
    private rearming?;
    private readonly connectedListeners;
    private readonly disconnectedListeners;
    /** The `closing` reason kvod sent last, and on which connection (`connections` then). */
    private lastClosing?;
    private lastConnected?;
    /** Why the onDisconnect ops could not be registered again on the current connection (undefined when they were). */
    onDisconnectError?: KvodError;
    /** Why kvod refused `hello` on the last connection attempts (a token it no longer accepts); undefined once
     * connected. */
    helloError?: KvodError;
    constructor(addresses: string[], options?: ClientOptions);
    /** @internal Opens the first connection. */
    open(): Promise<void>;
    private establish;
    /** hello, then the onDisconnect ops, then every live subscription again with `since` (a Resync item when kvod
     * cannot replay that far); resolves with hello's result. Callers' requests wait until it is done. */
    private setup;
    /** Subscribes again with `since`; a refusal goes as `resumeRefused` decides: resync (a Resync item), retry (the
     * error ends this connection's setup: the client reconnects) or end the subscription. */
    private resubscribe;
    /** Ends a subscription kvod refused to resume for good: its iterator rejects with `error`; the others go on. */
    private endSubscription;
    private forget;
    /** kvod refused `hello` on a new connection (a token it no longer accepts): the client keeps reconnecting with
     * backoff, which helps only once kvod accepts the token again; a warning says so, once per error code until a
     * connection succeeds (the first connection rejects with it instead), and calls waiting for the connection time out
     * naming it. */
    private helloRefused;
    /** Registers the remembered onDisconnect ops on the connection being set up, right after hello: before the
     * resubscriptions and before any caller's request, so presence is armed first. A 1012 refusal is retried as calls
     * retry it (on the leader it names: this connection is dropped for it; else after pauses of 100 ms doubling to 1 s)
     * for up to `leaderWait`, across reconnections; then, or at once for any other error, the connection goes on
     * without them: `onDisconnectError` says why (and the listeners' `Connected`), and a warning is logged. */
    private rearm;
    private notifyConnected;
    private lost;
    /** Reconnects with backoff until a connection is set up. One loop at a time: a connection that closes during its
     * setup calls `lost()` again, and that attempt's failure already sends this loop round again (two loops would
     * set up two connections at once, each resubscribing every subscription). */
    private reconnect;
    private subscribeParams;
    /** Sends on the current connection (during setup too) and waits for the answer. */
    private send;
    private route;
    /** Advances the resume point; false for a replayed notification the caller already has. */
    private accept;
    private registered;
    private whenConnected;
    /** Sends one request and resolves with its result; rejects with the KvodError subclass of an error response. A 1012
     * "not the leader" refusal (nothing changed) is retried on the leader for up to `leaderWait` milliseconds. */
    call(method: string, params?: unknown): Promise<unknown>;
    /** Says hello, presenting `token` (kept for reconnections; default: the client's); resolves with kvod's answer:
     * `{server, version, protocol}`, with `access` under access control and `role`, `term`, ... in a cluster.
     * Rejects with Unauthorized for a wrong token. */
    hello(token?: string): Promise<unknown>;
    /** Checks that kvod answers; resolves with "pong". */
    ping(): Promise<string>;
    /** The value at `path` (objects with `"$id"` first); null when never set or when an intermediate is missing.
     * Rejects with UndefinedKey for a key the model does not declare, TypeMismatch for a path through a non-object. */
    get(path: string): Promise<unknown>;
    /** `{value, seq}`: the value at `path` and the seq of the state it was read from. */
    getWithSeq(path: string): Promise<{
        value: unknown;
        seq: number;
    }>;
    /** `{value, seq, modSeq, expires}`: the value with the seq that last stored the key (null when never set) and when
     * its ttl passes (epoch milliseconds; null without one). */
    getMeta(path: string): Promise<{
        value: unknown;
        seq: number;
        modSeq: number | null;
        expires: number | null;
    }>;
    /** `{value, count, seq}`: at most `limit` elements (default: to the end) of the collection at `path` from `offset`
     * (default 0), and its element count; costs the page, not the collection (Protocol/methods.md#get). Rejects with
     * TypeMismatch when the value is not a collection. */
    getPage(path: string, page?: {
        offset?: number;
        limit?: number;
    }): Promise<{
        value: unknown[];
        count: number;
        seq: number;
    }>;
    /** Sets `path`; resolves with the mutation's seq. With one of `ifModSeq` (unchanged since that seq), `ifValue`
     * (currently equal) or `ifAbsent`, a conditional write: rejects with PreconditionFailed when it does not hold. With
     * `ttl` (seconds), kvod sets the key to null when it passes, unless a later set moves or clears the deadline. */
    set(path: string, value: unknown, options?: {
        ifModSeq?: number;
        ifValue?: unknown;
        ifAbsent?: boolean;
        ttl?: number;
    }): Promise<number>;
    /** Registers ops (transaction's format) that kvod runs as one transaction when the connection ends
     * (Protocol/methods.md#ondisconnect); resolves with their count. The client registers them again on every new
     * connection, first thing after hello, until `cancelOnDisconnect()` (or `[]`). A connection lost before kvod
     * answered is retried (a registration replaces the last). */
    onDisconnect(ops: Op[]): Promise<number>;
    /** Cancels the onDisconnect ops, on this connection and the next ones. */
    cancelOnDisconnect(): Promise<void>;
    /** Calls `listener(Connected)` on each connection once it is ready (hello answered, onDisconnect ops registered,
     * subscriptions resumed), and soon when connected now (Firebase's `.info/connected`). A listener may call the
     * client (`client.set("presence.ada", "online")`); a failure is logged. Returns a function that removes it. */
    onConnected(listener: ConnectedListener): () => void;
    /** Calls `listener(Disconnected)` each time a connection that was set up ends (kvod closed it, died, or the
     * network failed), right away, before any reconnection; `reconnecting` says whether the client will reconnect by
     * itself (false with `reconnect: false` or after `close()`). With `onConnected`, this tells a user interface when
     * to show the connection as lost. Returns a function that removes it. */
    onDisconnected(listener: DisconnectedListener): () => void;
    private notifyDisconnected;
    /** kvod answered an `onDisconnect` with these params: they are what it holds now (`[]` cancelled). */
    private onDisconnectAccepted;
    /** `{value}` or `{values}`, with `index`/`indexes` (ordered collections) or without (append; union on a set). */
    insert(path: string, change: {
        value?: unknown;
        values?: unknown[];
        index?: number;
        indexes?: number[];
    }): Promise<number>;
    /** Removes the elements at `index` (or `indexes`) of an ordered collection, or the members `values` of a set;
     * resolves with the seq. Rejects with IndexOutOfRange. */
    remove(path: string, change: {
        index?: number;
        indexes?: number[];
        values?: unknown[];
    }): Promise<number>;
    /** Replaces the element at `index` with `value` (or those at `indexes` with `values`); resolves with the seq. */
    replace(path: string, change: {
        value?: unknown;
        values?: unknown[];
        index?: number;
        indexes?: number[];
    }): Promise<number>;
    /** Adds `values` to the set at `path` (those it lacks); resolves with the seq. */
    union(path: string, values: unknown[]): Promise<number>;
    /** Removes `values` from the set at `path`; resolves with the seq. */
    minus(path: string, values: unknown[]): Promise<number>;
    /** Keeps only the members of the set at `path` that are in `values`; resolves with the seq. */
    intersect(path: string, values: unknown[]): Promise<number>;
    /** Makes the set at `path` exactly `values`; resolves with the seq. */
    setMembers(path: string, values: unknown[]): Promise<number>;
    /** Applies `{method, params}` ops atomically: all with one seq, which it resolves with, or none (the error's
     * `data.op` names the failing op). */
    transaction(ops: Op[]): Promise<number>;
    /** What `set(path, value)` would store (after trimming and the like), without storing it; rejects as `set` would. */
    validate(path: string, value: unknown): Promise<unknown>;
    /** The model (`{root, classes}`), or with `path` the class of the object there and its current keys. */
    describe(path?: string): Promise<unknown>;
    /** `{connections: [...]}`: every connection and its subscriptions (with `path`, only those to it). */
    observers(path?: string): Promise<unknown>;
    /** kvod's figures: seq, connections, subscriptions, requests, notifications, bytes, closes by reason, ... */
    stats(): Promise<unknown>;
    private seqOf;
    /** Observes `path` with KVO's options (`new`, `old`, `initial`, `prior`), `context` echoed in each change. With
     * `since`, resumes after that seq; with `progress` (seconds), kvod sends progress notices while quiet. The
     * subscription resumes by itself after a reconnect. */
    subscribe(path: string, options?: {
        options?: Option[];
        context?: unknown;
        since?: number;
        progress?: number;
    }): Promise<Subscription>;
    /** Ends `subscription`: kvod stops sending its notifications; its iterator ends once the items already delivered
     * are read. */
    unsubscribe(subscription: Subscription): Promise<void>;
    /** The elements of the collection at `path` that the predicate `where` keeps (NSPredicate's syntax, with `$NAME`
     * variables from `vars`), sorted by `orderBy` (`"key"`, `"-key"` or `{key, ascending, caseInsensitive}`, or a list of
     * them), the window of `limit` from `offset`, each with the keys of `select`: resolves with `{rows, count, seq}`,
     * `count` being the number of matches in all (Protocol/methods.md#queries). Rejects with InvalidQuery for a `where`
     * that does not parse (`data.column`), UndefinedKey, TypeMismatch when `path` is not a collection, InvalidParams. */
    query(path: string, query?: {
        where?: string;
        vars?: Record<string, unknown>;
        orderBy?: OrderBy;
        offset?: number;
        limit?: number;
        select?: string[];
    }): Promise<QueryResult>;
    /** The query of `query(...)`, live: resolves, once the initial window is there, with a LiveQuery that holds the
     * window, kept up to date by kvod's notifications (a `subscribe` with the query), with change listeners of its own.
     * It follows the client across reconnections (kvod sends the window again). Rejects as `query` does. */
    liveQuery(path: string, query?: {
        where?: string;
        vars?: Record<string, unknown>;
        orderBy?: OrderBy;
        offset?: number;
        limit?: number;
        select?: string[];
        context?: unknown;
    }): Promise<LiveQuery>;
    private endLiveQuery;
    /** Closes the connection for good: no reconnecting; subscriptions end. */
    close(): void;
}
/** One sort descriptor or a list of them: `"key"`, `"-key"` (descending) or `{key, ascending, caseInsensitive}`. */
export declare type OrderBy = string | SortDescriptor | Array<string | SortDescriptor>;
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
export declare type QueryChangeListener = (change: QueryChange) => void | Promise<void>;
/** A notification that does not fit the mirrored window (an index out of range, a missing `new`): the mirror can no
 * longer be trusted. The live query keeps it in `error`. */
export declare class MirrorError extends Error {
}
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
export declare function queryParams(query: QueryOptions): Record<string, unknown>;
/** The window of a live query, built only from its notifications: `apply` takes one Change and returns the QueryChange
 * it made (undefined for a prior, which changes nothing); it throws MirrorError for a notification that does not fit. */
export declare class QueryMirror {
    /** The window. */
    rows: unknown[];
    /** The number of matches in all, as of the last notification. */
    count: number;
    /** The seq of the last notification applied. */
    seq?: number;
    /** True once a setting (the initial window) was applied. */
    ready: boolean;
    /** Applies one notification of the live query's subscription. */
    apply(change: Change): QueryChange | undefined;
    private newRows;
}
/** A live query (`Client.liveQuery`): the window of a query, kept up to date by kvod's notifications. Iterate it
 * (`for (const row of live)`), read `rows`, `length`, `at(i)`, and `count`, the number of matches in all. Each
 * notification is applied as it arrives, before the response that follows it on the wire, so once an awaited call of
 * this client resolves, the window holds every change up to that call's seq. `onChange(listener)` calls the listener
 * with a QueryChange per change, right after it is applied (a listener may be async; a failure is logged). After a
 * reconnection kvod sends the window again (a `setting` with `initial`). */
export declare class LiveQuery implements Iterable<unknown> {
    private readonly mirror;
    private readonly listeners;
    private waiters;
    private failure?;
    private ended;
    private readonly end;
    private readonly timeout;
    /** The key path of the collection this live query observes. */
    readonly path: string;
    /** The query as sent on the wire (`where`, `vars`, `orderBy`, `offset`, `limit`, `select`). */
    readonly query: Record<string, unknown>;
    /** @internal Made by `Client.liveQuery`. */
    constructor(path: string, query: Record<string, unknown>, end: () => Promise<void>, timeout: number);
    /** A copy of the window now. */
    get rows(): unknown[];
    /** The number of rows in the window. */
    get length(): number;
    /** The number of elements the predicate matches in all, as of the last notification. */
    get count(): number;
    /** The seq of the last notification applied (the window is also that of every later seq until the next). */
    get seq(): number | undefined;
    /** True once the initial window is there. */
    get ready(): boolean;
    /** Why the window stopped following kvod: the error that ended the subscription (kvod refused it after a reconnect
     * for a reason reconnecting cannot cure) or a MirrorError; undefined while it follows. */
    get error(): Error | undefined;
    /** True once closed (or the client closed): the window stays as it was. */
    get closed(): boolean;
    /** The row at `index` of the window (negative: from the end). */
    at(index: number): unknown;
    /** The rows of the window. */
    [Symbol.iterator](): Iterator<unknown>;
    /** The window, the count and the seq, together. */
    snapshot(): QueryResult;
    /** Calls `callback(QueryChange)` after each change of the window (the initial window included: soon, when it is
     * already there); returns a function that removes it. */
    onChange(callback: QueryChangeListener): () => void;
    /** Resolves once `condition(this)` holds (checked now and after each change); rejects with Timeout after `timeout`
     * milliseconds (default: the client's), with the subscription's error if it ended. */
    waitFor(condition: (live: LiveQuery) => boolean, timeout?: number): Promise<void>;
    /** Ends the live query: kvod stops sending its notifications; the window stays as it is. */
    close(): Promise<void>;
    /** @internal Each item of the subscription: a Change, or a Resync (nothing: the window follows), the error that
     * ended it, null once closed. */
    receive(item: Change | Resync | KvodError | null): void;
    private call;
    private wake;
}
export {};
