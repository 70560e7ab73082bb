// The fan-out scenario: M subscribers of one key (kvod `subscribe`, or Redis SUBSCRIBE to a channel or to the key's
// keyspace channel), P publishers each keeping up to D `set`s (or PUBLISHes, or SETs) in flight, a warm-up, a
// measured window, then a drain that waits for every response and every notification and checks that each
// subscriber got all of them, in order. Set-up is in FanoutRun+SetUp.swift, reporting in Report.swift.

import UVLoop
import WireProtocol

/// Loop-owned. One fan-out run on its own event loop; `run()` drives it to the end and returns the result.
@MainActor
final class FanoutRun: TimedRun {
    /// Where the run is.
    enum Phase {
        case settingUp, warmingUp, measuring, draining, done
    }

    /// What the run does.
    let configuration: FanoutConfiguration
    /// The run's own loop, shut down when `run()` returns.
    let loop: EventLoop
    /// Writes every connection's output once per loop turn.
    let batcher: OutputBatcher
    /// Every timer of the run, closed when it ends.
    var timers: [LoopTimer] = []
    private(set) var phase = Phase.settingUp

    /// The connections, in the order they connected.
    var subscribers: [FanoutSubscriber] = []
    var publishers: [FanoutPublisher] = []
    /// Redis SET mode: the connection that turned keyspace notifications on.
    var control: BenchConnection?
    /// Subscribers whose subscribe was acknowledged.
    var subscribedCount = 0
    /// Opens the subscriber connections, paced by their subscribe acknowledgements.
    var subscriberDialer: Dialer?
    /// Mutations sent (all phases) and acknowledged.
    private(set) var sentCount = 0
    private(set) var acknowledgedCount = 0
    /// Notifications received by all subscribers (all phases).
    private(set) var notificationCount = 0
    /// Send times in global send order, for Redis keyspace notifications, which carry no value (in-order matching).
    private(set) var sendTimes: [UInt64] = []
    /// Latencies of notifications received in the measured window.
    var histogram = LatencyHistogram()
    /// Problems found: a gap, a reordering, a lost notification, an error reply, a dropped connection.
    private var discrepancies = Discrepancies()
    /// The kvod seq every subscribe reported; the first set must be this plus one.
    var subscribeSeq: Int64?

    /// The measured window, with the acknowledgements and notifications counted at its edges.
    private var window: RunWindow<(acknowledged: Int, notifications: Int)>
    private var drainStart: UInt64 = 0
    /// With `rate`: mutations that may be sent now (refilled every millisecond, at most 2 ms' worth banked, so a
    /// stall is not followed by a burst), and when they were last refilled.
    private var permits = 0.0
    private var refilledAt: UInt64 = 0

    /// Creates the run with a fresh loop.
    init(configuration: FanoutConfiguration) throws(UVError) {
        self.configuration = configuration
        self.window = RunWindow(serverPID: configuration.serverPID, zero: (0, 0))
        self.loop = try EventLoop()
        self.batcher = try OutputBatcher(loop: self.loop)
    }

    /// Runs to completion (or failure) and returns the result.
    func run() throws(UVError) -> FanoutResult {
        self.after(seconds: self.configuration.setupTimeoutSeconds) { [self] in
            if self.phase == .settingUp {
                self.fail(
                    "set-up did not finish within \(self.configuration.setupTimeoutSeconds) s "
                        + "(\(self.subscribedCount) of \(self.configuration.subscribers) subscribed)")
            }
        }
        self.after(seconds: self.configuration.deadlineSeconds) { [self] in
            self.fail("the run did not finish within \(self.configuration.deadlineSeconds) s")
        }
        if case .redis(.set) = self.configuration.target {
            self.configureKeyspaceNotifications()
        } else {
            self.connectSubscribers()
        }
        self.loop.run()
        let result = self.makeResult()
        _ = self.loop.shutdown()
        return result
    }

    // MARK: - Phases

    /// Starts the warm-up (or, in count mode, the window) and fills every pipeline.
    func startPublishing() {
        if self.configuration.mutationLimit != nil {
            self.beginWindow()
        } else {
            self.phase = .warmingUp
            self.after(seconds: self.configuration.warmupSeconds) { [self] in
                self.beginWindow()
                self.after(seconds: self.configuration.seconds) { [self] in self.endWindow() }
            }
        }
        if self.configuration.rate != nil {
            self.refilledAt = Clock.nanoseconds()
            self.every(milliseconds: 1) { [self] in
                self.refillPermits()
                for publisher in self.publishers { publisher.fill() }
            }
        }
        for publisher in self.publishers { publisher.fill() }
    }

    /// Adds the permits the time since the last refill earned, at `rate`.
    private func refillPermits() {
        guard let rate = self.configuration.rate else { return }
        let now = Clock.nanoseconds()
        let earned = rate * Double(now &- self.refilledAt) / 1e9
        self.refilledAt = now
        self.permits = min(self.permits + earned, max(1, rate * 0.002))
    }

    /// Takes one permit to send a mutation: always granted without a rate.
    @inline(__always)
    func takePermit() -> Bool {
        guard self.configuration.rate != nil else { return true }
        guard self.permits >= 1 else { return false }
        self.permits -= 1
        return true
    }

    private func beginWindow() {
        guard self.phase == .settingUp || self.phase == .warmingUp else { return }
        self.phase = .measuring
        self.window.begin(self.counts)
    }

