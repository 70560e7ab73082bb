// The slow-consumer decision without a socket: a manual clock, queued byte counts in, actions out.
@testable import KVOServer
import Testing

struct OutputLimiterTests {
    /// A limiter with a 1000-byte hard limit and a 100-byte soft limit for 2 s.
    static func limiter(hard: Int = 1000, soft: Int = 100, seconds: Int = 2) -> OutputLimiter {
        var limits = Limits()
        limits.outputHardLimitBytes = hard
        limits.outputSoftLimitBytes = soft
        limits.outputSoftLimitSeconds = seconds
        return OutputLimiter(limits: limits)
    }

    @Test func underBothLimitsIsFine() {
        var limiter = Self.limiter()
        for (bytes, now) in [(0, 0), (100, 10), (50, 5000), (100, 100_000)] as [(Int, UInt64)] {
            #expect(limiter.check(pendingBytes: bytes, nowMilliseconds: now) == .withinLimits)
        }
    }

    @Test func overTheHardLimitIsImmediate() {
        var limiter = Self.limiter()
        #expect(
            limiter.check(pendingBytes: 1001, nowMilliseconds: 0)
                == .exceeded(.hardLimit(pendingBytes: 1001, limitBytes: 1000)))
        #expect(limiter.check(pendingBytes: 1000, nowMilliseconds: 0) != .exceeded(.hardLimit(pendingBytes: 1000, limitBytes: 1000)))
    }

    @Test func overTheSoftLimitForItsTimeIsExceeded() {
        var limiter = Self.limiter()
        #expect(limiter.check(pendingBytes: 101, nowMilliseconds: 1000) == .withinLimits)
        #expect(limiter.softLimitExceededSince == 1000)
        #expect(limiter.check(pendingBytes: 500, nowMilliseconds: 2999) == .withinLimits)
        #expect(
            limiter.check(pendingBytes: 500, nowMilliseconds: 3000)
                == .exceeded(.softLimit(pendingBytes: 500, limitBytes: 100, seconds: 2)))
    }

    @Test func droppingUnderTheSoftLimitRestartsItsClock() {
        var limiter = Self.limiter()
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 0) == .withinLimits)
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 1900) == .withinLimits)
        #expect(limiter.check(pendingBytes: 100, nowMilliseconds: 1950) == .withinLimits)  // at the limit: under it
        #expect(limiter.softLimitExceededSince == nil)
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 2000) == .withinLimits)
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 3999) == .withinLimits)
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 4000) != .withinLimits)
    }

    @Test func zeroSecondsMakesTheSoftLimitImmediate() {
        var limiter = Self.limiter(seconds: 0)
        #expect(
            limiter.check(pendingBytes: 101, nowMilliseconds: 7)
                == .exceeded(.softLimit(pendingBytes: 101, limitBytes: 100, seconds: 0)))
    }

    @Test func zeroBytesTurnsALimitOff() {
        var limiter = Self.limiter(hard: 0, soft: 0)
        #expect(limiter.check(pendingBytes: Int.max, nowMilliseconds: 0) == .withinLimits)
        #expect(limiter.check(pendingBytes: Int.max, nowMilliseconds: 1_000_000) == .withinLimits)
    }

    @Test func theClockIsReadOnlyOverTheSoftLimit() {
        var limiter = Self.limiter()
        var reads = 0
        func clock() -> UInt64 {
            reads += 1
            return 0
        }
        _ = limiter.check(pendingBytes: 10, nowMilliseconds: clock())
        _ = limiter.check(pendingBytes: 2000, nowMilliseconds: clock())
        #expect(reads == 0)
        _ = limiter.check(pendingBytes: 200, nowMilliseconds: clock())
        #expect(reads == 1)
    }

    @Test func aClockGoingBackwardsCountsAsNoTime() {
        var limiter = Self.limiter()
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 10_000) == .withinLimits)
        #expect(limiter.check(pendingBytes: 200, nowMilliseconds: 5) == .withinLimits)
    }
}
