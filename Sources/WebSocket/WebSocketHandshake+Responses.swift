// The handshake's pure helpers: telling an upgrade from a JSON-RPC line, judging an Origin, and the bytes of the
// 101 and error responses (RFC 6455 §4.2.2).
import WireProtocol

extension WebSocketHandshake {
    /// RFC 6455 §1.3: appended to the client's key before hashing.
    static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Whether a connection's first bytes are an HTTP request (they begin with `GET `) rather than a JSON-RPC
    /// line. Fewer than four bytes decide by what they have: a JSON-RPC line starts with `{`, `[` or whitespace,
    /// never `G`, so the first byte is enough. No bytes: false.
    public static func looksLikeHTTP(_ firstBytes: UnsafeRawBufferPointer) -> Bool {
        guard !firstBytes.isEmpty else { return false }
        return zip(firstBytes, "GET ".utf8).allSatisfy { $0 == $1 }
    }

    /// Whether a connection from `origin` may upgrade. No `Origin` (not a browser): allowed. An empty
    /// `allowList`: every origin. Otherwise an entry `*` allows all, and any other entry must equal the origin
    /// (`scheme://host[:port]`, as browsers send it) ignoring case. The server answers a refused origin with 403.
    public static func originAllowed(_ origin: String?, allowList: [String]) -> Bool {
        guard let origin, !allowList.isEmpty else { return true }
        let wanted = origin.lowercased()
        return allowList.contains { $0 == "*" || $0.lowercased() == wanted }
    }

    /// The `Sec-WebSocket-Accept` value for a client's key: base64(SHA-1(key + the RFC's GUID)).
    public static func acceptValue(key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + Self.acceptGUID).utf8)))
    }

    /// The `101 Switching Protocols` response accepting a handshake with `key`, selecting `protocol` (one the
    /// client offered) when given.
    public static func acceptResponse(key: String, protocol selected: String? = nil) -> [UInt8] {
        var text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Accept: \(Self.acceptValue(key: key))\r\n"
        if let selected { text += "Sec-WebSocket-Protocol: \(selected)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// An error response: the status line, `extraHeaders`, a `text/plain` body `reason` with its
    /// `Content-Length`, and `Connection: close` (the server closes after writing it).
    public static func errorResponse(status: Int, reason: String, extraHeaders: [Header] = []) -> [UInt8] {
        let body = reason + "\n"
        var text = "HTTP/1.1 \(status) \(Self.statusText(status))\r\n"
        for header in extraHeaders {
            precondition(
                !header.name.utf8.contains(where: { $0 < 0x20 }) && !header.value.utf8.contains(where: { $0 < 0x20 }),
                "a header has no control characters")
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
        text += "Connection: close\r\n\r\n"
        text += body
        return Array(text.utf8)
    }

    /// The reason phrase of the statuses a WebSocket endpoint sends.
    static func statusText(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
