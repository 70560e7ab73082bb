// The WebSocket keepalive's decision at each tick (Protocol/README.md#websocket): a silent peer is pinged, and only a
// peer that was pinged and stayed silent is dropped, however late a tick runs. (At 19,000 WebSocket subscribers
// the ticks ran late, and peers silent since they connected were dropped without ever being pinged.)
@testable import KVOServer
import Testing

@Suite struct WebSocketKeepaliveTests {
    private let interval: UInt64 = 30_000

    private func action(now: UInt64, lastInputAt: UInt64, pingSentAt: UInt64? = nil) -> SocketTransport.KeepaliveAction {
        SocketTransport.keepalive(now: now, lastInputAt: lastInputAt, pingSentAt: pingSentAt, interval: self.interval)
    }

    @Test func aSilentPeerIsPingedThenDroppedOnlyAfterThePing() {
        #expect(self.action(now: 29_999, lastInputAt: 0) == .wait)
        #expect(self.action(now: 30_000, lastInputAt: 0) == .ping)
        #expect(self.action(now: 59_999, lastInputAt: 0, pingSentAt: 30_000) == .wait)
        #expect(self.action(now: 60_000, lastInputAt: 0, pingSentAt: 30_000) == .drop)
    }

    @Test func aLateTickPingsAPeerItNeverPingedInsteadOfDroppingIt() {
        // Silent since 5 ms after it connected: the first tick (30 s) finds it silent just under the interval, and
        // the next one runs late, 60.1 s: it has been silent twice the interval but was never pinged.
        #expect(self.action(now: 30_000, lastInputAt: 5) == .wait)
        #expect(self.action(now: 60_100, lastInputAt: 5) == .ping)
        #expect(self.action(now: 90_000, lastInputAt: 5, pingSentAt: 60_100) == .wait)
        #expect(self.action(now: 90_100, lastInputAt: 5, pingSentAt: 60_100) == .drop)
    }

    @Test func anAnswerAfterThePingStartsOver() {
        // The pong (any input) came after the ping: the peer is alive, and is pinged again only after new silence.
        #expect(self.action(now: 70_000, lastInputAt: 60_050, pingSentAt: 60_000) == .wait)
        #expect(self.action(now: 90_050, lastInputAt: 60_050, pingSentAt: 60_000) == .ping)
    }
}
