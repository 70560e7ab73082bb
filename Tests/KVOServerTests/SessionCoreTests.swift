// The dispatcher, subscriptions and sessions tested through the session core directly (InProcessServer.swift): no
// process, no socket, a manual clock. Process-level tests keep the CLI, configuration, durability and the wire.
@testable import KVOServer
import ObjectGraph
import Testing
import WireProtocol

@MainActor
@Suite struct SessionCoreTests {
    @Test func aMutationsNotificationsReachEverySessionBeforeItsResponse() throws {
        let server = InProcessServer()
        let (_, watcher) = server.connect()
        let (_, writer) = server.connect()
        let subscribed = try server.request(watcher, 1, "subscribe", #"{"path":"a","options":["new","old","prior"]}"#)
        #expect(subscribed.count == 1 && subscribed[0]["result"]?["subscription"] == 1)
        // The writer observes too: its own notifications come before its response.
        _ = try server.request(writer, 1, "subscribe", #"{"path":"a","options":["new"]}"#)
        let written = try server.request(writer, 2, "set", #"{"path":"a","value":5}"#)
        #expect(written.count == 2)
        #expect(written[0]["method"] == "change" && written[0]["params"]?["new"] == 5)
        #expect(written[1]["id"] == 2 && written[1]["result"]?["seq"] == 1)
        let seen = try watcher.takeMessages()
        #expect(seen.map { $0["params"]?["prior"]?.boolValue } == [true, nil])
        #expect(seen[1]["params"]?["old"] == .null && seen[1]["params"]?["new"] == 5 && seen[1]["params"]?["seq"] == 1)
    }

    @Test func aTurnWritesTheSettersResponseBeforeTheFanOut() throws {
        let server = InProcessServer()
        var order: [String] = []
        var watchers: [RecordingTransport] = []
        for index in 1...3 {
            let (_, watcher) = server.connect()
            _ = try server.request(watcher, 1, "subscribe", #"{"path":"a","options":["new"]}"#)
            watcher.onWrite = { order.append("watcher \(index)") }
            watchers.append(watcher)
        }
        let (_, writer) = server.connect()
        writer.onWrite = { order.append("writer") }
        // One turn: the set queues three notifications, then its response; the flush writes the response first.
        let written = try server.request(writer, 1, "set", #"{"path":"a","value":5}"#)
        #expect(written.count == 1 && written[0]["result"]?["seq"] == 1)
        #expect(order.first == "writer" && order.count == 4)
        #expect(Set(order.dropFirst()) == ["watcher 1", "watcher 2", "watcher 3"])
        for watcher in watchers { #expect(try watcher.takeMessages().map { $0["params"]?["new"] } == [5]) }
    }

    @Test func initialNotificationsFollowTheWholeBatchResponse() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"x","value":"v"}"#)
        peer.send(
            "[" + InProcessServer.requestText(2, "subscribe", #"{"path":"x","options":["initial","new"]}"#) + ","
                + InProcessServer.requestText(3, "ping") + "]")
        server.flush()
        let messages = try peer.takeMessages()
        #expect(messages.count == 2)
        #expect(messages[0].arrayValue?.count == 2)
        #expect(messages[1]["params"]?["initial"] == true && messages[1]["params"]?["new"] == "v")
    }

    @Test func everyRequestIsCountedOnceAndEveryMutationJournaledExplicitly() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"n","value":1}"#)
        // Refused: a failed precondition, a bad param, an unknown method. Counted as requests, not mutations.
        #expect(try server.request(peer, 2, "set", #"{"path":"n","value":2,"if":{"absent":true}}"#)[0]["error"]?["code"] == 1011)
        #expect(try server.request(peer, 3, "set", #"{"path":"n"}"#)[0]["error"]?["code"] == -32602)
        #expect(try server.request(peer, 4, "frobnicate")[0]["error"]?["code"] == -32601)
        _ = try server.request(peer, 5, "insert", #"{"path":"list","value":1}"#)
        _ = try server.request(peer, 6, "get", #"{"path":"n"}"#)
        _ = try server.request(peer, 7, "transaction", #"{"ops":[{"method":"set","params":{"path":"n","value":3}}]}"#)
        let stats = server.context
        #expect(stats.stats.requests == 7)
        #expect(stats.stats.mutations == 3)
        #expect(server.log.records.map(\.method) == ["set", "insert", "transaction"])
        #expect(server.log.records.map(\.seq) == [1, 2, 3])
        // The journal is written before the turn's output (the group commit).
        #expect(server.log.outputTurns == 7)
        // What was journaled replays through the same parser into the same graph.
        let replayed = Graph(model: .open)
        for record in server.log.records {
            try MutationRequest.replay(method: record.method, params: record.params, into: replayed)
        }
        #expect(replayed.seq == server.graph.seq)
        #expect(try replayed.get("n") == server.graph.get("n") && replayed.get("list") == server.graph.get("list"))
    }

    @Test func progressNotificationsFollowTheClock() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        let subscribed = try server.request(peer, 1, "subscribe", #"{"path":"p","progress":2}"#)
        let id = try #require(subscribed[0]["result"]?["subscription"])
        server.clock.advance(milliseconds: 1500)
        server.core.tick()
        server.flush()
        #expect(try peer.takeMessages().isEmpty)
        server.clock.advance(milliseconds: 600)
        server.core.tick()
        server.flush()
        let progress = try peer.takeMessages()
        #expect(progress.count == 1)
        #expect(progress.first?["method"] == "progress" && progress.first?["params"]?["subscription"] == id)
        // A change resets the quiet time.
        _ = try server.request(peer, 2, "set", #"{"path":"p","value":1}"#)
        server.clock.advance(milliseconds: 1900)
        server.core.tick()
        server.flush()
        #expect(try peer.takeMessages().isEmpty)
    }

    @Test func anUnauthenticatedSessionIsClosedAfterTheAuthTimeout() throws {
        var limits = Limits()
        limits.authTimeoutSeconds = 5
        let server = InProcessServer(
            limits: limits, accessControl: AccessControl(tokens: [AccessToken(secret: "s3cret", access: .readWrite)]))
        let (idle, idleTransport) = server.connect()
        let (authenticated, authenticatedTransport) = server.connect()
        #expect(try server.request(authenticatedTransport, 1, "hello", #"{"token":"s3cret"}"#)[0]["result"] != nil)
        #expect(try server.request(idleTransport, 1, "get", #"{"path":"a"}"#)[0]["error"]?["code"] == 1008)
        server.clock.advance(milliseconds: 4000)
        server.core.tick()
        #expect(idle.closeReason == nil)
        server.clock.advance(milliseconds: 1000)
        server.core.tick()
        #expect(idle.closeReason == .authTimeout && authenticated.closeReason == nil)
        #expect(try idleTransport.takeMessages().last?["params"]?["reason"] == "auth_timeout")
        guard case .graceful(.authTimeout, peerClosed: false)? = idleTransport.closedWith else {
            Issue.record("expected a graceful close, got \(String(describing: idleTransport.closedWith))")
            return
        }
        #expect(server.context.sessions.count == 2)
        idleTransport.finishClosing()
        #expect(server.context.sessions.count == 1)
    }

    @Test func aClosingSessionEndsItsSubscriptionsEverywhere() throws {
        let server = InProcessServer()
        let (session, peer) = server.connect()
        let (_, other) = server.connect()
        _ = try server.request(peer, 1, "subscribe", #"{"path":"a"}"#)
        _ = try server.request(peer, 2, "subscribe", #"{"path":"b","progress":1}"#)
        #expect(server.context.subscriptions.openCount == 2)
        // Each subscription is an engine observation (the resumable history adds its own per path, which stay).
        let observations = server.graph.observationCount
        peer.send("")  // a blank line is ignored
        session.transportEnded(error: false)
        #expect(session.closeReason == .clientClosed)
        #expect(server.context.subscriptions.openCount == 0)
        #expect(server.graph.observationCount == observations - 2)
        // Nothing is queued for a closed session, and its subscription no longer reaches it.
        _ = try server.request(other, 1, "set", #"{"path":"a","value":1}"#)
        #expect(try peer.takeMessages().isEmpty)
    }

    @Test func aSlowConsumerIsClosedAtTheFlushWithTheNoticeOnlyIfNothingIsQueued() throws {
        var limits = Limits()
        limits.outputHardLimitBytes = 4096
        limits.outputSoftLimitBytes = 0
        let server = InProcessServer(limits: limits)
        let (slow, slowTransport) = server.connect()
        let (_, writer) = server.connect()
        _ = try server.request(slowTransport, 1, "subscribe", #"{"path":"big","options":["new"]}"#)
        slowTransport.pendingWriteBytes = 4000  // the peer stopped reading
        let big = String(repeating: "x", count: 200)
        for id in 1...3 { _ = try server.request(writer, id, "set", #"{"path":"big","value":"\#(big)"}"#) }
        #expect(slow.closeReason == .slowConsumer)
        guard case .abandon(_, .slowConsumer)? = slowTransport.closedWith else {
            Issue.record("expected an abandoning close, got \(String(describing: slowTransport.closedWith))")
            return
        }
        #expect(server.context.stats.closes[.slowConsumer] == 1)
    }

    /// A batch's responses count against the output limit as they are produced (issue 23: 500 gets of a 900 KB value
    /// took 930 MB before the limit was looked at): past it the batch stops, nothing of it is sent, the requests
    /// after the one that passed it are not performed, and the session is closed `slow_consumer` at the flush.
    @Test func aBatchWhoseResponsesPassTheHardLimitStopsThereAndClosesTheSession() throws {
        var limits = Limits()
        limits.outputHardLimitBytes = 50_000
        limits.outputSoftLimitBytes = 0
        let server = InProcessServer(limits: limits)
        let (_, writer) = server.connect()
        let big = String(repeating: "x", count: 15_000)
        _ = try server.request(writer, 1, "set", #"{"path":"big","value":"\#(big)"}"#)
        let (reader, readerTransport) = server.connect()
        let get = #"{"jsonrpc":"2.0","id":1,"method":"get","params":{"path":"big"}}"#
        let set = #"{"jsonrpc":"2.0","id":2,"method":"set","params":{"path":"after","value":1}}"#
        // Three gets pass 50,000 bytes (the third's value counts twice, as it would exist twice while it is copied into
        // the array, so it is refused before it is encoded); the set after them is not performed, nor the line after
        // the batch.
        readerTransport.send("[" + [get, get, get, set].joined(separator: ",") + "]")
        readerTransport.send(#"{"jsonrpc":"2.0","id":3,"method":"set","params":{"path":"later","value":1}}"#)
        server.flush()
        #expect(reader.closeReason == .slowConsumer)
        #expect(readerTransport.written.count < 1000)  // at most the closing notice
        #expect(try readerTransport.takeMessages().allSatisfy { $0["method"] == "closing" })
        #expect(server.graph.seq == 1)
        #expect(try server.request(writer, 2, "get", #"{"path":"after"}"#)[0]["result"]?["value"] == .null)
        // Under the limit a batch is answered whole, after what the same turn queued before it.
        let (_, other) = server.connect()
        other.send(#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
        other.send("[" + [get, get].joined(separator: ",") + "]")
        other.send(#"[{"jsonrpc":"2.0","method":"ping"}]"#)  // notifications only: nothing at all
        other.send(#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#)
        server.flush()
        let answers = try other.takeMessages()
        #expect(answers.count == 3 && answers[0]["id"] == 7 && answers[2]["id"] == 8)
        #expect(answers[1].arrayValue?.map { $0["result"]?["value"]?.stringValue?.count } == [15_000, 15_000])
    }

    /// A connection closing with many subscriptions ends them a slice per loop turn (issue 23: closing 10,000 held
    /// every client for 9.5 s): they stop counting at once, nothing reaches the closed connection meanwhile, and the
    /// engine drops their observations over the next turns.
    @Test func manySubscriptionsOfAClosingSessionEndASlicePerTurn() throws {
        let server = InProcessServer(historyCapacity: 0)
        let (_, subscriber) = server.connect()
        let count = 2 * Subscriptions.endBudget + 500
        subscriber.send("[" + (0..<count).map { Peer.requestText($0, "subscribe", #"{"path":"p\#($0)"}"#) }.joined(separator: ",") + "]")
        server.flush()
        _ = try subscriber.takeMessages()
        #expect(server.graph.observationCount == count)
        let before = subscriber.written.count
        subscriber.events?.transportEnded(error: false)
        #expect(server.context.subscriptions.openCount == 0)
        let (_, writer) = server.connect()
        _ = try server.request(writer, 1, "set", #"{"path":"p7","value":1}"#)  // flushes: the first slice
        #expect(server.graph.observationCount == count - Subscriptions.endBudget)
        server.flush()
        #expect(server.graph.observationCount == 500)
        server.flush()
        #expect(server.graph.observationCount == 0)
        #expect(subscriber.written.count == before)  // no notification of p7 reached the closed connection
        // A few end at once.
        let (_, few) = server.connect()
        _ = try server.request(few, 1, "subscribe", #"{"path":"q"}"#)
        few.events?.transportEnded(error: false)
        #expect(server.graph.observationCount == 0)
    }

    @Test func aLineTooLongGetsAnErrorAndTheConnectionCloses() throws {
        let server = InProcessServer()
        let (session, peer) = server.connect()
        session.transportReceivedTooLong(limit: 10)
        #expect(session.closeReason == .lineTooLong && peer.isReadingPaused)
        let messages = try peer.takeMessages()
        #expect(messages.count == 2)
        #expect(messages[0]["error"]?["code"] == 1009 && messages[0]["error"]?["data"]?["limit"] == 10)
        #expect(messages[1]["method"] == "closing" && messages[1]["params"]?["reason"] == "line_too_long")
    }

    @Test func overTheConnectionLimitTheSessionIsToldAndClosed() throws {
        var limits = Limits()
        limits.maxConnections = 1
        let server = InProcessServer(limits: limits)
        let (first, _) = server.connect()
        let (second, secondTransport) = server.connect()
        #expect(first.closeReason == nil && second.closeReason == .tooManyConnections)
        #expect(try secondTransport.takeMessages().first?["params"]?["reason"] == "too_many_connections")
        let stats = server.context.stats
        #expect(stats.connectionsAccepted == 2 && stats.connectionsOpen == 1)
    }

    @Test func subscriptionIdsAreTheServersAndUnsubscribeIsPerSession() throws {
        let server = InProcessServer()
        let (_, first) = server.connect()
        let (_, second) = server.connect()
        #expect(try server.request(first, 1, "subscribe", #"{"path":"a"}"#)[0]["result"]?["subscription"] == 1)
        #expect(try server.request(second, 1, "subscribe", #"{"path":"a"}"#)[0]["result"]?["subscription"] == 2)
        #expect(try server.request(second, 2, "unsubscribe", #"{"subscription":1}"#)[0]["error"]?["code"] == 1007)
        #expect(try server.request(first, 2, "unsubscribe", #"{"subscription":1}"#)[0]["result"] == true)
        let observers = try server.request(first, 3, "observers")[0]["result"]?["connections"]?.arrayValue ?? []
        #expect(observers.map { $0["subscriptions"]?.arrayValue?.count } == [0, 1])
        #expect(observers[0]["self"] == true && observers[1]["subscriptions"]?.arrayValue?.first?["subscription"] == 2)
    }
}
