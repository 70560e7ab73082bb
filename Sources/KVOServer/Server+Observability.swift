// What the server tells operators beyond its logs: the stats snapshot behind the `stats` method and the metrics
// endpoint (MetricsServer.swift).
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

    /// Starts the metrics endpoint, when configured.
    func startMetrics() throws(UVError) {
        guard let port = self.configuration.metricsPort else { return }
        self.metricsServer = try MetricsServer(
            loop: self.loop, host: self.configuration.metricsHost, port: port, logger: self.logger
        ) { [unowned self] in
            self.statsSnapshot().prometheusText
        }
    }

    func stopMetrics() {
        self.metricsServer?.close()
        self.metricsServer = nil
    }
}
