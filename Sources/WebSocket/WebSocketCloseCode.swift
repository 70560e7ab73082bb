// Close status codes (RFC 6455 §7.4): the constants kvod sends, and the rule for which codes a peer may send.

/// A close frame's status code.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    /// The code as it travels on the wire (big-endian, the first two bytes of a close frame's payload).
    public var rawValue: UInt16

    /// The code `rawValue`.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// The code `value`, so tests and tables can write `1000`.
    public init(integerLiteral value: UInt16) {
        self.rawValue = value
    }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normal: Self = 1000
    /// 1001: the server is shutting down, or the client navigated away.
    public static let goingAway: Self = 1001
    /// 1002: the peer broke the framing rules.
    public static let protocolError: Self = 1002
    /// 1003: a data type the endpoint does not accept (kvod speaks text only; binary messages get this).
    public static let unsupportedData: Self = 1003
    /// 1007: a text message (or close reason) that is not valid UTF-8.
    public static let invalidPayload: Self = 1007
    /// 1008: a message that breaks the endpoint's policy.
    public static let policyViolation: Self = 1008
    /// 1009: a message larger than the endpoint accepts.
    public static let messageTooBig: Self = 1009
    /// 1011: the server hit an unexpected condition.
    public static let internalError: Self = 1011

    /// Whether a peer may send this code in a close frame: the defined codes 1000-1003 and 1007-1014 (IANA
    /// registry), and 3000-4999 (libraries, applications). 1004-1006 and 1015 are reserved and must never be sent;
    /// everything else below 3000 is unassigned.
    public var isAllowedOnWire: Bool {
        switch self.rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The number, as in `1000`.
    public var description: String { String(self.rawValue) }
}
