// Results and how they are printed: one JSON object per line for machines (`--json`), an aligned table for people.
// The formatting helpers (rates with separators, latencies in µs or ms) are shared by every subcommand.

import WireProtocol

/// What every run's result reports besides its own figures: its window, the CPU shares and the delivery check.
protocol RunResult {
    /// The measured window in seconds.
    var windowSeconds: Double { get }
    /// CPU seconds per second of window: this process, and the server when its pid was given.
    var benchCPU: Double { get }
    var serverCPU: Double? { get }
    /// Error responses, ordering and delivery problems (the first 20 kept verbatim).
    var discrepancyCount: Int { get }
    var discrepancies: [String] { get }
}

extension RunResult {
    /// Whether the run found no discrepancy.
    var isOK: Bool { self.discrepancyCount == 0 }

    /// `count` per second of window; 0 without a window.
    func perSecond(_ count: Int) -> Double { self.windowSeconds > 0 ? Double(count) / self.windowSeconds : 0 }

    /// The "server CPU" cell: a percentage, or "-" when it was not measured.
    var serverCPUText: String { self.serverCPU.map { Format.percent($0) } ?? "-" }

    /// The "check" cell: "ok" or "FAILED (N)".
    var checkText: String { self.isOK ? "ok" : "FAILED (\(self.discrepancyCount))" }

    /// Adds the members that end every `--json` line: bench_cpu, ok, discrepancy_count, discrepancies and, when
    /// measured, server_cpu.
    func addCheckMembers(to object: inout JSONObject) {
        object["bench_cpu"] = .double(Format.rounded(self.benchCPU, 3))
        object["ok"] = .bool(self.isOK)
        object["discrepancy_count"] = .int(Int64(self.discrepancyCount))
        object["discrepancies"] = .array(self.discrepancies.map { .string($0) })
        if let serverCPU = self.serverCPU { object["server_cpu"] = .double(Format.rounded(serverCPU, 3)) }
    }
}

/// The outcome of one fan-out run.
struct FanoutResult: RunResult {
    var configuration: FanoutConfiguration
    /// The measured window (count mode: from the first send to the last delivery).
    var windowSeconds: Double
    /// Mutations acknowledged within the window.
    var mutations: Int
    /// Notifications received within the window, by all subscribers together.
    var notifications: Int
    /// Mutations acknowledged over the whole run, warm-up and drain included (what the delivery check expects).
    var totalMutations: Int
    var latency: LatencySummary
    var benchCPU: Double
    var serverCPU: Double?
    var discrepancyCount: Int
    var discrepancies: [String]

    var mutationsPerSecond: Double { self.perSecond(self.mutations) }
    var notificationsPerSecond: Double { self.perSecond(self.notifications) }

    /// The target's name, with "/ws" over WebSocket: the first column of the table.
    var targetLabel: String {
        self.configuration.seriesName + (self.configuration.transport == .websocket ? "/ws" : "")
    }

    /// How the latency was measured.
    var latencyMethod: String {
        self.configuration.target == .redis(.set) ? "in-order-match" : "embedded-timestamp"
    }

    /// The result as one JSON object (the `--json` line; Benchmarks/README.md lists the members).
    var json: JSONValue {
        let configuration = self.configuration
        var object: JSONObject = [
            "scenario": "fanout",
            "target": .string(configuration.seriesName),
            "transport": .string(configuration.transport.rawValue),
            "subscribers": .int(Int64(configuration.subscribers)),
            "publishers": .int(Int64(configuration.publishers)),
            "pipeline": .int(Int64(configuration.pipeline)),
            "window_s": .double(Format.rounded(self.windowSeconds, 3)),
            "mutations": .int(Int64(self.mutations)),
            "mutations_per_s": .double(Format.rounded(self.mutationsPerSecond, 0)),
            "notifications": .int(Int64(self.notifications)),
            "notifications_per_s": .double(Format.rounded(self.notificationsPerSecond, 0)),
            "total_mutations": .int(Int64(self.totalMutations)),
            "latency_us": self.latency.json,
            "latency_method": .string(self.latencyMethod),
        ]
        self.addCheckMembers(to: &object)
        if let limit = configuration.mutationLimit { object["mutation_limit"] = .int(Int64(limit)) }
        if let rate = configuration.rate { object["rate"] = .double(rate) }
        return .object(object)
    }

    /// The header of the human table.
    static let tableHeader = [
        "target", "M", "P×D", "mutations/s", "notifications/s", "p50", "p99", "p99.9", "max", "server CPU",
        "bench CPU", "check",
    ]

