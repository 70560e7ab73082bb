// What a fan-out run is asked to do, and the server it talks to. FanoutCommand builds it from the command line;
// FanoutRun carries it out.

import TLS

/// What a fan-out run does.
struct FanoutConfiguration {
    /// The server under test (and for Redis, the command).
    var target: Target
    /// The name the results carry (`--series`), when the run names which configuration of its server it measures
    /// (compare.sh's `kvod-busy-poll`); nil: the target's name.
    var series: String?
    /// The server's address and port.
    var host: String
    var port: Int
    /// How every connection talks to the server: JSON lines over TCP, or WebSocket (kvod only).
    var transport: BenchTransport = .tcp
    /// M: subscriber connections.
    var subscribers: Int
    /// P: publisher connections.
    var publishers: Int
    /// D: mutations in flight per publisher.
    var pipeline: Int
    /// Mutations per second, all publishers together (`--rate`), still at most D in flight each; nil: as fast as
    /// the acknowledgements allow. At a set rate every series of a comparison sees the same load, so the server CPU
    /// each spends per notification compares like with like.
    var rate: Double?
    /// Seconds before the measured window.
    var warmupSeconds: Double
    /// Seconds of the measured window.
    var seconds: Double
    /// Stop after this many mutations instead of after `seconds` (no warm-up): a workload that repeats exactly.
    var mutationLimit: Int?
    /// The key (kvod key path, Redis channel or key, NATS subject, etcd key).
    var key: String
    /// The server's process id, to report its CPU use during the window.
    var serverPID: Int32?
    /// TLS for every connection (`--tls-ca`); nil: plaintext.
    var tls: TLSContext?
    /// How long the drain may wait for the last responses and notifications.
    var drainTimeoutSeconds: Double = 20
    /// How long connecting and subscribing may take.
    var setupTimeoutSeconds: Double = 60

    /// The name in reports and in the JSON lines' `target` member.
    var seriesName: String { self.series ?? self.target.name }

    /// The whole run gives up after this long: its phases plus a margin, or 30 minutes in count mode (a server
    /// under valgrind is slow).
    var deadlineSeconds: Double {
        if self.mutationLimit != nil { return 1800 }
        return self.setupTimeoutSeconds + self.warmupSeconds + self.seconds + self.drainTimeoutSeconds + 30
    }
}

/// The server under test and, for Redis, which command makes the notifications.
enum Target: Equatable {
    /// Redis commands: PUBLISH to a channel, or SET of a key whose keyspace channel is subscribed.
    enum RedisCommand: String {
        case publish, set
    }

    case kvod
    case redis(RedisCommand)
    /// NATS core: PUB to a subject (the publishers in verbose mode, so that each PUB is acknowledged by `+OK`),
    /// SUB to it.
    case nats
    /// etcd through its JSON gateway: `/v3/kv/put` pipelined on keep-alive connections, `/v3/watch` of the key.
    case etcd

    /// "kvod", "redis-publish", "redis-set", "nats" or "etcd": the name in reports.
    var name: String {
        switch self {
        case .kvod: "kvod"
        case .redis(let command): "redis-\(command.rawValue)"
        case .nats: "nats"
        case .etcd: "etcd"
        }
    }

    /// Whether each message carries the `TIME:PUBLISHER:COUNTER` payload that subscribers check per publisher.
    var carriesPeerPayload: Bool { self == .nats || self == .etcd }
}
