// Counters the server keeps about itself. Loop-owned; read by the `stats` method and the metrics endpoint through
// StatsSnapshot, so both always show the same figures.

/// Running totals since the server started, and the current gauges.
public struct ServerStats: Sendable {
    /// Connections accepted, including those refused at once for `too_many_connections`.
    public var connectionsAccepted = 0
    /// Client connections open and not closing.
    public var connectionsOpen = 0
    /// Subscriptions held by open connections.
    public var subscriptionsOpen = 0
    /// Live-query answers being built over several loop turns (their subscribers wait: Protocol/README.md#fairness).
    public var queryFills = 0
    /// Requests handled (including refused ones).
    public var requests = 0
    /// Successful mutating requests.
    public var mutations = 0
    /// Change notifications queued for clients (one per subscription reached).
    public var notifications = 0
    /// Times a connection's requests used up their share of a loop turn and the rest waited for the next one
    /// (Protocol/README.md#fairness).
    public var turnsYielded = 0
    /// Bytes read from client sockets.
    public var bytesIn = 0
    /// Bytes handed to client sockets.
    public var bytesOut = 0
    /// Wrong tokens sent in `hello`.
    public var authenticationFailures = 0
    /// `onDisconnect` ops that failed when their session ended (nothing applied).
    public var onDisconnectFailures = 0
    /// The largest lag of the loop's 250 ms tick over the last second, in seconds (Server+Observability.swift).
    public var loopLagSeconds = 0.0
    /// TLS client connections keeping OpenSSL's record buffers between records, as of the last sweep (each second).
    public var tlsBufferedConnections = 0
    /// Closes by reason.
    public var closes: [CloseReason: Int] = [:]
    /// How long journal fsyncs took (filled in by durability; empty without a data directory).
    public var journalFsyncSeconds = Histogram(bucketBounds: Histogram.latencyBucketBounds)

    /// All zero.
    public init() {}
}

/// A Prometheus-style histogram: cumulative counts per upper bound, plus the count and sum of all observations.
public struct Histogram: Sendable, Equatable {
    /// Upper bounds in seconds for latencies from 100 µs to 10 s.
    public static let latencyBucketBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
    ]

    /// The buckets' upper bounds, ascending (`+Inf` is implicit).
    public let bucketBounds: [Double]
    /// Observations at or under each bound (not cumulative; the renderers accumulate).
    public private(set) var bucketCounts: [Int]
    public private(set) var count = 0
    public private(set) var sum = 0.0

    /// An empty histogram with `bucketBounds` (ascending).
    public init(bucketBounds: [Double]) {
        self.bucketBounds = bucketBounds
        self.bucketCounts = Array(repeating: 0, count: bucketBounds.count)
    }

    /// Records one observation.
    public mutating func observe(_ value: Double) {
        self.count += 1
        self.sum += value
        if let index = self.bucketBounds.firstIndex(where: { value <= $0 }) { self.bucketCounts[index] += 1 }
    }

    /// (upper bound, observations at or under it) for each bound, cumulative, without `+Inf` (which is `count`).
    public var cumulativeBuckets: [(bound: Double, count: Int)] {
        var total = 0
        return zip(self.bucketBounds, self.bucketCounts).map { bound, count in
            total += count
            return (bound, total)
        }
    }
}
