// The payload every peer's publisher sends (NATS PUB, etcd put value): `TIME:PUBLISHER:COUNTER` in decimal, the send
// time in monotonic nanoseconds, the publisher's index and its own message counter, so a subscriber measures the
// latency and checks that each publisher's messages arrive once each, in order. Pure.

/// Decimal integers into bytes.
public enum PeerDecimal {
    /// Appends a non-negative integer in decimal.
    @inline(__always)
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes hold 20 digits
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(ascii: "0") &+ UInt8(remaining % 10)
                remaining /= 10
                count += 1
            } while remaining > 0
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }
}

/// A publisher's payload: `TIME:PUBLISHER:COUNTER`.
public struct PeerPayload: Equatable, Sendable {
    /// Monotonic nanoseconds at the send.
    public var sentAt: UInt64
    /// The publisher's index.
    public var publisher: Int
    /// The publisher's own count of messages before this one.
    public var counter: Int64

    public init(sentAt: UInt64, publisher: Int, counter: Int64) {
        self.sentAt = sentAt
        self.publisher = publisher
        self.counter = counter
    }

    /// Appends the payload's text.
    public func append(to bytes: inout [UInt8]) {
        PeerDecimal.append(self.sentAt, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        PeerDecimal.append(UInt64(max(self.publisher, 0)), to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        PeerDecimal.append(UInt64(max(self.counter, 0)), to: &bytes)
    }

    /// Parses exactly three colon-separated runs of 1 to 19 digits; nil for anything else.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> PeerPayload? {
        var fields: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var field = 0
        var value: UInt64 = 0
        var digits = 0
        for byte in bytes {
            if byte == UInt8(ascii: ":") {
                guard digits > 0, field < 2 else { return nil }
                if field == 0 { fields.0 = value } else { fields.1 = value }
                field += 1
                value = 0
                digits = 0
            } else {
                let digit = byte &- UInt8(ascii: "0")
                guard digit < 10, digits < 19 else { return nil }
                value = value * 10 + UInt64(digit)
                digits += 1
            }
        }
        guard field == 2, digits > 0, fields.1 <= UInt64(Int32.max), value <= UInt64(Int64.max) else { return nil }
        fields.2 = value
        return PeerPayload(sentAt: fields.0, publisher: Int(fields.1), counter: Int64(fields.2))
    }

    /// Parses an array's bytes.
    public static func parse(_ bytes: [UInt8]) -> PeerPayload? {
        bytes.withUnsafeBufferPointer { Self.parse($0) }
    }
}
