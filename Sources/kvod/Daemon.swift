// The `kvod` executable: parses options, sets up logging (the only LoggingSystem.bootstrap), builds the default
// graph, and runs the server on the main thread's libuv loop until SIGTERM or SIGINT.
import ArgumentParser
import Foundation
import KVOServer
import ModelFile
import Logging
import ObjectGraph
import Persistence
import UVLoop

@main
struct Daemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kvod",
        abstract: "A key-value-observing server: an observable object graph over line-delimited JSON-RPC 2.0.",
        discussion: """
            kvod holds an object graph in memory and serves it over TCP, one JSON-RPC 2.0 message per line. Clients \
            get and set values by key path and subscribe to key paths with the KVO options new, old, initial and \
            prior. The protocol is described in Protocol/README.md.

            Options may also come from the environment: KVOD_HOST, KVOD_PORT (a flag wins over the environment).
            On SIGTERM or SIGINT kvod sends pending output, tells clients it is closing, and exits 0.

            Example:  kvod --port 7070    then    kvoctl watch counter --new   and   kvoctl set counter 1
            """,
        version: KVODVersion.current)

    @Option(help: ArgumentHelp("The address to listen on (env KVOD_HOST).", valueName: "address"))
    var host: String = ProcessInfo.processInfo.environment["KVOD_HOST"] ?? "127.0.0.1"

    @Option(help: ArgumentHelp("The TCP port to listen on; 0 picks a free one (env KVOD_PORT).", valueName: "port"))
    var port: String = ProcessInfo.processInfo.environment["KVOD_PORT"] ?? "7070"

    @Option(help: ArgumentHelp(
        "A model file declaring the classes to serve (docs/MODEL.md); default: the embedded seed model.",
        valueName: "file"))
    var model: String?

    @Flag(help: "Serve an empty open root (any key, any value) instead of the default model.")
    var empty = false

    @Option(help: ArgumentHelp(
        "Keep the graph in this directory (journal and snapshots) and reload it at start; without it kvod runs in memory (env KVOD_DATA_DIR).",
        valueName: "dir"))
    var dataDir: String?

    @Option(help: ArgumentHelp(
        "When the journal is fsynced: always (before responses are sent), everysec, no (env KVOD_FSYNC).",
        valueName: "policy"))
    var fsync: String = ProcessInfo.processInfo.environment["KVOD_FSYNC"] ?? "everysec"

    @Option(help: ArgumentHelp("Snapshot the graph after this many journal records (0: only at shutdown).", valueName: "records"))
    var snapshotEvery: Int = 10_000

    @Option(help: ArgumentHelp("The longest request line accepted, in bytes.", valueName: "bytes"))
    var maxLineBytes: Int = Limits().maxLineBytes

    @Option(help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "info"

    func validate() throws {
        guard let port = Int(self.port), (0...65535).contains(port) else {
            throw ValidationError("port must be a number from 0 to 65535, got '\(self.port)'")
        }
        guard Logger.Level(rawValue: self.logLevel) != nil else {
            throw ValidationError("unknown log level '\(self.logLevel)'")
        }
        if self.empty && self.model != nil {
            throw ValidationError("--empty and --model exclude each other")
        }
        guard FsyncPolicy(rawValue: self.fsync) != nil else {
            throw ValidationError("--fsync must be always, everysec or no, got '\(self.fsync)'")
        }
        guard self.snapshotEvery >= 0 else { throw ValidationError("--snapshot-every must be 0 or more") }
        guard self.maxLineBytes >= 1024 else {
            throw ValidationError("--max-line-bytes must be at least 1024")
        }
    }

    func run() throws {
        let level = Logger.Level(rawValue: self.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var limits = Limits()
        limits.maxLineBytes = self.maxLineBytes
        let configuration = ServerConfiguration(host: self.host, port: Int(self.port) ?? 7070, limits: limits)
        // ArgumentParser calls run() on the main thread, which is the loop's thread: the main actor.
        let loaded: (model: Model, name: String)
        do {
            loaded = self.empty ? (Model.open, "empty") : try ModelSource.load(path: self.model)
        } catch {
            Self.fail("\(error)")
            throw ExitCode(1)
        }
        let storage = (self.dataDir ?? ProcessInfo.processInfo.environment["KVOD_DATA_DIR"]).map {
            Storage(path: $0, policy: FsyncPolicy(rawValue: self.fsync) ?? .everysec, snapshotEvery: self.snapshotEvery)
        }
        let status = MainActor.assumeIsolated {
            Self.serve(configuration, model: loaded.model, modelName: loaded.name, storage: storage)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Runs the server until a signal stops it; returns the process exit status.
    @MainActor
    private static func serve(
        _ configuration: ServerConfiguration, model: Model, modelName: String, storage: Storage?
    ) -> Int32 {
        let logger = Logger(label: "kvod")
        do {
            let loop = try EventLoop()
            var graph = Graph(model: model)
            var directory: DataDirectory?
            if let storage {
                let (opened, contents) = try DataDirectory.open(path: storage.path)
                if contents.tornBytes > 0 {
                    logger.warning(
                        "dropped a torn last journal record (an interrupted write)",
                        metadata: ["bytes": "\(contents.tornBytes)", "data.dir": "\(storage.path)"])
                }
                graph = try Durability.recover(contents, model: model, path: storage.path)
                logger.info(
                    "data loaded",
                    metadata: ["data.dir": "\(storage.path)", "seq": "\(graph.seq)",
                        "snapshot.seq": "\(contents.snapshot?.seq ?? 0)", "journal.records": "\(contents.records.count)"])
                directory = opened
            }
            let server = Server(configuration: configuration, graph: graph, loop: loop, logger: logger)
            var failedDurably = false
            if let storage, let directory {
                let durability = Durability(
                    directory: directory, policy: storage.policy, snapshotEvery: storage.snapshotEvery, graph: graph,
                    loop: loop, logger: logger)
                durability.onFailure = { _ in
                    failedDurably = true
                    server.stop(graceMilliseconds: 0)
                }
                try durability.start()
                server.durability = durability
            }
            let address: String
            do {
                address = try server.start()
            } catch {
                Self.fail("cannot listen on \(configuration.host):\(configuration.port): \(error)")
                return 1
            }
            var signals: [SignalWatcher] = []
            for signal in [SIGTERM, SIGINT] {
                signals.append(
                    try SignalWatcher(loop: loop, signal: signal) { number in
                        logger.info("signal received, shutting down", metadata: ["signal": "\(number)"])
                        server.stop()
                    })
            }
            logger.info(
                "kvod started",
                metadata: [
                    "version": "\(KVODVersion.current)", "address": "\(address)", "model": "\(modelName)",
                    "storage": "\(storage.map { "data dir \($0.path), fsync \($0.policy.rawValue)" } ?? "in memory (no data directory)")",
                    "seq": "\(graph.seq)",
                ])
            Self.announce("kvod listening on \(address)\n")
            withExtendedLifetime(server) { loop.run() }
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

    /// Where and how the graph is kept.
    struct Storage {
        let path: String
        let policy: FsyncPolicy
        let snapshotEvery: Int
    }

    /// The one line on standard output: scripts and tests wait for it to learn the port.
    private static func announce(_ line: String) {
        FileHandle.standardOutput.write(Data(line.utf8))
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("kvod: \(message)\n".utf8))
    }
}
