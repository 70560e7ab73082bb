// `kvod-bench sets`: the no-subscriber case of issue 10 (SetsRun) against kvod or Redis, printed as a table or one
// JSON line; and `kvod-bench sets summarize`, the medians of such lines per target with the kvod/Redis ratio, which
// Benchmarks/compare.sh prints.

import ArgumentParser
import WireProtocol

/// The `sets` command: `run` (the default) and `summarize`.
struct Sets: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Plain sets of one path with nobody subscribed (kvod `set`, or Redis SET), acknowledged per second.",
        subcommands: [SetsRunCommand.self, SetsSummarize.self],
        defaultSubcommand: SetsRunCommand.self)
}

/// `kvod-bench sets [run]`.
struct SetsRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "C connections × D sets in flight, all on one path, nobody subscribed.",
        discussion: """
            kvod: {"jsonrpc":"2.0","id":N,"method":"set","params":{"path":"bench.value","value":N}}; Redis \
            (--target redis): SET bench:value N. Every connection keeps --pipeline sets in flight: when a response \
            arrives the next set goes out. After --warmup seconds the window of --seconds is measured: sets \
            acknowledged per second, and the latency from queuing a set to reading its response. Then the run \
            drains (waits for every response). An error response fails the run (exit status 2).
            """)

    @OptionGroup var server: ServerOptions

    @Option(help: "kvod or redis.")
    var target: String = "kvod"

    @Option(help: "Client connections.")
    var connections: Int = 8

    @Option(help: "Sets in flight per connection.")
    var pipeline: Int = 16

    @Option(help: "Seconds measured.")
    var seconds: Double = 3

    @Option(help: "Seconds of warm-up before the window.")
    var warmup: Double = 1

    @Option(help: "The kvod key path, or the Redis key (default: bench.value for kvod, bench:value for Redis).")
    var key: String?

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    func validate() throws {
        guard SetsConfiguration.Target(rawValue: self.target) != nil else {
            throw ValidationError("--target must be kvod or redis")
        }
        guard (1...10_000).contains(self.connections), (1...10_000).contains(self.pipeline) else {
            throw ValidationError("--connections and --pipeline must be 1...10000")
        }
        guard self.seconds > 0, self.seconds <= 3600, self.warmup >= 0, self.warmup <= 600 else {
            throw ValidationError("--seconds must be in (0, 3600] and --warmup in [0, 600]")
        }
    }

    func run() throws {
        let target = SetsConfiguration.Target(rawValue: self.target) ?? .kvod
        let configuration = SetsConfiguration(
            target: target, host: self.server.host, port: self.server.port, connections: self.connections,
            pipeline: self.pipeline, warmupSeconds: self.warmup, seconds: self.seconds,
            key: self.key ?? (target == .kvod ? "bench.value" : "bench:value"), serverPID: self.server.serverPID,
            tls: try self.server.tlsContext())
        // ArgumentParser calls run() on the main thread, which is the loop's thread.
        let result = try MainActor.assumeIsolated { try SetsRun(configuration: configuration).run() }
        emit(
            self.json
                ? JSONWriter.encodeString(result.json) + "\n" : Format.table(SetsResult.tableHeader, [result.tableRow]))
        for message in result.discrepancies { printError("  discrepancy: \(message)") }
        if !result.isOK {
            printError("kvod-bench: sets run FAILED (see the discrepancies above)")
            throw ExitCode(2)
        }
    }
}

/// The outcome of one sets run.
struct SetsResult: RunResult {
    var configuration: SetsConfiguration
    var windowSeconds: Double
    /// Sets acknowledged within the window.
    var sets: Int
    /// Sets acknowledged over the whole run, warm-up and drain included.
    var totalSets: Int
    /// Request to response, window only.
    var latency: LatencySummary
    var benchCPU: Double
    var serverCPU: Double?
    var discrepancyCount: Int
    var discrepancies: [String]

    /// Sets acknowledged per second in the window.
    var setsPerSecond: Double { self.perSecond(self.sets) }

    /// The `--json` line.
    var json: JSONValue {
        var object: JSONObject = [
            "scenario": "sets",
            "target": .string(self.configuration.target.name),
            "connections": .int(Int64(self.configuration.connections)),
            "pipeline": .int(Int64(self.configuration.pipeline)),
            "key": .string(self.configuration.key),
            "window_s": .double(Format.rounded(self.windowSeconds, 3)),
            "sets": .int(Int64(self.sets)),
            "sets_per_s": .double(Format.rounded(self.setsPerSecond, 0)),
            "total_sets": .int(Int64(self.totalSets)),
            "latency_us": self.latency.json,
        ]
        self.addCheckMembers(to: &object)
        return .object(object)
    }

    /// The header of the human table.
    static let tableHeader = [
        "target", "C×D", "sets/s", "p50", "p99", "p99.9", "max", "server CPU", "bench CPU", "check",
    ]

    /// One row of the human table.
    var tableRow: [String] {
        [
            self.configuration.target.name, "\(self.configuration.connections)×\(self.configuration.pipeline)",
            Format.rate(self.setsPerSecond), Format.latency(self.latency.p50), Format.latency(self.latency.p99),
            Format.latency(self.latency.p999), Format.latency(self.latency.maximum),
            self.serverCPUText, Format.percent(self.benchCPU), self.checkText,
        ]
    }
}

