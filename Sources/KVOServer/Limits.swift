// Every limit the server enforces, in one place, with its unit in its name. Protocol/README.md documents them.

/// Limits on what one client may make the server do.
public struct Limits: Sendable {
    /// The longest request line accepted; a longer one gets a 1009 error and the connection is closed.
    public var maxLineBytes = 1 << 20
    /// The deepest nesting of arrays and objects accepted in a request.
    public var maxJSONDepth = 64
    /// The most requests in one batch; a larger batch is answered with a single 1009 error.
    public var maxBatchRequests = 10_000
    /// Output queued for a client beyond which the connection is closed (a client that never reads).
    public var outputHardLimitBytes = 64 << 20

    public init() {}
}
