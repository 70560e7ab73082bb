// KVOClient (the library kvoctl is built on) against a live kvod: notifications queued while a call waits, error
// mapping, raw lines, timeouts, long lines, name resolution, and a server that goes away.

import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite("KVOClient")
struct KVOClientTests {
    @Test func notificationsArrivingDuringACallAreQueuedInOrder() throws {
        try withKVOD { server in
            let client = try server.client()
            let subscription = try client.subscribe("balance", options: ["new", "old", "prior"], context: "ctx")
            let seq = try client.set("balance", 10)
            #expect(seq == subscription.seq + 1)
            #expect(client.pendingNotifications.count == 2, "notifications are queued before the response")
            let prior = try client.nextNotification()
            let after = try client.nextNotification()
            #expect(prior.method == "change" && prior.params["prior"] == true)
            #expect(after.params["new"] == 10 && after.params["old"] == .null)
            #expect(after.params["subscription"] == .int(Int64(subscription.id)))
            #expect(after.params["context"] == "ctx")
            #expect(after.params["seq"] == .int(Int64(seq)))
            #expect(client.pendingNotifications.isEmpty)
        }
    }

    @Test func typedHelpersRoundTrip() throws {
        try withKVOD { server in
            let client = try server.client()
            try client.ping()
            #expect(try client.hello(client: "tests")["server"] == "kvod")
            try client.set("person.name", "Ann")
            #expect(try client.get("person.name") == "Ann")
            #expect(try client.get("never") == .null)
            let (value, seq) = try client.getWithSeq("person.name")
            #expect(value == "Ann" && seq == 1)
            let subscription = try client.subscribe("person.name", options: ["new"])
            try client.unsubscribe(subscription.id)
            try client.set("person.name", "Bob")
            #expect(try client.drainNotifications().isEmpty, "no notification after unsubscribe")
        }
    }

    @Test func errorResponsesThrowTheServersError() throws {
        try withKVOD { server in
            let client = try server.client()
            try client.set("a", 5)
            let error = #expect(throws: KVOClientError.self) { try client.get("a.b") }
            guard case .server(let rpcError)? = error else {
                Issue.record("expected a server error, got \(String(describing: error))")
                return
            }
            #expect(rpcError.code == RPCErrorCode.typeMismatch.rawValue)
            #expect(rpcError.data?["path"] != nil)
            let unknown = #expect(throws: KVOClientError.self) { try client.unsubscribe(12345) }
            if case .server(let rpcError)? = unknown {
                #expect(rpcError.code == RPCErrorCode.unknownSubscription.rawValue)
            } else {
                Issue.record("expected 1007, got \(String(describing: unknown))")
            }
            try client.ping()  // the connection survives error responses
        }
    }

    @Test func rawLinesAreSentAndReadVerbatim() throws {
        try withKVOD { server in
            let client = try server.client()
            try client.sendRaw("{not json")
            let response = try JSONParser.parse(try client.readRawLine())
            #expect(response["id"] == .null)
            #expect(response["error"]?["code"] == -32700)
            try client.notify("set", ["path": "x", "value": 1])  // a notification: no response
            #expect(try client.get("x") == 1)
        }
    }

    @Test func waitingForANotificationTimesOut() throws {
        try withKVOD { server in
            let client = try server.client()
            let started = ContinuousClock.now
            #expect {
                _ = try client.nextNotification(timeout: .milliseconds(200))
            } throws: { error in
                if case KVOClientError.timeout = error { true } else { false }
            }
            #expect(ContinuousClock.now - started >= .milliseconds(200))
        }
    }

    @Test func longLinesRoundTrip() throws {
        try withKVOD { server in
            let client = try server.client()
            let text = String(repeating: "0123456789abcdef", count: 40_000)  // 640 KB, many reads
            try client.set("big", .string(text))
            #expect(try client.get("big") == .string(text))
        }
    }

    @Test func hostNamesAreResolved() throws {
        try withKVOD { server in
            // "localhost" may resolve to ::1 first, where kvod does not listen: the next address is tried.
            let client = try KVOClient(host: "localhost", port: server.port)
            try client.ping()
        }
    }

    @Test func connectingToAClosedPortFails() throws {
        let server = try KVODProcess.start()
        let port = server.port
        server.stop()
        let error = #expect(throws: KVOClientError.self) { try KVOClient(host: "127.0.0.1", port: port) }
        guard case .connectionFailed(let host, let failedPort, _)? = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(host == "127.0.0.1" && failedPort == port)
    }

    @Test func aServerThatGoesAwayClosesTheConnection() throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let client = try server.client()
        try client.ping()
        server.stop()
        #expect {
            _ = try client.call("ping")
            _ = try client.call("ping")
        } throws: { error in
            switch error {
            case KVOClientError.closed, KVOClientError.connectionLost: true
            default: false
            }
        }
    }
}
