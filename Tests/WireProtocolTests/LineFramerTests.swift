// LineFramer: split-anywhere delivery (two and three pieces), CR stripping, empty lines, the line-length limit
// before and after the newline arrives, poisoning, and a randomized stream compared against a naive splitter.

import Testing
import WireProtocol
import TestSupport

struct LineFramerTests {
    static let wire = bytes("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n")
    static let stream = bytes("first line\r\n\nsecond\n\r\nthird, a bit longer than eight bytes\n")
    static let streamLines = ["first line", "", "second", "", "third, a bit longer than eight bytes"]

    /// Feeds `chunks` in order and returns the lines delivered, as text.
    static func lines(_ chunks: [ArraySlice<UInt8>], maxLineBytes: Int = 1024) throws -> [String] {
        var framer = LineFramer(maxLineBytes: maxLineBytes)
        var lines: [String] = []
        for chunk in chunks {
            try framer.feed(chunk) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        #expect(framer.bufferedByteCount == 0)
        return lines
    }

    @Test("a line cut at any byte arrives once, without its CR", arguments: 0...LineFramerTests.wire.count)
    func splitAnywhere(at cut: Int) throws {
        let lines = try Self.lines([Self.wire[..<cut], Self.wire[cut...]])
        #expect(lines == [#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#])
    }

    @Test("a stream cut into three pieces at every pair of positions yields the same lines")
    func splitIntoThree() throws {
        let stream = Self.stream
        for first in 0...stream.count {
            for second in first...stream.count {
                let lines = try Self.lines([stream[..<first], stream[first..<second], stream[second...]])
                #expect(lines == Self.streamLines, "cuts at \(first) and \(second)")
            }
        }
    }

    @Test("a stream fed one byte at a time yields the same lines")
    func byteByByte() throws {
        let lines = try Self.lines(Self.stream.indices.map { Self.stream[$0...$0] })
        #expect(lines == Self.streamLines)
    }

    @Test("many lines in one chunk are all delivered, in order")
    func manyLinesInOneChunk() throws {
        let text = (0..<1000).map { "line \($0)\n" }.joined()
        let lines = try Self.lines([bytes(text)[...]])
        #expect(lines == (0..<1000).map { "line \($0)" })
    }

    @Test(
        "terminators and carriage returns",
        arguments: [
            ("\n", [""]), ("\r\n", [""]), ("\n\n\r\n", ["", "", ""]), ("a\r\r\n", ["a\r"]), ("a\rb\n", ["a\rb"]),
            ("\ra\n", ["\ra"]), ("no newline yet", []), ("x\ny", ["x"]),
        ])
    func terminators(input: String, expected: [String]) throws {
        var framer = LineFramer(maxLineBytes: 100)
        var lines: [String] = []
        try framer.feed(bytes(input)) { lines.append(String(decoding: $0, as: UTF8.self)) }
        #expect(lines == expected)
    }

    @Test("the partial line is buffered until its newline arrives")
    func bufferedByteCount() throws {
        var framer = LineFramer(maxLineBytes: 100)
        var lines: [String] = []
        try framer.feed(bytes("one\ntw")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        #expect(framer.bufferedByteCount == 2)
        try framer.feed(bytes("o\r")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        #expect(framer.bufferedByteCount == 4)
        try framer.feed(bytes("\nthree\n")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        #expect(framer.bufferedByteCount == 0)
        #expect(lines == ["one", "two", "three"])
    }

    @Test("an empty chunk does nothing")
    func emptyChunk() throws {
        var framer = LineFramer(maxLineBytes: 4)
        try framer.feed([UInt8]()) { _ in Issue.record("no line expected") }
        try framer.feed(UnsafeRawBufferPointer(start: nil, count: 0)) { _ in Issue.record("no line expected") }
        #expect(framer.bufferedByteCount == 0)
    }

    @Test(
        "a line of exactly the limit passes, with either terminator and any split",
        arguments: ["0123456789\n", "0123456789\r\n"])
    func exactlyAtLimit(line: String) throws {
        let wire = bytes(line)
        for cut in 0...wire.count {
            #expect(try Self.lines([wire[..<cut], wire[cut...]], maxLineBytes: 10) == ["0123456789"])
        }
    }

    @Test(
        "a line one byte over the limit is rejected, however it is split",
        arguments: ["0123456789A\n", "0123456789A\r\n", "0123456789\r\r\n"])
    func overLimit(line: String) throws {
        let wire = bytes(line)
        for cut in 0...wire.count {
            #expect(throws: WireError.lineTooLong(limit: 10)) {
                _ = try Self.lines([wire[..<cut], wire[cut...]], maxLineBytes: 10)
            }
        }
    }

    @Test("an over-long line is rejected before its newline arrives")
    func overLimitBeforeNewline() throws {
        var framer = LineFramer(maxLineBytes: 10)
        try framer.feed(bytes("0123456789")) { _ in Issue.record("no line expected") }
        // A trailing CR might still be the start of the terminator, so it is not counted yet.
        try framer.feed(bytes("\r")) { _ in Issue.record("no line expected") }
        #expect(framer.bufferedByteCount == 11)
        #expect(throws: WireError.lineTooLong(limit: 10)) {
            try framer.feed(bytes("x")) { _ in Issue.record("no line expected") }
        }
        #expect(framer.bufferedByteCount == 0)
    }

    @Test("an endless line never makes the framer buffer more than the limit")
    func endlessLine() throws {
        var framer = LineFramer(maxLineBytes: 1000)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 300)
        var thrown: WireError?
        for _ in 0..<10 {
            do {
                try framer.feed(chunk) { _ in Issue.record("no line expected") }
            } catch {
                thrown = error
                break
            }
            #expect(framer.bufferedByteCount <= 1000)
        }
        #expect(thrown == .lineTooLong(limit: 1000))
    }

    @Test("complete lines before an over-long tail are delivered, then the framer throws and stays poisoned")
    func poisoned() throws {
        var framer = LineFramer(maxLineBytes: 5)
        var lines: [String] = []
        #expect(throws: WireError.lineTooLong(limit: 5)) {
            try framer.feed(bytes("ok\nfine\nmuch too long")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        #expect(lines == ["ok", "fine"])
        #expect(throws: WireError.lineTooLong(limit: 5)) {
            try framer.feed(bytes("a\n")) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        #expect(lines == ["ok", "fine"])
    }

    @Test("an error thrown by the line handler propagates")
    func handlerErrorPropagates() {
        var framer = LineFramer(maxLineBytes: 100)
        var count = 0
        #expect(throws: WireError.syntax(offset: 0, reason: "stop")) {
            try framer.feed(bytes("a\nb\nc\n")) { _ throws(WireError) in
                count += 1
                if count == 2 { throw .syntax(offset: 0, reason: "stop") }
            }
        }
        #expect(count == 2)
    }

    @Test("complete lines inside a chunk point into the chunk (no copy)")
    func zeroCopy() throws {
        var framer = LineFramer(maxLineBytes: 100)
        let chunk = bytes("abc\ndefgh\n")
        var starts: [UnsafeRawPointer?] = []
        var expected: [UnsafeRawPointer?] = []
        let result = chunk.withUnsafeBytes { raw in
            expected = [raw.baseAddress, raw.baseAddress.map { $0 + 4 }]
            return Result { () throws(WireError) in try framer.feed(raw) { starts.append($0.baseAddress) } }
        }
        try result.get()
        #expect(starts == expected)
    }

    @Test("random streams cut at random places match a naive splitter", arguments: 0..<20)
    func randomStreams(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var expected: [String] = []
        var wire: [UInt8] = []
        for _ in 0..<50 {
            let length = Int.random(in: 0..<40, using: &random)
            let line = String((0..<length).map { _ in "abc\r xyz{}\"".randomElement(using: &random)! })
            let lineBytes = bytes(line)
            // A CR that ends the line would be eaten as part of a CRLF terminator; the naive splitter agrees.
            let crlf = Bool.random(using: &random)
            wire += lineBytes + (crlf ? [0x0D, 0x0A] : [0x0A])
            expected.append(crlf || lineBytes.last != 0x0D ? line : String(line.dropLast()))
        }
        var chunks: [ArraySlice<UInt8>] = []
        var start = 0
        while start < wire.count {
            let end = min(wire.count, start + Int.random(in: 1..<64, using: &random))
            chunks.append(wire[start..<end])
            start = end
        }
        #expect(try Self.lines(chunks, maxLineBytes: 40) == expected)
    }
}
