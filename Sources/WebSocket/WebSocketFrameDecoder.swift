// WebSocketFrameDecoder: client frames (RFC 6455 §5) in, events out. Resumable at any byte: a header, a mask key or
// a payload cut between reads carries on where it stopped. Enforces the framing rules a server must (masking, RSV
// bits, opcodes, control-frame limits, fragmentation order, UTF-8, close payloads) and kvod's own (text only, a
// maximum message size). What the messages mean is decided elsewhere; writing frames is WebSocketFrameEncoder.swift.

/// Decodes the frames a client sends into complete text messages and control events.
///
/// Cost: payload bytes are copied once, unmasked eight at a time on the way, into a buffer the decoder keeps
/// between messages (so a stream of small unfragmented messages allocates nothing once the buffer has grown), and
/// UTF-8-checked as they arrive (eight ASCII bytes per step), so an invalid fragment fails before the rest of its
/// message arrives. The decoder holds at most `maxMessageBytes` of message plus 125 bytes of a control frame.
public struct WebSocketFrameDecoder: Sendable {
    /// The largest text message accepted, in bytes, summed over its fragments.
    public let maxMessageBytes: Int

    private enum Stage: Sendable {
        /// Reading a frame header (2-14 bytes).
        case header
        /// Reading the current frame's payload; `payloadRemaining` bytes are still to come.
        case payload
        /// A close frame arrived; everything after it is ignored.
        case closed
    }

    private var stage = Stage.header
    /// The first bytes of a header cut between two feeds, and how long that header is (2 until its second byte is
    /// known). Empty whenever a header is parsed straight from the caller's chunk.
    private var partialHeader: [UInt8] = []
    private var headerLength = 2

    // The current frame.
    private var opcode = WebSocketOpcode.continuation
    private var isFinal = false
    private var payloadRemaining = 0
    /// The four mask-key bytes, the first in the lowest byte (as a little-endian load from the wire gives them).
    private var maskKey: UInt32 = 0
    /// The current frame's payload bytes consumed so far, modulo 4: the key byte the next payload byte uses.
    private var maskPhase = 0

    // The text message in progress (between its first frame and its final fragment).
    private var isMessageOpen = false
    private var message: [UInt8] = []
    private var utf8 = UTF8Validator()

    /// The payload of the control frame being read (at most 125 bytes).
    private var control: [UInt8] = []
    /// Set at the first error; every later feed throws it again.
    private var failure: WebSocketError?

    /// Buffers above this are released after their message; smaller ones are kept for the next.
    private static let keptBufferBytes = 64 * 1024

    /// A decoder refusing text messages larger than `maxMessageBytes`.
    public init(maxMessageBytes: Int) {
        precondition(maxMessageBytes >= 0, "maxMessageBytes must not be negative")
        self.maxMessageBytes = maxMessageBytes
        self.partialHeader.reserveCapacity(14)
    }

    /// Whether a close frame has arrived (the decoder ignores all later input).
    public var isClosed: Bool { self.stage == .closed }

