// Helpers shared by the WebSocket tests: bytes from text, owned copies of decoder events, and masked client frames.

@testable import WebSocket

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A decoder event with its buffer copied, so it can outlive the callback and be compared.
enum Received: Equatable, CustomStringConvertible {
    case text(String)
    case ping([UInt8])
    case pong([UInt8])
    case close(WebSocketCloseCode?, String)

    init(_ event: WebSocketEvent) {
        switch event {
        case .text(let buffer):
            // The decoder promises valid UTF-8; `validating` makes the tests check it.
            self = .text(String(validating: Array(buffer), as: UTF8.self) ?? "<invalid UTF-8>")
        case .ping(let payload): self = .ping(payload)
        case .pong(let payload): self = .pong(payload)
        case .close(let code, let reason): self = .close(code, reason)
        }
    }

    var description: String {
        switch self {
        case .text(let text): "text(\(text.count) characters: \(text.prefix(40)))"
        case .ping(let payload): "ping(\(payload))"
        case .pong(let payload): "pong(\(payload))"
        case .close(let code, let reason): "close(\(code.map(\.description) ?? "nil"), \(reason))"
        }
    }
}

/// What a decoder made of some input: its events, and the error that stopped it, if any.
struct Decoded: Equatable {
    var events: [Received] = []
    var error: WebSocketError?
}

/// Feeds `chunks` in order to a new decoder and collects the events and the first error.
func decode(_ chunks: [ArraySlice<UInt8>], maxMessageBytes: Int = 1 << 20) -> Decoded {
    var decoder = WebSocketFrameDecoder(maxMessageBytes: maxMessageBytes)
    var decoded = Decoded()
    for chunk in chunks {
        do {
            try decoder.feed(chunk) { decoded.events.append(Received($0)) }
        } catch {
            decoded.error = error
            return decoded
        }
    }
    return decoded
}

/// Feeds `input` whole.
func decode(_ input: [UInt8], maxMessageBytes: Int = 1 << 20) -> Decoded {
    decode([input[...]], maxMessageBytes: maxMessageBytes)
}

/// A masked client frame, the mask key fixed (it does not matter to the decoder, and varies elsewhere).
func clientFrame(
    _ opcode: WebSocketOpcode, _ payload: [UInt8], isFinal: Bool = true, maskKey: UInt32 = 0x37FA_213D
) -> [UInt8] {
    var output: [UInt8] = []
    WebSocketFrameEncoder.appendMaskedFrame(
        opcode: opcode, isFinal: isFinal, payload: payload, maskKey: maskKey, to: &output)
    return output
}

/// A masked client frame with a raw first byte (FIN, RSV bits, opcode) the encoder would not produce.
func rawClientFrame(firstByte: UInt8, payload: [UInt8] = []) -> [UInt8] {
    var output = clientFrame(.text, payload)
    output[0] = firstByte
    return output
}

/// The bytes of a hexadecimal string such as "81 85 37fa".
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16)!
    }
}
