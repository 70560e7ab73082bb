// Every line of the replication link (Protocol/methods.md#replicate), encoded and decoded here and nowhere else. The
// leader sends records `{seq, term, recordTerm, method, params, registration}`, heartbeats `{term, seq}`, the
// catch-up's registrations `{term, seq, registrations, registration}` and recorded paths `{term, seq, record}`, and
// snapshot chunks `{snapshotChunk, offset, total, seq, term}`; the follower sends `hello` (with the cluster token)
// and `replicate {fromSeq, term, lastTerm}` requests, then `ack {seq, registration, member}` and `record {path}`
// notifications. The leader's per-mutation lines are appended straight to a buffer (the hot path: one encoding per
// mutation, however many followers); `ReplicationMessage` values are the same lines as data, for decoding and tests.
import WireProtocol

/// One line of the replication link.
enum ReplicationMessage: Equatable {
    // MARK: The leader's lines
    /// A journaled request at `seq`, written in `recordTerm`, sent by the leader of `term`; an `onDisconnect` or
    /// `disconnected` change carries its number (`registration`) and the current seq.
    case record(seq: UInt64, term: UInt64, recordTerm: UInt64, method: String, params: JSONValue?, registration: UInt64?)
    /// The leader's term and seq, every 250 ms.
    case heartbeat(term: UInt64, seq: UInt64)
    /// At a catch-up's start: the leader's whole `onDisconnect` set after its change number `number`.
    case registrations(term: UInt64, seq: UInt64, registrations: JSONValue, number: UInt64?)
    /// Start recording `path` after applying `seq` (RecordedPaths.swift).
    case recording(term: UInt64, seq: UInt64, path: String)
    /// Part of the leader's snapshot at `seq`: base64 text of the snapshot bytes from `offset` on, of `total`.
    case snapshotChunk(term: UInt64, seq: UInt64, offset: Int64, total: Int64, base64: String)
    /// The answer to the follower's `hello` or `replicate` (`id` names which).
    case response(id: String, result: JSONValue?, error: JSONValue?)

    // MARK: The follower's lines
    /// `hello` with the cluster token (access control on).
    case hello(token: String)
    /// `replicate`: the records after `fromSeq`, whose term there is `lastTerm` (nil from an earlier version).
    case replicate(fromSeq: UInt64, term: UInt64, lastTerm: UInt64?)
    /// Every record up to `seq` is in the follower's journal, and every registration change up to `registration`;
    /// `member` (the first ack of a link) is its advertised address.
    case ack(seq: UInt64, registration: UInt64?, member: String?)
    /// The follower started recording `path`.
    case recordRequest(path: String)

    // MARK: - Encoding

