// The request a server sees most, a `set` spelled as every client spells it, read straight off the line: no envelope
// members, no params object, nothing to free afterwards. Anything else (other spellings, whitespace, escapes in the
// path, errors of any kind) is left to RPCMessage.decode, which reads it the general way.

/// `{"jsonrpc":"2.0","id":ID,"method":"set","params":{"path":"PATH","value":VALUE}}`, exactly so spelled: an integer
/// `id`, a path of plain ASCII without escapes, any JSON value. It means exactly the request `decode` would return
/// for the same line.
public struct RPCPlainSet {
    /// The request's id.
    public var id: Int64
    /// The path's bytes, inside the decoded line: valid only while the line is.
    public var path: UnsafeRawBufferPointer
    /// The value.
    public var value: JSONValue
    /// The params' JSON text, `{"path":…,"value":…}` as the client wrote it, inside the decoded line: valid only while
    /// the line is. What the journal keeps of the set: it reads back as `params` (the same reader, the same value).
    public var paramsText: UnsafeRawBufferPointer

    /// The same set as a general request (for the general dispatcher, the journal and error messages).
    public var request: RPCRequest {
        RPCRequest(id: .int(self.id), method: "set", params: .object(self.params))
    }

    /// `{"path":PATH,"value":VALUE}`. Built from two arrays of known size and keys known distinct: with a data
    /// directory it is built for every set (the journal's record), and growing the arrays one member at a time after a
    /// scan for each key cost about 2,000 instructions a set (callgrind).
    public var params: JSONObject {
        JSONObject(
            uniqueKeys: Self.paramKeys, values: [.string(String(decoding: self.path, as: UTF8.self)), self.value])
    }

    /// The keys of `params`, in order (one array, shared).
    private static let paramKeys = ["path", "value"]
}

extension RPCMessage {
    /// The plain set `line` (without its terminator) is, or nil when it is anything else; then `decode` reads it
    /// (and reports any error). Never reads past the line; O(line length).
    public static func decodePlainSet(_ line: UnsafeRawBufferPointer, maxDepth: Int = 64) -> RPCPlainSet? {
        // The value sits inside two objects; a lower limit is for `decode` to report.
        guard maxDepth >= 2 else { return nil }
        var parser = JSONParser(line, maxDepth: maxDepth)
        return parser.parsePlainSet()
    }
}

extension JSONParser {
    /// See `RPCMessage.decodePlainSet`.
    @inline(__always)
    fileprivate mutating func parsePlainSet() -> RPCPlainSet? {
        guard self.skip(#"{"jsonrpc":"2.0","id":"#), let id = self.plainInteger(),
            self.skip(#","method":"set","params":{"path":""#), let base = self.bytes.baseAddress
        else { return nil }
        let pathStart = self.index
        let pathEnd = self.skipPlainASCII(from: pathStart)
        guard pathEnd < self.bytes.count, base[pathEnd] == UInt8(ascii: "\"") else { return nil }
        self.index = pathEnd
        guard self.skip(#"","value":"#) else { return nil }
        // The value is a member of `params`, two objects deep, as `decode` parses it.
        guard let value = try? self.parseValue(depth: 2), self.skip("}}") else { return nil }
        let paramsStart = pathStart &- #"{"path":""#.utf8.count
        let paramsEnd = self.index &- 1  // past the params' closing brace
        guard (try? self.expectEndOfInput()) != nil else { return nil }
        return RPCPlainSet(
            id: id, path: UnsafeRawBufferPointer(start: base + pathStart, count: pathEnd &- pathStart), value: value,
            paramsText: UnsafeRawBufferPointer(start: base + paramsStart, count: paramsEnd &- paramsStart))
    }

    /// Skips `literal` when the input continues with exactly it; compared eight bytes at a time.
    @inline(__always)
    private mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard self.index &+ count <= self.bytes.count, let base = self.bytes.baseAddress else { return false }
        var offset = 0
        while offset < count {
            let position = self.index &+ offset
            let chunk = min(8, count &- offset)
            guard Self.word(base + position, count: chunk, available: self.bytes.count &- position)
                == Self.pack(literal, from: offset)
            else { return false }
            offset &+= 8
        }
        self.index &+= count
        return true
    }

    /// An integer of 1 to 18 digits (no leading zero, optionally negative), which cannot overflow, followed by
    /// something that is no part of a number; `index` ends just past it. Nil for anything else.
    @inline(__always)
    private mutating func plainInteger() -> Int64? {
        guard let integer = self.scanShortInteger(), integer.end < self.bytes.count,
            self.bytes[integer.end] != UInt8(ascii: "."), self.bytes[integer.end] | 0x20 != UInt8(ascii: "e")
        else { return nil }
        self.index = integer.end
        return integer.value
    }
}
