// WebSocketHandshake: the server side of the opening handshake (RFC 6455 §4.2.1), fed bytes until the request
// head's blank line, then deciding: accept (with what the server needs to answer) or reject (with the HTTP status).
// Pure: the responses are built in WebSocketHandshake+Responses.swift, the sockets are the server's.
import WireProtocol

/// Reads a client's opening handshake, in pieces as it arrives, and checks it.
///
/// Checks, in order: the head fits `maxHeadBytes` (else 431); the request line is `GET <path> HTTP/1.1` with an
/// origin-form path, and every header line is well-formed (else 400); `Host` is present once; `Upgrade` lists the
/// token `websocket` and `Connection` the token `upgrade` (else 400, which is also what a plain HTTP GET gets);
/// `Sec-WebSocket-Version` is `13` (else 426, with `Sec-WebSocket-Version: 13`); `Sec-WebSocket-Key` is present
/// once and is base64 of exactly 16 bytes (else 400); there is no body. Origins are judged separately
/// (`originAllowed`), because only the server knows its allow-list.
public struct WebSocketHandshake: Sendable {
    /// One response header line.
    public struct Header: Hashable, Sendable {
        /// The header's name, as it is written.
        public var name: String
        /// The header's value (no CR or LF).
        public var value: String

        /// The header `name: value`.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// An acceptable upgrade request: what the server needs to answer it and to decide whether it wants it.
    public struct Request: Hashable, Sendable {
        /// The request target's path, without its query (`/` or, say, `/ws`).
        public var path: String
        /// The text after the target's `?`, if it had one.
        public var query: String?
        /// The `Host` header.
        public var host: String
        /// The `Origin` header, which browsers always send; nil from clients that are not browsers.
        public var origin: String?
        /// The `Sec-WebSocket-Key` header: base64 of 16 bytes, the input of the accept value.
        public var key: String
        /// The subprotocols the client offers (`Sec-WebSocket-Protocol`), in its order of preference.
        public var protocols: [String]
        /// The bytes that followed the head in the same feed: the start of the client's first frames, to be fed
        /// to the frame decoder.
        public var leftover: [UInt8]
    }

    /// What the handshake came to.
    public enum Outcome: Hashable, Sendable {
        /// A valid upgrade request; answer with `acceptResponse(key:)` (after checking the origin).
        case accept(Request)
        /// A bad request: answer with `errorResponse(status:reason:extraHeaders:)` and close. `reason` is a short
        /// text for the body and the log.
        case reject(status: Int, reason: String, extraHeaders: [Header])
    }

    /// The largest request head accepted, in bytes, counting its final blank line.
    public let maxHeadBytes: Int
    private var buffer: [UInt8] = []
    /// How far `buffer` has been searched for the end of the head (so a head in many pieces is scanned once).
    private var scanned = 0
    private var isDone = false

    /// A handshake refusing request heads over `maxHeadBytes` (431).
    public init(maxHeadBytes: Int = 8192) {
        precondition(maxHeadBytes > 0, "maxHeadBytes must be positive")
        self.maxHeadBytes = maxHeadBytes
    }

    /// Adds `bytes`; returns the outcome once the head is complete (or known to be too large), nil while more is
    /// needed. Feeding again after an outcome is a programmer error.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome? {
        precondition(!self.isDone, "the handshake already has its outcome")
        self.buffer.append(contentsOf: bytes)
        guard let end = self.endOfHead() else {
            if self.buffer.count >= self.maxHeadBytes { return self.finish(Self.headTooLarge) }
            return nil
        }
        guard end.next <= self.maxHeadBytes else { return self.finish(Self.headTooLarge) }
        var outcome = Self.check(self.buffer[..<end.head])
        if case .accept(var request) = outcome {
            request.leftover = Array(self.buffer[end.next...])
            outcome = .accept(request)
        }
        return self.finish(outcome)
    }

    /// Adds `bytes`; see `feed(_:)` for the contract.
    public mutating func feed(_ bytes: [UInt8]) -> Outcome? {
        bytes.withUnsafeBytes { self.feed($0) }
    }

    private static let headTooLarge = Outcome.reject(
        status: 431, reason: "request head too large", extraHeaders: [])

    private mutating func finish(_ outcome: Outcome) -> Outcome {
        self.isDone = true
        self.buffer = []
        return outcome
    }

