// The kvod side of the wire as the benchmark needs it (Protocol/README.md): requests written straight into a byte
// buffer, and a fast scan of change notifications and responses that finds the few members the benchmark reads
// without building a JSON tree. Anything the scan does not recognise is parsed in full with JSONParser.

import WireProtocol

/// Encoding of the requests the benchmark sends to kvod, one line each.
enum KVODRequest {
    /// Appends `{"jsonrpc":"2.0","id":ID,"method":"set","params":{"path":"PATH","value":VALUE}}\n`, where
    /// `pathMember` is the pre-encoded `"PATH"`.
    @inline(__always)
    static func appendSet(id: Int64, pathMember: [UInt8], value: Int64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        JSONWriter.appendInt(id, to: &bytes)
        bytes.append(contentsOf: #","method":"set","params":{"path":"#.utf8)
        bytes.append(contentsOf: pathMember)
        bytes.append(contentsOf: #","value":"#.utf8)
        JSONWriter.appendInt(value, to: &bytes)
        bytes.append(contentsOf: "}}\n".utf8)
    }

    /// Appends any request as one line.
    static func append(id: Int64, method: String, params: JSONValue?, to bytes: inout [UInt8]) {
        RPCEncoder.appendRequest(id: .int(id), method: method, params: params, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// The pre-encoded JSON string of `path`, for `appendSet`.
    static func pathMember(_ path: String) -> [UInt8] {
        var bytes: [UInt8] = []
        JSONWriter.appendString(path, to: &bytes)
        return bytes
    }
}

/// What the fast scan found on one line from kvod.
enum KVODLine {
    /// A `change` notification; `newValue` is nil when its `new` member is absent or not an integer.
    case change(newValue: Int64?, seq: Int64)
    /// A response with a `result`.
    case result
    /// A response with an `error`; the text is the whole line.
    case error(String)
    /// Anything else (a `closing` notification, a line the scan cannot read); the text is the whole line.
    case other(String)

    /// Scans `line` for the members the benchmark needs. kvod writes compact JSON with `method` before `params`
    /// and `seq` last in a notification (Sources/KVOServer/Subscription.swift); the scan relies only on member
    /// names, and a line that does not look as expected becomes `.other`.
    static func scan(_ line: UnsafeRawBufferPointer) -> KVODLine {
        guard let base = line.baseAddress else { return .other("") }
        let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: line.count)
        if let methodEnd = Self.find(#""method":"change""#, in: bytes, from: 0) {
            guard let seqStart = Self.findLast(#""seq":"#, in: bytes), let seq = Self.integer(in: bytes, at: seqStart)
            else { return .other(Self.text(bytes)) }
            var newValue: Int64?
            if let newStart = Self.find(#""new":"#, in: bytes, from: methodEnd) {
                newValue = Self.integer(in: bytes, at: newStart)
            }
            return .change(newValue: newValue, seq: seq)
        }
        if Self.find(#""result":"#, in: bytes, from: 0) != nil { return .result }
        if Self.find(#""error":"#, in: bytes, from: 0) != nil { return .error(Self.text(bytes)) }
        return .other(Self.text(bytes))
    }

    /// The line as text, for messages.
    static func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// The index just past the first occurrence of `needle` at or after `start`, or nil.
    @inline(__always)
    static func find(_ needle: StaticString, in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard bytes.count >= pattern.count, start <= bytes.count - pattern.count else { return nil }
        let first = pattern[0]
        var position = start
        while position <= bytes.count - pattern.count {
            if bytes[position] == first {
                var offset = 1
                while offset < pattern.count && bytes[position + offset] == pattern[offset] { offset += 1 }
                if offset == pattern.count { return position + pattern.count }
            }
            position += 1
        }
        return nil
    }

    /// The index just past the last occurrence of `needle`, or nil.
    @inline(__always)
    static func findLast(_ needle: StaticString, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard bytes.count >= pattern.count else { return nil }
        var position = bytes.count - pattern.count
        while position >= 0 {
            var offset = 0
            while offset < pattern.count && bytes[position + offset] == pattern[offset] { offset += 1 }
            if offset == pattern.count { return position + pattern.count }
            position -= 1
        }
        return nil
    }

    /// The decimal integer (optionally negative) starting at `start`, or nil when there is none or it is followed
    /// by a fraction or exponent.
    @inline(__always)
    static func integer(in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Int64? {
        var position = start
        var isNegative = false
        if position < bytes.count && bytes[position] == UInt8(ascii: "-") {
            isNegative = true
            position += 1
        }
        var value: Int64 = 0
        let digitsStart = position
        while position < bytes.count {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value &* 10 &+ Int64(digit)
            position += 1
        }
        guard position > digitsStart, position - digitsStart <= 18 else { return nil }
        if position < bytes.count {
            let next = bytes[position]
            if next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") { return nil }
        }
        return isNegative ? -value : value
    }
}
