// `kvod-bench hold`: opens N connections (and optionally K subscriptions on each), says "ready" on standard
// output, and holds them until a signal or a time limit. Benchmarks/resources.sh reads the server's memory while
// they are held, to get the resident bytes per idle connection and per subscription.

import ArgumentParser
import UVLoop
import WireProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The `hold` subcommand.
struct Hold: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Hold idle connections and subscriptions open (for memory measurements).",
        discussion: """
            Each connection sends one `ping` (or its subscribes) and waits for the answers; then the command prints \
            "ready connections=N subscriptions=S" and keeps everything open until SIGTERM/SIGINT or --hold-seconds.
            Subscription i of connection c is to the path rs.pJ with J = (c*K + i) mod --paths.
            """)

    @OptionGroup var server: ServerOptions

    @Option(help: "Connections to open.")
    var connections: Int = 1000

    @Option(help: "Subscriptions per connection.")
    var subscriptionsPerConnection: Int = 0

    @Option(help: "Distinct key paths the subscriptions spread over.")
    var paths: Int = 1000

    @Option(help: "Give up and exit after this many seconds.")
    var holdSeconds: Double = 120

    func validate() throws {
        guard (1...1_000_000).contains(self.connections), (0...1_000_000).contains(self.subscriptionsPerConnection),
            self.paths > 0, self.holdSeconds > 0, self.holdSeconds <= 3600
        else { throw ValidationError("out-of-range option") }
    }

    func run() throws {
        let ok = try MainActor.assumeIsolated { () throws(UVError) -> Bool in
            try HoldRun(
                host: self.server.host, port: self.server.port, connections: self.connections,
                subscriptionsPerConnection: self.subscriptionsPerConnection, paths: self.paths,
                holdSeconds: self.holdSeconds
            ).run()
        }
        if !ok { throw ExitCode(1) }
    }
}

/// Loop-owned. Opens and holds the connections of `hold`.
@MainActor
final class HoldRun {
    private let host: String
    private let port: Int
    private let connectionCount: Int
    private let subscriptionsPerConnection: Int
    private let pathCount: Int
    private let holdSeconds: Double
    private let loop: EventLoop
    private let batcher: OutputBatcher
    private var connections: [BenchConnection] = []
    private var framers: [LineFramer] = []
    /// Answers per connection, to release the dialer's slot once a connection is fully served.
    private var answersPerConnection: [Int] = []
    private var dialer: Dialer?
    private var answered = 0
    private var isReady = false
    private var failure: String?
    private var timer: LoopTimer?
    private var signals: [SignalWatcher] = []

    /// Prepares the run on a fresh loop; nothing connects until `run()`.
    init(
        host: String, port: Int, connections: Int, subscriptionsPerConnection: Int, paths: Int, holdSeconds: Double
    ) throws(UVError) {
        self.host = host
        self.port = port
        self.connectionCount = connections
        self.subscriptionsPerConnection = subscriptionsPerConnection
        self.pathCount = paths
        self.holdSeconds = holdSeconds
        self.loop = try EventLoop()
        self.batcher = try OutputBatcher(loop: self.loop)
    }

    /// Runs until released; returns false after a failure (already printed).
    func run() throws(UVError) -> Bool {
        let timer = try LoopTimer(loop: self.loop)
        self.timer = timer
        try timer.start(afterMilliseconds: UInt64(self.holdSeconds * 1000)) { [self] in
            self.stop(failure: self.isReady ? nil : "not ready after \(self.holdSeconds) s")
        }
        for signal in [SIGTERM, SIGINT] {
            self.signals.append(
                try SignalWatcher(loop: self.loop, signal: signal) { [self] _ in self.stop(failure: nil) })
        }
        let dialer = Dialer(
            loop: self.loop, host: self.host, port: self.port, count: self.connectionCount, concurrency: 128,
            isPaced: true, onConnected: { [self] _, stream in self.didConnect(stream) },
            onFailure: { [self] message in self.stop(failure: message) })
        self.dialer = dialer
        dialer.start()
        self.loop.run()
        _ = self.loop.shutdown()
        if let failure = self.failure {
            printError("kvod-bench hold: \(failure)")
            return false
        }
        return true
    }

    private var expectedAnswers: Int { self.connectionCount * max(self.subscriptionsPerConnection, 1) }

    private func didConnect(_ stream: TCPStream) {
        let position = self.connections.count
        self.framers.append(LineFramer(maxLineBytes: 1 << 20))
        self.answersPerConnection.append(0)
        do {
            let connection = try BenchConnection(
                stream: stream, batcher: self.batcher,
                onBytes: { [self] chunk in
                    do throws(WireError) {
                        try self.framers[position].feed(chunk) { line in
                            let bytes = line.assumingMemoryBound(to: UInt8.self)
                            if KVODLine.find(#""error""#, in: bytes, from: 0) != nil {
                                self.stop(failure: "error response: \(String(decoding: line, as: UTF8.self))")
                                return
                            }
                            self.answered += 1
                            self.answersPerConnection[position] += 1
                            if self.answersPerConnection[position] == max(self.subscriptionsPerConnection, 1) {
                                self.dialer?.release()
                            }
                        }
                    } catch {
                        self.stop(failure: "\(error)")
                    }
                    self.checkReady()
                },
                onEnd: { [self] reason in self.stop(failure: self.isReady ? nil : "connection ended: \(reason)") })
            self.connections.append(connection)
            if self.subscriptionsPerConnection == 0 {
                connection.send { KVODRequest.append(id: 1, method: "ping", params: nil, to: &$0) }
            } else {
                for index in 0..<self.subscriptionsPerConnection {
                    let path = "rs.p\((position * self.subscriptionsPerConnection + index) % self.pathCount)"
                    connection.send {
                        KVODRequest.append(
                            id: Int64(index + 1), method: "subscribe", params: ["path": .string(path)], to: &$0)
                    }
                }
            }
        } catch {
            self.stop(failure: "\(error)")
        }
    }

    private func checkReady() {
        guard !self.isReady, self.answered >= self.expectedAnswers else { return }
        self.isReady = true
        let subscriptions = self.connectionCount * self.subscriptionsPerConnection
        emit("ready connections=\(self.connectionCount) subscriptions=\(subscriptions)\n")
    }

    private func stop(failure: String?) {
        if self.failure == nil { self.failure = failure }
        self.dialer = nil
        self.timer?.close()
        for watcher in self.signals { watcher.close() }
        for connection in self.connections { connection.close() }
        self.batcher.close()
        self.loop.stop()
    }
}