/// `kvod-bench sets summarize FILE…`: medians per target and the kvod/Redis ratios.
struct SetsSummarize: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "summarize",
        abstract: "Medians of `sets --json` lines per target, with kvod/Redis ratios.",
        discussion: """
            Groups the runs by C×D, takes the median of each target's sets/s, p50, p99 and server CPU time per set, \
            and prints one row per shape: sets/s (ratio above 1 means kvod acknowledges more), p99 (ratio below 1 \
            means kvod answers faster) and CPU per set (ratio below 1 means kvod is cheaper). Failed runs are left \
            out and listed; the exit status is then 2.
            """)

    @Argument(help: "Files of JSON lines written by `kvod-bench sets --json` (other lines are skipped).")
    var files: [String]

    @Flag(help: "Print a Markdown table.")
    var markdown = false

    /// The members of one `sets --json` line that the summary reads.
    struct Record {
        /// `kvod` or `redis-set`.
        var target: String
        /// `C×D`.
        var shape: String
        var setsPerSecond: Double
        /// Latency percentiles in µs.
        var p50: Double
        var p99: Double
        /// Server CPU µs per set, when the run had --server-pid.
        var cpuPerSet: Double?
        var ok: Bool

        /// Reads a `sets --json` line; nil for anything else.
        init?(_ value: JSONValue) {
            guard value["scenario"]?.stringValue == "sets", let target = value["target"]?.stringValue,
                let connections = value["connections"]?.intValue, let pipeline = value["pipeline"]?.intValue,
                let rate = value["sets_per_s"]?.doubleValue, let p50 = value["latency_us"]?["p50"]?.doubleValue,
                let p99 = value["latency_us"]?["p99"]?.doubleValue, let ok = value["ok"]?.boolValue
            else { return nil }
            self.target = target
            self.shape = "\(connections)×\(pipeline)"
            self.setsPerSecond = rate
            self.p50 = p50
            self.p99 = p99
            if let cpu = value["server_cpu"]?.doubleValue, rate > 0 { self.cpuPerSet = cpu / rate * 1e6 }
            self.ok = ok
        }
    }

    func run() throws {
        var records: [Record] = []
        var failed: [String] = []
        for file in self.files {
            guard let text = Clock.readLargeFile(file) else { throw ValidationError("cannot read \(file)") }
            for line in text.split(separator: "\n") where !line.isEmpty {
                guard let value = try? JSONParser.parse(String(line)), let record = Record(value) else { continue }
                if record.ok { records.append(record) } else { failed.append("\(record.target) \(record.shape)") }
            }
        }
        emit(Self.report(records, failed: failed, markdown: self.markdown))
        if !failed.isEmpty { throw ExitCode(2) }
    }

    /// The table: one row per shape.
    static func report(_ records: [Record], failed: [String], markdown: Bool) -> String {
        func median(_ values: [Double]) -> Double? {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return nil }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        func ratio(_ numerator: Double?, _ denominator: Double?) -> String {
            guard let numerator, let denominator, denominator > 0 else { return "-" }
            return Format.ratio(numerator / denominator)
        }
        func latency(_ value: Double?) -> String { value.map { Format.latency(UInt64($0 * 1000)) } ?? "-" }
        func cost(_ value: Double?) -> String { value.map { "\(Format.fixed($0, 2)) µs" } ?? "-" }
        var shapes: [String] = []
        for record in records where !shapes.contains(record.shape) { shapes.append(record.shape) }
        var rows: [[String]] = []
        for shape in shapes {
            let kvod = records.filter { $0.shape == shape && $0.target == "kvod" }
            let redis = records.filter { $0.shape == shape && $0.target == "redis-set" }
            let rates = (median(kvod.map(\.setsPerSecond)), median(redis.map(\.setsPerSecond)))
            let p50s = (median(kvod.map(\.p50)), median(redis.map(\.p50)))
            let p99s = (median(kvod.map(\.p99)), median(redis.map(\.p99)))
            let costs = (median(kvod.compactMap(\.cpuPerSet)), median(redis.compactMap(\.cpuPerSet)))
            rows.append([
                shape, rates.0.map { Format.rate($0) } ?? "-", rates.1.map { Format.rate($0) } ?? "-",
                ratio(rates.0, rates.1), latency(p50s.0), latency(p50s.1), latency(p99s.0), latency(p99s.1),
                ratio(p99s.0, p99s.1), cost(costs.0), cost(costs.1), ratio(costs.0, costs.1),
                "\(kvod.count)/\(redis.count)",
            ])
        }
        var text = "sets acknowledged per second, nobody subscribed, median (ratio > 1: kvod acknowledges more)\n"
        text += Format.table(
            [
                "C×D", "kvod sets/s", "Redis SET/s", "kvod/Redis", "kvod p50", "Redis p50", "kvod p99", "Redis p99",
                "p99 kvod/Redis", "kvod CPU/set", "Redis CPU/set", "CPU kvod/Redis", "runs",
            ], rows, markdown: markdown)
        if !failed.isEmpty { text += "\nFAILED runs (left out): " + failed.joined(separator: ", ") + "\n" }
        return text
    }
}
