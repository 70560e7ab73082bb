// What the server shows beyond its protocol port and logs: the stats snapshot behind the `stats` method, the metrics
// endpoint (MetricsEndpoint.swift, with the cluster's figures from ClusterMetrics.swift in a cluster) and the web
// inspector's static files (WebServer.swift), each an HTTPServer.
import Logging
import UVLoop

extension Server {
    /// The metrics endpoint's bound address ("127.0.0.1:9100"), or nil without one.
    public var metricsAddress: String? { self.metricsServer?.localAddress }

    /// The server's figures now (the `stats` result and the metrics endpoint both render this).
    public func statsSnapshot() -> StatsSnapshot {
        self.core.context.statsSnapshot()
    }

    /// Records how long one journal fsync took (for `kvod_journal_fsync_seconds`).
    public func recordJournalFsync(seconds: Double) {
        self.core.context.stats.journalFsyncSeconds.observe(seconds)
    }

    /// Notes how late the 250 ms tick fired: how long the loop was busy (reading, dispatching, notifying, writing)
    /// without coming back to its timers. `stats` and the metrics endpoint show the largest lag of the last second.
    func recordLoopLag() {
        let now = self.loop.nowMilliseconds
        self.core.context.stats.loopLagSeconds = Double(self.loopLag.record(now: now, interval: 250)) / 1000
    }

    /// Once a second: lets the busy TLS connections keep their record buffers and has the others give them back,
    /// and says how many keep them (`tlsBufferedConnections`).
    func sweepTLSBuffers() {
        let now = self.loop.nowMilliseconds
        guard now &- self.lastTLSSweep >= 1000 else { return }
        self.lastTLSSweep = now
        self.tlsBuffers.sweep()
        self.core.context.stats.tlsBufferedConnections = self.tlsBuffers.keeping
    }

    /// Starts the metrics endpoint, when configured.
    func startMetrics() throws(UVError) {
        guard let port = self.configuration.metricsPort else { return }
        self.metricsServer = try HTTPServer(
            loop: self.loop, host: self.configuration.metricsHost, port: port, name: "metrics", logger: self.logger,
            tls: self.tlsContext, tlsOnly: self.configuration.tlsOnly
        ) { [unowned self] head in
            MetricsEndpoint.response(to: head) { self.statsSnapshot().prometheusText + self.clusterPrometheusText() }
        }
    }

    /// The cluster's figures (ClusterMetrics.swift), or nothing outside a cluster.
    func clusterPrometheusText() -> String {
        let context = self.core.context
        guard let cluster = context.cluster else { return "" }
        return cluster.prometheusText(
            appliedSeq: self.graph.seq, source: context.replication, now: context.clock.nowMilliseconds)
    }

    func stopMetrics() {
        self.metricsServer?.close()
        self.metricsServer = nil
    }

    /// The web inspector's bound address ("127.0.0.1:8080"), or nil without one.
    public var webAddress: String? { self.webServer?.localAddress }

    /// Starts the web inspector's port, when configured, on the server's host; with an origin allow-list, the
    /// inspector's origin joins it (its address as bound, and `localhost` for a loopback address).
    func startWeb(kvodAddress: String, kvodPort: Int) throws(UVError) {
        guard let web = self.configuration.web else { return }
        let site = WebServer(
            files: web.files, kvodAddress: kvodAddress, kvodPort: kvodPort,
            accessControlled: self.configuration.accessControl.isEnabled)
        let server = try HTTPServer(
            loop: self.loop, host: self.configuration.host, port: web.port, name: "inspector", logger: self.logger,
            tls: self.tlsContext, tlsOnly: self.configuration.tlsOnly
        ) { head in
            site.response(to: head)
        }
        self.webServer = server
        if !self.webSocketOrigins.isEmpty {
            // Served over https when TLS is on (and over http too unless --tls-only).
            var schemes = self.tlsContext == nil ? ["http"] : ["https"]
            if self.tlsContext != nil && !self.configuration.tlsOnly { schemes.append("http") }
            for scheme in schemes {
                self.webSocketOrigins.append("\(scheme)://\(server.localAddress)")
                if server.localAddress.hasPrefix("127.") || server.localAddress.hasPrefix("[::1]:") {
                    self.webSocketOrigins.append("\(scheme)://localhost:\(server.localPort)")
                }
            }
        }
    }

    func stopWeb() {
        self.webServer?.close()
        self.webServer = nil
    }
}

/// The lag of a repeating timer: how much later than its interval after the previous firing it fired, the largest
/// of the last four firings (a second of a 250 ms timer). libuv rearms a repeating timer from the loop's time when it
/// fires, so a loop busy for 40 ms shows as a timer 40 ms late.
struct LoopLagProbe {
    private var lastFired: UInt64?
    private var recent: [UInt64] = []

    /// Records a firing at `now` (milliseconds) of a timer repeating every `interval`; returns the largest recent lag.
    mutating func record(now: UInt64, interval: UInt64) -> UInt64 {
        let lag = self.lastFired.map { now > $0 + interval ? now - ($0 + interval) : 0 } ?? 0
        self.lastFired = now
        self.recent.append(lag)
        if self.recent.count > 4 { self.recent.removeFirst() }
        return self.recent.max() ?? 0
    }
}
