// `kvod-bench handshakes`: new connections per second, each one connected, (with --tls-ca) shaken hands with over
// TLS, asked one ping and closed once answered, C at a time; against kvod (`ping`) or Redis (`PING`). What a server
// pays per connection, where TLS costs most (Benchmarks/tls.py runs it side by side).

import ArgumentParser
import TLS
import UVLoop
import WireProtocol

/// The `handshakes` subcommand.
struct Handshakes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Connections per second: connect, TLS handshake (with --tls-ca), one ping answered, close.",
        discussion: """
            --concurrency connections are kept opening at once: when one has its answer it is closed and the next \
            starts. After --warmup seconds the window of --seconds is measured: connections completed per second, \
            with the server's CPU (--server-pid) and this process's. A connection that fails (a refused handshake, \
            an error answer) fails the run (exit status 2).
            """)

    @OptionGroup var server: ServerOptions

    @Option(help: "kvod or redis.")
    var target: String = "kvod"

    @Option(help: "Connections opening at once.")
    var concurrency: Int = 16

    @Option(help: "Seconds measured.")
    var seconds: Double = 3

    @Option(help: "Seconds of warm-up before the window.")
    var warmup: Double = 0.5

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    func validate() throws {
        guard self.target == "kvod" || self.target == "redis" else { throw ValidationError("--target: kvod or redis") }
        guard (1...1000).contains(self.concurrency) else { throw ValidationError("--concurrency must be 1...1000") }
        guard self.seconds > 0, self.seconds <= 3600, self.warmup >= 0, self.warmup <= 600 else {
            throw ValidationError("--seconds must be in (0, 3600] and --warmup in [0, 600]")
        }
    }

    func run() throws {
        let configuration = HandshakesConfiguration(
            isKVOD: self.target == "kvod", host: self.server.host, port: self.server.port,
            concurrency: self.concurrency, warmupSeconds: self.warmup, seconds: self.seconds,
            serverPID: self.server.serverPID, tls: try self.server.tlsContext())
        let result = try MainActor.assumeIsolated { try HandshakesRun(configuration: configuration).run() }
        emit(self.json ? JSONWriter.encodeString(result.json) + "\n" : Format.table(HandshakesResult.tableHeader, [result.tableRow]))
        for message in result.discrepancies { printError("  discrepancy: \(message)") }
        if !result.isOK {
            printError("kvod-bench: handshakes run FAILED (see the discrepancies above)")
            throw ExitCode(2)
        }
    }
}

/// What a handshakes run does.
struct HandshakesConfiguration {
    var isKVOD: Bool
    var host: String
    var port: Int
    var concurrency: Int
    var warmupSeconds: Double
    var seconds: Double
    var serverPID: Int32?
    var tls: TLSContext?
}

/// The outcome of a handshakes run.
struct HandshakesResult: RunResult {
    var configuration: HandshakesConfiguration
    var windowSeconds: Double
    /// Connections completed (answered and closed) within the window.
    var connections: Int
    var benchCPU: Double
    var serverCPU: Double?
    var discrepancyCount: Int
    var discrepancies: [String]

    var connectionsPerSecond: Double { self.perSecond(self.connections) }

    var targetName: String {
        (self.configuration.isKVOD ? "kvod" : "redis") + (self.configuration.tls != nil ? "/tls" : "")
    }

    var json: JSONValue {
        var object: JSONObject = [
            "scenario": "handshakes", "target": .string(self.configuration.isKVOD ? "kvod" : "redis"),
            "tls": .bool(self.configuration.tls != nil),
            "concurrency": .int(Int64(self.configuration.concurrency)),
            "window_s": .double(Format.rounded(self.windowSeconds, 3)),
            "connections": .int(Int64(self.connections)),
            "connections_per_s": .double(Format.rounded(self.connectionsPerSecond, 0)),
        ]
        self.addCheckMembers(to: &object)
        return .object(object)
    }

    static let tableHeader = ["target", "C", "connections/s", "server CPU", "bench CPU", "check"]

    var tableRow: [String] {
        [
            self.targetName, "\(self.configuration.concurrency)", Format.rate(self.connectionsPerSecond),
            self.serverCPUText, Format.percent(self.benchCPU), self.checkText,
        ]
    }
}

