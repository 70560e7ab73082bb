// The one error type of the WireProtocol module: what can go wrong turning bytes into lines and lines into JSON.
// Converting these to JSON-RPC errors (-32700 and friends) happens in RPCMessage, not here.

/// Why bytes could not be framed or parsed.
public enum WireError: Error, Equatable, Sendable {
    /// A line (excluding its `\n` or `\r\n`) is longer than `limit` bytes. Connection-fatal.
    case lineTooLong(limit: Int)
    /// The text is not valid JSON (RFC 8259) or not valid UTF-8; `offset` is the byte index where that became
    /// certain, and `reason` says what was wrong there.
    case syntax(offset: Int, reason: String)
    /// Arrays and objects are nested deeper than `limit` levels.
    case tooDeep(limit: Int)
    /// The number starting at byte `offset` is not finite as a Double (for example `1e400`).
    case numberOutOfRange(offset: Int)
}

extension WireError: CustomStringConvertible {
    /// A one-line explanation suitable for a log line or an error message.
    public var description: String {
        switch self {
        case .lineTooLong(let limit): "line longer than \(limit) bytes"
        case .syntax(let offset, let reason): "invalid JSON at byte \(offset): \(reason)"
        case .tooDeep(let limit): "JSON nested deeper than \(limit) levels"
        case .numberOutOfRange(let offset): "number at byte \(offset) is out of range for a 64-bit double"
        }
    }
}
