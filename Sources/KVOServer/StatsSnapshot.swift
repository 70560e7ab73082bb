// One reading of the server's figures, rendered two ways: as the `stats` method's JSON result
// (Protocol/methods.md#stats) and as Prometheus text for the metrics endpoint (docs/CONFIGURATION.md#metrics).
// Both come from the same snapshot, so they always agree. New figures go in `figures` (and the histograms below).
public import WireProtocol

/// The server's figures at one moment.
public struct StatsSnapshot: Sendable {
    /// One number: its JSON member name, its Prometheus metric name, type and help.
    public struct Figure: Sendable {
        /// The member of the `stats` result (`mutations`).
        public let jsonName: String
        /// The Prometheus metric (`kvod_mutations_total`).
        public let metricName: String
        /// A counter (only grows) rather than a gauge.
        public let isCounter: Bool
        /// The metric's HELP text.
        public let help: String
        /// The figure.
        public let value: Double
    }

    /// kvod's version.
    public let version: String
    /// The plain figures, in display order.
    public let figures: [Figure]
    /// Closes by reason, every reason present (0 when it never happened).
    public let closes: [(reason: CloseReason, count: Int)]
    /// Journal fsync durations.
    public let journalFsyncSeconds: Histogram

    /// Reads `stats` with the graph's `seq` and the server's uptime.
    public init(stats: ServerStats, seq: UInt64, uptimeSeconds: Double, version: String) {
        self.version = version
        func gauge(_ json: String, _ metric: String, _ help: String, _ value: Int) -> Figure {
            Figure(jsonName: json, metricName: metric, isCounter: false, help: help, value: Double(value))
        }
        func counter(_ json: String, _ metric: String, _ help: String, _ value: Int) -> Figure {
            Figure(jsonName: json, metricName: metric, isCounter: true, help: help, value: Double(value))
        }
        self.figures = [
            Figure(
                jsonName: "uptimeSeconds", metricName: "kvod_uptime_seconds", isCounter: false,
                help: "Seconds since kvod started.", value: (uptimeSeconds * 1000).rounded() / 1000),
            gauge("seq", "kvod_seq", "The seq of the last mutation.", Int(clamping: seq)),
            gauge("connections", "kvod_connections", "Client connections open.", stats.connectionsOpen),
            counter(
                "connectionsAccepted", "kvod_connections_accepted_total", "Client connections accepted.",
                stats.connectionsAccepted),
            gauge("subscriptions", "kvod_subscriptions", "Subscriptions open.", stats.subscriptionsOpen),
            gauge(
                "queryFills", "kvod_query_fills",
                "Live-query answers being built over several loop turns (their subscribers wait).", stats.queryFills),
            counter("requests", "kvod_requests_total", "Requests handled.", stats.requests),
            counter("mutations", "kvod_mutations_total", "Successful mutating requests.", stats.mutations),
            counter(
                "notifications", "kvod_notifications_total", "Change notifications queued for clients.",
                stats.notifications),
            counter(
                "turnsYielded", "kvod_turns_yielded_total",
                "Times a connection's requests used up their share of a loop turn and the rest waited for the next.",
                stats.turnsYielded),
            counter("bytesIn", "kvod_bytes_in_total", "Bytes read from clients.", stats.bytesIn),
            counter("bytesOut", "kvod_bytes_out_total", "Bytes written to clients.", stats.bytesOut),
            counter(
                "authenticationFailures", "kvod_authentication_failures_total", "Wrong tokens sent in hello.",
                stats.authenticationFailures),
            counter(
                "onDisconnectFailures", "kvod_on_disconnect_failures_total",
                "onDisconnect ops that failed when their connection ended.", stats.onDisconnectFailures),
            Figure(
                jsonName: "loopLagSeconds", metricName: "kvod_loop_lag_seconds", isCounter: false,
                help: "How late the loop's 250 ms timer fired, at most, over the last second: how long the loop was "
                    + "busy without coming back to its timers.",
                value: stats.loopLagSeconds),
            gauge(
                "tlsBufferedConnections", "kvod_tls_buffered_connections",
                "TLS client connections keeping OpenSSL's record buffers (about 33 KiB each) between records: those "
                    + "with 100 reads and writes or more in the last second.", stats.tlsBufferedConnections),
        ]
        self.closes = CloseReason.allCases.map { ($0, stats.closes[$0] ?? 0) }
        self.journalFsyncSeconds = stats.journalFsyncSeconds
    }

    // MARK: - JSON

    /// The `stats` result: `{"version", figures..., "closes": {REASON: N}, "journalFsync": {"count", "sumSeconds"}}`.
    public var json: JSONValue {
        var object = JSONObject()
        object["version"] = .string(self.version)
        for figure in self.figures {
            object[figure.jsonName] =
                figure.value.rounded() == figure.value && abs(figure.value) < 9e15
                ? .int(Int64(figure.value)) : .double(figure.value)
        }
        var closes = JSONObject()
        for (reason, count) in self.closes { closes[reason.rawValue] = .int(Int64(count)) }
        object["closes"] = .object(closes)
        object["journalFsync"] = .object([
            "count": .int(Int64(self.journalFsyncSeconds.count)), "sumSeconds": .double(self.journalFsyncSeconds.sum),
        ])
        return .object(object)
    }

    // MARK: - Prometheus

    /// The Prometheus text exposition format, version 0.0.4.
    public var prometheusText: String {
        var text = ""
        func header(_ name: String, _ type: String, _ help: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        header("kvod_info", "gauge", "kvod's version, as a label.")
        text += "kvod_info{version=\"\(Self.escapeLabel(self.version))\"} 1\n"
        for figure in self.figures {
            header(figure.metricName, figure.isCounter ? "counter" : "gauge", figure.help)
            text += "\(figure.metricName) \(Self.format(figure.value))\n"
        }
        header("kvod_closes_total", "counter", "Connections closed, by reason.")
        for (reason, count) in self.closes {
            text += "kvod_closes_total{reason=\"\(reason.rawValue)\"} \(count)\n"
        }
        let fsync = self.journalFsyncSeconds
        header("kvod_journal_fsync_seconds", "histogram", "Time taken by journal fsyncs.")
        for (bound, count) in fsync.cumulativeBuckets {
            text += "kvod_journal_fsync_seconds_bucket{le=\"\(Self.format(bound))\"} \(count)\n"
        }
        text += "kvod_journal_fsync_seconds_bucket{le=\"+Inf\"} \(fsync.count)\n"
        text += "kvod_journal_fsync_seconds_sum \(Self.format(fsync.sum))\n"
        text += "kvod_journal_fsync_seconds_count \(fsync.count)\n"
        return text
    }

    /// A sample value: integers without a fraction, others as Swift prints doubles (Prometheus reads both).
    static func format(_ value: Double) -> String {
        if value.rounded() == value && abs(value) < 9e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escapeLabel(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
