// JSONWriter: exact output for each kind of value, string escaping, integer and double text, and writer -> parser
// round trips for a corpus, for random documents and for thousands of random doubles (bit-exact).

import Testing
import WireProtocol
import TestSupport

struct JSONWriterTests {
    static func text(_ value: JSONValue) -> String { JSONWriter.encodeString(value) }

    @Test(
        "values are written compactly, in document order",
        arguments: [
            (JSONValue.null, "null"), (true, "true"), (false, "false"), (0, "0"), (-7, "-7"), ("", #""""#),
            ([], "[]"), ([:], "{}"), ([1, "a", .null, [true]], #"[1,"a",null,[true]]"#),
            (["z": 1, "a": ["b": 2.5], "m": []], #"{"z":1,"a":{"b":2.5},"m":[]}"#),
        ] as [(JSONValue, String)])
    func compact(value: JSONValue, expected: String) {
        #expect(Self.text(value) == expected)
        #expect(JSONWriter.encode(value) == bytes(expected))
    }

    @Test(
        "strings escape quotes, backslashes and controls only",
        arguments: [
            ("plain", #""plain""#), ("\"", #""\"""#), ("\\", #""\\""#), ("/", #""/""#), ("\n\r\t", #""\n\r\t""#),
            ("\u{8}\u{C}", #""\b\f""#), ("\u{0}", #""\u0000""#), ("\u{1F}", #""\u001f""#), ("\u{7F}", "\"\u{7F}\""),
            ("a\"b\\c", #""a\"b\\c""#), ("héllo 中文 😀", "\"héllo 中文 😀\""), ("\u{2028}\u{FEFF}", "\"\u{2028}\u{FEFF}\""),
        ])
    func strings(input: String, expected: String) {
        #expect(Self.text(.string(input)) == expected)
    }

    @Test("every control character is escaped and round-trips")
    func allControlCharacters() throws {
        let controls = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) }))
        let wire = JSONWriter.encode(.string(controls))
        #expect(!wire.dropFirst().dropLast().contains { $0 < 0x20 })
        #expect(try JSONParser.parse(wire) == .string(controls))
        let mixed = "quote\" backslash\\ slash/ emoji 😀👍🏽 CJK 中文字 \(controls) end"
        #expect(try JSONParser.parse(JSONWriter.encode(.string(mixed))) == .string(mixed))
    }

    @Test(
        "integers are written in decimal",
        arguments: [0, 1, -1, 9, 10, -10, 99, 100, 12345, Int64.max, Int64.min, Int64.min + 1, 1_000_000_000_000])
    func integers(value: Int64) throws {
        var out: [UInt8] = [UInt8(ascii: "x")]
        JSONWriter.appendInt(value, to: &out)
        #expect(out == bytes("x\(value)"))
        #expect(try JSONParser.parse(Array(out.dropFirst())) == .int(value))
    }

    @Test("writeDecimal writes what String(_:) does, at every power of ten and either side of it")
    func decimalDigits() {
        var values: [Int64] = [0, Int64.max, Int64.min, Int64.min + 1]
        var power: Int64 = 1
        for _ in 0..<19 {
            for value in [power - 1, power, power + 1, power * 3 + 7] { values += [value, -value] }
            if power <= Int64.max / 10 { power *= 10 }
        }
        var random = SeededRandom(seed: 10)
        for _ in 0..<1000 { values.append(Int64(bitPattern: random.next()) >> Int64.random(in: 0..<63, using: &random)) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 24, alignment: 8)
        defer { buffer.deallocate() }
        for value in values {
            let count = JSONWriter.writeDecimal(value, to: buffer)
            let written = String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
            #expect(written == String(value), "\(value)")
        }
    }

    @Test(
        "doubles use the shortest round-trip text, always recognisable as a double",
        arguments: [
            (42.0, "42.0"), (0.1, "0.1"), (1e-05, "1e-05"), (1e+20, "1e+20"), (.leastNonzeroMagnitude, "5e-324"),
            (-0.0, "-0.0"),
            (1.5, "1.5"), (-2.5e-300, "-2.5e-300"), (1e16, "1e+16"), (1e15, "1000000000000000.0"),
            (.greatestFiniteMagnitude, "1.7976931348623157e+308"), (0.30000000000000004, "0.30000000000000004"),
        ] as [(Double, String)])
    func doubles(value: Double, expected: String) throws {
        var out: [UInt8] = []
        JSONWriter.appendDouble(value, to: &out)
        #expect(out == bytes(expected))
        guard case .double(let parsed) = try JSONParser.parse(out) else {
            Issue.record("\(expected) did not parse as a double")
            return
        }
        #expect(parsed.bitPattern == value.bitPattern)
    }

    @Test("thousands of random finite doubles round-trip bit for bit through valid JSON")
    func randomDoubles() throws {
        var random = RandomJSON(seed: 2024)
        for index in 0..<5000 {
            // Mix raw bit patterns (every exponent) with integral values (the ".0" forms).
            let value =
                index % 5 == 0
                ? Double(Int64.random(in: -1 << 60...1 << 60, using: &random.generator)) : random.finiteDouble()
            var out: [UInt8] = []
            JSONWriter.appendDouble(value, to: &out)
            let parsed = try JSONParser.parse(out)
            guard case .double(let back) = parsed else {
                Issue.record("\(value) was written as \(String(decoding: out, as: UTF8.self)), parsed as \(parsed)")
                continue
            }
            #expect(back.bitPattern == value.bitPattern, "\(value)")
        }
    }

    static let corpus: [JSONValue] = [
        .null, true, 0, -0.0, 1e300, "", "😀",
        [1, 2.5, "three", [4], ["five": 5], .null, false],
        ["jsonrpc": "2.0", "id": 123, "method": "set", "params": ["path": "a.b.c", "value": 42.5]],
        ["nested": ["deeper": ["deepest": [[], [:], [[]]]]], "unicode": "中文 é \u{0} \u{10FFFF}"],
        [.int(.max), .int(.min), .double(.leastNonzeroMagnitude), .double(-.greatestFiniteMagnitude)],
    ]

    @Test("writer output parses back to the same value", arguments: corpus)
    func roundTrip(value: JSONValue) throws {
        #expect(identical(try JSONParser.parse(JSONWriter.encode(value)), value))
    }

    @Test("random documents round-trip through writer and parser", arguments: 0..<20)
    func randomRoundTrip(seed: UInt64) throws {
        var random = RandomJSON(seed: seed)
        for _ in 0..<50 {
            let value = random.value(depth: 4)
            let wire = JSONWriter.encode(value)
            #expect(identical(try JSONParser.parse(wire), value), "\(String(decoding: wire, as: UTF8.self))")
            #expect(wire.last != 0x0A)
        }
    }

    @Test("strings escape exactly as a byte-by-byte escaper does, whatever the offset of the bytes to escape")
    func stringsEscapeAsAByteByByteEscaper() throws {
        // The writer skips eight bytes at a time; every special byte at every offset of a word, next to multi-byte
        // UTF-8 (bytes >= 0x80 that must not be mistaken for specials), and the tail shorter than a word.
        func reference(_ text: String) -> [UInt8] {
            var out: [UInt8] = [0x22]
            for byte in text.utf8 {
                switch byte {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                case 0x09: out += [0x5C, UInt8(ascii: "t")]
                case 0x08: out += [0x5C, UInt8(ascii: "b")]
                case 0x0C: out += [0x5C, UInt8(ascii: "f")]
                case ..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                default: out.append(byte)
                }
            }
            return out + [0x22]
        }
        let pieces = ["a", "\"", "\\", "\n", "\u{01}", "\u{1F}", " ", "!", "#", "[", "]", "\u{7F}", "é", "€", "😀", "\u{5C}"]
        var random = SeededRandom(seed: 23)
        for length in 0..<40 {
            for _ in 0..<60 {
                let text = (0..<length).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
                var written: [UInt8] = []
                JSONWriter.appendString(text, to: &written)
                #expect(written == reference(text), "\(text.debugDescription)")
                #expect(try JSONParser.parse(written) == .string(text))
            }
        }
    }

    @Test("append adds to what the buffer already holds")
    func appendsToExisting() {
        var out = bytes("prefix:")
        JSONWriter.append(["a": [1, 2]], to: &out)
        JSONWriter.appendString("s", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"prefix:{"a":[1,2]}"s""#)
    }
}
