// What the server tells operators: close logging (one line per close, warnings for limit closes), the once-a-second
// housekeeping that enforces output limits on clients no new output reaches, the stats snapshot behind the `stats`
// method, and the metrics endpoint (MetricsServer.swift).
import Logging
import UVLoop

extension Server {
    /// The metrics endpoint's bound address ("127.0.0.1:9100"), or nil without one.
    public var metricsAddress: String? { self.metricsServer?.localAddress }

    /// The server's figures now (the `stats` result and the metrics endpoint both render this).
    public func statsSnapshot() -> StatsSnapshot {
        let uptime = Double(self.loop.nowMilliseconds &- self.startedAtMilliseconds) / 1000
        return StatsSnapshot(
            stats: self.stats, seq: self.graph.seq, uptimeSeconds: uptime, version: KVODVersion.current)
    }

    /// Records how long one journal fsync took (for `kvod_journal_fsync_seconds`).
    public func recordJournalFsync(seconds: Double) {
        self.stats.journalFsyncSeconds.observe(seconds)
    }

    // MARK: - Start and stop

    /// Starts the housekeeping timer and, when configured, the metrics endpoint.
    func startObservability() throws(UVError) {
        self.startedAtMilliseconds = self.loop.nowMilliseconds
        let timer = try LoopTimer(loop: self.loop)
        try timer.start(afterMilliseconds: 1000, repeatMilliseconds: 1000) { [unowned self] in self.housekeeping() }
        self.housekeepingTimer = timer
        if let port = self.configuration.metricsPort {
            self.metricsServer = try MetricsServer(
                loop: self.loop, host: self.configuration.metricsHost, port: port,
                logger: self.logger
            ) { [unowned self] in
                self.statsSnapshot().prometheusText
            }
        }
    }

    /// Stops the housekeeping timer and the metrics endpoint.
    func stopObservability() {
        self.housekeepingTimer?.close()
        self.housekeepingTimer = nil
        self.metricsServer?.close()
        self.metricsServer = nil
    }

    /// Once a second: re-checks every connection's output limits (the soft limit's time runs out even when no new
    /// output comes), and with access control on closes connections that sent no accepted `hello` in time.
    private func housekeeping() {
        let authDeadline =
            self.configuration.accessControl.isEnabled && self.limits.authTimeoutSeconds > 0
            ? UInt64(self.limits.authTimeoutSeconds) * 1000 : nil
        let now = self.loop.nowMilliseconds
        for connection in self.openConnections where connection.closeReason == nil {
            if let authDeadline, connection.access == nil, now - connection.openedAtMilliseconds >= authDeadline {
                connection.close(.authTimeout)
                continue
            }
            connection.checkOutputLimits()
        }
    }

    // MARK: - Logging closes

    /// One line per close: debug when the client left or the server stops, info for I/O errors, a warning when a
    /// limit closed it.
    func logClose(_ connection: Connection, reason: CloseReason) {
        var metadata: Logger.Metadata = [
            "connection.id": "\(connection.id)", "connection.remote": "\(connection.remoteAddress)",
            "close.reason": "\(reason.rawValue)",
        ]
        if let name = connection.clientName { metadata["client.name"] = "\(name)" }
        switch reason {
        case .clientClosed, .serverShutdown: self.logger.debug("connection closed", metadata: metadata)
        case .ioError: self.logger.info("connection closed", metadata: metadata)
        case .slowConsumer: break  // outputLimitExceeded logged it, with the figures
        case .lineTooLong, .tooManyConnections, .unauthorized, .authTimeout:
            self.logger.warning("connection closed by limit", metadata: metadata)
        }
    }

    /// Logs, once per connection, the output limit it passed (the close follows).
    func outputLimitExceeded(_ connection: Connection, _ breach: OutputLimitBreach) {
        var metadata: Logger.Metadata = [
            "connection.id": "\(connection.id)", "connection.remote": "\(connection.remoteAddress)",
            "close.reason": "\(CloseReason.slowConsumer.rawValue)",
        ]
        if let name = connection.clientName { metadata["client.name"] = "\(name)" }
        switch breach {
        case .hardLimit(let pending, let limit):
            metadata["output.pending_bytes"] = "\(pending)"
            metadata["output.hard_limit_bytes"] = "\(limit)"
            self.logger.warning("slow consumer: output over the hard limit, closing", metadata: metadata)
        case .softLimit(let pending, let limit, let seconds):
            metadata["output.pending_bytes"] = "\(pending)"
            metadata["output.soft_limit_bytes"] = "\(limit)"
            metadata["output.soft_limit_seconds"] = "\(seconds)"
            self.logger.warning("slow consumer: output over the soft limit for too long, closing", metadata: metadata)
        }
    }
}