/// Loop-owned. One handshakes run on its own loop.
@MainActor
final class HandshakesRun: TimedRun {
    enum Phase {
        case warmingUp, measuring, draining, done
    }

    let configuration: HandshakesConfiguration
    let loop: EventLoop
    let batcher: OutputBatcher
    var timers: [LoopTimer] = []
    private var phase = Phase.warmingUp
    private var inFlight = 0
    private var completed = 0
    private var discrepancies = Discrepancies()
    private var window: RunWindow<Int>
    /// kvod's ping, or Redis's.
    private let request: [UInt8]

    init(configuration: HandshakesConfiguration) throws(UVError) {
        self.configuration = configuration
        self.window = RunWindow(serverPID: configuration.serverPID, zero: 0)
        self.loop = try EventLoop()
        self.batcher = try OutputBatcher(loop: self.loop)
        self.request = Array(
            (configuration.isKVOD ? #"{"jsonrpc":"2.0","id":1,"method":"ping"}"# + "\n" : "*1\r\n$4\r\nPING\r\n").utf8)
    }

    func run() throws(UVError) -> HandshakesResult {
        let deadline = self.configuration.warmupSeconds + self.configuration.seconds + 60
        self.after(seconds: deadline) { [self] in self.fail("the run did not finish within \(deadline) s") }
        self.after(seconds: self.configuration.warmupSeconds) { [self] in
            guard self.phase == .warmingUp else { return }
            self.phase = .measuring
            self.window.begin(self.completed)
            self.after(seconds: self.configuration.seconds) { [self] in
                guard self.phase == .measuring else { return }
                self.window.end(self.completed)
                self.phase = .draining
                self.drain(
                    timeoutSeconds: 20, what: "connections", isDrained: { [self] in self.inFlight == 0 },
                    finished: { [self] in self.finish() })
            }
        }
        for _ in 0..<self.configuration.concurrency { self.open() }
        self.loop.run()
        let result = HandshakesResult(
            configuration: self.configuration, windowSeconds: self.window.seconds,
            connections: self.window.countsAtEnd - self.window.countsAtStart, benchCPU: self.window.benchCPU,
            serverCPU: self.window.serverCPU, discrepancyCount: self.discrepancies.count,
            discrepancies: self.discrepancies.messages)
        _ = self.loop.shutdown()
        return result
    }

    /// Opens one connection: connect, handshake, ping, close at the answer; then the next.
    private func open() {
        guard self.phase == .warmingUp || self.phase == .measuring else { return }
        self.inFlight += 1
        do throws(UVError) {
            try TCPStream.connect(loop: self.loop, host: self.configuration.host, port: self.configuration.port) {
                [self] stream, error in
                guard let stream else {
                    self.inFlight -= 1
                    return self.fail("connect failed: \(error.map { "\($0)" } ?? "?")")
                }
                self.converse(on: stream)
            }
        } catch {
            self.inFlight -= 1
            self.fail("connect failed: \(error)")
        }
    }

    private func converse(on stream: TCPStream) {
        var answered = false
        var connection: BenchConnection?
        let done: @MainActor (String?) -> Void = { [self] failure in
            guard !answered else { return }
            answered = true
            connection?.close()
            connection = nil
            self.inFlight -= 1
            if let failure { return self.fail(failure) }
            self.completed += 1
            self.open()
        }
        do throws(UVError) {
            connection = try BenchConnection(
                stream: stream, batcher: self.batcher, tls: self.configuration.tls,
                onBytes: { chunk in
                    guard chunk.contains(UInt8(ascii: "\n")) else { return }
                    let text = String(decoding: chunk, as: UTF8.self)
                    done(text.contains("pong") || text.contains("PONG") ? nil : "unexpected answer: \(text.prefix(200))")
                },
                onEnd: { reason in done("connection ended before its answer: \(reason)") })
            connection?.send { $0.append(contentsOf: self.request) }
        } catch {
            done("cannot start reading: \(error)")
        }
    }

    func fail(_ message: String) {
        guard self.phase != .done else { return }
        self.discrepancies.record(message)
        if !self.window.hasEnded { self.window.end(self.completed) }
        self.finish()
    }

    private func finish() {
        guard self.phase != .done else { return }
        self.phase = .done
        self.closeTimers()
        self.batcher.close()
        self.loop.stop()
    }
}
