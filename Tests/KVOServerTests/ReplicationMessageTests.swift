// The replication link's codec (Cluster/ReplicationMessage.swift): every line either side sends, encoded and decoded
// back to itself; the lines of earlier versions (no recordTerm, no registration, no lastTerm) read as they did; and
// what does not decode.
@testable import KVOServer
import Testing
import WireProtocol

struct ReplicationMessageTests {
    /// One of each line, with the optional parts present and absent.
    static let leaderLines: [ReplicationMessage] = [
        .record(seq: 7, term: 9, recordTerm: 4, method: "set", params: .json(#"{"path":"a","value":[1,"x"]}"#), registration: nil),
        .record(seq: 7, term: 9, recordTerm: 9, method: "transaction", params: nil, registration: nil),
        .record(
            seq: 7, term: 9, recordTerm: 9, method: "onDisconnect",
            params: .json(#"{"connection":"b/1","ops":[]}"#), registration: 12),
        .heartbeat(term: 9, seq: 0),
        .heartbeat(term: 1 << 40, seq: 1 << 50),
        .registrations(term: 9, seq: 3, registrations: .json(#"[{"connection":"b/1","ops":[{"method":"set"}]}]"#), number: 5),
        .registrations(term: 9, seq: 3, registrations: .json("[]"), number: nil),
        .recording(term: 9, seq: 3, path: "rooms.\"lobby\".members"),
        .snapshotChunk(term: 9, seq: 40, offset: 786_432, total: 4_000_000, base64: "AAECAwQ="),
        .response(id: "replicate", result: .json(#"{"term":9,"seq":40,"fromSeq":3,"snapshot":false,"terms":[[9,1]]}"#), error: nil),
        .response(id: "hello", result: nil, error: .json(#"{"code":-32001,"message":"bad token"}"#)),
    ]

    static let followerLines: [ReplicationMessage] = [
        .hello(token: "s3cret \"quoted\""),
        .replicate(fromSeq: 0, term: 0, lastTerm: 0),
        .replicate(fromSeq: 123, term: 9, lastTerm: nil),
        .ack(seq: 40, registration: nil, member: nil),
        .ack(seq: 40, registration: 3, member: "10.0.0.2:7070"),
        .recordRequest(path: "a.b"),
    ]

    private static func encoded(_ message: ReplicationMessage) throws -> JSONObject {
        var line: [UInt8] = []
        message.encode(to: &line)
        #expect(line.last == UInt8(ascii: "\n") && line.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil)
        guard case .object(let object) = try JSONParser.parse(Array(line.dropLast())) else {
            throw ReplicationError(description: "not an object")
        }
        return object
    }

    @Test(arguments: leaderLines) func aLeaderLineReadsBackAsItself(_ message: ReplicationMessage) throws {
        #expect(try ReplicationMessage(fromLeader: try Self.encoded(message)) == message)
    }

    @Test(arguments: followerLines) func aFollowerLineReadsBackAsItself(_ message: ReplicationMessage) throws {
        let object = try Self.encoded(message)
        guard case .string(let method)? = object["method"] else {
            Issue.record("no method in \(object)")
            return
        }
        #expect(object["jsonrpc"] == "2.0")
        // Requests have ids (their responses come back with them), notifications none.
        switch message {
        case .hello, .replicate: #expect(object["id"] == .string(method))
        default: #expect(object["id"] == nil)
        }
        #expect(try ReplicationMessage(fromFollower: method, params: object["params"]) == message)
    }

    @Test func linesOfEarlierVersionsReadAsTheyDid() throws {
        // A record without recordTerm (or one above the line's term) was written in the leader's term.
        #expect(
            try ReplicationMessage(fromLeader: ["seq": 5, "term": 3, "method": "set", "params": ["path": "a"]])
                == .record(seq: 5, term: 3, recordTerm: 3, method: "set", params: ["path": "a"], registration: nil))
        #expect(
            try ReplicationMessage(fromLeader: ["seq": 5, "term": 3, "recordTerm": 4, "method": "set"])
                == .record(seq: 5, term: 3, recordTerm: 3, method: "set", params: nil, registration: nil))
        // A line with only term and seq, or unknown extras, is a heartbeat.
        #expect(try ReplicationMessage(fromLeader: ["term": 3, "seq": 5, "future": true]) == .heartbeat(term: 3, seq: 5))
        // An ack without member or registration, with a malformed registration.
        #expect(
            try ReplicationMessage(fromFollower: "ack", params: ["seq": 2, "registration": -1])
                == .ack(seq: 2, registration: nil, member: nil))
        // replicate by position, as Params allows.
        #expect(
            try ReplicationMessage(fromFollower: "replicate", params: [4, 2])
                == .replicate(fromSeq: 4, term: 2, lastTerm: nil))
        #expect(try ReplicationMessage(fromFollower: "subscribe", params: nil) == nil)
    }

    @Test func whatDoesNotDecodeIsRefused() {
        #expect(throws: ReplicationError.self) { try ReplicationMessage(fromLeader: ["seq": 5, "method": "set"]) }
        #expect(throws: ReplicationError.self) { try ReplicationMessage(fromLeader: ["term": -1, "seq": 5]) }
        #expect(throws: ReplicationError.self) {
            try ReplicationMessage(fromLeader: ["term": 1, "seq": 5, "snapshotChunk": "AA==", "offset": 0, "total": 0])
        }
        #expect(throws: RPCError.self) { try ReplicationMessage(fromFollower: "ack", params: ["seq": "7"]) }
        #expect(throws: RPCError.self) { try ReplicationMessage(fromFollower: "record", params: ["path": 1]) }
        #expect(throws: RPCError.self) {
            try ReplicationMessage(fromFollower: "replicate", params: ["fromSeq": 1, "colour": "red"])
        }
        #expect(throws: RPCError.self) { try ReplicationMessage(fromFollower: "replicate", params: ["fromSeq": 1, "term": -2]) }
    }
}
