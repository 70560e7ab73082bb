// `kvoctl stats`: kvod's figures (the `stats` method, the same as its metrics endpoint), for people or as JSON.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Prints kvod's connections, subscriptions, traffic and closes.
    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show kvod's figures: connections, subscriptions, requests, notifications, bytes, closes.",
            discussion: """
                The figures are those of the metrics endpoint (kvod --metrics-port), read over the protocol with \
                the stats method (Protocol/methods.md#stats).

                EXAMPLES:
                  kvoctl stats
                  kvoctl stats --format json
                """)

        @OptionGroup var connection: ConnectionOptions

        @Option(help: "text (for people), json (the stats result) or pretty (indented JSON).")
        var format: OutputFormat = .text

        func run() throws {
            let result = try self.connection.call("stats", nil)
            guard self.format == .text else { return try self.format.printJSON(result) }
            for line in Self.text(result) { try Output.line(line) }
        }

        /// The figures as aligned lines.
        static func text(_ stats: JSONValue) -> [String] {
            func number(_ name: String) -> String {
                guard let value = stats[name] else { return "?" }
                return value.intValue.map(String.init) ?? JSONWriter.encodeString(value)
            }
            let closes = (stats["closes"].flatMap { value -> JSONObject? in
                if case .object(let object) = value { return object }
                return nil
            })?.members.compactMap { reason, count -> String? in
                guard let count = count.intValue, count > 0 else { return nil }
                return "\(reason) \(count)"
            } ?? []
            let fsync = stats["journalFsync"]
            let rows: [(String, String)] = [
                ("version", stats["version"]?.stringValue ?? "?"),
                ("uptime", "\(number("uptimeSeconds")) s"),
                ("seq", number("seq")),
                ("connections", "\(number("connections")) open, \(number("connectionsAccepted")) accepted"),
                ("subscriptions", number("subscriptions")),
                ("requests", "\(number("requests")) (\(number("mutations")) mutations)"),
                ("notifications", number("notifications")),
                ("bytes", "in \(number("bytesIn")), out \(number("bytesOut"))"),
                ("auth failures", number("authenticationFailures")),
                ("closes", closes.isEmpty ? "none" : closes.joined(separator: ", ")),
                (
                    "journal fsyncs",
                    "\(fsync?["count"]?.intValue.map(String.init) ?? "?") "
                        + "(\(fsync?["sumSeconds"].map { JSONWriter.encodeString($0) } ?? "?") s in all)"
                ),
            ]
            return rows.map { name, value in name + String(repeating: " ", count: max(1, 16 - name.count)) + value }
        }
    }
}
