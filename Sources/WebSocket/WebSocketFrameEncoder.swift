// WebSocketFrameEncoder: frames into byte arrays (RFC 6455 §5.2). Server frames are unmasked; the masked client
// encoder exists for the tests, the fuzz target and any client kvod may grow. Reading frames is
// WebSocketFrameDecoder.swift.

/// Appends WebSocket frames to a byte array.
public enum WebSocketFrameEncoder {
    /// The largest control-frame payload (RFC 6455 §5.5).
    public static let maxControlPayloadBytes = 125

    /// Appends an unmasked frame header: FIN (unless `isFinal` is false), `opcode`, and `payloadLength` in the
    /// shortest of the 7-, 16- and 64-bit forms. The caller appends exactly `payloadLength` payload bytes.
    public static func appendHeader(
        opcode: WebSocketOpcode, payloadLength: Int, isFinal: Bool = true, to output: inout [UInt8]
    ) {
        Self.appendHeader(opcode: opcode, payloadLength: payloadLength, isFinal: isFinal, maskBit: 0, to: &output)
    }

    /// Appends the header of an unfragmented text frame whose `payloadLength` bytes of UTF-8 the caller appends
    /// next (so a message can be encoded straight into the output after its header, its length known).
    public static func appendTextHeader(payloadLength: Int, to output: inout [UInt8]) {
        Self.appendHeader(opcode: .text, payloadLength: payloadLength, to: &output)
    }

    /// Appends a complete, unfragmented text frame carrying `payload` (UTF-8, not checked).
    public static func appendText(_ payload: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        Self.appendTextHeader(payloadLength: payload.count, to: &output)
        output.append(contentsOf: payload)
    }

    /// Appends a complete, unfragmented text frame carrying `text`.
    public static func appendText(_ text: String, to output: inout [UInt8]) {
        Self.appendTextHeader(payloadLength: text.utf8.count, to: &output)
        output.append(contentsOf: text.utf8)
    }

    /// Appends a close frame. With a `code`, the payload is the code and `reason`, the reason cut to the longest
    /// prefix of whole characters' bytes that fits (123 bytes); without one, the payload is empty and `reason` is
    /// ignored. `code` should be one a peer may receive (`isAllowedOnWire`).
    public static func appendClose(code: WebSocketCloseCode?, reason: String = "", to output: inout [UInt8]) {
        guard let code else {
            Self.appendHeader(opcode: .close, payloadLength: 0, to: &output)
            return
        }
        var reasonBytes = Array(reason.utf8)
        let limit = Self.maxControlPayloadBytes - 2
        if reasonBytes.count > limit {
            // Cut before the scalar the limit splits: back up while the first byte left out is a continuation
            // byte (10xxxxxx).
            var end = limit
            while end > 0 && reasonBytes[end] & 0xC0 == 0x80 { end -= 1 }
            reasonBytes.removeSubrange(end...)
        }
        Self.appendHeader(opcode: .close, payloadLength: 2 + reasonBytes.count, to: &output)
        output.append(UInt8(truncatingIfNeeded: code.rawValue >> 8))
        output.append(UInt8(truncatingIfNeeded: code.rawValue))
        output.append(contentsOf: reasonBytes)
    }

    /// Appends a ping carrying `payload` (at most 125 bytes; more is a programmer error).
    public static func appendPing(_ payload: [UInt8] = [], to output: inout [UInt8]) {
        precondition(payload.count <= Self.maxControlPayloadBytes, "a ping carries at most 125 bytes")
        Self.appendHeader(opcode: .ping, payloadLength: payload.count, to: &output)
        output.append(contentsOf: payload)
    }

    /// Appends a pong carrying `payload` (at most 125 bytes; more is a programmer error). The answer to a ping
    /// carries the ping's payload.
    public static func appendPong(_ payload: [UInt8] = [], to output: inout [UInt8]) {
        precondition(payload.count <= Self.maxControlPayloadBytes, "a pong carries at most 125 bytes")
        Self.appendHeader(opcode: .pong, payloadLength: payload.count, to: &output)
        output.append(contentsOf: payload)
    }

    // MARK: - Client frames

    /// Appends a masked frame as a client sends it: `opcode`, FIN unless `isFinal` is false, the mask key
    /// `maskKey` (its most significant byte first on the wire) and `payload` XOR-ed with it. No limits are checked,
    /// so tests can build frames the decoder must refuse.
    public static func appendMaskedFrame(
        opcode: WebSocketOpcode, isFinal: Bool = true, payload: some Collection<UInt8>, maskKey: UInt32,
        to output: inout [UInt8]
    ) {
        Self.appendHeader(opcode: opcode, payloadLength: payload.count, isFinal: isFinal, maskBit: 0x80, to: &output)
        for shift in stride(from: 24, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: maskKey >> UInt32(shift)))
        }
        let start = output.count
        output.append(contentsOf: payload)
        output.withUnsafeMutableBytes { raw in
            WebSocketMask.unmask(
                UnsafeMutableRawBufferPointer(rebasing: raw[start...]), key: maskKey.byteSwapped, phase: 0)
        }
    }

    private static func appendHeader(
        opcode: WebSocketOpcode, payloadLength: Int, isFinal: Bool = true, maskBit: UInt8, to output: inout [UInt8]
    ) {
        precondition(payloadLength >= 0, "a payload length is not negative")
        output.append((isFinal ? 0x80 : 0) | opcode.rawValue)
        switch payloadLength {
        case 0...125:
            output.append(maskBit | UInt8(payloadLength))
        case 126...0xFFFF:
            output.append(maskBit | 126)
            output.append(UInt8(truncatingIfNeeded: payloadLength >> 8))
            output.append(UInt8(truncatingIfNeeded: payloadLength))
        default:
            output.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                output.append(UInt8(truncatingIfNeeded: payloadLength >> shift))
            }
        }
    }
}