    /// The end of the head: the index of the `\n` that ends its last line, and where the bytes after the blank
    /// line begin. Accepts `\r\n\r\n` and, from lenient clients, `\n\n`.
    private mutating func endOfHead() -> (head: Int, next: Int)? {
        var index = max(0, self.scanned - 2)
        let count = self.buffer.count
        while index < count {
            if self.buffer[index] == UInt8(ascii: "\n") {
                if index + 1 < count && self.buffer[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                if index + 2 < count && self.buffer[index + 1] == UInt8(ascii: "\r")
                    && self.buffer[index + 2] == UInt8(ascii: "\n")
                {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        self.scanned = count
        return nil
    }

    // MARK: - Checks

    private static func badRequest(_ reason: String) -> Outcome {
        .reject(status: 400, reason: reason, extraHeaders: [])
    }

    /// Checks a complete head (without its final blank line).
    private static func check(_ head: ArraySlice<UInt8>) -> Outcome {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        // Tolerate blank lines before the request line (RFC 9112 §2.2).
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard let requestLine = lines.first else { return Self.badRequest("empty request") }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.isVisible) }) else {
            return Self.badRequest("malformed request line")
        }
        guard parts[0].elementsEqual("GET".utf8) else { return Self.badRequest("method is not GET") }
        guard parts[1].first == UInt8(ascii: "/") else { return Self.badRequest("request target is not a path") }
        guard parts[2].elementsEqual("HTTP/1.1".utf8) else { return Self.badRequest("not HTTP/1.1") }

        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let header = Self.parseHeader(line) else { return Self.badRequest("malformed header line") }
            headers.append(header)
        }
        func values(_ name: String) -> [String] { headers.filter { $0.name == name }.map(\.value) }
        func tokens(_ name: String) -> [String] {
            values(name).flatMap { $0.split(separator: ",") }.map { Self.trimmed($0.utf8).lowercased() }
        }

        let hosts = values("host")
        guard hosts.count == 1, !hosts[0].isEmpty else { return Self.badRequest("missing or repeated Host") }
        guard tokens("upgrade").contains("websocket") else { return Self.badRequest("not a WebSocket upgrade") }
        guard tokens("connection").contains("upgrade") else { return Self.badRequest("Connection lacks upgrade") }
        guard values("sec-websocket-version") == ["13"] else {
            return .reject(
                status: 426, reason: "unsupported WebSocket version",
                extraHeaders: [Header(name: "Sec-WebSocket-Version", value: "13")])
        }
        let keys = values("sec-websocket-key")
        guard keys.count == 1, Base64.decode(keys[0])?.count == 16 else {
            return Self.badRequest("missing or invalid Sec-WebSocket-Key")
        }
        let origins = values("origin")
        guard origins.count <= 1 else { return Self.badRequest("repeated Origin") }
        guard values("content-length").allSatisfy({ $0 == "0" }), values("transfer-encoding").isEmpty else {
            return Self.badRequest("request bodies not accepted")
        }
        let protocols = values("sec-websocket-protocol").flatMap { $0.split(separator: ",") }
            .map { Self.trimmed($0.utf8) }.filter { !$0.isEmpty }

        let target = String(decoding: parts[1], as: UTF8.self)
        let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return .accept(
            Request(
                path: String(pieces[0]), query: pieces.count > 1 ? String(pieces[1]) : nil, host: hosts[0],
                origin: origins.first, key: keys[0], protocols: protocols, leftover: []))
    }

    /// `name: value` with the name lowercased and the value trimmed, or nil when the line is not a header: the
    /// name must be a token (no space before the colon, RFC 9112 §5.1) and the value free of control characters;
    /// folded continuation lines (obsolete) are refused.
    private static func parseHeader(_ line: ArraySlice<UInt8>) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon != line.startIndex else { return nil }
        let name = line[..<colon]
        let value = line[(colon + 1)...]
        guard name.allSatisfy(Self.isTokenCharacter) else { return nil }
        guard value.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) else { return nil }
        return (String(decoding: name, as: UTF8.self).lowercased(), Self.trimmed(value))
    }

    /// The text of `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: some Collection<UInt8>) -> String {
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == 0x09 }
        let start = bytes.drop(while: isBlank)
        let end = start.reversed().drop(while: isBlank).count
        return String(decoding: start.prefix(end), as: UTF8.self)
    }

    /// A printable character other than space (request-line parts).
    private static func isVisible(_ byte: UInt8) -> Bool { byte > 0x20 && byte != 0x7F }

    /// A `tchar` of RFC 9110 §5.6.2.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
