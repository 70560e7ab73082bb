// `kvod-bench summarize`: reads the JSON lines of fan-out runs (kvod, redis-publish, redis-set, alternated by
// Benchmarks/compare.sh), takes per-cell medians and prints kvod/Redis ratios of notifications/s and p99 latency;
// with --transports, kvod over WebSocket against kvod over TCP instead (SummarizeCommand+Transports.swift).

import ArgumentParser
import WireProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The `summarize` subcommand.
struct Summarize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Median and kvod/Redis ratio tables from fan-out JSON lines.",
        discussion: """
            Groups runs by subscribers M and publishers×pipeline, takes the median of each target's runs, and \
            prints three tables: notifications/s (ratio above 1 means kvod delivers more), p99 latency (ratio \
            below 1 means kvod is faster) and, when the runs had --server-pid, the server's CPU time per \
            notification (ratio below 1 means kvod is cheaper), which other load on the machine disturbs least. \
            Runs whose delivery check failed are counted and left out.
            """)

    @Argument(help: "Files of JSON lines written by `kvod-bench fanout --json`.")
    var files: [String]

    @Flag(help: "Print Markdown tables.")
    var markdown = false

    @Flag(help: "Compare kvod over WebSocket with kvod over TCP (Benchmarks/websocket.sh) instead of with Redis.")
    var transports = false

    func run() throws {
        var runs: [FanoutRecord] = []
        var failed: [String] = []
        for file in self.files {
            guard let text = Clock.readLargeFile(file) else { throw ValidationError("cannot read \(file)") }
            for line in text.split(separator: "\n") where !line.isEmpty {
                guard let value = try? JSONParser.parse(String(line)), let record = FanoutRecord(value) else {
                    continue
                }
                if record.ok {
                    runs.append(record)
                } else {
                    let transport = record.transport == "tcp" ? "" : "/\(record.transport)"
                    failed.append(
                        "\(record.target)\(transport) M=\(record.subscribers) "
                            + "P×D=\(record.publishers)×\(record.pipeline)")
                }
            }
        }
        if self.transports {
            emit(Self.transportReport(runs, failed: failed, markdown: self.markdown))
        } else {
            emit(Self.report(runs.filter { $0.transport == "tcp" }, failed: failed, markdown: self.markdown))
        }
        if !failed.isEmpty { throw ExitCode(2) }
    }

    /// The ratio tables against Redis (TCP runs only).
    static func report(_ runs: [FanoutRecord], failed: [String], markdown: Bool) -> String {
        var cells: [FanoutCell] = []
        for run in runs where !cells.contains(run.cell) { cells.append(run.cell) }
        cells.sort { ($0.subscribers, $0.publishers, $0.pipeline) < ($1.subscribers, $1.publishers, $1.pipeline) }
        let targets = ["kvod", "redis-publish", "redis-set"]

        func median(_ cell: FanoutCell, _ target: String, _ value: (FanoutRecord) -> Double?) -> Double? {
            Self.median(of: runs, cell, target, value)
        }

        var throughput: [[String]] = []
        var latencies: [[String]] = []
        var costs: [[String]] = []
        for cell in cells {
            let label = ["\(cell.subscribers)", "\(cell.publishers)×\(cell.pipeline)"]
            let count = targets.map { target in runs.filter { $0.cell == cell && $0.target == target }.count }
            let rates = targets.map { median(cell, $0) { $0.notificationsPerSecond } }
            let p99s = targets.map { median(cell, $0) { $0.p99Microseconds } }
            throughput.append(
                label + [
                    Self.rate(rates[0]), Self.rate(rates[1]), Self.ratio(rates[0], rates[1]),
                    Self.pairedRange(runs.filter { $0.cell == cell }, "kvod", "redis-publish"), Self.rate(rates[2]),
                    Self.ratio(rates[0], rates[2]), count.map(String.init).joined(separator: "/"),
                ])
            latencies.append(
                label + [
                    Self.latency(p99s[0]), Self.latency(p99s[1]), Self.ratio(p99s[0], p99s[1]),
                    Self.latency(p99s[2]), Self.ratio(p99s[0], p99s[2]),
                ])
            let cpu = targets.map { median(cell, $0) { $0.serverMicrosecondsPerNotification } }
            costs.append(
                label + [
                    Self.cost(cpu[0]), Self.cost(cpu[1]), Self.ratio(cpu[0], cpu[1]), Self.cost(cpu[2]),
                    Self.ratio(cpu[0], cpu[2]),
                ])
        }
        var text = "notifications/s, median per cell (ratio > 1: kvod delivers more)\n"
        text += Format.table(
            ["M", "P×D", "kvod", "Redis PUBLISH", "kvod/PUBLISH", "per alternation", "Redis SET+keyspace", "kvod/SET",
                "runs"],
            throughput, markdown: markdown)
        text += "(per alternation: the lowest and highest kvod/PUBLISH of one kvod run and the PUBLISH run beside it;\n"
        text += "a range across 1.0× means the two servers are level within the machine's noise in that cell)\n"
        text += "\np99 latency send → notification, median per cell (ratio < 1: kvod is faster)\n"
        text += Format.table(
            ["M", "P×D", "kvod", "Redis PUBLISH", "kvod/PUBLISH", "Redis SET+keyspace", "kvod/SET"], latencies,
            markdown: markdown)
        if costs.contains(where: { $0[2] != "-" }) {
            text += "\nserver CPU time per notification, median per cell (ratio < 1: kvod is cheaper)\n"
            text += Format.table(
                ["M", "P×D", "kvod", "Redis PUBLISH", "kvod/PUBLISH", "Redis SET+keyspace", "kvod/SET"], costs,
                markdown: markdown)
        }
        if runs.contains(where: { $0.target == Self.busyPollSeries }) {
            text += "\n" + Self.busyPollReport(runs, cells: cells, markdown: markdown)
        }
        if !failed.isEmpty {
            text += "\nFAILED delivery checks (left out): " + failed.joined(separator: ", ") + "\n"
        }
        return text
    }
}

