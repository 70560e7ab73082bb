// `kvod-bench fanout`: runs the fan-out matrix (or one cell of it) against kvod or Redis and prints a table or JSON
// lines. The scenario itself is FanoutRun.

import ArgumentParser
import WireProtocol

/// The `fanout` subcommand.
struct Fanout: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "M subscribers of one key, P publishers with D mutations in flight each.",
        discussion: """
            Every mutation carries its send time (kvod: the value set is a monotonic nanosecond timestamp; Redis \
            PUBLISH, NATS PUB and etcd put: the payload TIME:PUBLISHER:COUNTER starts with it), so a subscriber \
            measures latency from send to receipt. NATS publishers run in verbose mode (every PUB acknowledged by \
            +OK, NATS core's only acknowledgement); etcd runs through its JSON gateway (HTTP/1.1 puts pipelined on \
            keep-alive connections, one /v3/watch stream per subscriber, events checked by mod_revision). Redis \
            keyspace notifications carry no value: the i-th notification is matched with the i-th SET sent, which \
            is exact for one publisher and approximate for several. After the window the run drains and checks that \
            every subscriber received every notification, in order; any discrepancy is printed and the exit status \
            is 2. Without --publishers/--pipeline the shapes of --shapes are run (PxD, default 1x1,1x16,16x1).
            """)

    @OptionGroup var server: ServerOptions

    @Option(help: "kvod, redis, nats (NATS core) or etcd (its JSON gateway on the client port).")
    var target: String = "kvod"

    @Option(help: "With --target redis: publish (PUBLISH to a channel) or set (SET + keyspace notifications).")
    var redisCommand: String = "publish"

    @Option(
        help: ArgumentHelp(
            "The name the results carry instead of the target's (kvod, redis-publish, redis-set).",
            discussion: "compare.sh names the runs of its kvod with --busy-poll kvod-busy-poll."))
    var series: String?

    @Option(help: "With --target kvod: tcp (JSON lines) or websocket (an upgrade on kvod's port, one frame a message).")
    var transport: BenchTransport = .tcp

    @Option(help: "Subscriber counts, comma-separated.")
    var subscribers: String = "1,10,100,1000"

    @Option(help: "Publisher connections (overrides --shapes).")
    var publishers: Int?

    @Option(help: "Mutations in flight per publisher (overrides --shapes).")
    var pipeline: Int?

    @Option(
        help: ArgumentHelp(
            "Mutations per second, all publishers together, each still keeping at most D in flight.",
            discussion: "Without it publishers send as fast as acknowledgements come back."))
    var rate: Double?

    @Option(help: "Publisher shapes PxD, comma-separated, used when --publishers and --pipeline are absent.")
    var shapes: String = "1x1,1x16,16x1"

    @Option(help: "Seconds measured per run.")
    var seconds: Double = 3

    @Option(help: "Seconds of warm-up before the window.")
    var warmup: Double = 1

    @Option(name: .customLong("count"), help: "Stop after this many mutations (no warm-up) instead of --seconds.")
    var mutationLimit: Int?

    @Option(help: "The key (kvod key path, Redis channel or key, NATS subject, etcd key).")
    var key: String = "k"

    @Flag(help: "Print one JSON object per run instead of a table.")
    var json = false

    func validate() throws {
        guard ["kvod", "redis", "nats", "etcd"].contains(self.target) else {
            throw ValidationError("--target must be kvod, redis, nats or etcd")
        }
        guard self.transport == .tcp || self.target == "kvod" else {
            throw ValidationError("--transport websocket needs --target kvod")
        }
        guard self.transport == .tcp || self.server.tlsCA == nil else {
            throw ValidationError("--tls-ca goes with --transport tcp")
        }
        guard Target.RedisCommand(rawValue: self.redisCommand) != nil else {
            throw ValidationError("--redis-command must be publish or set")
        }
        guard self.seconds > 0, self.seconds <= 3600, self.warmup >= 0, self.warmup <= 600 else {
            throw ValidationError("--seconds must be in (0, 3600] and --warmup in [0, 600]")
        }
        if let limit = self.mutationLimit, limit <= 0 { throw ValidationError("--count must be positive") }
        if let rate = self.rate, !(rate >= 1 && rate <= 100_000_000) {
            throw ValidationError("--rate must be in [1, 100000000] mutations per second")
        }
        if self.series?.isEmpty == true { throw ValidationError("--series must not be empty") }
        _ = try parseList(self.subscribers, name: "--subscribers")
        _ = try self.resolvedShapes()
    }

    /// The (publishers, pipeline) pairs to run.
    func resolvedShapes() throws -> [(Int, Int)] {
        if self.publishers != nil || self.pipeline != nil {
            let shape = (self.publishers ?? 1, self.pipeline ?? 1)
            guard shape.0 > 0, shape.1 > 0 else { throw ValidationError("--publishers and --pipeline must be > 0") }
            return [shape]
        }
        return try self.shapes.split(separator: ",").map { text in
            let parts = text.split(separator: "x").map { Int($0.filter { $0 != " " }) }
            guard parts.count == 2, let publishers = parts[0], let pipeline = parts[1], publishers > 0, pipeline > 0
            else { throw ValidationError("--shapes must look like 1x1,1x16,16x1, got '\(self.shapes)'") }
            return (publishers, pipeline)
        }
    }

    func run() throws {
        let target: Target =
            switch self.target {
            case "nats": .nats
            case "etcd": .etcd
            case "redis": .redis(Target.RedisCommand(rawValue: self.redisCommand) ?? .publish)
            default: .kvod
            }
        var results: [FanoutResult] = []
        for subscriberCount in try parseList(self.subscribers, name: "--subscribers") {
            for (publisherCount, depth) in try self.resolvedShapes() {
                let configuration = FanoutConfiguration(
                    target: target, series: self.series, host: self.server.host, port: self.server.port,
                    transport: self.transport,
                    subscribers: subscriberCount, publishers: publisherCount, pipeline: depth, rate: self.rate,
                    warmupSeconds: self.warmup, seconds: self.seconds, mutationLimit: self.mutationLimit, key: self.key,
                    serverPID: self.server.serverPID, tls: try self.server.tlsContext())
                let result = try MainActor.assumeIsolated {
                    // ArgumentParser calls run() on the main thread, which is the loop's thread.
                    try FanoutRun(configuration: configuration).run()
                }
                results.append(result)
                if self.json {
                    emit(JSONWriter.encodeString(result.json) + "\n")
                } else if !result.isOK {
                    printError("\(result.targetLabel) M=\(subscriberCount) P×D=\(publisherCount)×\(depth): FAILED")
                }
                for message in result.discrepancies { printError("  discrepancy: \(message)") }
            }
        }
        if !self.json {
            emit(Format.table(FanoutResult.tableHeader, results.map(\.tableRow)))
        }
        if results.contains(where: { !$0.isOK }) {
            printError("kvod-bench: delivery check FAILED (see the discrepancies above)")
            throw ExitCode(2)
        }
    }
}

extension BenchTransport: ExpressibleByArgument {}