    /// Appends the line and its newline.
    func encode(to line: inout [UInt8]) {
        switch self {
        case .record(let seq, let term, let recordTerm, let method, let params, let registration):
            Self.appendRecord(
                seq: seq, term: term, recordTerm: recordTerm, method: method, params: params,
                registration: registration, to: &line)
        case .heartbeat(let term, let seq):
            Self.appendHeartbeat(term: term, seq: seq, to: &line)
        case .registrations(let term, let seq, let registrations, let number):
            Self.appendOpening(term: term, seq: seq, to: &line)
            line.append(contentsOf: #","registrations":"#.utf8)
            JSONWriter.append(registrations, to: &line)
            if let number {
                line.append(contentsOf: #","registration":"#.utf8)
                JSONWriter.appendInt(Int64(number), to: &line)
            }
            line.append(contentsOf: "}\n".utf8)
        case .recording(let term, let seq, let path):
            Self.appendRecording(path, term: term, seq: seq, to: &line)
        case .snapshotChunk(let term, let seq, let offset, let total, let base64):
            let (prefix, suffix) = Self.snapshotChunkAffixes(term: term, seq: seq, offset: offset, total: total)
            line += prefix
            line.append(contentsOf: base64.utf8)
            line += suffix
        case .response(let id, let result, let error):
            var object: JSONObject = ["jsonrpc": "2.0", "id": .string(id)]
            if let result { object["result"] = result }
            if let error { object["error"] = error }
            Self.appendObject(object, to: &line)
        case .hello(let token):
            Self.appendObject(
                [
                    "jsonrpc": "2.0", "id": "hello", "method": "hello",
                    "params": ["client": "kvod-follower", "token": .string(token)],
                ], to: &line)
        case .replicate(let fromSeq, let term, let lastTerm):
            var params: JSONObject = ["fromSeq": .int(Int64(fromSeq)), "term": .int(Int64(term))]
            if let lastTerm { params["lastTerm"] = .int(Int64(lastTerm)) }
            Self.appendObject(
                ["jsonrpc": "2.0", "id": "replicate", "method": "replicate", "params": .object(params)], to: &line)
        case .ack(let seq, let registration, let member):
            line.append(contentsOf: #"{"jsonrpc":"2.0","method":"ack","params":{"seq":"#.utf8)
            JSONWriter.appendInt(Int64(seq), to: &line)
            if let member {
                line.append(contentsOf: #","member":"#.utf8)
                JSONWriter.appendString(member, to: &line)
            }
            if let registration {
                line.append(contentsOf: #","registration":"#.utf8)
                JSONWriter.appendInt(Int64(registration), to: &line)
            }
            line.append(contentsOf: "}}\n".utf8)
        case .recordRequest(let path):
            line.append(contentsOf: #"{"jsonrpc":"2.0","method":"record","params":{"path":"#.utf8)
            JSONWriter.appendString(path, to: &line)
            line.append(contentsOf: "}}\n".utf8)
        }
    }

    /// `{"seq":N,"term":T,"recordTerm":R,"method":M,"params":P}` (and `"registration":R` for a registration change)
    /// and a newline: what the leader sends per mutation.
    static func appendRecord(
        seq: UInt64, term: UInt64, recordTerm: UInt64, method: String, params: JSONValue?, registration: UInt64? = nil,
        to line: inout [UInt8]
    ) {
        line.append(contentsOf: #"{"seq":"#.utf8)
        JSONWriter.appendInt(Int64(seq), to: &line)
        line.append(contentsOf: #","term":"#.utf8)
        JSONWriter.appendInt(Int64(term), to: &line)
        line.append(contentsOf: #","recordTerm":"#.utf8)
        JSONWriter.appendInt(Int64(recordTerm), to: &line)
        line.append(contentsOf: #","method":"#.utf8)
        JSONWriter.appendString(method, to: &line)
        if let params {
            line.append(contentsOf: #","params":"#.utf8)
            JSONWriter.append(params, to: &line)
        }
        if let registration {
            line.append(contentsOf: #","registration":"#.utf8)
            JSONWriter.appendInt(Int64(registration), to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
    }

    /// `{"term":T,"seq":N}` and a newline.
    static func appendHeartbeat(term: UInt64, seq: UInt64, to line: inout [UInt8]) {
        Self.appendOpening(term: term, seq: seq, to: &line)
        line.append(contentsOf: "}\n".utf8)
    }

    /// `{"term":T,"seq":N,"record":PATH}` and a newline.
    static func appendRecording(_ path: String, term: UInt64, seq: UInt64, to line: inout [UInt8]) {
        Self.appendOpening(term: term, seq: seq, to: &line)
        line.append(contentsOf: #","record":"#.utf8)
        JSONWriter.appendString(path, to: &line)
        line.append(contentsOf: "}\n".utf8)
    }

    /// What comes before and after a snapshot chunk's base64 text (read from a file straight into the line).
    static func snapshotChunkAffixes(term: UInt64, seq: UInt64, offset: Int64, total: Int64) -> (
        prefix: [UInt8], suffix: [UInt8]
    ) {
        var suffix: [UInt8] = Array(#"","offset":"#.utf8)
        JSONWriter.appendInt(offset, to: &suffix)
        suffix.append(contentsOf: #","total":"#.utf8)
        JSONWriter.appendInt(total, to: &suffix)
        suffix.append(contentsOf: #","seq":"#.utf8)
        JSONWriter.appendInt(Int64(seq), to: &suffix)
        suffix.append(contentsOf: #","term":"#.utf8)
        JSONWriter.appendInt(Int64(term), to: &suffix)
        suffix.append(contentsOf: "}\n".utf8)
        return (Array(#"{"snapshotChunk":""#.utf8), suffix)
    }

    /// `{"term":T,"seq":N`: how every leader line that is not a record begins.
    private static func appendOpening(term: UInt64, seq: UInt64, to line: inout [UInt8]) {
        line.append(contentsOf: #"{"term":"#.utf8)
        JSONWriter.appendInt(Int64(term), to: &line)
        line.append(contentsOf: #","seq":"#.utf8)
        JSONWriter.appendInt(Int64(seq), to: &line)
    }

    private static func appendObject(_ object: JSONObject, to line: inout [UInt8]) {
        JSONWriter.append(.object(object), to: &line)
        line.append(UInt8(ascii: "\n"))
    }

    // MARK: - Decoding

    /// A line from the leader (a JSON object). Throws for a line that is none of them (the link ends).
    init(fromLeader line: JSONObject) throws(ReplicationError) {
        if case .string(let id)? = line["id"] {
            self = .response(id: id, result: line["result"], error: line["error"])
            return
        }
        guard case .int(let rawTerm)? = line["term"], case .int(let rawSeq)? = line["seq"], rawTerm >= 0, rawSeq >= 0
        else { throw ReplicationError(description: "a line without term and seq") }
        let term = UInt64(rawTerm)
        let seq = UInt64(rawSeq)
        let registration = Self.count(line["registration"])
        if let chunk = line["snapshotChunk"] {
            guard case .string(let base64) = chunk, case .int(let offset)? = line["offset"],
                case .int(let total)? = line["total"], offset >= 0, total > 0
            else { throw ReplicationError(description: "a snapshot chunk without a valid offset and total") }
            self = .snapshotChunk(term: term, seq: seq, offset: offset, total: total, base64: base64)
        } else if case .string(let path)? = line["record"] {
            self = .recording(term: term, seq: seq, path: path)
        } else if let registrations = line["registrations"] {
            self = .registrations(term: term, seq: seq, registrations: registrations, number: registration)
        } else if case .string(let method)? = line["method"] {
            // A record line without a valid `recordTerm` (an earlier version) was written in the leader's term.
            var recordTerm = term
            if case .int(let raw)? = line["recordTerm"], raw >= 0, raw <= rawTerm { recordTerm = UInt64(raw) }
            self = .record(
                seq: seq, term: term, recordTerm: recordTerm, method: method, params: line["params"],
                registration: registration)
        } else {
            self = .heartbeat(term: term, seq: seq)
        }
    }

    /// A follower's request or notification: `replicate`, `hello` (with a token), `ack` or `record` (nil for
    /// another method). Throws -32602 for bad params.
    init?(fromFollower method: String, params: JSONValue?) throws(RPCError) {
        switch method {
        case "replicate":
            let params = Params(params, names: ["fromSeq", "term", "lastTerm"], method: "replicate")
            try params.rejectUnknown()
            guard case .int(let fromSeq)? = params["fromSeq"], fromSeq >= 0 else {
                throw RPCError.badParams("replicate: 'fromSeq' must be an integer of at least 0")
            }
            self = .replicate(
                fromSeq: UInt64(fromSeq), term: try Self.term(params["term"], name: "term") ?? 0,
                lastTerm: try Self.term(params["lastTerm"], name: "lastTerm"))
        case "hello":
            guard case .object(let object)? = params, case .string(let token)? = object["token"] else { return nil }
            self = .hello(token: token)
        case "ack":
            guard case .object(let object)? = params, case .int(let seq)? = object["seq"], seq >= 0 else {
                throw RPCError.badParams("ack: 'seq' must be an integer of at least 0")
            }
            var member: String?
            if case .string(let address)? = object["member"], !address.isEmpty { member = address }
            self = .ack(seq: UInt64(seq), registration: Self.count(object["registration"]), member: member)
        case "record":
            guard case .object(let object)? = params, case .string(let path)? = object["path"], object.count == 1 else {
                throw RPCError.badParams("record: 'path' must be the only param, a string")
            }
            self = .recordRequest(path: path)
        default:
            return nil
        }
    }

    /// A `replicate` term: absent or null is nil; anything but an integer of at least 0 is refused.
    private static func term(_ value: JSONValue?, name: String) throws(RPCError) -> UInt64? {
        switch value {
        case nil, .null?: return nil
        case .int(let term)? where term >= 0: return UInt64(term)
        default: throw RPCError.badParams("replicate: '\(name)' must be an integer of at least 0")
        }
    }

    /// A non-negative integer, else nil (absent or malformed: an earlier version's line).
    private static func count(_ value: JSONValue?) -> UInt64? {
        guard case .int(let number)? = value, number >= 0 else { return nil }
        return UInt64(number)
    }
}