    /// One row of the human table.
    var tableRow: [String] {
        let configuration = self.configuration
        return [
            self.targetLabel, "\(configuration.subscribers)",
            "\(configuration.publishers)×\(configuration.pipeline)", Format.rate(self.mutationsPerSecond),
            Format.rate(self.notificationsPerSecond), Format.latency(self.latency.p50),
            Format.latency(self.latency.p99), Format.latency(self.latency.p999), Format.latency(self.latency.maximum),
            self.serverCPUText, Format.percent(self.benchCPU), self.checkText,
        ]
    }
}

extension LatencySummary {
    /// `{"count":N,"p50":µs,"p99":µs,"p999":µs,"max":µs,"mean":µs}`.
    var json: JSONValue {
        .object([
            "count": .int(Int64(self.count)),
            "p50": .double(Format.microseconds(self.p50)),
            "p99": .double(Format.microseconds(self.p99)),
            "p999": .double(Format.microseconds(self.p999)),
            "max": .double(Format.microseconds(self.maximum)),
            "mean": .double(Format.rounded(self.mean / 1000, 1)),
        ])
    }
}

/// Text formatting for reports.
enum Format {
    /// `value` rounded to `places` decimals.
    static func rounded(_ value: Double, _ places: Int) -> Double {
        guard value.isFinite else { return 0 }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return (value * scale).rounded() / scale
    }

    /// Nanoseconds as microseconds with one decimal.
    static func microseconds(_ nanoseconds: UInt64) -> Double {
        self.rounded(Double(nanoseconds) / 1000, 1)
    }

    /// "1.23M", "456k", "789" per second.
    static func rate(_ value: Double) -> String {
        if value >= 10_000_000 { return "\(self.fixed(value / 1_000_000, 1))M" }
        if value >= 1_000_000 { return "\(self.fixed(value / 1_000_000, 2))M" }
        if value >= 10_000 { return "\(self.fixed(value / 1000, 0))k" }
        if value >= 1000 { return "\(self.fixed(value / 1000, 1))k" }
        return self.fixed(value, 0)
    }

    /// "87 µs", "1.25 ms", "2.1 s".
    static func latency(_ nanoseconds: UInt64) -> String {
        let value = Double(nanoseconds)
        if value >= 1e9 { return "\(self.fixed(value / 1e9, 2)) s" }
        if value >= 1e7 { return "\(self.fixed(value / 1e6, 1)) ms" }
        if value >= 1e6 { return "\(self.fixed(value / 1e6, 2)) ms" }
        if value >= 1e4 { return "\(self.fixed(value / 1e3, 0)) µs" }
        return "\(self.fixed(value / 1e3, 1)) µs"
    }

    /// "97%".
    static func percent(_ fraction: Double) -> String {
        "\(self.fixed(fraction * 100, 0))%"
    }

    /// "1.25×".
    static func ratio(_ value: Double) -> String {
        guard value.isFinite else { return "-" }
        return "\(self.fixed(value, 2))×"
    }

    /// `value` with exactly `places` decimals (no Foundation: String(format:) is unreliable on Linux).
    static func fixed(_ value: Double, _ places: Int) -> String {
        guard value.isFinite else { return "-" }
        let rounded = self.rounded(value, places)
        let isNegative = rounded < 0
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = Int64((abs(rounded) * scale).rounded())
        let whole = scaled / Int64(scale)
        let fraction = scaled % Int64(scale)
        var text = (isNegative ? "-" : "") + "\(whole)"
        if places > 0 {
            let digits = "\(fraction)"
            text += "." + String(repeating: "0", count: places - digits.count) + digits
        }
        return text
    }

    /// Rows as an aligned text table with a rule under the header; `markdown` makes it a Markdown table instead.
    static func table(_ header: [String], _ rows: [[String]], markdown: Bool = false) -> String {
        if markdown {
            var lines = ["| " + header.joined(separator: " | ") + " |"]
            lines.append("|" + header.map { _ in "---|" }.joined())
            for row in rows { lines.append("| " + row.joined(separator: " | ") + " |") }
            return lines.joined(separator: "\n") + "\n"
        }
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: max(widths[column] - cell.count, 0))
                // The first column is text, the others numbers: left- and right-aligned.
                return column == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
        var lines = [line(header), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
        for row in rows { lines.append(line(row)) }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Writes text to standard output and flushes it at once (scripts read the output as it comes).
func emit(_ text: String) {
    print(text, terminator: "")
    fflushAll()
}
