// What the frame decoder hands out, and the frame opcodes (RFC 6455 §5.2).

/// One thing a client said, decoded from its frames.
public enum WebSocketEvent {
    /// A complete text message: reassembled from its fragments, unmasked and valid UTF-8. The buffer points into
    /// the decoder and is valid only during the callback that receives it.
    case text(UnsafeRawBufferPointer)
    /// A ping with its application data (at most 125 bytes); the server answers with a pong carrying the same.
    case ping([UInt8])
    /// An unsolicited or answering pong.
    case pong([UInt8])
    /// A close frame: its code (nil when the frame had no payload) and its UTF-8 reason (possibly empty). The
    /// decoder ignores every byte after it.
    case close(code: WebSocketCloseCode?, reason: String)
}

/// A frame's opcode: the low four bits of its first byte.
public enum WebSocketOpcode: UInt8, Sendable {
    /// A later fragment of the message in progress.
    case continuation = 0x0
    /// The first (or only) frame of a text message.
    case text = 0x1
    /// The first (or only) frame of a binary message (refused by kvod with 1003).
    case binary = 0x2
    /// A close frame.
    case close = 0x8
    /// A ping.
    case ping = 0x9
    /// A pong.
    case pong = 0xA

    /// Whether this is a control frame (close, ping, pong): at most 125 bytes, never fragmented, allowed between
    /// the fragments of a message.
    public var isControl: Bool { self.rawValue & 0x8 != 0 }
}
