// The async client (KVOAsyncClient) against a real kvod: calls and typed errors, change streams, observation tokens
// that end their subscription when released, the @Observable mirror, a reconnection through a cut connection (the
// missed change replayed with `since`, nothing twice) and through kvod killed with SIGKILL and restarted on its port.
// Every wait is bounded; kvod and the proxy stop with the test.

import Foundation
import KVOAsyncClient
import KVOClient
import Observation
import TestSupport
import Testing
import WireProtocol

/// Collects a sequence's events in the background, for bounded waits.
actor Collector {
    private(set) var events: [KVOEvent] = []
    private(set) var failure: (any Error)?
    private(set) var finished = false

    func add(_ event: KVOEvent) { self.events.append(event) }
    func end(_ error: (any Error)?) {
        self.failure = error
        self.finished = true
    }

    /// The changes received so far.
    var changes: [KVOChange] { self.events.compactMap(\.change) }

    static func collecting(_ changes: KVOChanges) -> (Collector, Task<Void, Never>) {
        let collector = Collector()
        let task = Task {
            do {
                for try await event in changes { await collector.add(event) }
                await collector.end(nil)
            } catch {
                await collector.end(error)
            }
        }
        return (collector, task)
    }
}

/// Polls `condition` every 20 ms until it holds, for at most `timeout`; records an issue naming `what` otherwise.
func eventually(
    _ what: String, timeout: Duration = .seconds(15), sourceLocation: SourceLocation = #_sourceLocation,
    isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("\(what): not within \(timeout)", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// The key paths the connections named `client` subscribe to, as kvod's `observers` lists them.
func observed(by client: String, on server: KVODProcess) throws -> [String] {
    let observers = try server.client().call("observers")
    return (observers["connections"]?.arrayValue ?? [])
        .filter { $0["client"]?.stringValue == client }
        .flatMap { $0["subscriptions"]?.arrayValue ?? [] }
        .compactMap { $0["path"]?.stringValue }
}

@Suite("KVOAsyncClient", .serialized)
struct AsyncKVOClientTests {
    @Test func callsReturnTypedResultsAndKvodsErrors() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let client = try await AsyncKVOClient.connect(to: "\(server.host):\(server.port)")
        defer { Task { await client.close() } }
        #expect(try await client.ping() == "pong")
        let seq = try await client.set("person.firstName", to: "Ada")
        #expect(try await client.get("person.firstName") == "Ada")
        #expect(try await client.getMeta("person.firstName").modSeq == seq)
        #expect(try await client.get("person.fullName") == "Ada ", "a computed key")
        try await client.insert("department.tags", values: ["a", "b", "c"])
        let page = try await client.page("department.tags", offset: 1, limit: 1)
        #expect(page.elements == ["b"] && page.count == 3)
        #expect(try await client.describe("person")["class"]?["name"] == "Person")
        let stats = try await client.stats()
        #expect(stats["connections"] == 1)

        // kvod's errors come back as `.server` with its code and data.
        do {
            try await client.set("person.nickname", to: "x")
            Issue.record("a key Person does not declare was set")
        } catch KVOError.server(let error) {
            #expect(error.code == 1001)
        }
        do {
            try await client.set("contact.email", to: "nope")
            Issue.record("an invalid email was stored")
        } catch KVOError.server(let error) {
            #expect(error.code == 1002 && error.data?["path"] == "contact.email")
        }
        let stored = try await client.set("person.lastName", to: "Lovelace")
        try await client.set("person.lastName", to: "Byron", if: .modSeq(stored))
        do {
            try await client.set("person.lastName", to: "King", if: .modSeq(stored))
            Issue.record("a failed condition wrote")
        } catch KVOError.server(let error) {
            #expect(error.code == 1011)
        }
        // A wrong address is a connection error, not a hang.
        await #expect(throws: KVOError.self) {
            _ = try await AsyncKVOClient.connect(to: "127.0.0.1:1", options: .init(timeout: .seconds(2)))
        }
    }

    @Test func aClientReleasedWithoutCloseEndsItsConnection() async throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let checker = try server.client()
        var client: AsyncKVOClient? = try await AsyncKVOClient.connect(to: "127.0.0.1:\(server.port)")
        #expect(try await client?.ping() == "pong")
        #expect(try checker.call("stats")["connections"] == 2)
        client = nil
        try await eventually("kvod saw the connection end") { try checker.call("stats")["connections"] == 1 }
        #expect(client == nil)
    }

    @Test func aChangeStreamDeliversPriorAndAfterInOrderAndEndsWhenCancelled() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let client = try await AsyncKVOClient.connect(
            to: "\(server.host):\(server.port)", options: .init(clientName: "stream-test"))
        defer { Task { await client.close() } }
        let changes = try await client.changes(of: "person.firstName", options: [.new, .old, .prior], context: "ctx")
        let (collector, task) = Collector.collecting(changes)
        let first = try await client.set("person.firstName", to: "Grace")
        let second = try await client.set("person.firstName", to: "Ada")
        try await eventually("four notifications") { await collector.changes.count == 4 }
        let received = await collector.changes
        #expect(received.map(\.isPrior) == [true, false, true, false])
        #expect(received.map(\.seq) == [first, first, second, second])
        #expect(received[1].old == "" && received[1].new == "Grace" && received[1].kind == .setting)
        #expect(received[3].old == "Grace" && received[3].new == "Ada")
        #expect(received.allSatisfy { $0.context == "ctx" && $0.path == "person.firstName" })
        #expect(try observed(by: "stream-test", on: server) == ["person.firstName"])

        changes.cancel()
        try await eventually("the sequence finished") { await collector.finished }
        #expect(await collector.failure == nil)
        try await eventually("kvod unsubscribed it") { try observed(by: "stream-test", on: server).isEmpty }
        #expect(await client.subscriptionCount == 0)
        task.cancel()
    }

    @Test func anObservationTokenEndsItsSubscriptionWhenReleased() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let client = try await AsyncKVOClient.connect(
            to: "\(server.host):\(server.port)", options: .init(clientName: "token-test"))
        defer { Task { await client.close() } }
        let collector = Collector()
        var token: KVOObservation? = try await client.observe("labColor.lComponent", options: [.new]) { event in
            Task { await collector.add(event) }
        }
        #expect(token?.path == "labColor.lComponent")
        let seq = try await client.set("labColor.lComponent", to: 70)
        try await eventually("the handler was called") { await collector.changes.map(\.seq) == [seq] }
        #expect(await collector.changes.first?.new == 70.0)
        #expect(try observed(by: "token-test", on: server) == ["labColor.lComponent"])

        token = nil  // released: the subscription ends, as an NSKeyValueObservation's does
        try await eventually("kvod unsubscribed it") { try observed(by: "token-test", on: server).isEmpty }
        try await client.set("labColor.lComponent", to: 60)
        try await Task.sleep(for: .milliseconds(200))
        #expect(await collector.changes.count == 1, "no event after the token was released")
        #expect(token == nil)

        // invalidate() ends it too, and twice is harmless.
        let other = try await client.observe("labColor.aComponent") { _ in }
        try await eventually("subscribed") { try observed(by: "token-test", on: server) == ["labColor.aComponent"] }
        other.invalidate()
        other.invalidate()
        try await eventually("kvod unsubscribed it") { try observed(by: "token-test", on: server).isEmpty }
    }

    @MainActor
    @Test func aMirrorIsObservableAndFollowsKvod() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let client = try await AsyncKVOClient.connect(to: "\(server.host):\(server.port)")
        defer { Task { await client.close() } }
        let mirror = try await KVOMirror.mirror(of: "person", client: client)
        try await eventually("the initial values") { mirror["firstName"] == "" && mirror["fullName"] == " " }
        #expect(Set(mirror.values.keys) == ["firstName", "lastName", "fullName", "address"])

        // Observation: a change made elsewhere reaches code that read the mirror (as a SwiftUI body would).
        let changed = Collector()
        withObservationTracking {
            _ = mirror["firstName"]
        } onChange: {
            Task { await changed.add(.resync(path: "", since: 0, oldest: nil, seq: 0)) }
        }
        let other = try server.client()
        _ = try other.call("set", ["path": "person.firstName", "value": "Katherine"])
        try await eventually("Observation saw the change") { await !changed.events.isEmpty }
        try await eventually("the mirror has the value") { mirror["firstName"] == "Katherine" }
        try await eventually("the computed key followed") { mirror["fullName"] == "Katherine " }
        #expect(mirror.seq >= 1)
        mirror.stop()
    }

    @Test func aCutConnectionResumesWithSinceAndReplaysWhatWasMissed() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let proxy = try TCPProxy(to: server.port)
        defer { proxy.stop() }
        let client = try await AsyncKVOClient.connect(
            to: "127.0.0.1:\(proxy.port)", options: .init(clientName: "resume-test", maxBackoff: .milliseconds(300)))
        defer { Task { await client.close() } }
        let states = await client.connectionStates()
        let stateCollector = StateCollector.collecting(states)
        let changes = try await client.changes(of: "person.lastName", options: [.new, .old])
        let (collector, _) = Collector.collecting(changes)
        let before = try await client.set("person.lastName", to: "Lovelace")
        try await eventually("the first change") { await collector.changes.map(\.seq) == [before] }

        // The proxy refuses connections and cuts the one open; meanwhile another client changes the key twice.
        proxy.pause()
        try await eventually("the client saw the connection end") {
            await stateCollector.states.contains(.disconnected(reason: "kvod closed the connection", reconnecting: true))
        }
        let other = try server.client()
        let missed1 = try other.call("set", ["path": "person.lastName", "value": "Hopper"])["seq"]?.intValue
        let missed2 = try other.call("set", ["path": "person.lastName", "value": "Hamilton"])["seq"]?.intValue
        proxy.resume()
        try await eventually("the missed changes replayed") { await collector.changes.count == 3 }
        let received = await collector.changes
        #expect(received.map { Int64($0.seq) } == [Int64(before), missed1, missed2], "no gap, no duplicate")
        #expect(received[1].old == "Lovelace" && received[1].new == "Hopper")
        #expect(received[2].old == "Hopper" && received[2].new == "Hamilton")
        #expect(await collector.events.count == 3, "no resync: kvod could replay")
        #expect(await client.connections == 2)
        #expect(try await client.get("person.lastName") == "Hamilton")
        let live = try await client.set("person.lastName", to: "Liskov")
        try await eventually("live again") { await collector.changes.last?.seq == live }
        #expect(await collector.changes.count == 4)
    }

    @Test func onDisconnectOpsAreRegisteredAgainOnEveryConnection() async throws {
        let server = try KVODProcess.start()
        defer { server.stop() }
        let proxy = try TCPProxy(to: server.port)
        defer { proxy.stop() }
        let client = try await AsyncKVOClient.connect(
            to: "127.0.0.1:\(proxy.port)", options: .init(maxBackoff: .milliseconds(200)))
        defer { Task { await client.close() } }
        let states = StateCollector.collecting(await client.connectionStates())
        let other = try server.client()
        #expect(try await client.onDisconnect([("set", ["path": "presence.ada", "value": .null])]) == 1)
        for round in 1...2 {
            try await client.set("presence.ada", to: "online")
            proxy.pause()  // the connection ends: kvod runs the ops
            try await eventually("kvod ran the ops (round \(round))") { try other.get("presence.ada") == .null }
            proxy.resume()
            try await eventually("connected again") {
                await states.states.contains { if case .connected(_, round + 1) = $0 { true } else { false } }
            }
            #expect(await client.onDisconnectError == nil)
        }
        // Cancelled: the next end of a connection runs nothing.
        try await client.cancelOnDisconnect()
        try await client.set("presence.ada", to: "online")
        proxy.pause()
        try await eventually("the connection ended") {
            await states.states.filter { if case .disconnected = $0 { true } else { false } }.count == 3
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(try other.get("presence.ada") == "online")
        proxy.resume()
    }

    @Test func killedWithSigkillAndRestartedTheClientReconnectsAndGoesOn() async throws {
        let data = try ScratchDirectory("async-client")
        let arguments = ["--data-dir", data.path + "/data", "--fsync", "always"]
        var server = try KVODProcess.start(arguments, defaultModel: true)
        let port = server.port
        defer { server.stop() }
        let client = try await AsyncKVOClient.connect(
            to: "127.0.0.1:\(port)", options: .init(timeout: .seconds(20), maxBackoff: .milliseconds(500)))
        defer { Task { await client.close() } }
        let states = StateCollector.collecting(await client.connectionStates())
        let changes = try await client.changes(of: "person.firstName", options: [.new, .initial])
        let (collector, _) = Collector.collecting(changes)
        try await eventually("the initial value") { await collector.changes.first?.isInitial == true }
        let ada = try await client.set("person.firstName", to: "Ada")
        try await eventually("the change") { await collector.changes.last?.seq == ada }

        server.command.send(signal: SIGKILL)
        _ = server.command.waitForExitStatus(timeout: .seconds(10))
        try await eventually("the client saw kvod die") {
            await states.states.contains { if case .disconnected(_, true) = $0 { true } else { false } }
        }
        // A call made while kvod is down waits for the reconnection (within the client's timeout).
        let waiting = Task { try await client.get("person.firstName") }
        server = try Self.restart(arguments, port: port)
        // A change kvod makes before the client is back: the client either replays it or, when kvod's history (which
        // a restart empties) cannot, says so with a resync and gets the current value as an initial change.
        let grace = try server.client().call("set", ["path": "person.firstName", "value": "Grace"])["seq"]?.intValue
        #expect(try await waiting.value != .null, "the waiting call was answered after the restart")
        try await eventually("the client has the change made while it was away") {
            await collector.changes.contains { $0.new == "Grace" && Int64($0.seq) == grace }
        }
        try await eventually("connected again") {
            await states.states.contains { if case .connected(_, 2) = $0 { true } else { false } }
        }
        let events = await collector.events
        if let resync = events.firstIndex(where: { $0.change == nil }) {
            guard case .resync(_, let since, _, _) = events[resync] else { return }
            #expect(since == ada, "the resync names the last seq delivered")
            #expect(events[(resync + 1)...].first?.change?.isInitial == true, "the current value follows a resync")
        }
        // Live again, and calls work.
        let barbara = try await client.set("person.firstName", to: "Barbara")
        try await eventually("live after the restart") { await collector.changes.last?.seq == barbara }
        #expect(try await client.get("person.firstName") == "Barbara")
        #expect(await client.connections == 2)
    }

    /// README.md's "From Swift" example, as written there (the prints collected instead).
    @MainActor
    @Test func theReadmeExampleRuns() async throws {
        let server = try KVODProcess.start(defaultModel: true)
        defer { server.stop() }
        let printed = Lines()
        let print: @Sendable (Any...) -> Void = { items in
            let line = items.map { "\($0)" }.joined(separator: " ")
            Task { await printed.add(line) }
        }

        let client = try await AsyncKVOClient.connect(to: "127.0.0.1:\(server.port)")
        let token = try await client.observe("person.firstName", options: [.new, .old]) { event in
            if let change = event.change { print(change.old ?? "-", "->", change.new ?? "-") }   // "" -> "Ada"
        }
        try await client.set("person.firstName", to: "Ada")
        let employees = try await client.changes(of: "department.employees", options: [.new])
        Task { for try await event in employees { print(event.change?.kind ?? "resync", event.change?.indexes ?? []) } }
        try await client.insert("department.employees", values: [["name": "Grace", "salary": 100]])   // insertion [0]
        let person = try await KVOMirror.mirror(of: "person", client: client)   // @MainActor, @Observable
        try await eventually("the mirror's values") { person["firstName"] != nil }
        print(person["firstName"] ?? "")
        token.invalidate()   // or let it go: releasing the token unsubscribes

        try await eventually("three lines") { await printed.lines.count == 3 }
        #expect(Set(await printed.lines) == [#""" -> "Ada""#, "insertion [0]", #""Ada""#])
        employees.cancel()
        person.stop()
        await client.close()
    }

    /// Starts kvod again on `port` (it may take a moment for the port to be free after a kill).
    static func restart(_ arguments: [String], port: Int) throws -> KVODProcess {
        var lastError: (any Error)?
        for _ in 0..<50 {
            do {
                return try KVODProcess.start(
                    arguments, defaultModel: true, listenArguments: ["--host", "127.0.0.1", "--port", String(port)])
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        throw lastError ?? CancellationError()
    }
}

/// Lines printed, in the order they came.
actor Lines {
    private(set) var lines: [String] = []
    func add(_ line: String) { self.lines.append(line) }
}

/// Collects connection states in the background.
actor StateCollector {
    private(set) var states: [AsyncKVOClient.ConnectionState] = []
    func add(_ state: AsyncKVOClient.ConnectionState) { self.states.append(state) }

    static func collecting(_ stream: AsyncStream<AsyncKVOClient.ConnectionState>) -> StateCollector {
        let collector = StateCollector()
        Task { for await state in stream { await collector.add(state) } }
        return collector
    }
}
