// The no-subscriber scenario of issue 10: C connections, each keeping D plain sets of one path in flight (kvod:
// `set bench.value N`; Redis: `SET bench:value N` over RESP), nobody subscribed. A warm-up, a measured window, then a
// drain that waits for every response. Latency is request to response, matched in order (both servers answer one
// connection's requests in order). The command and the report are in SetsCommand.swift.

import TLS
import UVLoop
import WireProtocol

/// What a sets run does.
struct SetsConfiguration {
    /// The server under test: `kvod` or `redis`.
    enum Target: String {
        case kvod, redis

        /// The name in reports: `kvod` or `redis-set`.
        var name: String { self == .kvod ? "kvod" : "redis-set" }
    }

    /// The server under test.
    var target: Target
    /// The server's address and port.
    var host: String
    var port: Int
    /// C: client connections.
    var connections: Int
    /// D: sets in flight per connection.
    var pipeline: Int
    /// Seconds before the measured window.
    var warmupSeconds: Double
    /// Seconds of the measured window.
    var seconds: Double
    /// The kvod key path, or the Redis key.
    var key: String
    /// The server's process id, to report its CPU use during the window.
    var serverPID: Int32?
    /// TLS for every connection (`--tls-ca`); nil: plaintext.
    var tls: TLSContext?
    /// How long the drain may wait for the last responses.
    var drainTimeoutSeconds: Double = 20
    /// How long connecting may take (part of the overall deadline).
    var setupTimeoutSeconds: Double = 60

    /// The whole run gives up after this long.
    var deadlineSeconds: Double {
        self.setupTimeoutSeconds + self.warmupSeconds + self.seconds + self.drainTimeoutSeconds + 30
    }
}

/// Loop-owned. One sets run on its own event loop; `run()` drives it to the end and returns the result.
@MainActor
final class SetsRun: TimedRun {
    /// Where the run is.
    enum Phase {
        case settingUp, warmingUp, measuring, draining, done
    }

    /// What the run does.
    let configuration: SetsConfiguration
    /// The run's own loop, shut down when `run()` returns.
    let loop: EventLoop
    /// Writes every connection's output once per loop turn.
    let batcher: OutputBatcher
    var timers: [LoopTimer] = []
    private(set) var phase = Phase.settingUp
    private var clients: [SetsClient] = []
    /// The value of the next set, across all connections (`N` of the request; kvod's id too).
    private var nextValue: Int64 = 1
    private(set) var acknowledgedCount = 0
    /// Request-to-response latencies of sets answered within the window.
    private var histogram = LatencyHistogram()
    private var discrepancies = Discrepancies()
    /// The measured window, with the sets acknowledged at its edges.
    private var window: RunWindow<Int>

    /// Creates the run with a fresh loop.
    init(configuration: SetsConfiguration) throws(UVError) {
        self.configuration = configuration
        self.window = RunWindow(serverPID: configuration.serverPID, zero: 0)
        self.loop = try EventLoop()
        self.batcher = try OutputBatcher(loop: self.loop)
    }

    /// Runs to completion (or failure) and returns the result.
    func run() throws(UVError) -> SetsResult {
        self.after(seconds: self.configuration.deadlineSeconds) { [self] in
            self.fail("the run did not finish within \(self.configuration.deadlineSeconds) s")
        }
        self.connectClients()
        self.loop.run()
        let result = self.makeResult()
        _ = self.loop.shutdown()
        return result
    }

    // MARK: - Phases

    private func connectClients() {
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port,
            count: self.configuration.connections,
            onConnected: { [self] index, stream in
                let client = SetsClient(index: index, run: self)
                self.clients.append(client)
                do {
                    try client.attach(stream, batcher: self.batcher)
                } catch {
                    return self.fail("connection \(index): \(error)")
                }
                if self.clients.count == self.configuration.connections { self.startWarmup() }
            },
            onFailure: { [self] message in self.fail(message) })
        dialer.start()
    }

    private func startWarmup() {
        guard self.phase == .settingUp else { return }
        self.phase = .warmingUp
        self.after(seconds: self.configuration.warmupSeconds) { [self] in
            self.beginWindow()
            self.after(seconds: self.configuration.seconds) { [self] in self.endWindow() }
        }
        for client in self.clients { client.fill() }
    }

    private func beginWindow() {
        guard self.phase == .warmingUp else { return }
        self.phase = .measuring
        self.window.begin(self.acknowledgedCount)
    }

    private func endWindow() {
        guard self.phase == .measuring else { return }
        self.window.end(self.acknowledgedCount)
        self.phase = .draining
        self.drain(
            timeoutSeconds: self.configuration.drainTimeoutSeconds, what: "sets",
            isDrained: { [self] in self.clients.allSatisfy { $0.inFlightCount == 0 } },
            finished: { [self] in self.finish() })
    }

    // MARK: - Counting

    /// Whether clients may send another set.
    var maySend: Bool { self.phase == .warmingUp || self.phase == .measuring }

    /// The value (and kvod id) of the next set.
    @inline(__always)
    func takeValue() -> Int64 {
        defer { self.nextValue += 1 }
        return self.nextValue
    }

    /// One set sent at `sent` was acknowledged at `now`.
    @inline(__always)
    func didAcknowledge(sent: UInt64, now: UInt64) {
        self.acknowledgedCount += 1
        if self.phase == .measuring { self.histogram.record(now >= sent ? now - sent : 0) }
    }

    // MARK: - Ending

    /// Records a discrepancy (the first 20 are kept verbatim).
    func report(_ message: String) {
        self.discrepancies.record(message)
    }

    /// Stops the run with a discrepancy.
    func fail(_ message: String) {
        guard self.phase != .done else { return }
        self.report(message)
        if !self.window.hasEnded { self.window.end(self.acknowledgedCount) }
        self.finish()
    }

    /// A connection ended; outside the final close that is a failure.
    func connectionEnded(_ who: String, _ reason: String) {
        guard self.phase != .done else { return }
        self.fail("\(who) ended: \(reason)")
    }

    private func finish() {
        guard self.phase != .done else { return }
        self.phase = .done
        self.closeTimers()
        for client in self.clients { client.close() }
        self.batcher.close()
        self.loop.stop()
    }

    private func makeResult() -> SetsResult {
        SetsResult(
            configuration: self.configuration, windowSeconds: self.window.seconds,
            sets: self.window.countsAtEnd - self.window.countsAtStart, totalSets: self.acknowledgedCount,
            latency: self.histogram.summary, benchCPU: self.window.benchCPU, serverCPU: self.window.serverCPU,
            discrepancyCount: self.discrepancies.count, discrepancies: self.discrepancies.messages)
    }
}

