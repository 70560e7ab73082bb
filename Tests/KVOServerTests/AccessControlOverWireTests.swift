// Access control (Protocol/README.md#access-control): nothing before a valid `hello`, read-only tokens that read and
// observe but never mutate, tokens restricted to key paths — in process (InProcessServer.swift), the tokens given as
// `AccessControl(tokens:)`; the auth timeout and wrong tokens closing the socket (with the log), the token file and
// KVOD_TOKEN against a live kvod.
import Foundation
import KVOClient
@testable import KVOServer
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct AccessControlInProcessTests {
    /// A server with a read-write token `writer-secret` and a read-only token `reader-secret`.
    static func start() -> InProcessServer {
        InProcessServer(accessControl: AccessControl(tokens: [
            AccessToken(secret: "writer-secret", access: .readWrite), AccessToken(secret: "reader-secret", access: .readOnly),
        ]))
    }

    @Test func everyRequestBeforeHelloIsRefused() throws {
        let server = Self.start()
        let peer = server.peer()
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

    @Test func withoutTokensNoConnectionHasToAuthenticate() throws {
        var limits = Limits()
        limits.authTimeoutSeconds = 1
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        // More than the timeout plus two housekeeping ticks.
        server.advance(milliseconds: 2500)
        #expect(try peer.request(1, "ping")["result"] == "pong")
        #expect(try peer.request(2, "stats")["result"]?["closes"]?["auth_timeout"] == 0)
    }

    @Test func aReadOnlyTokenReadsAndObservesButCannotMutate() throws {
        let server = Self.start()
        let reader = server.peer()
        let writer = server.peer()
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

    @Test func withoutTokensHelloSaysNothingAboutAccess() throws {
        let server = InProcessServer()
        let peer = server.peer()
        let hello = try peer.request(1, "hello", #"{"token":"anything"}"#)["result"]
        #expect(hello?["access"] == nil)
        #expect(hello?["server"] == "kvod")
        #expect(try peer.request(2, "set", #"{"path":"a","value":1}"#)["result"] != nil)
    }

    @Test func aTokenRestrictedToKeyPathsUsesOnlyThose() throws {
        let server = InProcessServer(accessControl: AccessControl(tokens: [
            AccessToken(secret: "admin", access: .readWrite),
            AccessToken(
                secret: "writer", access: .readWrite,
                paths: [try PathPattern(parsing: "person.**"), try PathPattern(parsing: "department.employees")]),
            AccessToken(secret: "reader", access: .readOnly, paths: [try PathPattern(parsing: "person")]),
        ]))
        let admin = server.peer()
        #expect(try admin.request(1, "hello", #"{"token":"admin"}"#)["result"]?["paths"] == nil)
        #expect(try admin.request(2, "set", #"{"path":"secret","value":"s3"}"#)["result"]?["seq"] == 1)
        #expect(try admin.request(3, "set", #"{"path":"department","value":{"employees":[],"budget":10}}"#)["result"] != nil)
        let writer = server.peer()
        let hello = try writer.request(1, "hello", #"{"token":"writer"}"#)
        #expect(hello["result"]?["paths"] == .json(#"["person.**","department.employees"]"#))
        func refused(_ response: JSONValue, _ path: String, op: Int? = nil) {
            #expect(response["error"]?["code"] == 1008, "\(response)")
            #expect(response["error"]?["data"]?["path"] == .string(path), "\(response)")
            #expect(response["error"]?["data"]?["op"] == op.map { .int(Int64($0)) }, "\(response)")
        }
        // Granted: the patterns' paths and everything beneath, for every method with a path.
        #expect(try writer.request(2, "set", #"{"path":"person.name","value":"Ada"}"#)["result"] != nil)
        #expect(try writer.request(3, "get", #"{"path":"person"}"#)["result"]?["value"]?["name"] == "Ada")
        #expect(try writer.request(4, "insert", #"{"path":"department.employees","value":"x"}"#)["result"] != nil)
        #expect(try writer.request(5, "get", #"["department.employees.@count"]"#)["result"]?["value"] == 1)
        #expect(try writer.request(6, "validate", #"{"path":"person.age","value":3}"#)["result"] != nil)
        #expect(try writer.request(7, "describe", #"{"path":"person"}"#)["result"] != nil)
        #expect(try writer.request(8, "describe")["result"] != nil)  // the model, not data
        let subscribed = try writer.request(9, "subscribe", #"{"path":"person.name","options":["new"]}"#)
        let id = subscribed["result"]?["subscription"]?.intValue ?? -1
        #expect(try writer.request(10, "unsubscribe", #"{"subscription":\#(id)}"#)["result"] == true)
        // Refused: other paths, the root, parents of granted paths, $ID paths, observers and stats.
        refused(try writer.request(11, "get", #"{"path":"secret"}"#), "secret")
        refused(try writer.request(12, "get", #"{"path":""}"#), "")
        refused(try writer.request(13, "get", #"{"path":"department"}"#), "department")
        refused(try writer.request(14, "get", #"{"path":"department.budget"}"#), "department.budget")
        refused(try writer.request(15, "subscribe", #"{"path":"secret","options":["new"]}"#), "secret")
        refused(try writer.request(16, "set", #"["secret",1]"#), "secret")
        refused(try writer.request(17, "describe", #"{"path":"department"}"#), "department")
        refused(try writer.request(18, "validate", #"{"path":"secret","value":1}"#), "secret")
        refused(try writer.request(19, "get", #"{"path":"$1"}"#), "$1")
        refused(try writer.request(20, "union", #"{"path":"tags","values":["x"]}"#), "tags")
        for (id, method) in [(21, "observers"), (22, "stats")] {
            let response = try writer.request(id, method)
            #expect(response["error"]?["code"] == 1008)
            #expect(response["error"]?["data"]?["reason"] == "restricted token")
        }
        // A transaction is checked op by op before anything runs: nothing changes.
        let transaction = try writer.request(
            23, "transaction",
            #"{"ops":[{"method":"set","params":{"path":"person.name","value":"Grace"}},{"method":"set","params":{"path":"secret","value":0}}]}"#)
        refused(transaction, "secret", op: 1)
        #expect(try admin.request(4, "get", #"{"path":"person.name"}"#)["result"]?["value"] == "Ada")
        #expect(try admin.request(5, "get", #"{"path":"secret"}"#)["result"]?["value"] == "s3")
        // A restricted read-only token reads its paths and mutates nothing.
        let reader = server.peer()
        #expect(try reader.request(1, "hello", #"{"token":"reader"}"#)["result"]?["access"] == "read-only")
        #expect(try reader.request(2, "get", #"{"path":"person.name"}"#)["result"]?["value"] == "Ada")
        #expect(try reader.request(3, "set", #"{"path":"person.name","value":"x"}"#)["error"]?["data"]?["reason"] == "read-only token")
        refused(try reader.request(4, "get", #"{"path":"department.employees"}"#), "department.employees")
    }
}

/// The token file and the environment, sockets closed and the log: against a live kvod.
@Suite(.serialized) struct AccessControlOverWireTests {
    /// kvod with a read-write token `writer-secret` and a read-only token `reader-secret` from a token file.
    static func start(_ extra: [String] = [], environment: [String: String]? = nil) throws -> (KVODProcess, ScratchDirectory) {
        let scratch = try ScratchDirectory("tokens")
        let file = try scratch.write("tokens", "# test tokens\nwriter-secret read-write\nreader-secret read-only\n")
        return (try KVODProcess.start(["--token-file", file] + extra, environment: environment), scratch)
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

    @Test func kvodTokenInTheEnvironmentIsAReadWriteToken() throws {
        let server = try KVODProcess.start(environment: ["KVOD_TOKEN": "from-the-environment"])
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"a"}"#)["error"]?["code"] == 1008)
        #expect(try peer.request(2, "hello", #"{"token":"from-the-environment"}"#)["result"]?["access"] == "read-write")
        #expect(try peer.request(3, "set", #"{"path":"a","value":true}"#)["result"] != nil)
    }
}
