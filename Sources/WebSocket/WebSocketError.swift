// The one error type of the WebSocket module: a received frame broke RFC 6455 or kvod's limits.

/// Why the decoder gave up on a connection's input. The server answers with a close frame carrying `code` (and
/// `message` as its reason, if it likes) and then closes the connection.
public struct WebSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The close code to send: `.protocolError`, `.unsupportedData`, `.invalidPayload` or `.messageTooBig`.
    public var code: WebSocketCloseCode
    /// A short, fixed English text naming the broken rule (fits a close frame's 123-byte reason).
    public var message: String

    /// An error with close code `code` and text `message`.
    public init(code: WebSocketCloseCode, message: String) {
        self.code = code
        self.message = message
    }

    /// The code and the message, as in `1002: reserved bits set`.
    public var description: String { "\(self.code.rawValue): \(self.message)" }

    /// A 1002 error with `message`.
    static func protocolError(_ message: String) -> Self { Self(code: .protocolError, message: message) }
}
