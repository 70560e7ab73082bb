// The mixed scenario on kvod: C clients, each keeping D requests in flight, drawing gets, sets, sets of whole
// intermediate objects (which re-target key-path subscriptions), subscribes and unsubscribes over flat keys and key
// paths (`mx.d3.b.c`), plus dependent keys when the server's model has them (probed with `describe`). It reports
// ops/s, latency per operation kind (request to response) and notifications/s; every error response is a
// discrepancy, and each connection checks that notification seqs never go backwards.

import UVLoop
import WireProtocol

/// What a mixed run does.
struct MixedConfiguration {
    var host: String
    var port: Int
    var clients: Int
    var pipeline: Int
    var warmupSeconds: Double
    var seconds: Double
    var seed: UInt64
    var serverPID: Int32?
    var drainTimeoutSeconds: Double = 20
}

/// One kind of request in the mix.
enum MixedOperation: Int, CaseIterable {
    case get, getPath, set, setPath, replaceObject, subscribe, unsubscribe, setDependent

    /// The name in reports.
    var name: String {
        switch self {
        case .get: "get"
        case .getPath: "get a.b.c"
        case .set: "set"
        case .setPath: "set a.b.c"
        case .replaceObject: "set a.b={c}"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .setDependent: "set (dependent)"
        }
    }

    /// Relative frequency in the mix.
    var weight: Int {
        switch self {
        case .get: 30
        case .getPath: 10
        case .set: 20
        case .setPath: 10
        case .replaceObject: 5
        case .subscribe: 10
        case .unsubscribe: 10
        case .setDependent: 5
        }
    }
}

/// SplitMix64: a small, fast, seedable generator, so a run's sequence of operations is reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = self.state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Loop-owned. One mixed run on its own event loop.
@MainActor
final class MixedRun: TimedRun {
    enum Phase {
        case probing, warmingUp, measuring, draining, done
    }

    let configuration: MixedConfiguration
    let loop: EventLoop
    private let batcher: OutputBatcher
    var timers: [LoopTimer] = []
    private(set) var phase = Phase.probing
    private var clients: [MixedClient] = []
    private var probe: BenchConnection?
    /// Whether the server's model has the dependent keys of the default model (`labColor`, `person`).
    private(set) var hasDependentKeys = false

    /// Latency per operation kind, in the window.
    var histograms = Array(repeating: LatencyHistogram(), count: MixedOperation.allCases.count)
    private(set) var operationCount = 0
    private(set) var notificationCount = 0
    /// The measured window, with the responses and notifications counted at its edges.
    private var window: RunWindow<(operations: Int, notifications: Int)>
    private var discrepancies = Discrepancies()

    init(configuration: MixedConfiguration) throws(UVError) {
        self.configuration = configuration
        self.window = RunWindow(serverPID: configuration.serverPID, zero: (0, 0))
        self.loop = try EventLoop()
        self.batcher = try OutputBatcher(loop: self.loop)
    }

    /// Runs to completion and returns the result.
    func run() throws(UVError) -> MixedResult {
        let limit =
            60 + self.configuration.warmupSeconds + self.configuration.seconds
            + self.configuration.drainTimeoutSeconds
        self.after(seconds: limit) { [self] in
            self.fail("the run took over \(limit) s")
        }
        self.probeModel()
        self.loop.run()
        let (start, end) = (self.window.countsAtStart, self.window.countsAtEnd)
        let result = MixedResult(
            configuration: self.configuration, windowSeconds: self.window.seconds,
            operations: end.operations - start.operations, notifications: end.notifications - start.notifications,
            latencies: self.histograms.map(\.summary), hasDependentKeys: self.hasDependentKeys,
            benchCPU: self.window.benchCPU, serverCPU: self.window.serverCPU,
            discrepancyCount: self.discrepancies.count, discrepancies: self.discrepancies.messages)
        _ = self.loop.shutdown()
        return result
    }

    // MARK: - Set-up

    /// Asks `describe` whether the model has dependent keys, then connects the clients.
    private func probeModel() {
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port, count: 1,
            onConnected: { [self] _, stream in
                var framer = LineFramer(maxLineBytes: 64 << 20)
                do {
                    let connection = try BenchConnection(
                        stream: stream, batcher: self.batcher,
                        onBytes: { [self] chunk in
                            try? framer.feed(chunk) { line in
                                guard self.phase == .probing else { return }
                                let text = String(decoding: line, as: UTF8.self)
                                // The default model of Protocol/README.md: LabColor and Person with computed keys.
                                self.hasDependentKeys =
                                    text.contains("\"result\"") && text.contains("lComponent")
                                    && text.contains("fullName")
                                self.probe?.close()
                                self.probe = nil
                                self.connectClients()
                            }
                        },
                        onEnd: { [self] reason in
                            if self.phase == .probing { self.fail("probe connection ended: \(reason)") }
                        })
                    self.probe = connection
                    connection.send { KVODRequest.append(id: 1, method: "describe", params: .object([:]), to: &$0) }
                } catch {
                    self.fail("probe: \(error)")
                }
            },
            onFailure: { [self] message in self.fail(message) })
        dialer.start()
    }

    private func connectClients() {
        self.phase = .warmingUp
        let dialer = Dialer(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port,
            count: self.configuration.clients,
            onConnected: { [self] index, stream in
                let client = MixedClient(
                    index: index, run: self, seed: self.configuration.seed &+ UInt64(index) &* 0x1000_0001)
                self.clients.append(client)
                do {
                    try client.attach(stream, batcher: self.batcher)
                } catch {
                    return self.fail("client \(index): \(error)")
                }
                if self.clients.count == self.configuration.clients { self.startWarmup() }
            },
            onFailure: { [self] message in self.fail(message) })
        dialer.start()
    }

    private func startWarmup() {
        self.after(seconds: self.configuration.warmupSeconds) { [self] in self.beginWindow() }
        for client in self.clients { client.fill() }
    }

    private func beginWindow() {
        guard self.phase == .warmingUp else { return }
        self.phase = .measuring
        self.window.begin(self.counts)
        self.after(seconds: self.configuration.seconds) { [self] in self.endWindow() }
    }

    private func endWindow() {
        guard self.phase == .measuring else { return }
        self.window.end(self.counts)
        self.phase = .draining
        self.drain(
            timeoutSeconds: self.configuration.drainTimeoutSeconds, what: "requests",
            isDrained: { [self] in self.clients.allSatisfy { $0.inFlightCount == 0 } },
            finished: { [self] in self.finish() })
    }

    /// What the window counts at its edges.
    private var counts: (operations: Int, notifications: Int) { (self.operationCount, self.notificationCount) }

    // MARK: - Counting

    /// Whether clients may send more requests.
    var mayIssue: Bool { self.phase == .warmingUp || self.phase == .measuring }

    /// One response arrived for an operation of `kind` sent at `sent`.
    func didComplete(_ kind: MixedOperation, sent: UInt64, now: UInt64) {
        self.operationCount += 1
        if self.phase == .measuring { self.histograms[kind.rawValue].record(now >= sent ? now - sent : 0) }
    }

    /// One notification arrived.
    func didNotify() {
        self.notificationCount += 1
    }

    func report(_ message: String) {
        self.discrepancies.record(message)
    }

    func fail(_ message: String) {
        guard self.phase != .done else { return }
        self.report(message)
        if !self.window.hasEnded { self.window.end(self.counts) }
        self.finish()
    }

    private func finish() {
        guard self.phase != .done else { return }
        self.phase = .done
        self.closeTimers()
        for client in self.clients { client.close() }
        self.probe?.close()
        self.batcher.close()
        self.loop.stop()
    }
}
