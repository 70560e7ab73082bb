// Counters the server keeps about itself. Loop-owned; read by the `stats` method and logs.

/// Running totals since the server started.
public struct ServerStats: Sendable {
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    public var requests = 0
    public var mutations = 0
    public var notifications = 0
    public var bytesIn = 0
    public var bytesOut = 0
    public var closes: [CloseReason: Int] = [:]

    public init() {}
}
