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
