// Access control against a live kvod (Protocol/README.md#access-control): nothing before a valid `hello`, wrong
// tokens counted and then closed, read-only tokens that read and observe but never mutate.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct AccessControlOverWireTests {
    /// kvod with a read-write token `writer-secret` and a read-only token `reader-secret` from a token file.
    static func start(_ extra: [String] = [], environment: [String: String]? = nil) throws -> (KVODProcess, ScratchDirectory) {
        let scratch = try ScratchDirectory("tokens")
        let file = try scratch.write("tokens", "# test tokens\nwriter-secret read-write\nreader-secret read-only\n")
        return (try KVODProcess.start(["--token-file", file] + extra, environment: environment), scratch)
    }

    @Test func everyRequestBeforeHelloIsRefused() throws {
        let (server, _) = try Self.start()
        let peer = try Peer(server)
        // ping alone answers before hello: it reveals nothing and lets health checks work.
        #expect(try peer.request(4, "ping")["result"] == "pong")
        for (id, method) in [(1, "get"), (2, "set"), (3, "subscribe"), (5, "stats"), (6, "nope")] {
            let params = method == "get" || method == "subscribe" ? #"{"path":"a"}"# : method == "set" ? #"{"path":"a","value":1}"# : nil
            let response = try peer.request(id, method, params)
            #expect(response["error"]?["code"] == 1008, "\(method): \(response)")
            #expect(response["error"]?["data"] == .json(#"{"reason":"hello with a token first"}"#))
        }
        // A hello without a token does not open the door either.
        #expect(try peer.request(7, "hello", #"{"client":"x"}"#)["error"]?["code"] == 1008)
        let hello = try peer.request(8, "hello", #"{"client":"x","token":"writer-secret"}"#)
        #expect(hello["result"]?["access"] == "read-write")
        #expect(try peer.request(9, "set", #"{"path":"a","value":1}"#)["result"]?["seq"] == 1)
        #expect(try peer.request(10, "get", #"{"path":"a"}"#)["result"]?["value"] == 1)
    }

    @Test func connectionsWithoutAnAcceptedHelloAreClosedAfterTheAuthTimeout() throws {
        let (server, _) = try Self.start(["--auth-timeout", "1"])
        let idle = try Peer(server)
        let pinging = try Peer(server)
        let wrong = try Peer(server)
        let authenticated = try Peer(server)
        // ping answers before hello but does not authenticate; nor does a wrong token.
        #expect(try pinging.request(1, "ping")["result"] == "pong")
        #expect(try wrong.request(1, "hello", #"{"token":"nope"}"#)["error"]?["code"] == 1008)
        #expect(try authenticated.request(1, "hello", #"{"token":"reader-secret"}"#)["result"]?["access"] == "read-only")
        // The timeout plus the once-a-second check: each unauthenticated connection gets the notice, then EOF.
        let notice = JSONValue.json(#"{"jsonrpc":"2.0","method":"closing","params":{"reason":"auth_timeout"}}"#)
        for peer in [idle, pinging, wrong] {
            #expect(try peer.receive(timeout: .seconds(10)) == notice)
            #expect(throws: KVOClientError.self) { try peer.receive(timeout: .seconds(10)) }
        }
        // The authenticated connection is served on, and the closes are counted.
        #expect(try authenticated.request(2, "get", #"{"path":"a"}"#)["result"]?["value"] == .null)
        let stats = try authenticated.request(3, "stats")
        #expect(stats["result"]?["closes"]?["auth_timeout"] == 3)
        #expect(server.waitForLog("auth_timeout"))
    }

    @Test func withoutTokensNoConnectionHasToAuthenticate() throws {
        let server = try KVODProcess.start(["--auth-timeout", "1"])
        let peer = try Peer(server)
        // Bounded: more than the timeout plus two housekeeping ticks.
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try peer.request(1, "ping")["result"] == "pong")
        #expect(try peer.request(2, "stats")["result"]?["closes"]?["auth_timeout"] == 0)
    }

    @Test func wrongTokensAreCountedThenTheConnectionIsClosed() throws {
        let (server, _) = try Self.start()
        let peer = try Peer(server)
        for id in 1...2 {
            let response = try peer.request(id, "hello", #"{"token":"writer-secreT"}"#)
            #expect(response["error"]?["code"] == 1008)
            #expect(response["error"]?["data"] == .json(#"{"reason":"wrong token"}"#))
        }
        let third = try peer.request(3, "hello", #"{"token":""}"#)
        #expect(third["error"]?["code"] == 1008)
        #expect(try peer.receive() == .json(#"{"jsonrpc":"2.0","method":"closing","params":{"reason":"unauthorized"}}"#))
        #expect(throws: KVOClientError.self) { try peer.receive(timeout: .seconds(5)) }
        // Another connection is not affected, and the failures were counted.
        let other = try Peer(server)
        _ = try other.request(1, "hello", #"{"token":"reader-secret"}"#)
        let stats = try other.request(2, "stats")["result"]
        #expect(stats?["authenticationFailures"] == 3)
        #expect(stats?["closes"]?["unauthorized"] == 1)
        #expect(server.waitForLog("connection closed by limit"))
    }

    @Test func aReadOnlyTokenReadsAndObservesButCannotMutate() throws {
        let (server, _) = try Self.start()
        let reader = try Peer(server)
        let writer = try Peer(server)
        #expect(try reader.request(1, "hello", #"{"token":"reader-secret"}"#)["result"]?["access"] == "read-only")
        _ = try writer.request(1, "hello", #"["w","writer-secret"]"#)
        #expect(try reader.request(2, "subscribe", #"{"path":"n","options":["new"]}"#)["result"]?["subscription"] != nil)
        for (id, method, params) in [
            (3, "set", #"{"path":"n","value":1}"#), (4, "insert", #"{"path":"list","value":1}"#),
            (5, "transaction", #"{"ops":[]}"#), (6, "setMembers", #"{"path":"s","values":[]}"#),
        ] {
            let response = try reader.request(id, method, params)
            #expect(response["error"]?["code"] == 1008, "\(method)")
            #expect(response["error"]?["data"] == .json(#"{"reason":"read-only token"}"#), "\(method)")
        }
        for (id, method, params) in [
            (7, "get", #"{"path":"n"}"#), (8, "describe", nil), (9, "observers", nil), (10, "ping", nil),
            (11, "validate", #"{"path":"n","value":2}"#), (12, "stats", nil),
        ] as [(Int, String, String?)] {
            #expect(try reader.request(id, method, params)["result"] != nil, "\(method)")
        }
        // The writer's change reaches the read-only subscriber.
        #expect(try writer.request(2, "set", #"{"path":"n","value":5}"#)["result"]?["seq"] == 1)
        #expect(try reader.receive()["params"]?["new"] == 5)
        try reader.expectQuiet()
    }

    @Test func kvodTokenInTheEnvironmentIsAReadWriteToken() throws {
        let server = try KVODProcess.start(environment: ["KVOD_TOKEN": "from-the-environment"])
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"a"}"#)["error"]?["code"] == 1008)
        #expect(try peer.request(2, "hello", #"{"token":"from-the-environment"}"#)["result"]?["access"] == "read-write")
        #expect(try peer.request(3, "set", #"{"path":"a","value":true}"#)["result"] != nil)
    }

    @Test func withoutTokensHelloSaysNothingAboutAccess() throws {
        let server = try KVODProcess.start()
        let peer = try Peer(server)
        let hello = try peer.request(1, "hello", #"{"token":"anything"}"#)["result"]
        #expect(hello?["access"] == nil)
        #expect(hello?["server"] == "kvod")
        #expect(try peer.request(2, "set", #"{"path":"a","value":1}"#)["result"] != nil)
    }
}
