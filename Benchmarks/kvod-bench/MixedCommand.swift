// `kvod-bench mixed`: runs the mixed workload (MixedRun) against kvod and prints ops/s, notifications/s and the
// latency of each kind of request, as a table or one JSON line.

import ArgumentParser
import WireProtocol

/// The outcome of one mixed run.
struct MixedResult: RunResult {
    /// What was run.
    var configuration: MixedConfiguration
    var windowSeconds: Double
    /// Responses received within the window.
    var operations: Int
    /// Notifications received within the window.
    var notifications: Int
    /// Per `MixedOperation.rawValue`.
    var latencies: [LatencySummary]
    /// Whether the mix included sets of dependent keys.
    var hasDependentKeys: Bool
    var benchCPU: Double
    var serverCPU: Double?
    var discrepancyCount: Int
    var discrepancies: [String]

    /// Responses per second in the window.
    var operationsPerSecond: Double { self.perSecond(self.operations) }
    /// Notifications per second in the window.
    var notificationsPerSecond: Double { self.perSecond(self.notifications) }

    /// The `--json` line.
    var json: JSONValue {
        var perOperation = JSONObject()
        for operation in MixedOperation.allCases where self.latencies[operation.rawValue].count > 0 {
            perOperation[operation.name] = self.latencies[operation.rawValue].json
        }
        var object: JSONObject = [
            "scenario": "mixed",
            "target": "kvod",
            "clients": .int(Int64(self.configuration.clients)),
            "pipeline": .int(Int64(self.configuration.pipeline)),
            "window_s": .double(Format.rounded(self.windowSeconds, 3)),
            "operations": .int(Int64(self.operations)),
            "operations_per_s": .double(Format.rounded(self.operationsPerSecond, 0)),
            "notifications": .int(Int64(self.notifications)),
            "notifications_per_s": .double(Format.rounded(self.notificationsPerSecond, 0)),
            "dependent_keys": .bool(self.hasDependentKeys),
            "latency_us": .object(perOperation),
        ]
        self.addCheckMembers(to: &object)
        return .object(object)
    }

    /// The human report: totals, then one row per kind of request.
    var text: String {
        let lines = [
            "mixed: \(self.configuration.clients) clients × \(self.configuration.pipeline) in flight, "
                + "\(Format.fixed(self.windowSeconds, 2)) s, dependent keys: "
                + (self.hasDependentKeys ? "yes" : "no (describe did not show them; their share went to set)"),
            "operations/s \(Format.rate(self.operationsPerSecond)), notifications/s "
                + "\(Format.rate(self.notificationsPerSecond)), server CPU "
                + self.serverCPUText + ", bench CPU " + Format.percent(self.benchCPU) + ", check " + self.checkText,
            "",
        ]
        var rows: [[String]] = []
        for operation in MixedOperation.allCases where self.latencies[operation.rawValue].count > 0 {
            let summary = self.latencies[operation.rawValue]
            rows.append([
                operation.name, "\(summary.count)", Format.latency(summary.p50), Format.latency(summary.p99),
                Format.latency(summary.p999), Format.latency(summary.maximum),
            ])
        }
        return lines.joined(separator: "\n")
            + Format.table(["request", "count", "p50", "p99", "p99.9", "max"], rows)
    }
}

/// The `mixed` subcommand.
struct Mixed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A mix of gets, sets, subscribes, unsubscribes and key paths (kvod only).",
        discussion: """
            Each client keeps --pipeline requests in flight, drawn at random (seeded) from: get and set of flat \
            keys, get and set of key paths mx.dN.b.c, replacement of the intermediate object mx.dN.b (which \
            re-targets subscriptions to mx.dN.b.c), subscribe (new+old) and unsubscribe, and sets of dependent keys \
            when `describe` shows the default model's labColor and person. Latency is request to response.
            """)

    @OptionGroup var server: ServerOptions

    @Option(help: "Client connections.")
    var clients: Int = 8

    @Option(help: "Requests in flight per client.")
    var pipeline: Int = 8

    @Option(help: "Seconds measured.")
    var seconds: Double = 3

    @Option(help: "Seconds of warm-up before the window.")
    var warmup: Double = 1

    @Option(help: "Seed of the operation mix.")
    var seed: UInt64 = 1

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    func validate() throws {
        guard self.clients > 0, self.clients <= 10_000, self.pipeline > 0, self.pipeline <= 10_000 else {
            throw ValidationError("--clients and --pipeline must be 1...10000")
        }
        guard self.seconds > 0, self.seconds <= 3600, self.warmup >= 0, self.warmup <= 600 else {
            throw ValidationError("--seconds must be in (0, 3600] and --warmup in [0, 600]")
        }
    }

    func run() throws {
        let configuration = MixedConfiguration(
            host: self.server.host, port: self.server.port, clients: self.clients, pipeline: self.pipeline,
            warmupSeconds: self.warmup, seconds: self.seconds, seed: self.seed, serverPID: self.server.serverPID)
        let result = try MainActor.assumeIsolated { try MixedRun(configuration: configuration).run() }
        emit(self.json ? JSONWriter.encodeString(result.json) + "\n" : result.text)
        for message in result.discrepancies { printError("  discrepancy: \(message)") }
        if !result.isOK {
            printError("kvod-bench: mixed run FAILED (see the discrepancies above)")
            throw ExitCode(2)
        }
    }
}
