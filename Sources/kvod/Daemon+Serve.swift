// Serving: the loop, the graph (recovered from the data directory when there is one), durability, the server, the
// signals, and the one start line. The onDisconnect ops of connections a crash left open run before the server
// accepts clients (a cluster member's only if it leads). Runs on the main thread, which is the loop's thread.
#if canImport(Glibc)
import Glibc
#endif
import KVOServer
import Logging
import ObjectGraph
import Persistence
import TLS
import UVLoop

extension Daemon {
    /// Runs the server until a signal stops it; returns the process exit status.
    @MainActor
    static func serve(_ configuration: Configuration, model: Model, modelName: String) -> Int32 {
        // No fast bins in glibc's allocator: freed small blocks are merged as they are freed. With fast bins, a mass
        // free (a dropped live query's million entries) left them all to be merged by the next large allocation,
        // which then held the loop: 394 ms measured (docs/ARCHITECTURE.md#decisions). A plain set costs the same
        // instructions either way (callgrind).
        POSIX.disableMallocFastBins()
        let logger = Logger(label: "kvod")
        var serverConfiguration = configuration.server
        Self.warnOfRefusedSnapshotCPUs(configuration.snapshotCPUs, logger: logger)
        if let settings = configuration.tlsSettings {
            // A missing, unreadable, expired or mismatched certificate or key stops kvod here, named.
            do {
                serverConfiguration.tls = try TLSContext.server(settings)
            } catch {
                Self.fail("TLS: \(error)")
                return 1
            }
        }
        // A cluster member's own connections: its replication link (its TLS), etcd (https:// URLs).
        var clusterConfiguration = configuration.clusterConfiguration
        do {
            clusterConfiguration?.peerTLS = try configuration.peerTLSContext()
            clusterConfiguration?.etcdTLS = try configuration.etcdTLSContext()
        } catch {
            Self.fail("TLS for the cluster: \(error)")
            return 1
        }
        do {
            let loop = try EventLoop()
            var graph = Graph(model: model)
            var directory: DataDirectory?
            var lostRegistrations = OnDisconnectRegistrations()
            // A cluster member seeds its replication backlog with the records after the snapshot; a single node keeps
            // none of them once they are replayed.
            var recovered: (records: [JournalRecord], snapshotSeq: UInt64) = ([], 0)
            if let path = configuration.dataDirectory {
                let (opened, contents) = try DataDirectory.open(path: path)
                if contents.tornBytes > 0 {
                    logger.warning(
                        "dropped a torn last journal record (an interrupted write)",
                        metadata: ["bytes": "\(contents.tornBytes)", "data.dir": "\(path)"])
                }
                (graph, lostRegistrations) = try Durability.recover(contents, model: model, path: path)
                logger.info(
                    "data loaded",
                    metadata: ["data.dir": "\(path)", "seq": "\(graph.seq)",
                        "snapshot.seq": "\(contents.snapshot?.seq ?? 0)",
                        "journal.records": "\(contents.records.count)",
                        "onDisconnect.pending": "\(lostRegistrations.count)"])
                directory = opened
                let snapshotSeq = contents.snapshot?.seq ?? 0
                if configuration.clusterConfiguration != nil {
                    recovered = (contents.records.filter { $0.seq > snapshotSeq }, snapshotSeq)
                } else {
                    recovered.snapshotSeq = snapshotSeq
                }
            }
            FreedMemory.release()  // the decoded snapshot and journal are gone: give their pages back
            let server = Server(configuration: serverConfiguration, graph: graph, loop: loop, logger: logger)
            if let path = configuration.dataDirectory {
                // Before anything mutates (the onDisconnect ops below): the history is recorded from here on.
                let kept = try server.keepHistory(inDirectory: path, policy: configuration.fsync)
                if let damaged = kept.damaged {
                    logger.warning(
                        "the subscription history on disk is damaged: it starts empty (resumes from before now get 1010)",
                        metadata: ["error": "\(damaged)"])
                }
                logger.info(
                    "subscription history loaded",
                    metadata: ["history.changes": "\(kept.restored)", "history.paths": "\(kept.recorders)"])
            }
            var failedDurably = false
            if let directory {
                let durability = Durability(
                    directory: directory, policy: configuration.fsync, snapshotEvery: configuration.snapshotEvery,
                    snapshotCPUs: configuration.snapshotCPUs, graph: graph, loop: loop, logger: logger)
                durability.onFailure = { _ in
                    failedDurably = true
                    server.stop(graceMilliseconds: 0)
                }
                durability.onFsync = { seconds in server.recordJournalFsync(seconds: seconds) }
                try durability.start()
                server.durability = durability
                if configuration.clusterConfiguration != nil {
                    // In a cluster only the leader mutates, and this member does not know yet whether it leads:
                    // the ops of connections lost in a crash run if it does, unless the leader's set replaces
                    // them first (joinCluster; docs/SCALING.md#presence-across-a-failover).
                    if !lostRegistrations.isEmpty {
                        logger.info(
                            "cluster member: the onDisconnect ops of connections open at the crash run if it leads",
                            metadata: ["onDisconnect.pending": "\(lostRegistrations.count)"])
                    }
                    server.onSnapshotReceived = { bytes in
                        // The leader's history replaces this member's: its own may describe writes the leader
                        // never had (a divergent tail), which no `since` may replay.
                        try server.discardHistory()
                        try durability.installSnapshot(bytes)
                        logger.notice("snapshot from the leader installed: restarting on it")
                        let error = POSIX.restartSelf()
                        Self.fail("cannot restart on the leader's snapshot: errno \(error)")
                        Glibc.exit(1)
                    }
                } else {
                    // Issue 13: the registrations of connections open at a crash run now, before clients are
                    // accepted.
                    server.runOnDisconnect(ofLostConnections: lostRegistrations)
                }
            }
            let address: String
            do {
                address = try server.start()
            } catch {
                // The protocol port is bound first, then the WebSocket port, the metrics port, the inspector's.
                let (host, port) =
                    if server.port == 0 {
                        (serverConfiguration.host, serverConfiguration.port)
                    } else if serverConfiguration.webSocketPort != nil && server.webSocketAddress == nil {
                        ("WebSocket on \(serverConfiguration.host)", serverConfiguration.webSocketPort ?? 0)
                    } else if serverConfiguration.metricsPort != nil && server.metricsAddress == nil {
                        ("metrics on \(serverConfiguration.metricsHost)", serverConfiguration.metricsPort ?? 0)
                    } else {
                        ("the inspector on \(serverConfiguration.host)", serverConfiguration.web?.port ?? 0)
                    }
                Self.fail("cannot listen \(server.port != 0 ? "for " : "on ")\(host):\(port): \(error)")
                return 1
            }
            if let cluster = clusterConfiguration {
                try server.joinCluster(
                    cluster, recovered: recovered.records, baseSeq: recovered.snapshotSeq,
                    leftovers: lostRegistrations)
                logger.info(
                    "cluster member started",
                    metadata: ["cluster": "\(cluster.name)", "advertise": "\(cluster.advertise)",
                        "etcd": "\(cluster.endpoints.map(\.description).joined(separator: ","))",
                        "lease.seconds": "\(cluster.leaseSeconds)"])
            }
            var signals: [SignalWatcher] = []
            if let settings = configuration.tlsSettings {
                signals.append(
                    try SignalWatcher(loop: loop, signal: SIGHUP) { _ in
                        Self.reloadTLS(settings, server: server, logger: logger)
                    })
            }
            for signal in [SIGTERM, SIGINT] {
                signals.append(
                    try SignalWatcher(loop: loop, signal: signal) { number in
                        logger.info("signal received, shutting down", metadata: ["signal": "\(number)"])
                        server.stop()
                    })
            }
            Self.logStart(configuration, address: address, metrics: server.metricsAddress, web: server.webAddress,
                modelName: modelName, seq: graph.seq, logger: logger)
            // Tests and scripts read the other ports from these lines; they come before the listening line, the last.
            if let metrics = server.metricsAddress { Self.announce("kvod metrics on \(metrics)\n") }
            if let webSocket = server.webSocketAddress { Self.announce("kvod websocket on \(webSocket)\n") }
            if let web = server.webAddress {
                Self.announce("kvod inspector on \(configuration.tlsOnly ? "https" : "http")://\(web)/\n")
            }
            Self.announce("kvod listening on \(address)\n")
            withExtendedLifetime(server) { loop.run() }
            server.finishHistory()
            server.durability?.finish()
            for watcher in signals { watcher.close() }
            let clean = loop.shutdown()
            logger.info("kvod stopped", metadata: ["clean": "\(clean)"])
            return failedDurably ? 1 : 0
        } catch {
            Self.fail("\(error)")
            return 1
        }
    }

