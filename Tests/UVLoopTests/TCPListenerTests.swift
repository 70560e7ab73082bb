// TCPListener: binding (ephemeral ports, address text, localhost, IPv6), and failures that must throw without
// leaking a handle.

import Testing
@testable import UVLoop

@MainActor
@Suite struct TCPListenerTests {
    @Test func ephemeralPortIsReal() throws {
        let loop = try EventLoop()
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { $0.close() }
        #expect(listener.localPort > 0)
        #expect(listener.localAddress == "127.0.0.1:\(listener.localPort)")
        listener.close()
        #expect(loop.shutdown())
    }

    @Test func localhostMeansIPv4Loopback() throws {
        let loop = try EventLoop()
        let listener = try TCPListener(loop: loop, host: "localhost", port: 0) { $0.close() }
        #expect(listener.localAddress == "127.0.0.1:\(listener.localPort)")
        #expect(loop.shutdown())
    }

    @Test func ipv6LoopbackIsBracketed() throws {
        let loop = try EventLoop()
        do {
            let listener = try TCPListener(loop: loop, host: "::1", port: 0) { $0.close() }
            #expect(listener.localAddress == "[::1]:\(listener.localPort)")
        } catch {
            // Containers without IPv6 refuse ::1; that is the host's business, not a failure of the parser.
            #expect(!error.isInvalidArgument, "::1 must parse: \(error)")
        }
        #expect(loop.shutdown())
    }

    @Test func portInUseThrowsAndLeaksNothing() throws {
        let loop = try EventLoop()
        let first = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { $0.close() }
        #expect {
            _ = try TCPListener(loop: loop, host: "127.0.0.1", port: first.localPort) { $0.close() }
        } throws: { error in
            (error as? UVError)?.isAddressInUse == true
        }
        // The half-made listener closed itself; its close callback runs on the next iteration.
        #expect(drive(loop) { loop.openHandleCount == 1 })
        first.close()
        #expect(loop.shutdown())
    }

    @Test(arguments: ["not-an-address", "256.1.1.1", "example.com"])
    func malformedHostThrows(host: String) throws {
        let loop = try EventLoop()
        #expect {
            _ = try TCPListener(loop: loop, host: host, port: 0) { $0.close() }
        } throws: { error in
            (error as? UVError)?.isInvalidArgument == true
        }
        #expect(loop.openHandleCount == 0)
        #expect(loop.shutdown())
    }

    @Test func outOfRangePortThrows() throws {
        let loop = try EventLoop()
        #expect(throws: UVError.self) { try TCPListener(loop: loop, host: "127.0.0.1", port: 70_000) { $0.close() } }
        #expect(loop.shutdown())
    }

    @Test func closeFiresOnCloseOnce() throws {
        let loop = try EventLoop()
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { $0.close() }
        var closed = 0
        listener.onClose = { closed += 1 }
        listener.close()
        listener.close()
        #expect(listener.isClosing)
        #expect(drive(loop) { closed == 1 })
        listener.close()
        settle(loop, milliseconds: 10)
        #expect(closed == 1)
        #expect(loop.shutdown())
    }
}