extension Summarize {
    /// The series of compare.sh's second kvod, the one started with `--busy-poll` (`fanout --series`).
    static let busyPollSeries = "kvod-busy-poll"

    /// kvod with `--busy-poll` beside kvod as started by default and Redis PUBLISH: notifications/s, the ratio to
    /// PUBLISH with its range per alternation, p99 and server CPU per notification.
    static func busyPollReport(_ runs: [FanoutRecord], cells: [FanoutCell], markdown: Bool) -> String {
        func median(_ cell: FanoutCell, _ target: String, _ value: (FanoutRecord) -> Double?) -> Double? {
            Self.median(of: runs, cell, target, value)
        }
        var rows: [[String]] = []
        for cell in cells {
            let targets = ["kvod", Self.busyPollSeries, "redis-publish"]
            let rates = targets.map { median(cell, $0) { $0.notificationsPerSecond } }
            let p99s = targets.map { median(cell, $0) { $0.p99Microseconds } }
            let cpu = targets.map { median(cell, $0) { $0.serverMicrosecondsPerNotification } }
            rows.append([
                "\(cell.subscribers)", "\(cell.publishers)×\(cell.pipeline)",
                Self.rate(rates[0]), Self.rate(rates[1]), Self.rate(rates[2]), Self.ratio(rates[1], rates[2]),
                Self.pairedRange(runs.filter { $0.cell == cell }, Self.busyPollSeries, "redis-publish"),
                Self.ratio(p99s[1], p99s[2]), Self.cost(cpu[1]), Self.ratio(cpu[1], cpu[2]),
            ])
        }
        var text = "kvod --busy-poll (the loop polls without blocking for a while after each read; off by default):\n"
        text += "notifications/s, p99 and server CPU per notification, median per cell\n"
        text += Format.table(
            ["M", "P×D", "kvod", "kvod --busy-poll", "Redis PUBLISH", "busy-poll/PUBLISH", "per alternation",
                "p99 busy-poll/PUBLISH", "CPU per notification", "CPU busy-poll/PUBLISH"],
            rows, markdown: markdown)
        return text
    }

