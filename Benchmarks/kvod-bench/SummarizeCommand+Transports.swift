// `kvod-bench summarize --transports`: the same fan-out cells run on kvod over TCP and over WebSocket (alternated by
// Benchmarks/websocket.sh), per-cell medians and the WebSocket/TCP ratios: notifications/s, p99 latency and the
// server's CPU time per notification.

extension Summarize {
    /// One table: per cell, each transport's median and the WebSocket/TCP ratio of the three figures.
    static func transportReport(_ runs: [FanoutRecord], failed: [String], markdown: Bool) -> String {
        let kvodRuns = runs.filter { $0.target == "kvod" }
        var cells: [FanoutCell] = []
        for run in kvodRuns where !cells.contains(run.cell) { cells.append(run.cell) }
        cells.sort { ($0.subscribers, $0.publishers, $0.pipeline) < ($1.subscribers, $1.publishers, $1.pipeline) }

        func median(_ cell: FanoutCell, _ transport: String, _ value: (FanoutRecord) -> Double?) -> Double? {
            Self.median(kvodRuns.filter { $0.cell == cell && $0.transport == transport }.compactMap(value))
        }

        var rows: [[String]] = []
        for cell in cells {
            let transports = ["tcp", "websocket"]
            let rates = transports.map { median(cell, $0) { $0.notificationsPerSecond } }
            let p99s = transports.map { median(cell, $0) { $0.p99Microseconds } }
            let costs = transports.map { median(cell, $0) { $0.serverMicrosecondsPerNotification } }
            let counts = transports.map { transport in
                kvodRuns.filter { $0.cell == cell && $0.transport == transport }.count
            }
            rows.append([
                "\(cell.subscribers)", "\(cell.publishers)×\(cell.pipeline)", Self.rate(rates[0]),
                Self.rate(rates[1]), Self.ratio(rates[1], rates[0]), Self.latency(p99s[0]), Self.latency(p99s[1]),
                Self.ratio(p99s[1], p99s[0]), Self.cost(costs[0]), Self.cost(costs[1]), Self.ratio(costs[1], costs[0]),
                counts.map(String.init).joined(separator: "/"),
            ])
        }
        var text = "kvod over WebSocket against TCP, median per cell. WS/TCP: notifications/s below 1, WebSocket "
        text += "delivers less;\np99 latency and server CPU time per notification above 1, WebSocket is slower, "
        text += "costlier\n"
        text += Format.table(
            [
                "M", "P×D", "TCP notif/s", "WS notif/s", "WS/TCP", "TCP p99", "WS p99", "WS/TCP", "TCP CPU/notif",
                "WS CPU/notif", "WS/TCP", "runs",
            ], rows, markdown: markdown)
        if !failed.isEmpty {
            text += "\nFAILED delivery checks (left out): " + failed.joined(separator: ", ") + "\n"
        }
        return text
    }
}
