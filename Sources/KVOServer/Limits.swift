// Every limit the server enforces, in one place, with its unit in its name. Protocol/README.md#limits documents them;
// docs/CONFIGURATION.md gives the option that sets each.

/// Limits on what one client may make the server do. A limit of 0 bytes turns an output limit off.
public struct Limits: Sendable, Equatable {
    /// The longest request line accepted; a longer one gets a 1009 error and the connection is closed.
    public var maxLineBytes = 1 << 20
    /// The deepest nesting of arrays and objects accepted in a request.
    public var maxJSONDepth = 64
    /// The most requests in one batch; a larger batch is answered with a single 1009 error.
    public var maxBatchRequests = 10_000
    /// The most ops in one transaction (or one `onDisconnect`); more is a 1009 error. A transaction runs whole in one
    /// loop turn (it is atomic), so this bounds how long one request can hold the loop: about 3 ms for 1,000 ops
    /// on a 2-core machine (Protocol/README.md#fairness).
    public var maxTransactionOps = 1_000
    /// The most client connections open at once; one more gets a `closing` notice (`too_many_connections`).
    public var maxConnections = 10_000
    /// The most subscriptions one connection may hold; one more is refused with 1009.
    public var maxSubscriptionsPerConnection = 10_000
    /// The largest `context` a subscription may carry, in bytes of its compact JSON; a larger one is refused with
    /// 1009 (a context is kept, and written into every notification, for the subscription's life). 0: no limit.
    public var maxContextBytes = 4096
    /// Wrong tokens one connection may send in `hello` before it is closed (`unauthorized`).
    public var maxAuthenticationFailures = 3
    /// With access control on: seconds a connection may stay open without an accepted `hello` before it is closed
    /// (`auth_timeout`), so idle unauthenticated connections cannot hold the connection slots. 0: no limit.
    public var authTimeoutSeconds = 5
    /// Output queued for a client (kvod's buffer plus the socket's write queue) beyond which the connection is closed
    /// at once (`slow_consumer`); redis's client-output-buffer-limit hard limit. 0: no hard limit.
    public var outputHardLimitBytes = 64 << 20
    /// Output queued for a client beyond which, for `outputSoftLimitSeconds` without a break, the connection is
    /// closed (`slow_consumer`). 0: no soft limit.
    public var outputSoftLimitBytes = 8 << 20
    /// How long output may stay above `outputSoftLimitBytes` before the connection is closed.
    public var outputSoftLimitSeconds = 60

    /// The defaults (docs/CONFIGURATION.md).
    public init() {}
}
