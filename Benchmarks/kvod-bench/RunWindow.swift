// What every run (sets, mixed, fan-out) keeps of its measured window: wall time, this process's CPU time and the
// server's (when its pid is known) read at both edges together with the run's own counters, the discrepancies it
// found, and its timers. The phases and drain conditions stay with each run: they differ from run to run.

import UVLoop

/// Loop-owned. A run with timers: each one-shot or repeating, all closed together when the run ends
/// (`closeTimers`); a timer that cannot be started fails the run.
@MainActor
protocol TimedRun: AnyObject {
    var loop: EventLoop { get }
    /// Every timer of the run.
    var timers: [LoopTimer] { get set }
    /// Stops the run with a discrepancy.
    func fail(_ message: String)
}

extension TimedRun {
    /// Runs `action` once after `seconds`.
    func after(seconds: Double, _ action: @escaping @MainActor () -> Void) {
        self.startTimer(afterMilliseconds: UInt64(seconds * 1000), repeatMilliseconds: 0, action)
    }

    /// Runs `action` every `milliseconds`, the first time `milliseconds` from now, until the run's timers close.
    func every(milliseconds: UInt64, _ action: @escaping @MainActor () -> Void) {
        self.startTimer(afterMilliseconds: milliseconds, repeatMilliseconds: milliseconds, action)
    }

    /// Polls every 2 ms until `isDrained()` holds, then calls `finished`; fails the run instead when `timeoutSeconds`
    /// pass first (`what` names what is still unanswered, for the message).
    func drain(
        timeoutSeconds: Double, what: String, isDrained: @escaping @MainActor () -> Bool,
        finished: @escaping @MainActor () -> Void
    ) {
        let start = Clock.nanoseconds()
        self.every(milliseconds: 2) { [self] in
            if isDrained() {
                finished()
            } else if Double(Clock.nanoseconds() - start) / 1e9 > timeoutSeconds {
                self.fail("drain timed out: \(what) still unanswered")
            }
        }
    }

    /// Closes every timer of the run.
    func closeTimers() {
        for timer in self.timers { timer.close() }
    }

    private func startTimer(
        afterMilliseconds: UInt64, repeatMilliseconds: UInt64, _ action: @escaping @MainActor () -> Void
    ) {
        do throws(UVError) {
            let timer = try LoopTimer(loop: self.loop)
            self.timers.append(timer)
            try timer.start(afterMilliseconds: afterMilliseconds, repeatMilliseconds: repeatMilliseconds, action)
        } catch {
            self.fail("cannot start a timer: \(error)")
        }
    }
}

/// The readings at the start and the end of a run's measured window. `Counts` is the run's own tally (sets
/// acknowledged; operations and notifications; …), read at both edges alongside the clocks.
struct RunWindow<Counts> {
    /// The server whose CPU time is read, when its pid was given.
    let serverPID: Int32?
    private(set) var countsAtStart: Counts
    private(set) var countsAtEnd: Counts
    /// `Clock.nanoseconds()` at the edges; 0 until the edge was read.
    private(set) var startNanoseconds: UInt64 = 0
    private(set) var endNanoseconds: UInt64 = 0
    private var benchCPUAtStart: UInt64 = 0
    private var benchCPUAtEnd: UInt64 = 0
    private var serverCPUAtStart: UInt64?
    private var serverCPUAtEnd: UInt64?

    /// A window not begun yet; `zero` stands for the counts until the edges are read.
    init(serverPID: Int32?, zero: Counts) {
        self.serverPID = serverPID
        self.countsAtStart = zero
        self.countsAtEnd = zero
    }

    /// Whether the end was read (by `end`, or by a run failing before its window closed).
    var hasEnded: Bool { self.endNanoseconds != 0 }

    /// Reads the start edge.
    mutating func begin(_ counts: Counts) {
        self.startNanoseconds = Clock.nanoseconds()
        self.countsAtStart = counts
        self.benchCPUAtStart = Clock.processCPUNanoseconds()
        self.serverCPUAtStart = self.serverPID.flatMap { Clock.cpuNanoseconds(ofProcess: $0) }
    }

    /// Reads the end edge (again, when count mode moves it to the last delivery).
    mutating func end(_ counts: Counts) {
        self.endNanoseconds = Clock.nanoseconds()
        self.countsAtEnd = counts
        self.benchCPUAtEnd = Clock.processCPUNanoseconds()
        self.serverCPUAtEnd = self.serverPID.flatMap { Clock.cpuNanoseconds(ofProcess: $0) }
    }

    /// The window's length in seconds; 0 when it never began.
    var seconds: Double {
        self.startNanoseconds == 0 ? 0 : Double(self.endNanoseconds &- self.startNanoseconds) / 1e9
    }

    /// This process's CPU seconds per second of window; 0 without a window.
    var benchCPU: Double {
        self.seconds > 0 ? Double(self.benchCPUAtEnd &- self.benchCPUAtStart) / 1e9 / self.seconds : 0
    }

    /// The server's CPU seconds per second of window; nil without a pid, a readable /proc or a window.
    var serverCPU: Double? {
        guard let start = self.serverCPUAtStart, let end = self.serverCPUAtEnd, self.seconds > 0 else { return nil }
        return Double(end &- start) / 1e9 / self.seconds
    }
}

/// The problems a run found: every one counted, the first 20 kept verbatim for the report.
struct Discrepancies {
    private(set) var count = 0
    private(set) var messages: [String] = []

    mutating func record(_ message: String) {
        self.count += 1
        if self.messages.count < 20 { self.messages.append(message) }
    }
}