    /// The lowest and highest ratio of notifications/s of the `numerator` target's runs of one cell to the
    /// `denominator` target's, paired in the order they ran (compare.sh runs each target once per alternation);
    /// "-" with fewer than two pairs.
    static func pairedRange(_ runs: [FanoutRecord], _ numerator: String, _ denominator: String) -> String {
        let tops = runs.filter { $0.target == numerator }.map(\.notificationsPerSecond)
        let bottoms = runs.filter { $0.target == denominator }.map(\.notificationsPerSecond)
        let ratios = zip(tops, bottoms).compactMap { $1 > 0 ? $0 / $1 : nil }
        guard ratios.count >= 2, let lowest = ratios.min(), let highest = ratios.max() else { return "-" }
        return "\(Format.fixed(lowest, 2))–\(Format.ratio(highest))"
    }

    /// The median of `value` over the runs of `target` in `cell`, or nil when there are none.
    static func median(
        of runs: [FanoutRecord], _ cell: FanoutCell, _ target: String, _ value: (FanoutRecord) -> Double?
    ) -> Double? {
        Self.median(runs.filter { $0.cell == cell && $0.target == target }.compactMap(value))
    }

    /// `numerator / denominator` as a ratio ("1.18×"), or "-" when either is missing or the denominator is 0.
    static func ratio(_ numerator: Double?, _ denominator: Double?) -> String {
        guard let numerator, let denominator, denominator > 0 else { return "-" }
        return Format.ratio(numerator / denominator)
    }

    /// A rate ("1.2M"), or "-".
    static func rate(_ value: Double?) -> String { value.map { Format.rate($0) } ?? "-" }

    /// A latency in µs as Format prints one ("1.81 ms"), or "-".
    static func latency(_ value: Double?) -> String { value.map { Format.latency(UInt64($0 * 1000)) } ?? "-" }

    /// A CPU time per notification in µs ("0.62 µs"), or "-".
    static func cost(_ value: Double?) -> String { value.map { "\(Format.fixed($0, 2)) µs" } ?? "-" }

    /// The median of `values`, or nil when there are none.
    static func median(_ values: [Double]) -> Double? {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return nil }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// The cell of the matrix a run belongs to.
struct FanoutCell: Equatable {
    var subscribers: Int
    var publishers: Int
    var pipeline: Int
}

/// The members of a `fanout --json` line that the summary reads.
struct FanoutRecord {
    var target: String
    /// "tcp" or "websocket" ("tcp" for lines written before the member existed).
    var transport: String
    var subscribers: Int
    var publishers: Int
    var pipeline: Int
    var notificationsPerSecond: Double
    var p99Microseconds: Double
    /// The server's CPU time per notification delivered, in µs (nil without `server_cpu`).
    var serverMicrosecondsPerNotification: Double?
    var ok: Bool

    var cell: FanoutCell {
        FanoutCell(subscribers: self.subscribers, publishers: self.publishers, pipeline: self.pipeline)
    }

    /// Reads a fan-out line; nil for anything else.
    init?(_ value: JSONValue) {
        guard value["scenario"]?.stringValue == "fanout", let target = value["target"]?.stringValue,
            let subscribers = value["subscribers"]?.intValue, let publishers = value["publishers"]?.intValue,
            let pipeline = value["pipeline"]?.intValue, let rate = value["notifications_per_s"]?.doubleValue,
            let p99 = value["latency_us"]?["p99"]?.doubleValue, let ok = value["ok"]?.boolValue
        else { return nil }
        self.target = target
        self.transport = value["transport"]?.stringValue ?? "tcp"
        self.subscribers = Int(subscribers)
        self.publishers = Int(publishers)
        self.pipeline = Int(pipeline)
        self.notificationsPerSecond = rate
        self.p99Microseconds = p99
        if let serverCPU = value["server_cpu"]?.doubleValue, rate > 0 {
            self.serverMicrosecondsPerNotification = serverCPU / rate * 1e6
        }
        self.ok = ok
    }
}
