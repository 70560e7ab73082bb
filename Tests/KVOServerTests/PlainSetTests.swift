// The `set` read straight off the line (RPCMessage.decodePlainSet, Dispatcher.performPlainSet) against the general
// path: the same sets, spelled as clients spell them and spelled otherwise (which the general decoder reads), on two
// servers side by side must give the same responses, the same notifications and the same journal records.
@testable import KVOServer
import ObjectGraph
import Testing
import WireProtocol

@MainActor
@Suite struct PlainSetTests {
    /// `{path, value}` params, paths and values of every kind: plain stores, declared and observed keys, coercion,
    /// records, references, and errors.
    static let sets: [(path: String, value: String)] = [
        ("a", "1"), ("a", "2"), ("b.c", #""text""#), ("b.d", "null"), ("b.e", "[1,2.5,true]"),
        ("b", #"{"c":"record","n":{"m":1}}"#), ("b.c", #""after""#), ("person.age", "30"), ("person.age", #""31""#),
        ("person.firstName", #""Ada""#), ("person.fullName", #""x""#), ("labColor.lComponent", "50"),
        ("", "1"), ("a..b", "1"), ("a.x", "1"), ("ref", #"{"$ref":404}"#), ("q", #"{"b.c":1}"#), ("$0.z", "7"),
        ("watched", "1"), ("watched", "1"), ("watched", #"{"deep":[1]}"#), ("a", #""\u00e9\n""#),
    ]

    static func plain(_ id: Int, _ path: String, _ value: String) -> String {
        #"{"jsonrpc":"2.0","id":\#(id),"method":"set","params":{"path":"\#(path)","value":\#(value)}}"#
    }

    /// The same request spelled so that only the general decoder reads it (members in another order).
    static func general(_ id: Int, _ path: String, _ value: String) -> String {
        #"{"jsonrpc":"2.0","method":"set","id":\#(id),"params":{"value":\#(value),"path":"\#(path)"}}"#
    }

    @Test func plainAndGeneralSetsAgree() throws {
        let model = try InProcessServer.defaultModel()
        var transcripts: [[JSONValue]] = []
        var journals: [[JSONValue]] = []
        for spell in [Self.plain, Self.general] {
            let server = InProcessServer(model: model)
            let writer = server.peer()
            let watcher = server.peer()
            _ = try watcher.request(1, "subscribe", #"{"path":"watched","options":["new","old"]}"#)
            _ = try watcher.request(2, "subscribe", #"{"path":"person.fullName","options":["new"]}"#)
            var transcript: [JSONValue] = []
            for (index, set) in Self.sets.enumerated() {
                writer.send(spell(index + 10, set.path, set.value))
                transcript.append(try writer.receive())
            }
            server.flush()
            transcript += try watcher.transport.takeMessages()
            transcript.append(try writer.request(99, "get", #"{"path":"b"}"#))
            transcripts.append(transcript)
            // Seq, method and params (compared as JSON objects are: member order aside).
            journals.append(
                server.log.records.map { .array([.int(Int64($0.seq)), .string($0.method), $0.params ?? .null]) })
        }
        #expect(transcripts[0] == transcripts[1])
        #expect(journals[0] == journals[1])
        // Not vacuous: the sets succeeded and failed in the expected places, and the observers were told.
        let responses = transcripts[0].prefix(Self.sets.count)
        #expect(responses.filter { $0["error"] != nil }.count >= 5)
        #expect(responses.filter { $0["result"]?["seq"] != nil }.count >= 12)
        #expect(transcripts[0].filter { $0["method"] == "change" }.count >= 3)
        #expect(journals[0].count >= 12)
    }

    /// Tokens: `rw` may do everything, `ro` only read, `part` write only under `open.**`.
    static let tokens = AccessControl(tokens: [
        AccessToken(secret: "rw", access: .readWrite), AccessToken(secret: "ro", access: .readOnly),
        AccessToken(secret: "part", access: .readWrite, paths: [try! PathPattern(parsing: "open.**")]),
    ])

    /// With access control on, a set is allowed or refused (1008, with the same message and data) the same way in
    /// both spellings: before `hello`, with a read-only token, with a token restricted to other paths, and allowed
    /// with a read-write token and under a granted path.
    @Test func plainAndGeneralSetsAgreeUnderAccessControl() throws {
        var transcripts: [[JSONValue]] = []
        var journals: [[JSONValue]] = []
        for spell in [Self.plain, Self.general] {
            let server = InProcessServer(accessControl: Self.tokens)
            var transcript: [JSONValue] = []
            var id = 10
            for token in [nil, "ro", "part", "rw"] as [String?] {
                let writer = server.peer()
                if let token { _ = try writer.request(1, "hello", #"{"token":"\#(token)"}"#) }
                for (path, value) in [("open.a", "1"), ("closed", "2"), ("open", #"{"b":3}"#), ("a..b", "1")] {
                    id += 1
                    writer.send(spell(id, path, value))
                    transcript.append(try writer.receive())
                }
            }
            transcripts.append(transcript)
            journals.append(
                server.log.records.map { .array([.int(Int64($0.seq)), .string($0.method), $0.params ?? .null]) })
        }
        #expect(transcripts[0] == transcripts[1])
        #expect(journals[0] == journals[1])
        // Not vacuous: 4 refusals without a token, 4 with the read-only one, 2 outside `open.**`; the rest applied
        // (but `a..b`, which does not parse).
        let refused = transcripts[0].filter { $0["error"]?["code"] == 1008 }
        #expect(refused.count == 9)
        #expect(refused.first?["error"]?["data"]?["reason"] == "hello with a token first")
        #expect(refused.contains { $0["error"]?["data"]?["reason"] == "read-only token" })
        #expect(refused.contains { $0["error"]?["data"]?["path"] == "closed" })
        #expect(journals[0].count == 5)
    }

    /// A cluster member of `role` (a leader whose lease is proven, shipping to a `ReplicationSource`), as
    /// `Server.joinCluster` wires it.
    static func member(_ role: ClusterRole) -> (InProcessServer, ReplicationSource) {
        let member = InProcessLeader(term: 4, role: role)
        return (member.server, member.source)
    }

    /// On a cluster member the two spellings agree too: a follower refuses both with the same 1012, a leader applies
    /// both and ships the same records to its followers' stream (`replicate`).
    @Test func plainAndGeneralSetsAgreeOnClusterMembers() throws {
        for role in [ClusterRole.follower, .leader] {
            var transcripts: [[JSONValue]] = []
            for spell in [Self.plain, Self.general] {
                let (server, _) = Self.member(role)
                let (_, follower) = server.connect()
                var transcript: [JSONValue] = []
                if role == .leader {
                    transcript += try server.request(follower, 1, "replicate", #"{"fromSeq":0,"term":4}"#)
                }
                let writer = server.peer()
                for (index, set) in [("a", "1"), ("b.c", #""x""#), ("a", "2"), ("a..b", "1")].enumerated() {
                    writer.send(spell(index + 10, set.0, set.1))
                    transcript.append(try writer.receive())
                }
                server.flush()
                transcript += try follower.takeMessages()
                transcripts.append(transcript)
            }
            #expect(transcripts[0] == transcripts[1])
            let responses = transcripts[0].filter { $0["id"] != nil && $0["id"] != 1 }
            if role == .follower {
                #expect(responses.count == 4)
                #expect(responses.allSatisfy { $0["error"]?["code"] == 1012 })
                #expect(responses.first?["error"]?["data"]?["reason"] == "follower")
            } else {
                // Three applied and shipped (seq and method in the stream), one refused by the handler.
                #expect(responses.filter { $0["result"]?["seq"] != nil }.count == 3)
                let shipped = transcripts[0].filter { $0["method"] == "set" && $0["seq"] != nil }
                #expect(shipped.map { $0["seq"] } == [1, 2, 3])
            }
        }
    }

    @Test func plainSetsAreJournaledWithTheirParams() throws {
        let server = InProcessServer()
        let peer = server.peer()
        let response = try peer.request(1, "set", #"{"path":"k","value":[1,"x"]}"#)
        #expect(response["result"] == .json(#"{"seq":1}"#))
        #expect(server.log.records.count == 1)
        #expect(server.log.records.first?.method == "set")
        #expect(server.log.records.first?.params == .json(#"{"path":"k","value":[1,"x"]}"#))
        #expect(server.context.stats.requests == 1 && server.context.stats.mutations == 1)
    }
}
