// Fuzz target: the bytes a client sends, through everything kvod does with them before dispatch. The LineFramer
// must cut the same lines however the bytes are chunked (and as a plain reference splitter does); every line that
// parses must re-encode with JSONWriter to finite, newline-free JSON that parses back to the same value; the
// JSON-RPC decoder must classify each line consistently with the parser, and a decoded request must survive
// RPCEncoder and decoding again. The client-side decoder (RPCServerMessage) and the engine bridge (ValueCoding)
// must not trap on any of it. Docs: docs/RELIABILITY.md; run: .ci/fuzz.sh.
import FuzzSupport
import ObjectGraph
import ValueCoding
import WireProtocol

@main
enum FuzzJSONRPC {
    /// A small line limit, so that over-long lines (complete or not) are common inputs.
    static let maxLineBytes = 96

    static func main() {
        FuzzDriver.run { input in
            let bytes = Array(input)
            Self.checkFraming(bytes)
            // Decode with kvod's real limits: every line of the input, as a connection would receive them.
            var framer = LineFramer(maxLineBytes: 1 << 20)
            try? framer.feed(bytes) { line in Self.checkLine(line) }
            // And the input as one line (it may hold `\n`s, which the parser must reject as control characters).
            bytes.withUnsafeBytes { Self.checkLine($0) }
        }
    }

    // MARK: - Framing

    /// What a framer delivers for `bytes` fed in `chunkSize` pieces: the lines, and whether it reported a line too long.
    static func frame(_ bytes: [UInt8], chunkSize: Int) -> (lines: [[UInt8]], tooLong: Bool) {
        var framer = LineFramer(maxLineBytes: Self.maxLineBytes)
        var lines: [[UInt8]] = []
        var start = 0
        repeat {
            let end = min(bytes.count, start + chunkSize)
            do {
                try framer.feed(bytes[start..<end]) { line in lines.append(Array(line)) }
            } catch .lineTooLong(let limit) {
                check(limit == Self.maxLineBytes, "wrong limit \(limit)")
                // Poisoned: every later feed throws too.
                do {
                    try framer.feed([0x0A]) { _ in check(false, "a poisoned framer delivered a line") }
                    check(false, "a poisoned framer accepted input")
                } catch {}
                return (lines, true)
            } catch {
                check(false, "unexpected framing error \(error)")
            }
            check(framer.bufferedByteCount <= Self.maxLineBytes + 1, "framer holds \(framer.bufferedByteCount) bytes")
            start = end
        } while start < bytes.count
        return (lines, false)
    }

    /// The reference: split on `\n`, drop one `\r` before it; stop at the first line (complete, or the unterminated
    /// tail) longer than the limit, not counting a final `\r` of the tail (it may still become a terminator).
    static func referenceFrame(_ bytes: [UInt8]) -> (lines: [[UInt8]], tooLong: Bool) {
        var lines: [[UInt8]] = []
        var pieces = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        let tail = pieces.removeLast()
        for piece in pieces {
            let line = piece.last == 0x0D ? Array(piece.dropLast()) : Array(piece)
            if line.count > Self.maxLineBytes { return (lines, true) }
            lines.append(line)
        }
        let tailLength = tail.last == 0x0D ? tail.count - 1 : tail.count
        return (lines, tailLength > Self.maxLineBytes)
    }

    static func checkFraming(_ bytes: [UInt8]) {
        let reference = Self.referenceFrame(bytes)
        for chunkSize in [bytes.count + 1, 1, 2, 3, 7, 64] {
            let framed = Self.frame(bytes, chunkSize: chunkSize)
            check(framed.lines == reference.lines, "chunks of \(chunkSize): lines differ from the reference")
            check(framed.tooLong == reference.tooLong, "chunks of \(chunkSize): tooLong \(framed.tooLong)")
        }
    }

    // MARK: - One line

    static func checkLine(_ line: UnsafeRawBufferPointer) {
        let parsed = Result { () throws(WireError) in try JSONParser.parse(line) }
        switch parsed {
        case .success(let value):
            Self.checkRoundTrip(value)
            _ = Value(json: value).jsonValue
            var buffer: [UInt8] = []
            Value(json: value).appendJSON(to: &buffer)
            check((try? JSONParser.parse(buffer, maxDepth: 200)) != nil, "ValueCoding wrote invalid JSON")
        case .failure(let error):
            switch error {
            case .syntax(let offset, _), .numberOutOfRange(let offset):
                check(offset >= 0 && offset <= line.count, "error offset \(offset) outside the line")
            case .tooDeep(let limit): check(limit == 64, "depth limit \(limit)")
            case .lineTooLong: check(false, "the parser reported a line too long")
            }
        }
        // A smaller depth limit is only ever stricter.
        if let shallow = try? JSONParser.parse(line, maxDepth: 3) {
            check(parsed == .success(shallow), "maxDepth 3 accepted something else than maxDepth 64")
        }

        let incoming = RPCMessage.decode(line)
        switch (incoming, parsed) {
        case (.parseError(let error), .failure):
            check(error.code == -32700, "parse error with code \(error.code)")
        case (.parseError, .success):
            check(false, "valid JSON decoded as a parse error")
        case (_, .failure):
            check(false, "invalid JSON decoded as \(incoming)")
        case (.emptyBatch, .success(let value)):
            check(value == .array([]), "emptyBatch for \(value)")
        case (.batch(let elements), .success(let value)):
            check(value.arrayValue?.count == elements.count, "batch of \(elements.count) for \(value)")
            elements.forEach(Self.checkRequest)
        case (.single(let element), .success(let value)):
            check(value.arrayValue == nil, "an array decoded as a single request")
            Self.checkRequest(element)
        }
        _ = try? RPCServerMessage.decode(Array(line))
    }

    /// Encoding a parsed value gives finite, newline-free JSON that parses back to the same value, and encoding is
    /// stable from then on.
    static func checkRoundTrip(_ value: JSONValue) {
        Self.checkFinite(value)
        let encoded = JSONWriter.encode(value)
        check(!encoded.contains(0x0A) && !encoded.contains(0x0D), "the writer wrote a raw line break")
        let reparsed: JSONValue
        do {
            reparsed = try JSONParser.parse(encoded)
        } catch {
            fatalError("re-parsing \(String(decoding: encoded, as: UTF8.self)) failed: \(error)")
        }
        check(reparsed == value, "round trip changed \(value) into \(reparsed)")
        check(JSONWriter.encode(reparsed) == encoded, "encoding is not stable for \(value)")
    }

    static func checkFinite(_ value: JSONValue) {
        switch value {
        case .double(let number): check(number.isFinite, "a non-finite double \(number)")
        case .array(let elements): elements.forEach(Self.checkFinite)
        case .object(let object): object.values.forEach(Self.checkFinite)
        case .null, .bool, .int, .string: break
        }
    }

    /// A valid request survives encoding and decoding; an invalid one is answered with -32600 and a usable id.
    static func checkRequest(_ parsed: RPCParsed) {
        switch parsed {
        case .request(let request):
            var bytes: [UInt8] = []
            RPCEncoder.appendRequest(id: request.id, method: request.method, params: request.params, to: &bytes)
            let again = RPCMessage.decode(bytes)
            check(again == .single(.request(request)), "request \(request) came back as \(again)")
        case .invalid(let id, let error, _):
            check(error.code == -32600, "invalid request with code \(error.code)")
            switch id {
            case nil, .null?, .int?, .double?, .string?: break
            default: check(false, "invalid request answered with id \(String(describing: id))")
            }
        }
    }
}