    /// SIGHUP: the certificate, key and CA files read again into a new context for the connections that follow;
    /// open connections keep theirs. A file that fails the checks of a start leaves the current context in use.
    @MainActor
    private static func reloadTLS(_ settings: TLSServerSettings, server: Server, logger: Logger) {
        do {
            let context = try TLSContext.server(settings)
            server.replaceTLSContext(context)
            logger.notice(
                "TLS certificates reloaded for new connections",
                metadata: ["tls.certificate": "\(context.certificateSummary ?? "")"])
        } catch {
            logger.error(
                "TLS reload failed: new connections keep the previous certificates", metadata: ["error": "\(error)"])
        }
    }

    /// The one line at start: what runs, where, on what, and how it is protected.
    @MainActor
    private static func logStart(
        _ configuration: Configuration, address: String, metrics: String?, web: String?, modelName: String,
        seq: UInt64, logger: Logger
    ) {
        let tokens = configuration.accessControl.tokens
        let readOnly = tokens.filter { $0.access == .readOnly }.count
        var metadata: Logger.Metadata = [
            "version": "\(KVODVersion.current)", "address": "\(address)", "model": "\(modelName)",
            "seq": "\(seq)",
            "access": "\(tokens.isEmpty ? "open (no tokens)" : "\(tokens.count) tokens (\(readOnly) read-only)")",
            "metrics": "\(metrics ?? "off")", "inspector": "\(web.map { "http://\($0)/" } ?? "off")",
            "tls": "\(configuration.tlsCert == nil ? "off" : configuration.tlsOnly ? "only" : "on (plaintext too)")",
        ]
        // Durability: where the graph is kept and how often the journal reaches the disk.
        if let directory = configuration.dataDirectory {
            metadata["data.dir"] = "\(directory)"
            metadata["fsync"] = "\(configuration.fsync.rawValue)"
        } else {
            metadata["storage"] = "in memory (no data directory)"
        }
        logger.info("kvod started", metadata: metadata)
        if tokens.isEmpty && !Self.isLoopback(configuration.host) && configuration.tlsClientAuth != .require {
            logger.warning(
                "listening beyond this machine without tokens: anyone who reaches the port can read and write",
                metadata: ["address": "\(address)"])
        }
    }

    /// Whether `host` only accepts connections from this machine.
    private static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Says so when the kernel refuses some of `--snapshot-cpus` (outside the cgroup's cpuset, such as a container's
    /// `--cpuset-cpus`): the snapshot child runs on the rest, or where kvod runs when none is left.
    private static func warnOfRefusedSnapshotCPUs(_ cpus: [Int], logger: Logger) {
        guard !cpus.isEmpty, let granted = SnapshotProcess.grantedCPUs(cpus), granted != cpus else { return }
        let refused = cpus.filter { !granted.contains($0) }
        logger.warning(
            "--snapshot-cpus: the kernel refuses some of these CPUs (they are outside kvod's cpuset)",
            metadata: [
                "snapshot.cpus": "\(Configuration.showCPUList(cpus))",
                "refused": "\(Configuration.showCPUList(refused))",
                "snapshots.run.on": "\(granted.isEmpty ? "the CPUs kvod runs on" : Configuration.showCPUList(granted))",
            ])
    }
}