/// Loop-owned. One connection of a sets run: keeps `pipeline` sets in flight and matches responses in order.
@MainActor
final class SetsClient {
    /// The position among the connections (0-based), for messages.
    let index: Int
    private unowned let run: SetsRun
    private var connection: BenchConnection?
    private var framer = LineFramer(maxLineBytes: 1 << 20)
    private var reader = RESPReader()
    /// Send times of the sets in flight, oldest first (`sendTimes[head...]`).
    private var sendTimes: [UInt64] = []
    private var head = 0
    /// kvod: the pre-encoded `"PATH"`; Redis: `*3 $3 SET $LEN KEY`, the fixed head of every command.
    private let prefix: [UInt8]
    /// Redis: the decimal digits of the value being sent (reused).
    private var digits: [UInt8] = []

    /// A connection of `run`; `attach` gives it its socket.
    init(index: Int, run: SetsRun) {
        self.index = index
        self.run = run
        switch run.configuration.target {
        case .kvod:
            self.prefix = KVODRequest.pathMember(run.configuration.key)
        case .redis:
            var prefix: [UInt8] = []
            RESPCommand.appendHeader(UInt8(ascii: "*"), 3, to: &prefix)
            RESPCommand.appendBulk(Array("SET".utf8), to: &prefix)
            RESPCommand.appendBulk(Array(run.configuration.key.utf8), to: &prefix)
            self.prefix = prefix
        }
        self.sendTimes.reserveCapacity(run.configuration.pipeline * 2 + 16)
    }

    /// Sets sent and not yet answered.
    var inFlightCount: Int { self.sendTimes.count - self.head }

    /// Starts reading `stream`.
    func attach(_ stream: TCPStream, batcher: OutputBatcher) throws(UVError) {
        let isKVOD = self.run.configuration.target == .kvod
        self.connection = try BenchConnection(
            stream: stream, batcher: batcher, tls: self.run.configuration.tls,
            onBytes: { [unowned self] chunk in
                if isKVOD { self.readKVOD(chunk) } else { self.readRedis(chunk) }
                self.fill()
            },
            onEnd: { [unowned self] reason in self.run.connectionEnded("connection \(self.index)", reason) })
    }

    /// Closes the socket.
    func close() {
        self.connection?.close()
    }

    /// Sends sets until `pipeline` are in flight or the run says stop.
    func fill() {
        guard let connection = self.connection else { return }
        if self.head > 0 && self.head == self.sendTimes.count {
            self.sendTimes.removeAll(keepingCapacity: true)
            self.head = 0
        }
        while self.inFlightCount < self.run.configuration.pipeline && self.run.maySend {
            let value = self.run.takeValue()
            self.sendTimes.append(Clock.nanoseconds())
            switch self.run.configuration.target {
            case .kvod:
                connection.send { KVODRequest.appendSet(id: value, pathMember: self.prefix, value: value, to: &$0) }
            case .redis:
                self.digits.removeAll(keepingCapacity: true)
                RESPCommand.appendDecimal(UInt64(value), to: &self.digits)
                connection.send {
                    $0.append(contentsOf: self.prefix)
                    RESPCommand.appendBulk(self.digits, to: &$0)
                }
            }
        }
    }

    private func acknowledge(now: UInt64) {
        guard self.head < self.sendTimes.count else {
            return self.run.fail("connection \(self.index): a response to nothing in flight")
        }
        let sent = self.sendTimes[self.head]
        self.head += 1
        self.run.didAcknowledge(sent: sent, now: now)
    }

    private func readKVOD(_ chunk: UnsafeRawBufferPointer) {
        let now = Clock.nanoseconds()
        do throws(WireError) {
            try self.framer.feed(chunk) { line in
                switch KVODLine.scan(line) {
                case .result: self.acknowledge(now: now)
                case .error(let text): self.run.fail("connection \(self.index): error response \(text)")
                case .change, .other(_): self.run.fail("connection \(self.index): unexpected line")
                }
            }
        } catch {
            self.run.fail("connection \(self.index): \(error)")
        }
    }

    private func readRedis(_ chunk: UnsafeRawBufferPointer) {
        let now = Clock.nanoseconds()
        let failure = self.reader.feed(chunk) { items, bytes in
            guard let reply = items.first else { return }
            if reply.kind == .simple {
                self.acknowledge(now: now)
            } else {
                self.run.fail("connection \(self.index): reply \(RESPReader.text(reply, in: bytes))")
            }
        }
        if let failure { self.run.fail("connection \(self.index): \(failure)") }
    }
}
