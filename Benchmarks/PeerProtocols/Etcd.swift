// etcd's JSON gateway (grpc-gateway in etcd 3.4, on the client port) as kvod-bench speaks it: HTTP/1.1 requests
// out (`POST /v3/kv/put`, pipelined on a keep-alive connection; `POST /v3/watch`, whose response is a chunked stream
// of JSON messages, one per line), responses in through an incremental HTTP/1.1 reader, and each watch message
// parsed into its events. Keys and values travel base64-encoded; 64-bit numbers are JSON strings. Pure.

import WireProtocol

/// Encoding of the gateway's requests.
public enum EtcdGateway {
    /// `POST /v3/kv/put` of `key` = `value`.
    public static func appendPut(key: [UInt8], value: [UInt8], host: String, to bytes: inout [UInt8]) {
        var body = Array(#"{"key":""#.utf8)
        PeerBase64.append(key, to: &body)
        body.append(contentsOf: #"","value":""#.utf8)
        PeerBase64.append(value, to: &body)
        body.append(contentsOf: #""}"#.utf8)
        Self.appendPost(path: "/v3/kv/put", body: body, host: host, to: &bytes)
    }

    /// `POST /v3/watch` creating one watch of `key` (from the next revision on).
    public static func appendWatch(key: [UInt8], host: String, to bytes: inout [UInt8]) {
        var body = Array(#"{"create_request":{"key":""#.utf8)
        PeerBase64.append(key, to: &body)
        body.append(contentsOf: #""}}"#.utf8)
        Self.appendPost(path: "/v3/watch", body: body, host: host, to: &bytes)
    }

    /// A POST with a JSON body and a Content-Length, on a keep-alive connection.
    public static func appendPost(path: String, body: [UInt8], host: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: "POST \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\n".utf8)
        bytes.append(contentsOf: "Content-Length: ".utf8)
        PeerDecimal.append(UInt64(body.count), to: &bytes)
        bytes.append(contentsOf: "\r\n\r\n".utf8)
        bytes.append(contentsOf: body)
    }
}

/// An incremental reader of HTTP/1.1 responses on one connection (several in a row when pipelined): each
/// response's status, its body bytes as they arrive (a Content-Length body or the data of each chunk), and its end.
public struct HTTPResponseReader {
    /// What a response brings, in order: `head`, any number of `body`, then `end`.
    public enum Event {
        case head(status: Int)
        case body(UnsafeBufferPointer<UInt8>)
        case end
    }

    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case trailers
    }

    /// The longest response head accepted, and the largest chunk.
    public static let maxHeadBytes = 64 * 1024
    public static let maxChunkBytes = 16 << 20

    private var state = State.head
    private var buffer: [UInt8] = []

    public init() {}

    /// Reads `chunk`, calling `handle` for each event it completes; returns why the stream is not HTTP, or nil.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ handle: (Event) -> Void) -> String? {
        self.buffer.append(contentsOf: chunk)
        var failure: String?
        var consumed = 0
        self.buffer.withUnsafeBufferPointer { bytes in
            failure = self.process(bytes, &consumed, handle)
        }
        self.buffer.removeFirst(consumed)
        return failure
    }

    private mutating func process(
        _ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int, _ handle: (Event) -> Void
    ) -> String? {
        while position < bytes.count {
            switch self.state {
            case .head:
                guard let end = Self.find(bytes, from: position, "\r\n\r\n") else {
                    return bytes.count - position > Self.maxHeadBytes ? "a response head over 64 KiB" : nil
                }
                let head = String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self)
                position = end + 4
                let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
                let statusParts = lines.first?.split(separator: " ", maxSplits: 2) ?? []
                guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1])
                else { return "not an HTTP/1.x status line: \(lines.first.map(String.init)?.prefix(80) ?? "")" }
                var length: Int?
                var chunked = false
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].trimmingSpaces
                    if name == "content-length" {
                        guard let number = Int(value), number >= 0 else { return "a bad Content-Length \(value)" }
                        length = number
                    } else if name == "transfer-encoding" {
                        chunked = value.lowercased().hasSuffix("chunked")
                    }
                }
                handle(.head(status: status))
                if chunked {
                    self.state = .chunkSize
                } else if let length, length > 0 {
                    self.state = .fixed(remaining: length)
                } else if length == 0 || status == 204 || status == 304 || status / 100 == 1 {
                    handle(.end)
                } else {
                    return "a response with neither a length nor chunks (status \(status))"
                }
            case .fixed(let remaining):
                let take = min(remaining, bytes.count - position)
                handle(.body(UnsafeBufferPointer(rebasing: bytes[position..<(position + take)])))
                position += take
                if take == remaining {
                    self.state = .head
                    handle(.end)
                } else {
                    self.state = .fixed(remaining: remaining - take)
                }
            case .chunkSize:
                guard let end = Self.find(bytes, from: position, "\r\n") else {
                    return bytes.count - position > 1024 ? "a chunk-size line over 1 KiB" : nil
                }
                var size = 0
                var digits = 0
                var index = position
                while index < end, let digit = Self.hexDigit(bytes[index]) {
                    size = size * 16 + digit
                    digits += 1
                    index += 1
                    if size > Self.maxChunkBytes { return "a chunk over \(Self.maxChunkBytes) bytes" }
                }
                guard digits > 0, index == end || bytes[index] == UInt8(ascii: ";") else { return "a bad chunk size" }
                position = end + 2
                self.state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let take = min(remaining, bytes.count - position)
                handle(.body(UnsafeBufferPointer(rebasing: bytes[position..<(position + take)])))
                position += take
                self.state = take == remaining ? .chunkEnd : .chunkData(remaining: remaining - take)
            case .chunkEnd:
                guard bytes.count - position >= 2 else { return nil }
                guard bytes[position] == 0x0D, bytes[position + 1] == 0x0A else { return "chunk data not ended by CRLF" }
                position += 2
                self.state = .chunkSize
            case .trailers:
                guard let end = Self.find(bytes, from: position, "\r\n") else { return nil }
                let isLast = end == position
                position = end + 2
                if isLast {
                    self.state = .head
                    handle(.end)
                }
            }
        }
        return nil
    }

    private static func hexDigit(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// Where `pattern` starts at or after `start`, or nil.
    private static func find(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, _ pattern: StaticString) -> Int? {
        let length = pattern.utf8CodeUnitCount
        let letters = pattern.utf8Start
        guard bytes.count >= length else { return nil }
        var index = start
        while index + length <= bytes.count {
            if bytes[index] == letters[0] {
                var offset = 1
                while offset < length && bytes[index + offset] == letters[offset] { offset += 1 }
                if offset == length { return index }
            }
            index += 1
        }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}

/// One message of a `/v3/watch` stream (a line of its body).
public enum EtcdWatchMessage: Equatable {
    /// One event: a put (with the key's new value) or a delete, and the revision that made it.
    public struct Event: Equatable {
        public var isDelete: Bool
        public var key: [UInt8]
        public var modRevision: Int64
        public var value: [UInt8]

        public init(isDelete: Bool, key: [UInt8], modRevision: Int64, value: [UInt8]) {
            self.isDelete = isDelete
            self.key = key
            self.modRevision = modRevision
            self.value = value
        }
    }

    /// The watch exists; the header's revision is the store's at that moment.
    case created(watchID: Int64, revision: Int64)
    /// Events, in revision order.
    case events(watchID: Int64, [Event])
    /// A progress notification (no events).
    case progress(revision: Int64)
    /// The server ended the watch (compaction, say).
    case canceled(reason: String)
    /// The gateway's error object (`{"error":{"grpc_code":...,"message":...}}`).
    case error(String)

    /// Parses one message; throws on anything that is not a watch response.
    public static func parse(_ line: UnsafeRawBufferPointer) throws(EtcdWatchError) -> EtcdWatchMessage {
        let json: JSONValue
        do {
            json = try JSONParser.parse(line)
        } catch {
            throw EtcdWatchError("not JSON: \(error)")
        }
        if let error = json["error"] {
            return .error(error["message"]?.stringValue ?? JSONWriter.encodeString(error))
        }
        guard let result = json["result"], result.objectValue != nil else {
            throw EtcdWatchError("neither a result nor an error")
        }
        let watchID = try Self.int64(result["watch_id"], "watch_id") ?? 0
        let revision = try Self.int64(result["header"]?["revision"], "header.revision") ?? 0
        if result["canceled"]?.boolValue == true {
            return .canceled(reason: result["cancel_reason"]?.stringValue ?? "")
        }
        if result["created"]?.boolValue == true { return .created(watchID: watchID, revision: revision) }
        guard let events = result["events"] else { return .progress(revision: revision) }
        guard let list = events.arrayValue else { throw EtcdWatchError("events is not an array") }
        var parsed: [Event] = []
        parsed.reserveCapacity(list.count)
        for event in list {
            guard let kv = event["kv"] else { throw EtcdWatchError("an event without kv") }
            let isDelete: Bool
            switch event["type"]?.stringValue {
            case nil, "PUT": isDelete = false
            case "DELETE": isDelete = true
            case let other?: throw EtcdWatchError("an event of type \(other)")
            }
            guard let modRevision = try Self.int64(kv["mod_revision"], "mod_revision") else {
                throw EtcdWatchError("an event without mod_revision")
            }
            guard let key = PeerBase64.decode(kv["key"]?.stringValue ?? "") else {
                throw EtcdWatchError("a key that is not base64")
            }
            guard let value = PeerBase64.decode(kv["value"]?.stringValue ?? "") else {
                throw EtcdWatchError("a value that is not base64")
            }
            parsed.append(Event(isDelete: isDelete, key: key, modRevision: modRevision, value: value))
        }
        return .events(watchID: watchID, parsed)
    }

    /// Parses a message given as bytes.
    public static func parse(_ bytes: [UInt8]) throws(EtcdWatchError) -> EtcdWatchMessage {
        let result = bytes.withUnsafeBytes { (line) -> Result<EtcdWatchMessage, EtcdWatchError> in
            do throws(EtcdWatchError) { return .success(try Self.parse(line)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Parses a message given as text (tests).
    public static func parse(_ text: String) throws(EtcdWatchError) -> EtcdWatchMessage {
        try Self.parse(Array(text.utf8))
    }

    /// A 64-bit integer the way the gateway writes it (a decimal string), or a JSON number; nil when absent.
    private static func int64(_ value: JSONValue?, _ name: String) throws(EtcdWatchError) -> Int64? {
        switch value {
        case nil: return nil
        case .int(let number)?: return number
        case .string(let text)?:
            guard let number = Int64(text) else { throw EtcdWatchError("\(name) \"\(text)\" is not an integer") }
            return number
        default: throw EtcdWatchError("\(name) is not an integer")
        }
    }
}

/// Why a watch message could not be read.
public struct EtcdWatchError: Error, Equatable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