    /// Consumes `bytes`, calling `body` once per decoded event, in order.
    ///
    /// A `.text` buffer is valid only during its call. After a `.close` event the rest of the input, and every
    /// later feed, is ignored. Throws at the first violation, after delivering the events before it; the decoder
    /// then stays failed and every later feed throws the same error, so the connection should send a close frame
    /// with the error's code and go away. Feeding the same bytes in any split gives the same events.
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer, _ body: (WebSocketEvent) -> Void
    ) throws(WebSocketError) {
        if let failure = self.failure { throw failure }
        do {
            try self.consume(bytes, body)
        } catch {
            self.failure = error
            self.message = []
            self.control = []
            throw error
        }
    }

    /// Consumes `bytes`; see `feed(_:_:)` for the contract.
    public mutating func feed(_ bytes: [UInt8], _ body: (WebSocketEvent) -> Void) throws(WebSocketError) {
        try self.feed(bytes[...], body)
    }

    /// Consumes `bytes`; see `feed(_:_:)` for the contract.
    public mutating func feed(_ bytes: ArraySlice<UInt8>, _ body: (WebSocketEvent) -> Void) throws(WebSocketError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(WebSocketError) in try self.feed(raw, body) }
        }
        try result.get()
    }

    private mutating func consume(
        _ bytes: UnsafeRawBufferPointer, _ body: (WebSocketEvent) -> Void
    ) throws(WebSocketError) {
        var position = 0
        while true {
            switch self.stage {
            case .closed:
                return
            case .payload where self.payloadRemaining == 0:
                try self.finishFrame(body)
            case .header:
                guard position < bytes.count else { return }
                position = try self.readHeader(bytes, from: position)
            case .payload:
                guard position < bytes.count else { return }
                position = try self.readPayload(bytes, from: position)
            }
        }
    }

    // MARK: - Headers

    /// Reads header bytes from `bytes[position...]`: parses the header in place when it is all there (the common
    /// case), else gathers its bytes in `partialHeader`. Returns the position after what it consumed.
    private mutating func readHeader(
        _ bytes: UnsafeRawBufferPointer, from position: Int
    ) throws(WebSocketError) -> Int {
        let available = bytes.count - position
        if self.partialHeader.isEmpty && available >= 2 {
            let length = try self.checkStart(bytes[position], bytes[position + 1])
            if available >= length {
                let frame = Self.decodeHeader(length) { bytes[position + $0] }
                try self.begin(frame)
                return position + length
            }
        }
        var position = position
        while position < bytes.count && self.partialHeader.count < self.headerLength {
            self.partialHeader.append(bytes[position])
            position += 1
            if self.partialHeader.count == 2 {
                self.headerLength = try self.checkStart(self.partialHeader[0], self.partialHeader[1])
            }
        }
        if self.partialHeader.count == self.headerLength {
            let header = self.partialHeader
            self.partialHeader.removeAll(keepingCapacity: true)
            self.headerLength = 2
            try self.begin(Self.decodeHeader(header.count) { header[$0] })
        }
        return position
    }

    /// Checks what a header's first two bytes decide (RFC 6455 §5.2, §5.4, §5.5) and returns the header's length.
    private func checkStart(_ first: UInt8, _ second: UInt8) throws(WebSocketError) -> Int {
        guard second & 0x80 != 0 else { throw .protocolError("client frame not masked") }
        guard first & 0x70 == 0 else { throw .protocolError("reserved bits set") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { throw .protocolError("unknown opcode") }
        let isFinal = first & 0x80 != 0
        let shortLength = second & 0x7F
        if opcode.isControl {
            guard isFinal else { throw .protocolError("fragmented control frame") }
            guard shortLength <= 125 else { throw .protocolError("control frame over 125 bytes") }
        } else if opcode == .continuation {
            guard self.isMessageOpen else { throw .protocolError("continuation frame without a message") }
        } else {
            guard !self.isMessageOpen else { throw .protocolError("new message before the last one ended") }
            guard opcode == .text else {
                throw WebSocketError(code: .unsupportedData, message: "binary messages are not accepted")
            }
        }
        switch shortLength {
        case 126: return 2 + 2 + 4
        case 127: return 2 + 8 + 4
        default: return 2 + 4
        }
    }

    /// A header's fields, as read from its bytes.
    private struct FrameHeader {
        var isFinal: Bool
        var opcode: WebSocketOpcode
        var length: UInt64
        var maskKey: UInt32
    }

    /// Reads a complete header of `length` bytes already checked by `checkStart`; `byte(i)` is its i-th byte.
    @inline(__always)
    private static func decodeHeader(_ length: Int, _ byte: (Int) -> UInt8) -> FrameHeader {
        var payloadLength = UInt64(byte(1) & 0x7F)
        let keyOffset = length - 4
        if keyOffset > 2 {
            payloadLength = 0
            for index in 2..<keyOffset { payloadLength = payloadLength << 8 | UInt64(byte(index)) }
        }
        var key: UInt32 = 0
        for index in 0..<4 { key |= UInt32(byte(keyOffset + index)) << (8 * index) }
        return FrameHeader(
            isFinal: byte(0) & 0x80 != 0,
            opcode: WebSocketOpcode(rawValue: byte(0) & 0x0F)!,  // checkStart accepted this opcode
            length: payloadLength, maskKey: key)
    }

    /// Checks a complete header's length against the rules and the limit, and starts reading its payload.
    private mutating func begin(_ frame: FrameHeader) throws(WebSocketError) {
        guard frame.length >> 63 == 0 else { throw .protocolError("64-bit length with the top bit set") }
        if !frame.opcode.isControl {
            // Refused from the header alone, before any of it is buffered.
            guard frame.length <= UInt64(self.maxMessageBytes - self.message.count) else {
                throw WebSocketError(
                    code: .messageTooBig, message: "message over \(self.maxMessageBytes) bytes")
            }
            if frame.opcode == .text {
                self.isMessageOpen = true
                self.utf8.reset()
            }
        }
        self.opcode = frame.opcode
        self.isFinal = frame.isFinal
        self.payloadRemaining = Int(frame.length)
        self.maskKey = frame.maskKey
        self.maskPhase = 0
        self.stage = .payload
    }

    // MARK: - Payloads

    /// Unmasks as much of the current payload as `bytes[position...]` holds into the message or control buffer.
    /// Returns the position after it.
    private mutating func readPayload(
        _ bytes: UnsafeRawBufferPointer, from position: Int
    ) throws(WebSocketError) -> Int {
        let count = min(bytes.count - position, self.payloadRemaining)
        let chunk = UnsafeRawBufferPointer(rebasing: bytes[position..<position + count])
        let key = self.maskKey
        let phase = self.maskPhase
        if self.opcode.isControl {
            WebSocketMask.appendUnmasked(chunk, key: key, phase: phase, to: &self.control)
        } else {
            let start = self.message.count
            WebSocketMask.appendUnmasked(chunk, key: key, phase: phase, to: &self.message)
            let isValid = self.message.withUnsafeBytes { message in
                self.utf8.validate(UnsafeRawBufferPointer(rebasing: message[start...]))
            }
            guard isValid else { throw WebSocketError(code: .invalidPayload, message: "text is not valid UTF-8") }
        }
        self.payloadRemaining -= count
        self.maskPhase = (phase + count) & 3
        return position + count
    }

    /// Handles a frame whose payload is complete.
    private mutating func finishFrame(_ body: (WebSocketEvent) -> Void) throws(WebSocketError) {
        self.stage = .header
        switch self.opcode {
        case .close:
            let (code, reason) = try Self.parseClose(self.control)
            self.control.removeAll(keepingCapacity: true)
            self.stage = .closed
            self.message = []
            body(.close(code: code, reason: reason))
        case .ping:
            body(.ping(self.control))
            self.control.removeAll(keepingCapacity: true)
        case .pong:
            body(.pong(self.control))
            self.control.removeAll(keepingCapacity: true)
        case .text, .continuation:
            guard self.isFinal else { return }
            guard self.utf8.isComplete else {
                throw WebSocketError(code: .invalidPayload, message: "text ends inside a UTF-8 sequence")
            }
            self.isMessageOpen = false
            self.message.withUnsafeBytes { body(.text($0)) }
            self.message.removeAll(keepingCapacity: self.message.capacity <= Self.keptBufferBytes)
        case .binary:
            preconditionFailure("checkStart refuses binary frames")
        }
    }

    /// A close frame's code and reason (RFC 6455 §5.5.1, §7.4).
    private static func parseClose(
        _ payload: [UInt8]
    ) throws(WebSocketError) -> (code: WebSocketCloseCode?, reason: String) {
        if payload.isEmpty { return (nil, "") }
        guard payload.count >= 2 else { throw .protocolError("close frame with a 1-byte payload") }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isAllowedOnWire else { throw .protocolError("invalid close code \(code.rawValue)") }
        let reason = payload[2...]
        guard reason.withUnsafeBytes(UTF8Validator.isValid) else {
            throw WebSocketError(code: .invalidPayload, message: "close reason is not valid UTF-8")
        }
        return (code, String(decoding: reason, as: UTF8.self))
    }
}
