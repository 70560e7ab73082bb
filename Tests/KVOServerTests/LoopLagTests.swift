// The loop's lag (`loopLagSeconds` in `stats`, kvod_loop_lag_seconds): the probe's arithmetic, and a real kvod
// reporting it.
@testable import KVOServer
import TestSupport
import Testing
import WireProtocol

struct LoopLagTests {
    @Test func theProbeKeepsTheLargestLagOfTheLastFourFirings() {
        var probe = LoopLagProbe()
        #expect(probe.record(now: 1000, interval: 250) == 0, "the first firing has nothing to be late against")
        #expect(probe.record(now: 1250, interval: 250) == 0)
        #expect(probe.record(now: 1540, interval: 250) == 40)
        #expect(probe.record(now: 1790, interval: 250) == 40)
        #expect(probe.record(now: 2040, interval: 250) == 40)
        #expect(probe.record(now: 2290, interval: 250) == 40, "the late firing is the oldest of the last four")
        #expect(probe.record(now: 2540, interval: 250) == 0, "40 ms was five firings ago")
        #expect(probe.record(now: 2550, interval: 250) == 0, "early (a clock step) counts as no lag")
    }

    @Test func aRealKvodReportsItsLoopLag() throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let client = try server.client(timeout: .seconds(30))
        #expect(try client.call("stats")["loopLagSeconds"]?.doubleValue ?? -1 >= 0)
    }
}
