// Just enough HTTP/1.1 request parsing for the metrics endpoint: request line and headers, in pieces as they arrive,
// bounded in size, bodies refused. Pure: bytes in, requests out; MetricsServer.swift does the sockets.

/// One parsed request head.
public struct HTTPRequestHead: Equatable, Sendable {
    /// `GET`, `HEAD`, ...
    public var method: String
    /// The path without its query string.
    public var path: String
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    /// Header names lowercased, values trimmed; a repeated header keeps its last value.
    public var headers: [String: String]

    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only
    /// with `Connection: keep-alive`).
    public var keepsAlive: Bool {
        let connection = self.headers["connection"]?.lowercased() ?? ""
        if self.version == "HTTP/1.0" { return connection == "keep-alive" }
        return connection != "close"
    }
}

/// Why a request could not be parsed; the server answers with the status and closes.
public enum HTTPRequestError: Error, Equatable, Sendable {
    /// 400: not an HTTP/1.x request head, or it has a body.
    case badRequest(String)
    /// 431: the head is larger than the parser's limit.
    case headTooLarge

    /// The response status line's code and reason.
    public var status: (code: Int, reason: String) {
        switch self {
        case .badRequest: (400, "Bad Request")
        case .headTooLarge: (431, "Request Header Fields Too Large")
        }
    }
}

/// Accumulates bytes and cuts complete request heads (up to the blank line) out of them.
public struct HTTPRequestParser: Sendable {
    /// The largest request head accepted, in bytes.
    public let maxHeadBytes: Int
    private var buffer: [UInt8] = []

    /// A parser refusing heads over `maxHeadBytes`.
    public init(maxHeadBytes: Int = 8192) {
        self.maxHeadBytes = maxHeadBytes
    }

    /// Adds `bytes` and returns every request completed by them, in order. Throws at the first bad or oversized
    /// request (the requests before it are lost too: the connection is closed anyway).
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPRequestError) -> [HTTPRequestHead] {
        self.buffer.append(contentsOf: bytes)
        var heads: [HTTPRequestHead] = []
        while let end = Self.endOfHead(in: self.buffer) {
            guard end.head <= self.maxHeadBytes else { throw .headTooLarge }
            let head = try Self.parse(self.buffer[..<end.head])
            self.buffer.removeSubrange(..<end.next)
            heads.append(head)
        }
        if self.buffer.count > self.maxHeadBytes { throw .headTooLarge }
        return heads
    }

    /// The end of the first head (`\r\n\r\n`, or `\n\n` from lenient clients): where it ends, and where the next
    /// request starts.
    private static func endOfHead(in bytes: [UInt8]) -> (head: Int, next: Int)? {
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                if index + 2 < bytes.count && bytes[index + 1] == UInt8(ascii: "\r")
                    && bytes[index + 2] == UInt8(ascii: "\n")
                {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    private static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPRequestError) -> HTTPRequestHead {
        // Split on bytes: as Characters, "\r\n" is one grapheme and would never equal "\n".
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            Substring(String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self))
        }
        // Tolerate blank lines before the request line (RFC 9112 §2.2).
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard let requestLine = lines.first else { throw .badRequest("empty request") }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[1].hasPrefix("/") || parts[1] == "*",
            parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
        else { throw .badRequest("malformed request line") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .badRequest("malformed header line")
            }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            headers[name] = value
        }
        if let length = headers["content-length"], length != "0" { throw .badRequest("request bodies not accepted") }
        if headers["transfer-encoding"] != nil { throw .badRequest("request bodies not accepted") }
        let target = parts[1]
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? target
        return HTTPRequestHead(
            method: String(parts[0]), path: String(path), version: String(parts[2]), headers: headers)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        let set = Set(characters)
        guard let first = self.firstIndex(where: { !set.contains($0) }) else { return "" }
        let last = self.lastIndex(where: { !set.contains($0) })!  // exists: `first` does
        return String(self[first...last])
    }
}
