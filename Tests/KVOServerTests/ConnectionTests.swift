// Connection life cycle against a live kvod: half-closed sockets, many connections, graceful shutdown.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct ConnectionTests {
    @Test func halfClosedClientStillGetsItsResponses() throws {
        let server = try KVODProcess.start()
        let peer = try Peer(server)
        try peer.send(Peer.requestText(1, "set", #"{"path":"k","value":"v"}"#))
        try peer.send(Peer.requestText(2, "get", #"{"path":"k"}"#))
        peer.client.connection.shutdownWrite()
        let messages = try peer.receive(2)
        #expect(messages[1]["result"] == .json(#"{"value":"v","seq":1}"#))
    }

    @Test func manyConnectionsComeAndGo() throws {
        let server = try KVODProcess.start()
        let watcher = try Peer(server)
        let setter = try Peer(server)
        _ = try watcher.request(1, "subscribe", #"{"path":"n","options":["new"]}"#)
        for round in 0..<5 {
            var peers: [Peer] = []
            for index in 0..<100 {
                let peer = try Peer(server)
                try peer.send(Peer.requestText(index, "subscribe", #"{"path":"n","options":["new","old","prior"]}"#))
                peers.append(peer)
            }
            // Half of them wait for their response, half drop without reading.
            for peer in peers.prefix(50) { _ = try peer.receive() }
            for peer in peers { peer.close() }
            #expect(try setter.request(100 + round, "set", #"{"path":"n","value":\#(round)}"#)["result"] != nil)
        }
        // The watcher got one notification per set, in order, and nothing else.
        #expect(try watcher.receive(5).map { $0["params"]?["new"] } == [0, 1, 2, 3, 4])
        try watcher.expectQuiet()
        var remaining = -1
        for attempt in 0..<200 where remaining != 2 {
            remaining = try watcher.request(1000 + attempt, "observers")["result"]?["connections"]?.arrayValue?.count ?? -1
        }
        #expect(remaining == 2, "only the watcher and the setter are left")
    }

    @Test func sigtermClosesClientsGracefullyAndExitsZero() throws {
        let server = try KVODProcess.start()
        let peer = try Peer(server)
        _ = try peer.request(1, "subscribe", #"{"path":"x"}"#)
        #expect(server.stop() == 0)
        #expect(try peer.receive() == .json(#"{"jsonrpc":"2.0","method":"closing","params":{"reason":"server_shutdown"}}"#))
        #expect(throws: KVOClientError.self) { try peer.receive(timeout: .seconds(2)) }
    }
}

@Suite(.serialized) struct CloseDeadlineTests {
    @Test func aClientThatHalfClosesAndNeverReadsIsClosedAnyway() throws {
        let server = try KVODProcess.start()
        let watcher = try Peer(server)
        _ = try watcher.request(1, "set", #"{"path":"big","value":""# + String(repeating: "x", count: 60_000) + #""}"#)
        let stuck = try Peer(server)
        // Pipeline enough gets that kvod's answers fill both socket buffers, then half-close and never read.
        let request = Peer.requestText(1, "get", #"{"path":"big"}"#) + "\n"
        let batch = String(repeating: request, count: 100)
        for _ in 0..<4 { try stuck.client.connection.send(Array(batch.utf8)) }
        stuck.client.connection.shutdownWrite()
        // The server notices the EOF, cannot flush, and closes within its deadline: observers lists one connection.
        var count = -1
        for attempt in 0..<300 where count != 1 {
            count = try watcher.request(100 + attempt, "observers")["result"]?["connections"]?.arrayValue?.count ?? -1
            if count != 1 { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(count == 1)
        withExtendedLifetime(stuck) {}
    }
}