    /// What the window counts at its edges.
    private var counts: (acknowledged: Int, notifications: Int) { (self.acknowledgedCount, self.notificationCount) }

    private func endWindow() {
        guard self.phase == .measuring else { return }
        self.window.end(self.counts)
        self.phase = .draining
        self.drainStart = self.window.endNanoseconds
        self.every(milliseconds: 2) { [self] in self.checkDrained() }
    }

    /// Whether publishers may send another mutation.
    var mayPublish: Bool {
        switch self.phase {
        case .warmingUp, .measuring:
            if let limit = self.configuration.mutationLimit { return self.sentCount < limit }
            return true
        default:
            return false
        }
    }

    /// Records one mutation about to be sent at `now`; returns its global index.
    @inline(__always)
    func willSend(at now: UInt64) -> Int {
        if case .redis(.set) = self.configuration.target { self.sendTimes.append(now) }
        self.sentCount += 1
        return self.sentCount - 1
    }

    /// When the mutation with global index `index` was sent (Redis SET mode only).
    @inline(__always)
    func sendTime(ofMutation index: Int) -> UInt64? {
        index < self.sendTimes.count ? self.sendTimes[index] : nil
    }

    /// A publisher got an acknowledgement.
    @inline(__always)
    func didAcknowledge() {
        self.acknowledgedCount += 1
        if let limit = self.configuration.mutationLimit, self.acknowledgedCount == limit, self.phase == .measuring {
            // Count mode: the window closes when everything is delivered (checked while draining).
            self.phase = .draining
            self.drainStart = Clock.nanoseconds()
            self.every(milliseconds: 1) { [self] in self.checkDrained() }
        }
    }

    /// A subscriber received one notification that took `latency` nanoseconds (nil: not measurable).
    func didNotify(latency: UInt64?) {
        self.notificationCount += 1
        if self.phase == .measuring, let latency { self.histogram.record(latency) }
    }

    /// A subscriber received one notification per element of `latencies` (the hot path: one call per chunk).
    @inline(__always)
    func didNotify(latencies: UnsafeBufferPointer<UInt64>) {
        guard !latencies.isEmpty else { return }
        self.notificationCount += latencies.count
        if self.phase == .measuring { self.histogram.record(contentsOf: latencies) }
    }

    private func checkDrained() {
        guard self.phase == .draining else { return }
        let inFlight = self.publishers.reduce(0) { $0 + $1.inFlight }
        let expected = self.acknowledgedCount
        let complete = inFlight == 0 && self.subscribers.allSatisfy { $0.receivedCount >= expected }
        let now = Clock.nanoseconds()
        if complete {
            if self.configuration.mutationLimit != nil {
                // Count mode measures from the first send to the last delivery.
                self.window.end(self.counts)
            }
            self.verifyDelivery()
            self.finish()
        } else if Double(now - self.drainStart) / 1e9 > self.configuration.drainTimeoutSeconds {
            self.report(
                "drain timed out after \(self.configuration.drainTimeoutSeconds) s: \(inFlight) mutations "
                    + "unacknowledged")
            self.verifyDelivery()
            self.finish()
        }
    }

    /// The final check: every subscriber got exactly one notification per acknowledged mutation.
    private func verifyDelivery() {
        let expected = self.acknowledgedCount
        var short = 0
        for subscriber in self.subscribers where subscriber.receivedCount != expected {
            short += 1
            if short <= 5 {
                self.report(
                    "subscriber \(subscriber.index) received \(subscriber.receivedCount) notifications, "
                        + "expected \(expected)")
            }
        }
        if short > 5 { self.report("... and \(short - 5) more subscribers with a wrong count") }
        if self.sentCount != self.acknowledgedCount {
            self.report("\(self.sentCount) mutations sent but \(self.acknowledgedCount) acknowledged")
        }
    }

    // MARK: - Ending

    /// Records a discrepancy (the first 20 are kept verbatim).
    func report(_ message: String) {
        self.discrepancies.record(message)
    }

    /// A connection ended; outside the final close that is a failure.
    func connectionEnded(_ who: String, _ reason: String) {
        guard self.phase != .done else { return }
        self.fail("\(who) ended: \(reason)")
    }

    /// Stops the run with a discrepancy.
    func fail(_ message: String) {
        guard self.phase != .done else { return }
        self.report(message)
        if !self.window.hasEnded { self.window.end(self.counts) }
        self.finish()
    }

    private func finish() {
        guard self.phase != .done else { return }
        self.phase = .done
        self.subscriberDialer = nil
        self.closeTimers()
        for subscriber in self.subscribers { subscriber.close() }
        for publisher in self.publishers { publisher.close() }
        self.control?.close()
        self.batcher.close()
        self.loop.stop()
    }

    private func makeResult() -> FanoutResult {
        let (start, end) = (self.window.countsAtStart, self.window.countsAtEnd)
        return FanoutResult(
            configuration: self.configuration, windowSeconds: self.window.seconds,
            mutations: end.acknowledged - start.acknowledged, notifications: end.notifications - start.notifications,
            totalMutations: self.acknowledgedCount, latency: self.histogram.summary, benchCPU: self.window.benchCPU,
            serverCPU: self.window.serverCPU, discrepancyCount: self.discrepancies.count,
            discrepancies: self.discrepancies.messages)
    }
}
