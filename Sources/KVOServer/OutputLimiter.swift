// The slow-consumer decision, as redis's client-output-buffer-limit: a hard limit on the bytes queued for a client,
// and a soft limit that may be exceeded for a while. Pure: the caller passes the queued bytes and the clock, so the
// tests drive it with a manual clock and no socket. Connection.swift acts on its answer.

/// Why a client's output passed its limits.
public enum OutputLimitBreach: Equatable, Sendable {
    /// More than `Limits.outputHardLimitBytes` were queued.
    case hardLimit(pendingBytes: Int, limitBytes: Int)
    /// More than `Limits.outputSoftLimitBytes` were queued for `Limits.outputSoftLimitSeconds` without a break.
    case softLimit(pendingBytes: Int, limitBytes: Int, seconds: Int)
}

/// What to do with a connection after its output changed.
public enum OutputLimitAction: Equatable, Sendable {
    /// Keep going.
    case withinLimits
    /// Close the connection (`slow_consumer`).
    case exceeded(OutputLimitBreach)
}

/// Decides when a client reads too slowly. A value type owned by its connection.
public struct OutputLimiter: Sendable {
    /// `Limits.outputHardLimitBytes` (0: off).
    public let hardLimitBytes: Int
    /// `Limits.outputSoftLimitBytes` (0: off).
    public let softLimitBytes: Int
    /// `Limits.outputSoftLimitSeconds`, in milliseconds.
    public let softLimitMilliseconds: UInt64
    /// When the output last went above the soft limit without coming back under it; nil while under it.
    public private(set) var softLimitExceededSince: UInt64?

    /// A limiter for `limits` (its output limits; 0 bytes turns a limit off).
    public init(limits: Limits) {
        self.hardLimitBytes = limits.outputHardLimitBytes
        self.softLimitBytes = limits.outputSoftLimitBytes
        self.softLimitMilliseconds = UInt64(max(0, limits.outputSoftLimitSeconds)) * 1000
    }

    /// Checks `pendingBytes` (everything queued for the client and not yet taken by the kernel) at
    /// `nowMilliseconds` (a monotonic clock, read only when the output is above the soft limit). The soft limit's
    /// timer starts the first time the output is seen above it and resets whenever it is seen at or under it.
    public mutating func check(
        pendingBytes: Int, nowMilliseconds readClock: @autoclosure () -> UInt64
    ) -> OutputLimitAction {
        if self.hardLimitBytes > 0 && pendingBytes > self.hardLimitBytes {
            return .exceeded(.hardLimit(pendingBytes: pendingBytes, limitBytes: self.hardLimitBytes))
        }
        guard self.softLimitBytes > 0 && pendingBytes > self.softLimitBytes else {
            self.softLimitExceededSince = nil
            return .withinLimits
        }
        let nowMilliseconds = readClock()
        guard let since = self.softLimitExceededSince else {
            self.softLimitExceededSince = nowMilliseconds
            return self.softLimitMilliseconds == 0 ? self.softBreach(pendingBytes) : .withinLimits
        }
        // A clock that went backwards (it should not) counts as no time passed.
        let elapsed = nowMilliseconds >= since ? nowMilliseconds - since : 0
        return elapsed >= self.softLimitMilliseconds ? self.softBreach(pendingBytes) : .withinLimits
    }

    private func softBreach(_ pendingBytes: Int) -> OutputLimitAction {
        .exceeded(
            .softLimit(
                pendingBytes: pendingBytes, limitBytes: self.softLimitBytes,
                seconds: Int(self.softLimitMilliseconds / 1000)))
    }
}
